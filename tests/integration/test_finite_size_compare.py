"""The comparison's finite-size (T = 1, and fixed weights over T >= 2) and d -> infinity variables on small real stores."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import xarray as xr

from rmtsweep import compare
from rmtsweep.model.correlation import IID
from rmtsweep.theory.finite_t import outlier, poisson_law
from rmtsweep.theory.pooled_spikes import pooled_spikes
from rmtsweep.theory.token_counts import realised_count_spikes
from tests.helpers import BASE, build_store

ONE_TOKEN = {**copy.deepcopy(BASE), "name": "one-token", "d": 40, "replicates": 4, "correlation": {"model": "iid"},
             "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0, 3.0, 6.0], "T": [1, 4], "weights": ["mean"]}}


def test_finite_size_variables_come_from_the_counts_at_one_token_and_the_pooling_matrix_beyond(tmp_path):
    """finite_size_* equal realised_count_spikes at the store's d (times kappa) at T = 1 and pooled_spikes at
    T = 4 (mean weights), each recomputed here from the theory module; finite_size_law names which."""
    store = build_store(tmp_path / "s.zarr", ONE_TOKEN)
    cmp = compare(store)
    snr = np.array([0.0, 3.0, 6.0])
    fs = realised_count_spikes(snr, 0.5, 0.5, 40, draws=64)
    at1 = cmp.sel(delta=0.5, gamma=0.5, T=1, weights="mean")
    assert np.allclose(at1["finite_size_overlap"], fs.overlap)
    assert np.allclose(at1["finite_size_lambda1"], fs.lambda1)           # kappa = 1 at T = 1
    pooled = pooled_spikes(snr, np.full(4, 0.25), IID(), 0.5, 0.5, 40)
    at4 = cmp.sel(delta=0.5, gamma=0.5, T=4, weights="mean")
    assert np.allclose(at4["finite_size_overlap"], pooled.overlap, rtol=1e-9)
    assert np.allclose(at4["finite_size_lambda1"], 0.25 * pooled.lambda1, rtol=1e-9)   # kappa = 1/4
    assert xr.open_zarr(store)["finite_size_law"].sel(weights="mean").values.tolist() == [1, 2]
    for z in (at1["finite_size_lambda1_z"], at4["finite_size_lambda1_z"]):
        assert np.all(np.isfinite(z.sel(snr=[3.0, 6.0])))


def test_limit_variables_on_a_d_axis(tmp_path):
    """Three d values: every line gets lambda1_limit and overlap_limit with errors; far above the
    threshold lambda_1 extrapolates to the limit theory within 4 of its standard errors."""
    data = {**copy.deepcopy(ONE_TOKEN), "name": "d-axis", "replicates": 8}
    data.pop("d")
    data["grid"] = {**data["grid"], "d": [20, 40, 80], "T": [1], "snr": [0.0, 8.0, 12.0]}
    cmp = compare(build_store(tmp_path / "d.zarr", data))
    for name in ("lambda1", "overlap"):
        for suffix in ("_limit", "_limit_sem", "_limit_z", "_limit_chi2"):
            assert f"{name}{suffix}" in cmp and "d" not in cmp[f"{name}{suffix}"].dims
    assert "transition_snr_limit" in cmp and "transition_snr_sem" in cmp
    top = cmp.sel(snr=12.0, T=1, weights="mean", delta=0.5, gamma=0.5)
    loc, _ = outlier(np.array([12.0]), poisson_law(0.5, 0.5), 0.5)
    assert float(top["limit_lambda1_theory"]) == pytest.approx(loc[0], rel=1e-9)    # kappa = 1; the exact T = 1 law
    z = (float(top["lambda1_limit"]) - loc[0]) / float(top["lambda1_limit_sem"])
    assert abs(z - float(top["lambda1_limit_z"])) < 1e-9 and abs(z) < 4


def test_the_transition_limit_takes_the_exponent_of_the_stores_own_prediction(tmp_path):
    """On a d axis at T = 4 the exponent is the slope of theory_detection_rate's crossings of 1/2 over log d,
    recomputed here from the comparison's own rates (interpolated on the store's SNR grid)."""
    data = {**copy.deepcopy(ONE_TOKEN), "name": "d-exponent", "replicates": 4}
    data.pop("d")
    data["grid"] = {**data["grid"], "d": [20, 40, 80], "T": [4], "snr": [0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 9.0]}
    cmp = compare(build_store(tmp_path / "e.zarr", data))
    line = cmp.sel(T=4, weights="mean", delta=0.5, gamma=0.5)
    rate, snr = line["theory_detection_rate"].transpose("d", "snr").values, line["snr"].values
    t_inf = float(line["transition_snr_theory"].max())
    t = np.array([np.interp(0.5, r, snr) if r[0] < 0.5 <= r[-1] else np.nan for r in rate])
    ok = np.isfinite(t) & (t > t_inf)
    assert ok.sum() >= 2
    slope = -np.polyfit(np.log(line["d"].values[ok].astype(float)), np.log(t[ok] - t_inf), 1)[0]
    assert float(line["transition_snr_limit_exponent"]) == pytest.approx(slope, rel=1e-6)


def test_finite_d_figure(tmp_path):
    """Figure (g) is drawn for a store with three d values, and its note states the comparison's limit."""
    from rmtsweep.analysis.figures import figures

    data = {**copy.deepcopy(ONE_TOKEN), "name": "d-fig", "replicates": 8}
    data.pop("d")
    data["grid"] = {**data["grid"], "d": [20, 40, 80], "T": [1], "snr": [0.0, 2.0, 3.0, 4.0, 6.0, 8.0]}
    store = build_store(tmp_path / "f.zarr", data)
    files, notes = figures([store], tmp_path / "figs")
    png = [f for f in files if f.name == "fig-g-finite-d.png"]
    assert png and png[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    lim = float(compare(store)["transition_snr_limit"].squeeze())
    note = next(n for n in notes if "transition limit" in n)
    assert (f"transition limit {lim:.3f}" in note) if np.isfinite(lim) else ("transition limit nan" in note)


def test_the_transition_limit_says_where_it_is_not_to_be_trusted(tmp_path):
    """On a d axis the limit's trust flag and edge exponent appear per line: at T = 1 (T_eff = 1 < 3) the flag
    has its short-length bit and the summary says so; at T = 16 with mean weights (T_eff = 16, the cubic) the
    edge is a square root over the sweep's window and neither bit is set."""
    from rmtsweep.analysis.compare import summary

    data = {**copy.deepcopy(ONE_TOKEN), "name": "d-trust", "replicates": 16}
    data.pop("d")
    data["grid"] = {**data["grid"], "d": [20, 40, 80], "T": [1, 16], "snr": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]}
    cmp = compare(build_store(tmp_path / "t.zarr", data))
    trust, edge = cmp["transition_snr_limit_trust"], cmp["transition_snr_limit_edge_exponent"]
    assert "d" not in trust.dims and "d" not in edge.dims
    assert list(trust.attrs["flag_masks"]) == [1, 2, 4] and "T_eff < 3" in trust.attrs["description"]
    one, long = (cmp.sel(delta=0.5, gamma=0.5, T=t, weights="mean") for t in (1, 16))
    assert np.isfinite(float(one["transition_snr_limit"])) and np.isfinite(float(long["transition_snr_limit"]))
    assert int(one["transition_snr_limit_trust"]) & 1 and not int(long["transition_snr_limit_trust"]) & 3
    # a square root; the window (5-14 % of the edge at d = 80 ... 20) reaches where the cubic's curvature shows
    assert float(long["transition_snr_limit_edge_exponent"]) == pytest.approx(0.5, abs=0.1)
    row = next(line for line in summary(cmp).splitlines() if "T=1 weights=mean  transition_snr_limit" in line)
    assert "not trusted: short effective length" in row
