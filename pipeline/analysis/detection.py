"""When a replicate "detects" an outlier: a test at a stated false-alarm level, or the margin rule by name.

**At a false-alarm level** ``alpha`` (the default, ``alpha = 0.05``): a replicate detects when its
tested eigenvalue exceeds the ``1 - alpha`` quantile of the predicted null distribution of
``lambda_1`` at the store's size (:mod:`rmtsweep.theory.null_law`, docs/theory.md §6.4): the cubic
bulk's ``kappa (lambda_+ + sigma_d q_{1-alpha})`` (Tracy-Widom), and where ``theory_law = 1`` the
realised-count null the store keeps (``finite_size_null_location`` / ``_scale``, made with its
theory), and at cells of fixed weights over ``T >= 2`` positions the null over the realised pooling
matrix (``pooled_null_location`` / ``_scale``). A store without the realised-count null at ``theory_law = 1``
cells (over the finite-size budget, or older) gets the cubic's threshold there, and :func:`threshold`'s
``uncalibrated_cells`` attr counts them; fixed weights over ``T >= 2`` without a pooled null (over its
budget, older stores) get the cubic's, as the limit theory does.

**Where no law exists at the store's size** (data-dependent weights over ``T >= 2``: finite-d attention,
:func:`rmtsweep.analysis.reference.no_law_cells`), a level's threshold is a Monte Carlo null
(docs/theory.md §3.7): the order statistic ``k = ceil((m + 1)(1 - alpha))`` of ``m`` null draws, which keeps
the false-alarm rate at most ``alpha`` for a draw exchangeable with them. The draws are the null replicates
the run scheduled for the cell (``null_eigenvalue``, :func:`scheduled_null`), independent of every regular
replicate; without enough of them, the cell's other done ``snr = 0`` replicates (leave-one-out,
:func:`monte_carlo_null`). With fewer than ``1/alpha - 1`` draws either way, detection there is NaN.
``detection_null`` (:data:`DETECTION_NULL_ATTRS`) says which null each cell used.

**The margin rule** (``margin_factor = f``): the tested eigenvalue exceeds ``kappa lambda_+ (1 + f
d^(-2/3))``; its false-alarm rate is whatever the cell's null gives (docs/theory.md §3.7).

The tested eigenvalue is ``lambda_1``, or on an uncentred table the eigenvalue of the top-k
eigenvector best aligned with ``u``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ..dims import D
from ..errors import UserError
from ..theory import finite_d
from ..theory.bulk import edge as bulk_edge
from ..theory.null_law import mixture_quantile, tw_threshold
from ..theory.grid import pooled_kurtosis
from ..store import stored_sweep
from ..store.pending import require_theory
from .mask import only_done
from .reference import data_dependent_cells, no_law_cells
from .source import open_source, store_name

__all__ = ["DETECTION_NULL_ATTRS", "FALSE_ALARM", "LAW", "MARGIN_FACTOR", "MONTE_CARLO", "NO_NULL", "SCHEDULED",
           "Detection", "d_of", "detected", "detection_margin", "detection_rule", "hits", "min_null_replicates",
           "monte_carlo_null", "null_rank", "replicate_hits", "scheduled_null", "signal_pair", "tested_eigenvalue",
           "theory_detection_rate", "threshold"]

FALSE_ALARM = 0.05
MARGIN_FACTOR = 1.0
EXACT = 1          # theory_law of the one-token cells (rmtsweep.theory.cell_law.EXACT)
LAW, MONTE_CARLO, NO_NULL, SCHEDULED = 0, 1, 2, 3     # detection_null: where a cell's threshold comes from
DETECTION_NULL_ATTRS = {
    "long_name": "null the detection threshold comes from: 0 a law at the store's size, 1 a Monte Carlo null from "
                 "the cell's other snr = 0 replicates (leave-one-out), 2 none (too few null replicates or no snr = 0 "
                 "on the grid: detection NaN), 3 a Monte Carlo null from the null replicates the run scheduled "
                 "(null_eigenvalue)",
    "flag_values": [LAW, MONTE_CARLO, NO_NULL, SCHEDULED],
    "flag_meanings": "law_at_store_size monte_carlo_null_from_snr0_replicates none_too_few_null_replicates "
                     "monte_carlo_null_from_scheduled_null_replicates",
    "units": "1"}


@dataclass(frozen=True)
class Detection:
    """A detection rule: ``false_alarm`` (a level in (0, 1)) or ``margin_factor`` (>= 0), exactly one set."""

    false_alarm: float | None = FALSE_ALARM
    margin_factor: float | None = None

    def __post_init__(self) -> None:
        if (self.false_alarm is None) == (self.margin_factor is None):
            raise UserError("detection: give exactly one of a false-alarm level and a margin factor")
        if self.false_alarm is not None and not 0.0 < self.false_alarm < 1.0:
            raise UserError(f"false-alarm level must be in (0, 1); got {self.false_alarm}")
        if self.margin_factor is not None and not self.margin_factor >= 0.0:
            raise UserError(f"margin factor must be >= 0; got {self.margin_factor}")

    def describe(self) -> str:
        """One line for attrs and summaries."""
        if self.false_alarm is not None:
            return (f"detected iff eigenvalue > the {1 - self.false_alarm:g} quantile of the predicted null "
                    f"lambda_1 at the store's size (false-alarm level {self.false_alarm:g}: the realised-count "
                    f"null where theory_law = 1, the realised pooling null for fixed weights over T >= 2 "
                    f"positions where the store has it, else Tracy-Widom at the cubic's edge; where no law "
                    f"exists, data-dependent weights over T >= 2, the order statistic of the cell's scheduled null "
                    f"replicates, else of its other snr = 0 replicates: detection_null)")
        return (f"detected iff eigenvalue > kappa lambda_+ + {self.margin_factor:g} kappa lambda_+ d^(-2/3) "
                f"(the margin rule; its false-alarm rate is not fixed)")

    def attrs(self) -> dict:
        """The rule as attrs (NaN-free: the unset field is absent)."""
        return {"detection": self.describe(),
                **({"false_alarm": self.false_alarm} if self.false_alarm is not None else {}),
                **({"margin_factor": self.margin_factor} if self.margin_factor is not None else {})}


def detection_rule(false_alarm: float | None = None, margin_factor: float | None = None) -> Detection:
    """The rule from the user's options: the margin rule if ``margin_factor`` is given, else the level (default
    0.05)."""
    if margin_factor is not None:
        if false_alarm is not None:
            raise UserError("give --false-alarm or --margin-factor, not both")
        return Detection(false_alarm=None, margin_factor=float(margin_factor))
    return Detection(false_alarm=FALSE_ALARM if false_alarm is None else float(false_alarm))


def d_of(ds: xr.Dataset) -> xr.DataArray | int:
    """The store's ``d``: its ``d`` coordinate (a DataArray, broadcast over ``d``) when ``d`` is a grid axis
    (or a value of it was selected), else the top-level ``attrs["d"]``."""
    return ds[D] if D in ds.coords else int(ds.attrs["d"])


def detection_margin(edge: xr.DataArray, d: xr.DataArray | int, margin_factor: float = MARGIN_FACTOR) -> xr.DataArray:
    """The margin rule's ``margin_factor * kappa lambda_+ * d^(-2/3)`` above the predicted edge."""
    return margin_factor * edge * d ** (-2.0 / 3.0)


