"""The phase-diagram table: its transition is the crossing of the detection rate, its interval covers."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from rmtsweep.analysis.phase import COLUMNS, phase_diagram

SNR = np.linspace(0.0, 3.0, 13)
D = 400


def synthetic(p: np.ndarray, replicates: int, seed: int, done_frac: float = 1.0) -> xr.Dataset:
    """A store-like dataset whose replicates detect with probability ``p[line, snr]``, independently.

    The tested eigenvalue is put 1 above the edge plus margin for a detection, 1 below the edge
    otherwise, so the detection rule of the comparison sees exactly the drawn Bernoulli hits.
    """
    rng = np.random.default_rng(seed)
    lines = p.shape[0]
    hits = rng.random((lines, replicates, SNR.size)) < p[:, None, :]
    edge = np.full(lines, 4.0)
    margin = edge * D ** (-2 / 3)
    lam1 = np.where(hits, (edge + margin + 1.0)[:, None, None], (edge - 1.0)[:, None, None])
    eig = np.stack([lam1, lam1 - 5.0], axis=-1)
    coords = {"delta": np.arange(lines) / 10 + 0.1, "replicate": np.arange(replicates), "snr": SNR, "k": [1, 2]}
    done = rng.random((lines, replicates)) < done_frac
    return xr.Dataset(
        {"eigenvalues": (("delta", "replicate", "snr", "k"), eig),
         "overlap": (("delta", "replicate", "snr", "k"), np.zeros_like(eig)),
         "done": (("delta", "replicate"), done),
         "theory_edge": (("delta",), edge),
         "theory_snr_population": (("delta",), np.full(lines, 1.0)),
         "theory_snr_sample": (("delta",), np.full(lines, 1.5))},
        coords=coords, attrs={"d": D, "table_centering": "class"})


def logistic(center: float, width: float = 0.35) -> np.ndarray:
    return 1 / (1 + np.exp(-(SNR - center) / width))


def test_the_transition_is_the_first_upward_crossing_of_one_half_of_the_done_replicates_rate():
    ds = synthetic(np.stack([logistic(1.2), logistic(2.0)]), replicates=40, seed=1, done_frac=0.7)
    table = phase_diagram(ds, n_boot=50, margin_factor=1.0)
    for i, row in table.iterrows():
        hits = (ds["eigenvalues"].isel(delta=i, k=0) > 5).values[ds["done"].isel(delta=i).values]
        rate = hits.mean(axis=0)                                     # by hand, done replicates only
        j = int(np.argmax(rate >= 0.5))
        expected = SNR[j - 1] + (0.5 - rate[j - 1]) * (SNR[j] - SNR[j - 1]) / (rate[j] - rate[j - 1])
        assert row.transition_snr == pytest.approx(expected)
        assert row.n_replicates == hits.shape[0]
        assert row.ci_low <= row.transition_snr <= row.ci_high
    assert list(table.columns) == ["delta", *COLUMNS]
    assert (table.theory_snr_population == 1.0).all() and (table.theory_snr_sample == 1.5).all()


@pytest.mark.slow
def test_the_bootstrap_interval_covers_the_true_crossing_at_its_level():
    """Over 300 lines with a known detection curve, the 90 % interval covers the truth ~90 % of the time.

    The estimand is the crossing of the linear interpolation of the true rate on the grid (what the
    estimator converges to); the percentile bootstrap's coverage is binomially consistent with
    its level: |covered - 0.90| < 3 binomial s.e. + 0.03 (the bootstrap's own small-sample bias).
    """
    centers = np.random.default_rng(5).uniform(0.8, 2.2, 300)
    p = np.stack([logistic(c) for c in centers])
    truth = np.array([np.interp(0.5, row, SNR) for row in p])    # the rate is increasing: invert it
    table = phase_diagram(synthetic(p, replicates=64, seed=6), n_boot=400, level=0.9, seed=7, margin_factor=1.0)
    covered = ((table.ci_low <= truth) & (truth <= table.ci_high)).mean()
    se = np.sqrt(0.9 * 0.1 / len(truth))
    assert abs(covered - 0.9) < 3 * se + 0.03, f"coverage {covered:.3f}"
    assert table.censored_fraction.max() < 0.05


def test_a_line_that_never_reaches_one_half_has_no_transition_and_an_open_interval():
    ds = synthetic(np.stack([np.full(SNR.size, 0.1), logistic(-5.0)]), replicates=30, seed=2)
    table = phase_diagram(ds, n_boot=100, margin_factor=1.0)
    never, always = table.iloc[0], table.iloc[1]
    assert np.isnan(never.transition_snr) and never.censored_fraction == 1.0
    assert np.isnan(never.ci_low) and np.isnan(never.ci_high)
    assert np.isnan(always.transition_snr) and always.censored_fraction == 1.0      # above 1/2 from the start


def test_the_table_is_reproducible_from_its_seed_and_bad_settings_are_refused():
    ds = synthetic(np.stack([logistic(1.5)]), replicates=20, seed=3)
    assert phase_diagram(ds, n_boot=100, seed=4, margin_factor=1.0).equals(phase_diagram(ds, n_boot=100, seed=4, margin_factor=1.0))
    with pytest.raises(ValueError, match=r"n_boot must be >= 1 and level in \(0, 1\); got 100 and 1.5"):
        phase_diagram(ds, n_boot=100, level=1.5)
