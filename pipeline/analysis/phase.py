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
threshold ``theory_snr_sample`` (docs/theory.md §3.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from ..dims import TIDY_ORDER
from ..errors import ArgumentError
from .compare import detected, detection_rule, open_source
from .transition import bootstrap_intervals

if TYPE_CHECKING:
    import pandas

__all__ = ["COLUMNS", "phase_diagram"]

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
    "snr_min": "smallest SNR on the grid", "snr_max": "largest SNR on the grid",
}


def phase_diagram(source: str | Path | xr.Dataset, n_boot: int = 1000, level: float = 0.95, seed: int = 0, *,
                  false_alarm: float | None = None, margin_factor: float | None = None
                  ) -> pandas.DataFrame:
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

    Returns
    -------
    pandas.DataFrame
        The line's coordinates, then :data:`COLUMNS`; ``attrs`` hold the method and its settings.

    Examples
    --------
    >>> table = phase_diagram("store/demo.zarr", n_boot=200)          # doctest: +SKIP
    >>> table[["delta", "gamma", "weights", "transition_snr", "ci_low", "ci_high"]]  # doctest: +SKIP
    """
    import pandas as pd

    if n_boot < 1 or not 0 < level < 1:
        raise ArgumentError(f"n_boot must be >= 1 and level in (0, 1); got {n_boot} and {level}")
    rule = detection_rule(false_alarm, margin_factor)
    ds = open_source(source)
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
    table["snr_min"], table["snr_max"] = snr.min(), snr.max()
    table.attrs = {"method": f"percentile bootstrap over replicates, {n_boot} resamples, level {level}, seed {seed}, "
                                 "widened to the grid step of the crossing",
                   **rule.attrs(), "columns": COLUMNS}
    return table