def _null_quantiles(ds: xr.Dataset, alpha: float, name: str = "finite_size_null", draw: str = "count_draw"
                    ) -> xr.DataArray:
    """The ``1 - alpha`` quantile of a null the store keeps (units of kappa; lazy where the store is): the
    realised-count null per ``([d,] delta, gamma)``, or the pooled null (``pooled_null``, ``pool_draw``) per cell."""
    return xr.apply_ufunc(lambda lo, sc: mixture_quantile(1.0 - alpha, lo, sc), ds[f"{name}_location"],
                          ds[f"{name}_scale"], input_core_dims=[[draw, "null_candidate"]] * 2,
                          vectorize=True, dask="parallelized", output_dtypes=[float],
                          dask_gufunc_kwargs={"allow_rechunk": True})


def threshold(ds: xr.Dataset, d: xr.DataArray | int, rule: Detection, lazy: bool = False) -> xr.DataArray:
    """The detection threshold per cell, in the absolute units of the eigenvalues of ``S`` (module docstring).

    The cubic's at cells without a law (data-dependent weights over ``T >= 2``), where
    :func:`replicate_hits` replaces it by a Monte Carlo null. Lazy where the store's arrays are. Unless
    ``lazy``, its ``uncalibrated_cells`` attr counts the ``theory_law = 1`` cells that got the cubic's
    threshold (no realised-count null in the store); fixed weights over ``T >= 2`` without a pooled null
    get the cubic's too and are not counted.
    """
    edge = ds["theory_edge"]
    if rule.margin_factor is not None:
        out = edge + detection_margin(edge, d, rule.margin_factor)
        return out.assign_attrs(long_name="detection threshold kappa lambda_+ (1 + f d^(-2/3))",
                                units="same units as the eigenvalues of S")
    false_alarm = rule.false_alarm
    assert false_alarm is not None                          # a rule without a margin has a level
    # the cubic's kappa (lambda_+ + sigma_d q) as the store's own edge kappa lambda_+ times (1 + sigma_d q / lambda_+)
    delta, gamma = ds["delta"], ds["gamma"]
    lam = xr.apply_ufunc(bulk_edge, delta, gamma)
    cubic = edge * xr.apply_ufunc(tw_threshold, false_alarm, delta, gamma, d) / lam
    out, uncalibrated = cubic, 0
    kappa = ds["theory_kappa"] if "theory_kappa" in ds else edge / lam     # the nulls are in units of kappa
    if "pooled_null_location" in ds:
        out = (kappa * _null_quantiles(ds, false_alarm, "pooled_null", "pool_draw")).fillna(cubic)
    if "theory_law" in ds:
        exact = ds["theory_law"] == EXACT
        if "finite_size_null_location" in ds:
            quantile = _null_quantiles(ds, false_alarm)
            out = xr.where(exact, kappa * quantile, out).fillna(out)
            missing = exact & xr.where(exact, quantile, 0.0).isnull()
        else:
            missing = exact
        if not lazy:
            uncalibrated = int(missing.broadcast_like(cubic).sum())
    return out.assign_attrs(long_name=f"detection threshold: the {1 - false_alarm:g} quantile of the "
                                      "predicted null lambda_1", units="same units as the eigenvalues of S",
                            **({} if lazy else {"uncalibrated_cells": uncalibrated}))


