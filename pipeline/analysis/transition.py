"""Where a detection rate first crosses 1/2 along ``snr``: the empirical transition (docs/theory.md §3.7).

Its interval (:func:`bootstrap_interval`) is a percentile bootstrap over replicates widened to hold the
grid step in which the crossing is resolved: the grid measures the rate only at its SNRs, so where the
rate crosses 1/2 inside a step is interpolation, not data, and resampling replicates cannot show it.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["bootstrap_crossings", "bootstrap_interval", "bootstrap_intervals", "crossing", "crossing_step",
           "transition_snr"]


def crossing(rate: np.ndarray, snr: np.ndarray) -> np.ndarray:
    """First upward crossing of 1/2 along the last axis, linearly interpolated (NaN if none).

    Censored (NaN) where the rate never reaches 1/2 or is already at or above it at the first SNR.
    NaN rates are skipped (the crossing is taken between the neighbouring finite points). Vectorised
    over the leading axes, so a bootstrap's thousands of resampled lines cost one call.
    """
    rate = np.asarray(rate, dtype=float)
    if rate.ndim == 1:
        return crossing(rate[None], snr)[0]
    out = np.full(rate.shape[:-1], np.nan)
    gappy = np.isnan(rate).any(axis=-1) & np.isfinite(rate).any(axis=-1)
    full = np.isfinite(rate).all(axis=-1)
    r = rate[full]
    if r.size:
        above = r >= 0.5
        first = above.argmax(axis=-1)
        ok = above.any(axis=-1) & (first > 0)
        rows, i = np.nonzero(ok)[0], first[ok]
        r0, r1 = r[rows, i - 1], r[rows, i]
        vals = np.full(r.shape[0], np.nan)
        vals[rows] = snr[i - 1] + (0.5 - r0) * (snr[i] - snr[i - 1]) / (r1 - r0)
        out[full] = vals
    for idx in zip(*np.nonzero(gappy), strict=True):
        keep = np.isfinite(rate[idx])
        out[idx] = crossing(rate[idx][keep], np.asarray(snr)[keep])
    return out


def crossing_step(rate: np.ndarray, snr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The grid SNRs ``(left, right)`` between which :func:`crossing` interpolates, along the last axis.

    ``right`` is the first SNR where the rate is at or above 1/2, ``left`` the finite point before it
    (NaN rates are skipped, as in :func:`crossing`). Both NaN where the crossing is censored.

    Examples
    --------
    >>> crossing_step(np.array([0.0, 0.2, 0.9, 1.0]), np.array([0.0, 0.5, 1.0, 1.5]))
    (array(0.5), array(1.))
    """
    rate = np.asarray(rate, dtype=float)
    snr = np.asarray(snr, dtype=float)
    flat = rate.reshape(-1, rate.shape[-1])
    left, right = np.full(flat.shape[0], np.nan), np.full(flat.shape[0], np.nan)
    for row in range(flat.shape[0]):
        keep = np.isfinite(flat[row])
        r, x = flat[row][keep], snr[keep]
        above = r >= 0.5
        i = int(above.argmax()) if above.size else 0
        if above.size and above[i] and i > 0:
            left[row], right[row] = x[i - 1], x[i]
    return left.reshape(rate.shape[:-1]), right.reshape(rate.shape[:-1])


def transition_snr(rate: xr.DataArray) -> xr.DataArray:
    """SNR where the detection rate first crosses 1/2 upwards, interpolated linearly between grid SNRs.

    NaN when the line never reaches 1/2 or is already at or above 1/2 at its first SNR (censored).
    Lazy on a dask-backed ``rate`` (one call per chunk).
    """
    if rate.chunks is not None:
        rate = rate.chunk({"snr": -1})
    return xr.apply_ufunc(crossing, rate, kwargs={"snr": rate["snr"].values},
                          input_core_dims=[["snr"]], output_core_dims=[[]], dask="parallelized",
                          output_dtypes=[float])


