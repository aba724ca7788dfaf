"""Cells without a null law (finite-d attention over T >= 2): a Monte Carlo null from the store's snr = 0 replicates."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.analysis.compare import compare, summary
from rmtsweep.analysis.detection import LAW, MONTE_CARLO, NO_NULL, SCHEDULED
from rmtsweep.analysis.phase import phase_diagram
from rmtsweep.analysis.maps.plot import map_data
from rmtsweep import open_store
from tests.helpers import build_store

ALPHA = 0.05
ATTENTION = [{"scheme": "attention", "tau": 1.0}, {"scheme": "attention", "tau": 1.0, "scale": "sqrt_d"}]
SWEEP = {"name": "mc-null", "d": 30, "replicates": 60, "replicates_per_task": 20, "seed": 3, "top_k": 1,
         "null_replicates": 0, "correlation": {"model": "prefix", "L": 2}, "table_centering": "class",
         "grid": {"delta": [0.5, 1.0], "gamma": [1.0], "snr": [0.0, 4.0], "T": [2], "weights": ATTENTION}}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcnull")
    first = build_store(root / "first.zarr", SWEEP)
    new = build_store(root / "new.zarr", {**SWEEP, "name": "mc-null-new", "seed": 4, "replicates": 100,
                                          "grid": {**SWEEP["grid"], "snr": [0.0]}})
    return first, new


def test_cells_without_a_law_use_the_order_statistic_of_their_null_replicates(stores):
    first, _ = stores
    cmp = compare(first)
    assert (cmp["detection_null"] == MONTE_CARLO).all()
    assert cmp["detection_null"].attrs["flag_values"] == [LAW, MONTE_CARLO, NO_NULL, SCHEDULED]
    assert len(cmp["detection_null"].attrs["flag_meanings"].split()) == 4
    lam = open_store(first)["eigenvalues"].sel(k=1, snr=0.0)
    n = SWEEP["replicates"]
    k = int(np.ceil((n + 1) * (1 - ALPHA)))                       # 58 of 60
    expected = np.sort(lam.values, axis=-1)[..., k - 1]
    assert np.allclose(cmp["detection_threshold"].values, expected, rtol=1e-12)
    # leave-one-out at snr = 0: a replicate fires iff it is among the top n - k' of all n (k' = ceil(n (1 - alpha)))
    assert np.allclose(cmp["detection_rate"].sel(snr=0.0).values, (n - np.ceil(n * (1 - ALPHA))) / n)
    text = summary(cmp)
    assert "0 cells a law at the store's size, 4 a Monte Carlo null" in text
    assert "left out of the false-alarm count" in text


def test_the_monte_carlo_threshold_keeps_the_level_on_new_null_replicates(stores):
    """New snr = 0 replicates (another seed) exceed the first store's threshold in about alpha of the draws.

    The tolerance is 3 standard errors of the pooled rate: the new draws' binomial one, plus the threshold's
    own randomness (the exceedance probability of an order statistic is Beta(n + 1 - k, k), variance about
    alpha (1 - alpha) / (n + 2) per cell, averaged over the cells).
    """
    first, new = stores
    limit = compare(first)["detection_threshold"]
    lam = open_store(new)["eigenvalues"].sel(k=1, snr=0.0, drop=True)
    hits = (lam > limit).values
    rate, draws, cells = float(hits.mean()), hits.size, limit.size
    n = SWEEP["replicates"]
    se = np.sqrt(ALPHA * (1 - ALPHA) * (1 / draws + 1 / ((n + 2) * cells)))
    assert abs(rate - ALPHA) <= 3 * se, (rate, se)


@pytest.mark.parametrize(("snr", "replicates"), [([2.0, 4.0], 25), ([0.0, 4.0], 6)])
def test_without_enough_null_replicates_detection_is_absent(tmp_path, snr, replicates):
    """No snr = 0 on the grid, or fewer than 1/alpha replicates: no null, NaN detection, no transition."""
    data = {**SWEEP, "replicates": replicates, "replicates_per_task": replicates,
            "grid": {**SWEEP["grid"], "delta": [0.5], "snr": snr, "weights": ["mean", ATTENTION[0]]}}
    path = build_store(tmp_path / "few.zarr", data)
    cmp = compare(path)
    kind = cmp["detection_null"].isel(delta=0, gamma=0, T=0)
    assert kind.values.tolist() == [LAW, NO_NULL]
    att = cmp.sel(weights="attention(tau=1)")
    for name in ("detection_rate", "empirical_phase", "phase_agrees", "transition_snr_empirical"):
        assert att[name].isnull().all(), name
    assert cmp["detection_rate"].sel(weights="mean").notnull().all()
    assert "1 none" in summary(cmp) and "detection rate, phase and transition are NaN there" in summary(cmp)
    table = phase_diagram(path, n_boot=50).set_index("weights")
    assert table.loc["attention(tau=1)", "detection_null"] == "none"
    assert np.isnan(table.loc["attention(tau=1)", "transition_snr"])
    assert table.loc["attention(tau=1)", "n_replicates"] == 0
    assert table.loc["mean", "detection_null"] == "law" and table.loc["mean", "n_replicates"] == replicates
    da, _ = map_data(path, "detection_rate")
    assert "blank where too few null replicates" in da.attrs["caption"]
    from rmtsweep.analysis.live import live_map
    from rmtsweep.store import open_store
    shown = live_map(open_store(path), "detection_rate", "delta", "gamma", {"weights": "attention(tau=1)", "snr": 4.0})
    assert shown.figure is None and "too few null replicates" in shown.summary


def test_the_live_map_of_a_plane_without_snr_0_uses_the_null_beside_it(stores):
    """A live map at snr = 4 reads the Monte Carlo null from the store's snr = 0, which its plane leaves out."""
    from rmtsweep.analysis.live import live_map
    from rmtsweep.store import open_store

    first, _ = stores
    shown = live_map(open_store(first), "detection_rate", "delta", "weights", {"snr": 4.0})
    assert shown.figure is not None, shown.summary
    assert "4 of 4 cells with a value" in shown.summary
    expected = compare(first)["detection_rate"].sel(snr=4.0).mean()
    assert f"mean {float(expected):.4g}" in shown.summary


def test_the_tracy_widom_prediction_is_not_held_against_a_monte_carlo_null(stores):
    """theory_detection_rate predicts the Tracy-Widom test: NaN at cells tested against another null."""
    cmp = compare(stores[0])
    assert cmp["theory_detection_rate"].isnull().all()
    assert "detection rate within 3 binomial sigma" not in summary(cmp)