def null_rank(m: int, alpha: float) -> int:
    """The rank ``k = ceil((m + 1)(1 - alpha))`` of the order statistic of ``m`` null draws used as threshold.

    A new draw exchangeable with the ``m`` exceeds their ``k``-th smallest with probability ``(m + 1 - k) /
    (m + 1) <= alpha`` (continuous draws). Valid only when ``k <= m``.

    Examples
    --------
    >>> null_rank(19, 0.05), null_rank(63, 0.05), null_rank(99, 0.01)
    (19, 61, 99)
    """
    return math.ceil((m + 1) * (1.0 - alpha) - 1e-9)    # the margin absorbs rounding of exact products


def min_null_replicates(alpha: float) -> int:
    """The fewest null draws whose order statistic keeps a false-alarm rate at most ``alpha``: ``1/alpha - 1``.

    Examples
    --------
    >>> min_null_replicates(0.05), min_null_replicates(0.01), min_null_replicates(0.3)
    (19, 99, 3)
    """
    m = 1
    while null_rank(m, alpha) > m:
        m += 1
    return m


def _leave_one_out(x0: np.ndarray, ok: np.ndarray, alpha: float) -> np.ndarray:
    """Per replicate: the ``null_rank`` order statistic of the other done replicates' ``x0``, NaN if too few."""
    out = np.full(x0.shape, np.nan)
    ok = ok & np.isfinite(x0)
    n = int(ok.sum())
    m = n - 1
    if m < min_null_replicates(alpha):
        return out
    k = null_rank(m, alpha)
    idx = np.flatnonzero(ok)
    order = idx[np.argsort(x0[idx], kind="stable")]
    s = x0[order]
    # without the replicate at sorted position j, the k-th smallest of the others is s[k-1] if j >= k, else s[k]
    out[order] = np.where(np.arange(n) >= k, s[k - 1], s[k])      # k <= m = n - 1, so s[k] exists
    return out


def _all_null(x0: np.ndarray, ok: np.ndarray, alpha: float) -> float:
    """The ``null_rank`` order statistic of every done replicate's ``x0`` (the threshold for a new draw)."""
    v = np.sort(x0[ok & np.isfinite(x0)])
    if v.size < min_null_replicates(alpha):
        return np.nan
    return float(v[null_rank(v.size, alpha) - 1])


