"""The comparison, the maps and the phase table hold the simulation against the store's best prediction."""

from __future__ import annotations

import re

import numpy as np
import pytest

from rmtsweep.analysis.compare import compare
from rmtsweep.analysis.detection import Detection
from rmtsweep.analysis.phase import finite_d_transition, phase_diagram
from rmtsweep.analysis.maps.plot import map_data, map_figure
from tests.integration.test_compare import SNR, synthetic

FINITE = 0.3    # the finite-size prediction sits this far below the limit's in the synthetic store
FINITE_SE = 0.002


def _with_finite_size(ds):
    """The synthetic store with ``finite_size_*`` at the mean weights only (NaN at the others)."""
    has = (ds["weights"] == "mean")
    out = ds.copy()
    for name, limit in (("lambda1", "theory_outlier"), ("overlap", "theory_overlap")):
        out[f"finite_size_{name}"] = (ds[limit] - FINITE).where(has)
        out[f"finite_size_{name}_se"] = (0 * ds[limit] + FINITE_SE).where(has)
    return out


def test_z_is_against_the_finite_size_prediction_where_stored_and_the_limit_by_name():
    ds = _with_finite_size(synthetic())
    best, limit = compare(ds), compare(ds, reference="limit")
    for name, th in (("lambda1", "theory_outlier"), ("overlap", "theory_overlap")):
        mean = best.sel(weights="mean")
        assert np.allclose(mean[f"{name}_theory"], ds[th].sel(weights="mean").squeeze() - FINITE)
        se = np.sqrt(mean[f"{name}_sem"] ** 2 + FINITE_SE**2)
        assert np.allclose(mean[f"{name}_z"], (mean[f"{name}_mean"] - mean[f"{name}_theory"]) / se, equal_nan=True)
        assert int(mean[f"{name}_reference"].min()) == 1
        opt = best.sel(weights="optimal")          # no finite-size prediction: the limit
        assert np.allclose(opt[f"{name}_theory"], ds[th].sel(weights="optimal").squeeze())
        assert int(opt[f"{name}_reference"].max()) == 0
        # the limit comparison stays, by name and by keyword, and equals the old one
        assert np.allclose(best[f"limit_{name}_z"], limit[f"{name}_z"], equal_nan=True)
        assert np.allclose(limit[f"{name}_theory"].squeeze(), ds[th].squeeze().transpose("weights", "snr"))
        assert "best prediction" in best[f"{name}_z"].attrs["long_name"]
        assert "limit" in limit[f"{name}_z"].attrs["long_name"]
    assert best.attrs["reference"] == "best" and limit.attrs["reference"] == "limit"
    with pytest.raises(Exception, match="reference"):
        compare(ds, reference="nearest")


def test_the_map_says_which_prediction_and_what_a_dark_cell_means():
    ds = _with_finite_size(synthetic())
    for var, words in (("lambda1_z", "best prediction"), ("limit_lambda1_z", "d -> infinity limit")):
        da, store = map_data(ds, var)
        fig = map_figure(da.rename(var), store, "snr", "weights")
        assert words in fig.title
        assert fig.caption.startswith("dark cell") and "|z| >= 3" in fig.caption
    da, store = map_data(ds, "limit_lambda1_z")
    assert "Tracy-Widom" in map_figure(da.rename("x"), store, "snr", "weights").caption
    da, store = map_data(ds, "overlap_mean")
    assert map_figure(da.rename("overlap_mean"), store, "snr", "weights").caption == ""


def test_the_phase_table_gives_the_finite_d_transition_as_its_best_prediction():
    ds = synthetic()
    ds["theory_snr_population"] = ds["theory_snr_sample"] * 0.5
    ds["theory_alpha"][:] = 2.0
    ds["theory_kappa"][:] = 1.0
    table = phase_diagram(ds, n_boot=20)
    want = finite_d_transition(2.0, 0.5, 0.5, int(ds.attrs["d"]), Detection(false_alarm=0.05))
    rows = table[table["weights"] != "harmonic"]
    assert np.allclose(rows["theory_snr_finite_d"], want) and (rows["theory_snr_best_source"] == "finite_d").all()
    assert np.allclose(rows["theory_snr_best"], want)
    limit = phase_diagram(ds, n_boot=20, reference="limit")
    assert np.allclose(limit["theory_snr_best"], limit["theory_snr_sample"])
    assert (limit["theory_snr_best_source"] == "limit").all()
    # at finite d the detection crossing lies above the limit's threshold, and tends to it as d grows
    rc = 0.5 + 1.0          # rho_c at delta = gamma = 0.5 is 1.781; with alpha/kappa = 2 the SNR is rho_c / 2
    t = [finite_d_transition(2.0, 0.5, 0.5, d, Detection(false_alarm=0.05)) for d in (100, 1000, 10**5)]
    assert t[0] > t[1] > t[2] > 1.781 / 2 and t[2] < 1.781 / 2 * 1.05 and rc > 0
    assert SNR.size == 5


def test_attention_over_several_positions_has_no_law_at_this_size_and_is_not_counted():
    from rmtsweep.analysis.compare import NO_LAW, summary

    ds = _with_finite_size(synthetic())
    ds = ds.assign_coords(weights=np.array(["mean", "attention(tau=2, scale=d)", "harmonic"], dtype=object))
    cmp = compare(ds)
    assert int(cmp["lambda1_reference"].sel(weights="attention(tau=2, scale=d)").min()) == NO_LAW
    assert int(cmp["overlap_reference"].sel(weights="mean").min()) == 1
    text = summary(cmp)
    assert "5 cells have no law at the store's size" in text
    assert re.search(r"lambda1: \d/5 cells within 3 standard errors", text)     # the mean line only
    one = compare(ds.sel(T=[16]).assign_coords(T=[1]).assign(theory_law=(("T", "weights"), np.ones((1, 3)))))
    assert int(one["lambda1_reference"].max()) < NO_LAW                # one position: the exact law applies