def bootstrap_crossings(hits: np.ndarray, snr: np.ndarray, n_boot: int, rng: np.random.Generator
                        ) -> tuple[np.ndarray, np.ndarray]:
    """Crossings of ``n_boot`` resamples of one line's replicates, and the resampled rates.

    ``hits`` is ``(replicate, snr)`` of 0/1 for done replicates; a replicate is resampled with all its
    SNR values (they share its draws). Returns ``(crossings (n_boot,), rates (n_boot, snr))``; a
    resample with no crossing on the grid is NaN.
    """
    n = hits.shape[0]
    rates = hits[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    return crossing(rates, snr), rates


def bootstrap_interval(hits: np.ndarray, snr: np.ndarray, n_boot: int, level: float, rng: np.random.Generator,
                       include_step: bool = True) -> tuple[float, float, float, float]:
    """One line's transition with its interval: ``(transition, ci_low, ci_high, censored_fraction)``.

    The rule (docs/theory.md §3.7):

    1. ``transition`` is the :func:`crossing` of the rate of all replicates of ``hits``
       (``(replicate, snr)`` of 0/1).
    2. Percentile bootstrap: the crossings of ``n_boot`` resamples of whole replicates
       (:func:`bootstrap_crossings`, one ``rng`` draw per call), and their ``(1 - level) / 2`` and
       ``(1 + level) / 2`` quantiles. A resample with no crossing on the grid is censored: it counts as
       below the grid if its rate starts at or above 1/2, else above it, and a bound that falls on
       censored resamples is NaN (the grid cannot support a number there).
    3. Grid step (``include_step``): the interval is widened to hold the grid step ``[left, right]`` in
       which ``transition`` is resolved (:func:`crossing_step`): ``ci_low = min(ci_low, left)``,
       ``ci_high = max(ci_high, right)``, a NaN bound staying NaN. The rate is measured only at the grid
       SNRs; any increasing curve through those values crosses 1/2 somewhere in that step, which no
       resampling of replicates can reveal. So the interval is never narrower than the step: a jump of
       the rate from 0 to 1 within one step gives exactly that step, where the bootstrap alone gives a
       single point. Where the bootstrap interval already spans the step, it is unchanged.

    Censored transitions (NaN) are not widened. ``include_step=False`` gives the bootstrap interval alone.

    Examples
    --------
    >>> jump = np.tile([0.0, 0.0, 1.0, 1.0], (20, 1))                 # every replicate detects from snr 1
    >>> bootstrap_interval(jump, np.array([0.0, 0.5, 1.0, 1.5]), 100, 0.95, np.random.default_rng(0))
    (0.75, 0.5, 1.0, 0.0)
    """
    point, lo, hi, frac = bootstrap_intervals(np.asarray(hits, float)[None], snr, n_boot, level, rng, include_step)
    return float(point[0]), float(lo[0]), float(hi[0]), float(frac[0])


def bootstrap_intervals(hits: np.ndarray, snr: np.ndarray, n_boot: int, level: float, rng: np.random.Generator,
                        include_step: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`bootstrap_interval` of many lines: ``hits`` is ``(line, replicate, snr)`` of 0/1, every line with
    the same number of (done) replicates; returns four ``(line,)`` arrays.

    A line whose replicates all agree (always so with one replicate) is its own every resample, so its
    bootstrap is known without drawing: the interval is the crossing itself, widened to its step. The
    other lines are resampled one at a time (``n_boot`` draws of whole replicates each; a line's work is
    already one array operation, so batching lines gains nothing: ``benchmarks/front_door.py``).
    """
    snr = np.asarray(snr, dtype=float)
    rate = hits.mean(axis=1)                                                   # (line, snr)
    point = crossing(rate, snr)
    same = (hits == hits[:, :1]).all(axis=(1, 2))
    lo, hi = point.copy(), point.copy()                                        # the lines whose replicates agree
    censored = np.isnan(point).astype(float)
    tail = (1 - level) / 2
    for i in np.flatnonzero(~same):
        resampled = hits[i][rng.integers(0, hits.shape[1], size=(n_boot, hits.shape[1]))].mean(axis=1)
        boot = crossing(resampled, snr)
        gone = np.isnan(boot)
        ordered = np.where(gone, np.where(resampled[:, 0] >= 0.5, -np.inf, np.inf), boot)
        lo[i], hi[i] = np.quantile(ordered, [tail, 1 - tail], method="inverted_cdf")   # no inf - inf
        censored[i] = gone.mean()
    lo, hi = (np.where(np.isfinite(v), v, np.nan) for v in (lo, hi))
    if include_step:
        left, right = crossing_step(rate, snr)
        resolved = np.isfinite(point)
        lo = np.where(resolved, np.minimum(lo, left), lo)                      # NaN propagates
        hi = np.where(resolved, np.maximum(hi, right), hi)
    return point, lo, hi, censored