def monte_carlo_null(tested: xr.DataArray, done: xr.DataArray, alpha: float
                     ) -> tuple[xr.DataArray, xr.DataArray]:
    """The Monte Carlo null threshold from a cell's own ``snr = 0`` replicates, at false-alarm level ``alpha``.

    Returns the threshold per replicate (dims of ``done``: the order statistic :func:`null_rank` of the
    *other* done replicates' tested eigenvalue at ``snr = 0``, so a replicate is never tested against
    itself) and per cell (of all done null replicates: the threshold a new draw would face). NaN where
    fewer than :func:`min_null_replicates` null draws are there. Lazy where ``tested`` is.
    """
    x0 = tested.sel(snr=0.0, drop=True)
    kw: dict[str, Any] = {"input_core_dims": [["replicate"], ["replicate"]], "vectorize": True, "dask": "parallelized",
          "output_dtypes": [float], "dask_gufunc_kwargs": {"allow_rechunk": True}}
    per_replicate = xr.apply_ufunc(_leave_one_out, x0, done, kwargs={"alpha": alpha},
                                   output_core_dims=[["replicate"]], **kw)
    per_cell = xr.apply_ufunc(_all_null, x0, done, kwargs={"alpha": alpha}, **kw)
    return per_replicate.transpose(*done.dims), per_cell


def scheduled_null(ds: xr.Dataset, alpha: float) -> xr.DataArray | None:
    """Per cell, the threshold from the null replicates the run scheduled (``null_eigenvalue``), or None without.

    The :func:`null_rank` order statistic of the cell's computed null draws: a regular replicate is independent
    of them, so its false-alarm rate is ``(m + 1 - k) / (m + 1) <= alpha``. NaN where fewer than
    :func:`min_null_replicates` are computed. Lazy where the store is.
    """
    if "null_eigenvalue" not in ds:
        return None
    x = ds["null_eigenvalue"]
    return xr.apply_ufunc(_all_null, x, x.notnull(), kwargs={"alpha": alpha},
                          input_core_dims=[["null_replicate"]] * 2, vectorize=True, dask="parallelized",
                          output_dtypes=[float], dask_gufunc_kwargs={"allow_rechunk": True})


def _null_kind(ds: xr.Dataset, rule: Detection) -> xr.DataArray | None:
    """Per ``(T, weights)``: True where no null law exists at the store's size (None: the rule needs none)."""
    if rule.false_alarm is None or "T" not in ds.dims or ds.attrs.get("table_centering", "class") != "class":
        return None
    if not bool(data_dependent_cells(ds).any()):      # from the coordinates: nothing lazy is computed
        return None
    no_law = no_law_cells(ds)
    if not isinstance(no_law.data, np.ndarray):         # lazy: which cells lack a law is known once computed
        return no_law
    return no_law if bool(no_law.any()) else None


def replicate_hits(ds: xr.Dataset, tested: xr.DataArray, done: xr.DataArray, d: xr.DataArray | int,
                   rule: Detection, lazy: bool = False) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray | None]:
    """Per replicate and SNR, whether ``tested`` clears the rule's threshold, with the threshold and its null.

    Cells with a law get :func:`threshold` unchanged. Cells without one (:func:`_null_kind`) get the threshold
    of their scheduled null replicates (:func:`scheduled_null`) where the store has enough, else
    :func:`monte_carlo_null`'s leave-one-out threshold, or NaN detection where both have too few draws (or
    the grid has no ``snr = 0``). Returns ``(hits, threshold per cell, detection_null or None)``; the
    last is None when every cell has a law (or the rule is the margin rule).
    """
    limit = threshold(ds, d, rule, lazy)
    no_law = _null_kind(ds, rule)
    if no_law is None:
        return hits(tested, limit, done), limit, None
    alpha = rule.false_alarm
    assert alpha is not None                              # _null_kind is None under the margin rule
    attrs = dict(limit.attrs)
    if 0.0 in ds["snr"].values:
        per_replicate, per_cell = monte_carlo_null(tested, done, alpha)
        enough = per_cell.notnull()
    else:
        per_replicate = per_cell = xr.full_like(done, np.nan, dtype=float).isel(replicate=0, drop=True)
        enough = per_cell.notnull()
    kind = xr.where(no_law, xr.where(enough, MONTE_CARLO, NO_NULL), LAW).astype(np.int8)
    scheduled = scheduled_null(ds, alpha)
    if scheduled is not None:        # the run's own null draws, where it has enough of them
        use = no_law & scheduled.notnull()
        kind = xr.where(use, SCHEDULED, kind).astype(np.int8)
        per_replicate, per_cell = xr.where(use, scheduled, per_replicate), xr.where(use, scheduled, per_cell)
    kind = kind.broadcast_like(per_cell).assign_attrs(DETECTION_NULL_ATTRS)
    out = xr.where(no_law, per_replicate, limit)            # law cells: the same threshold as before
    hit = only_done(tested > out, done).where(kind != NO_NULL)
    cell_limit = xr.where(no_law, per_cell, limit).assign_attrs(attrs)
    cell_limit.attrs["long_name"] = (attrs.get("long_name", "detection threshold") + "; where detection_null = 1, "
                                     "the order statistic of the cell's snr = 0 replicates (a new draw's threshold); "
                                     "where 3, that of its scheduled null replicates")
    return hit, cell_limit, kind


