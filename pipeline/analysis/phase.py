"""The phase diagram as a table: per SNR line, the empirical transition with a bootstrap interval, and theory's.

A *line* is one ``(delta, gamma, T, weights)`` point swept along ``snr``. Its empirical transition
is where the detection rate (:func:`rmtsweep.analysis.compare.detected`) first crosses 1/2,
interpolated linearly between grid SNRs (:func:`~rmtsweep.analysis.compare.crossing`). The interval
is a percentile bootstrap over replicates: a replicate is resampled as a whole (all its SNR values
come from the same draws, so they are resampled together), the crossing is recomputed, and the
``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles are reported, widened where narrower to the grid
step in which the crossing is resolved (:func:`~rmtsweep.analysis.transition.bootstrap_interval`: the
grid cannot place the crossing inside a step, so a rate that jumps from 0 to 1 within one step gets
that step, not a point). A resample whose rate never reaches 1/2 on the grid (or starts above it) has
no crossing; ``censored_fraction`` says how many, and a bound that falls on such resamples is NaN
rather than a number the grid cannot support.
Beside it, the theory's population threshold ``theory_snr_population`` and finite-N sample
threshold ``theory_snr_sample`` (docs/theory.md §3.2), and the best prediction of the crossing at the
store's size (``theory_snr_best``, with ``theory_snr_best_source`` naming it): where the finite-d detection
model is derived (class-centred cells of the cubic law, docs/theory.md §6.2) the SNR where its predicted
detection rate under the same rule crosses 1/2 (``theory_snr_finite_d``), else the limit ``theory_snr_sample``.
``detection_null`` names the null of each line's threshold: lines without a law at the store's size use a
Monte Carlo null from their ``snr = 0`` replicates, or have none (then no transition: NaN, 0 replicates).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, cast

import numpy as np
import xarray as xr

from ..dims import TIDY_ORDER
from ..errors import ArgumentError
from ..store import Location
from ..store.pending import require_theory
from ..theory import finite_d, spikes
from ..theory.null_law import tw_threshold
from .compare import REFERENCES, d_of, detected, detection_rule, open_source
from .source import store_name, with_options
from .detection import LAW, MONTE_CARLO, NO_NULL, SCHEDULED, Detection
from .transition import bootstrap_intervals, crossing

if TYPE_CHECKING:
    import pandas

__all__ = ["COLUMNS", "finite_d_transition", "phase_diagram"]

COLUMNS = {
    "transition_snr": "SNR where the detection rate crosses 1/2 (all done replicates; NaN if censored)",
    "ci_low": "lower bound: the bootstrap percentile bound, at most the grid SNR below the crossing (NaN if it "
              "falls on censored resamples)",
    "ci_high": "upper bound: the bootstrap percentile bound, at least the grid SNR above the crossing (NaN if it "
               "falls on censored resamples)",
    "censored_fraction": "fraction of bootstrap resamples with no crossing on the SNR grid",
    "n_replicates": "done replicates on the line",
    "theory_snr_population": "theory: population threshold (outlier appears as N -> infinity)",
    "theory_snr_sample": "theory: sample threshold at the sweep's gamma (finite N, d -> infinity)",
    "theory_snr_finite_d": "theory at the store's d: SNR where the finite-d detection model's rate under the same "
                           "rule crosses 1/2 (class-centred cells of the cubic law; NaN elsewhere)",
    "theory_snr_best": "the best prediction of transition_snr: theory_snr_finite_d where defined, else "
                       "theory_snr_sample (reference='limit': theory_snr_sample)",
    "theory_snr_best_source": "which prediction theory_snr_best is: finite_d or limit",
    "snr_min": "smallest SNR on the grid", "snr_max": "largest SNR on the grid",
    "detection_null": "where the line's detection threshold comes from: law (a null law at the store's size), "
                      "monte_carlo (the line's other snr = 0 replicates, leave-one-out), scheduled (the null "
                      "replicates the run scheduled) or none (too few null replicates: no detection, transition NaN)",
}
NULL_NAMES = {LAW: "law", MONTE_CARLO: "monte_carlo", NO_NULL: "none", SCHEDULED: "scheduled"}


def finite_d_transition(rho_per_snr: float, delta: float, gamma: float, d: int, rule: Detection,
                        excess_kurtosis: float = 0.0) -> float:
    """SNR where :func:`rmtsweep.theory.finite_d.detection_probability` under ``rule`` crosses 1/2 at size ``d``.

    ``rho_per_snr`` is ``alpha / kappa``. NaN where the prediction does not cross 1/2 on ``(0, 4 rho_c]``.

    Examples
    --------
    >>> t = finite_d_transition(1.0, 0.5, 0.5, 400, Detection(false_alarm=0.05))
    >>> bool(float(spikes.sample_threshold(0.5, 0.5)) < t < 1.3 * float(spikes.sample_threshold(0.5, 0.5)))
    True
    """
    rc = float(spikes.sample_threshold(delta, gamma))
    rho = np.linspace(0.0, 4.0 * rc, 4001)[1:]
    if rule.false_alarm is not None:
        p = finite_d.detection_probability(rho, delta, gamma, d, excess_kurtosis=excess_kurtosis,
                                           threshold=tw_threshold(rule.false_alarm, delta, gamma, d))
    else:                                       # a margin rule: Detection sets exactly one of the two
        p = finite_d.detection_probability(rho, delta, gamma, d, cast(float, rule.margin_factor), excess_kurtosis)
    return float(crossing(p, rho)) / rho_per_snr


def _best_transition(ds: xr.Dataset, table: pandas.DataFrame, rule: Detection,
                     reference: str) -> None:
    """The columns ``theory_snr_finite_d``, ``theory_snr_best`` and ``theory_snr_best_source`` of ``table``."""
    covered = ds.attrs.get("table_centering", "class") == "class" and "theory_alpha" in ds
    d = d_of(ds)
    out = np.full(len(table), np.nan)
    for i, row in enumerate(table.itertuples(index=False)) if covered else ():
        at = {"T": row.T, "weights": row.weights}
        if "theory_law" in ds and int(ds["theory_law"].sel(at)) == 1:   # the exact finite-T law: not derived
            continue
        kurt = float(ds["theory_pooled_kurtosis"].sel(at)) if "theory_pooled_kurtosis" in ds else 0.0
        ratio = float(ds["theory_alpha"].sel(at)) / float(ds["theory_kappa"].sel(at))
        dd = int(row.d) if hasattr(row, "d") else int(d)
        out[i] = finite_d_transition(ratio, float(row.delta), float(row.gamma), dd, rule, kurt)
    table["theory_snr_finite_d"] = out
    use = np.isfinite(out) & (reference == "best")
    table["theory_snr_best"] = np.where(use, out, table["theory_snr_sample"].values)
    table["theory_snr_best_source"] = np.where(use, "finite_d", "limit")


def phase_diagram(source: str | Path | Location | xr.Dataset, n_boot: int = 1000, level: float = 0.95, seed: int = 0, *,
                  false_alarm: float | None = None, margin_factor: float | None = None, reference: str = "best",
                  storage_options: dict | None = None) -> pandas.DataFrame:
    """The transition curves of a store as a tidy table, one row per SNR line.

    Parameters
    ----------
    source
        A store path or an opened store dataset.
    n_boot
        Bootstrap resamples of the replicates per line.
    level
        Coverage of the percentile interval.
    seed
        Seed of the resampling (the table is reproducible).
    false_alarm, margin_factor
        The detection rule, as in :func:`rmtsweep.analysis.compare.compare` (default: level 0.05).
    reference
        ``"best"`` (default): ``theory_snr_best`` is the finite-d prediction where it is derived;
        ``"limit"``: the limit ``theory_snr_sample`` everywhere (the other columns are the same).
    storage_options
        For a store at a URL (``s3://bucket/run.zarr``): the options of its filesystem (``endpoint_url``,
        credentials, ...); credentials and endpoint also come from the environment.

    Returns
    -------
    pandas.DataFrame
        The line's coordinates, then :data:`COLUMNS`; ``attrs`` hold the method and its settings.

    Raises
    ------
    StoreError
        When the store's theory at its size is not written yet (``theory_pending``): detection needs it.

    Examples
    --------
    >>> table = phase_diagram("store/demo.zarr", n_boot=200)          # doctest: +SKIP
    >>> table[["delta", "gamma", "weights", "transition_snr", "ci_low", "ci_high"]]  # doctest: +SKIP
    """
    import pandas as pd

    if n_boot < 1 or not 0 < level < 1:
        raise ArgumentError(f"n_boot must be >= 1 and level in (0, 1); got {n_boot} and {level}")
    if reference not in REFERENCES:
        raise ArgumentError(f"reference {reference!r}: unknown (valid: {', '.join(REFERENCES)})")
    rule = detection_rule(false_alarm, margin_factor)
    source = with_options(source, storage_options)
    ds = open_source(source)
    require_theory(ds.attrs, store_name(source), "make its phase diagram")
    hits = detected(ds, rule).load()
    snr = hits["snr"].values.astype(float)
    line_dims = [d for d in TIDY_ORDER if d in hits.dims and d not in ("snr", "replicate")]
    hits = hits.transpose(*line_dims, "replicate", "snr")
    H = hits.values.reshape(-1, *hits.shape[-2:])                   # (line, replicate, snr)
    done = np.isfinite(H).all(axis=-1)                              # the done replicates of each line
    n_done = done.sum(axis=1)
    columns = {name: np.full(H.shape[0], np.nan) for name in ("transition_snr", "ci_low", "ci_high",
                                                              "censored_fraction")}
    rng = np.random.default_rng(seed)
    for n in np.unique(n_done[n_done > 0]):                         # lines with as many done replicates at once
        lines = np.flatnonzero(n_done == n)
        h = H[lines][done[lines]].reshape(lines.size, int(n), snr.size)
        for name, values in zip(columns, bootstrap_intervals(h, snr, n_boot, level, rng), strict=True):
            columns[name][lines] = values
    index = pd.MultiIndex.from_product([hits[d].values for d in line_dims], names=line_dims)
    table = pd.DataFrame({**columns, "n_replicates": n_done}, index=index).reset_index()
    for name in ("theory_snr_population", "theory_snr_sample"):
        th = ds[name].load()
        table[name] = th.broadcast_like(hits.isel(replicate=0, snr=0, drop=True)).transpose(*line_dims).values.ravel()
    _best_transition(ds, table, rule, reference)
    table["snr_min"], table["snr_max"] = snr.min(), snr.max()
    kind = hits.coords.get("detection_null")
    table["detection_null"] = (np.full(len(table), NULL_NAMES[LAW]) if kind is None else
                               [NULL_NAMES[int(v)] for v in kind.broadcast_like(
                                   hits.isel(replicate=0, snr=0, drop=True)).transpose(*line_dims).values.ravel()])
    table.attrs = {"method": f"percentile bootstrap over replicates, {n_boot} resamples, level {level}, seed {seed}, "
                                 "widened to the grid step of the crossing",
                   **rule.attrs(), "reference": reference, "columns": COLUMNS}
    return table
