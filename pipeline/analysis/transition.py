"""Where a detection rate first crosses 1/2 along ``snr``: the empirical transition (docs/theory.md §3.7)."""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["bootstrap_crossings", "crossing", "transition_snr"]


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
    for idx in zip(*np.nonzero(gappy)):
        keep = np.isfinite(rate[idx])
        out[idx] = crossing(rate[idx][keep], np.asarray(snr)[keep])
    return out


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