def hits(tested: xr.DataArray, limit: xr.DataArray, done: xr.DataArray) -> xr.DataArray:
    """1 where ``tested`` exceeds ``limit``, 0 where not, NaN for replicates not done."""
    return only_done(tested > limit, done)


def signal_pair(eig: xr.DataArray, ov: xr.DataArray) -> tuple[xr.DataArray, xr.DataArray, xr.DataArray]:
    """The top-k eigenpair best aligned with ``u`` (uncentred tables): its eigenvalue, alignment, index (lazy)."""
    best = ov.fillna(-1.0).argmax("k")
    return eig.where(eig["k"] == best + 1).max("k"), ov.where(ov["k"] == best + 1).max("k"), best


def tested_eigenvalue(ds: xr.Dataset) -> xr.DataArray:
    """``lambda_1``, or on an uncentred table the eigenvalue of the top-k eigenvector best aligned with ``u`` (lazy)."""
    eig = ds["eigenvalues"]
    if ds.attrs.get("table_centering", "class") == "none":
        return signal_pair(eig, ds["overlap"])[0]
    return eig.sel(k=1, drop=True)


def detected(source: str | Path | xr.Dataset, rule: Detection | None = None) -> xr.DataArray:
    """Per replicate and SNR: 1 where the tested eigenvalue clears the rule's threshold, 0 where not, NaN if not done.

    ``rule`` defaults to the false-alarm level 0.05. Lazy. Refuses a store whose theory at its size is not
    written yet (its threshold needs it).
    """
    ds = open_source(source)
    require_theory(ds.attrs, store_name(source), "detect")
    rule = rule or Detection()
    hit, _, kind = replicate_hits(ds, tested_eigenvalue(ds), ds["done"], d_of(ds), rule)
    return hit if kind is None else hit.assign_coords(detection_null=kind)


def theory_detection_rate(ds: xr.Dataset, d: xr.DataArray | int, rule: Detection | None = None,
                          lazy: bool = False) -> xr.DataArray:
    """The finite-d prediction of ``detection_rate`` under ``rule`` (class-centred tables; docs/theory.md §6.2).

    :func:`rmtsweep.theory.finite_d.detection_probability` at the store's ``theory_rho``, ``delta``,
    ``gamma`` and ``d`` with the store's ``theory_pooled_kurtosis``, at the rule's threshold (so at a
    false-alarm level it is that level at ``rho = 0``). The cubic law's: NaN where ``theory_law = 1``,
    whose finite-d outlier law is not derived yet (docs/theory.md §7).
    """
    rule = rule or Detection()
    # a store made before theory_pooled_kurtosis re-derives it from its sweep; one built by hand gets 0 (Gaussian)
    kurtosis = (ds["theory_pooled_kurtosis"] if "theory_pooled_kurtosis" in ds else pooled_kurtosis(
        stored_sweep("<store>", dict(ds.attrs))) if "sweep_canonical" in ds.attrs else 0.0)
    rho = ds["theory_rho"] if lazy else ds["theory_rho"].load()
    delta, gamma = ds["delta"], ds["gamma"]
    if rule.margin_factor is not None:
        p = xr.apply_ufunc(finite_d.detection_probability, rho, delta, gamma, d, rule.margin_factor, kurtosis,
                           dask="parallelized", output_dtypes=[float])
    else:
        t = xr.apply_ufunc(tw_threshold, rule.false_alarm, delta, gamma, d)
        p = xr.apply_ufunc(lambda r, dl, g, dd, k, th: finite_d.detection_probability(r, dl, g, dd, excess_kurtosis=k,
                                                                                      threshold=th),
                           rho, delta, gamma, d, kurtosis, t, dask="parallelized", output_dtypes=[float])
    if "theory_law" in ds:
        p = p.where(ds["theory_law"] != EXACT)
    return p.assign_attrs(long_name="finite-d prediction of the detection rate (Tracy-Widom edge, Gaussian "
                                    "outlier; derived, not fitted; NaN where theory_law = 1)", units="1")
