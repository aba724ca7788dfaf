"""Every reader of a store whose theory at its size is not written yet (``theory_pending``) refuses in one line, or
computes from its Monte Carlo alone and says so; on the finished store each agrees with its own comparison.

The pending store is a run stopped after its first task; the finished one holds the same done replicates with that
theory written as a run writes it (:func:`tests.helpers.build_pending`).
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from rmtsweep.errors import StoreError
from tests.helpers import BASE, build_pending, run_main

# T = 1 (the exact law: a realised-count null) and T = 4 (a pooled null): both nulls are theory at the store's size
SWEEP = {**copy.deepcopy(BASE), "name": "pending", "replicates": 8, "replicates_per_task": 4,
         "correlation": {"model": "iid"},
         "grid": {**BASE["grid"], "snr": [0.0, 1.0, 2.0, 3.0, 4.0, 6.0], "T": [1, 4]}}
NOT_YET = "its theory at the store's size is not written yet"


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    pending, finished = build_pending(tmp_path_factory.mktemp("pending"), SWEEP)
    import rmtsweep
    assert rmtsweep.open_store(pending).attrs["theory_pending"] is True
    assert "theory_pending" not in rmtsweep.open_store(finished).attrs
    return pending, finished


@pytest.fixture(scope="module")
def comparison(stores):
    from rmtsweep.analysis.compare import compare
    return compare(stores[1])


def _refused(code: int, err: str, store) -> None:
    """Exit 2 with one line on stderr that names the store, the problem and the next step."""
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"rmtsweep: error: {store}: {NOT_YET}") and "once it is written" in err, err


@pytest.mark.parametrize("argv", [
    ["export", "{store}", "--out", "{out}/table.csv"],
    ["export", "{store}", "--out", "{out}/table.nc", "--format", "netcdf"],
    ["export", "{store}", "--out", "{out}/table.csv", "--var", "eigenvalues", "--var", "theory_phase"],
    ["export", "{store}", "--out", "{out}/table.csv", "--group", "comparison"],
    ["export", "{store}", "--out", "{out}/table.csv", "--phase-diagram", "--bootstrap", "20"],
    ["plot", "{store}", "--x", "snr", "--y", "delta", "--var", "detection_rate", "--out", "{out}"],
    ["plot", "{store}", "--x", "snr", "--y", "delta", "--var", "theory_phase", "--out", "{out}"],
    ["plot", "{store}", "--x", "snr", "--y", "delta", "--var", "lambda1_z", "--out", "{out}"],
    ["figures", "{store}", "--out", "{out}"],
], ids=["csv", "netcdf", "a-theory-var", "comparison-group", "phase-diagram", "plot-detection", "plot-theory",
        "plot-comparison", "figures"])
def test_a_reader_of_theory_refuses_a_pending_store_in_one_line(stores, tmp_path, capsys, argv):
    pending = stores[0]
    out = tmp_path / "out"
    code, _, err = run_main([a.format(store=pending, out=out) for a in argv], capsys)
    _refused(code, err, pending)
    assert not out.exists()                                     # nothing written, not even the directory


@pytest.mark.parametrize("read", [
    lambda ds: ds.rmt.compare(),
    lambda ds: ds.rmt.transition(),
    lambda ds: ds.rmt.phase_diagram(n_boot=20),
    lambda ds: ds.rmt.plot("snr", "delta", "detection_rate"),
    lambda ds: ds.rmt.plot("snr", "delta", "theory_phase"),
], ids=["compare", "transition", "phase_diagram", "plot-detection", "plot-theory"])
def test_the_accessor_refuses_a_pending_store_in_one_line_naming_it(stores, read):
    import rmtsweep
    pending = stores[0]
    with pytest.raises(StoreError) as info:
        read(rmtsweep.open_store(pending))
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{pending}: {NOT_YET}") and "once it is written" in message


def test_the_python_readers_of_theory_refuse_a_pending_store(stores, tmp_path):
    from rmtsweep import export, phase_diagram, plot
    from rmtsweep.analysis.detection import detected
    pending = stores[0]
    for read in (lambda: phase_diagram(pending, n_boot=20), lambda: detected(pending),
                 lambda: export(pending, tmp_path / "t.csv"),
                 lambda: plot(pending, "snr", "delta", "detection_rate").save(tmp_path / "maps")):
        with pytest.raises(StoreError, match=f"^{pending}: {NOT_YET}"):
            read()


def test_the_phase_diagram_refuses_a_pending_store_and_agrees_with_the_finished_ones_comparison(
        stores, comparison, tmp_path, capsys):
    pending, finished = stores
    code, _, err = run_main(["export", str(pending), "--phase-diagram", "--out", str(tmp_path / "p.csv")], capsys)
    _refused(code, err, pending)
    code, _, err = run_main(["export", str(finished), "--phase-diagram", "--bootstrap", "50",
                             "--out", str(tmp_path / "f.csv")], capsys)
    assert code == 0, err
    table = pd.read_csv(tmp_path / "f.csv").set_index(["delta", "gamma", "T", "weights"])
    cmp = comparison[["transition_snr_empirical", "transition_snr_theory"]].to_dataframe()
    cmp = cmp.reset_index().set_index(["delta", "gamma", "T", "weights"]).reindex(table.index)
    assert table["transition_snr"].notna().sum() >= 4                  # lines that cross 1/2 on the grid
    np.testing.assert_allclose(table["transition_snr"], cmp["transition_snr_empirical"], rtol=1e-12)
    np.testing.assert_allclose(table["theory_snr_sample"], cmp["transition_snr_theory"], rtol=1e-12)
    n = comparison["n_done"].isel(snr=0, drop=True) if "snr" in comparison["n_done"].dims else comparison["n_done"]
    assert (table["n_replicates"].to_numpy() == n.to_dataframe().reindex(table.index)["n_done"].to_numpy()).all()
    assert set(table["n_replicates"]) == {4}                             # the first task's replicates


def test_the_accessors_transitions_refuse_a_pending_store_and_agree_on_the_finished_one(stores, comparison):
    import rmtsweep
    pending, finished = stores
    with pytest.raises(StoreError, match=f"^{pending}: {NOT_YET}"):
        rmtsweep.open_store(pending).rmt.transition()
    ds = rmtsweep.open_store(finished)
    xr.testing.assert_allclose(ds.rmt.transition().compute(), comparison["transition_snr_empirical"])
    table = ds.rmt.phase_diagram(n_boot=20)
    flat = comparison["transition_snr_empirical"].to_dataframe().reset_index()
    np.testing.assert_allclose(table["transition_snr"], flat["transition_snr_empirical"], rtol=1e-12)


def test_a_map_of_detection_refuses_a_pending_store_and_on_the_finished_one_is_the_comparisons(
        stores, comparison, tmp_path, capsys):
    from rmtsweep.analysis.maps.plot import map_data
    pending, finished = stores
    code, _, err = run_main(["plot", str(pending), "--x", "snr", "--y", "delta", "--var", "detection_rate",
                             "--out", str(tmp_path / "p"), "--format", "png"], capsys)
    _refused(code, err, pending)
    da, _ = map_data(finished, "detection_rate")
    xr.testing.assert_allclose(da.reset_coords(drop=True), comparison["detection_rate"].reset_coords(drop=True))


@pytest.mark.parametrize("var", ["lambda1_mean", "overlap_sem", "n_done"])
def test_a_map_of_the_comparisons_monte_carlo_on_a_pending_store_says_so_and_is_the_finished_ones(
        stores, comparison, var):
    import rmtsweep
    from rmtsweep.analysis.maps.plot import map_data
    pending = stores[0]
    da, _ = map_data(pending, var)
    assert da.attrs["theory"].startswith("pending:")
    want = comparison[var].reset_coords(drop=True)
    xr.testing.assert_allclose(da.reset_coords(drop=True).transpose(*want.dims), want.astype(da.dtype))
    m = rmtsweep.open_store(pending).rmt.plot("snr", "delta", "lambda1_mean")
    assert m.attrs["theory"].startswith("pending:") and not m.figure.transitions


def test_a_map_of_the_monte_carlo_of_a_pending_store_says_so_and_is_the_finished_ones_mean(
        stores, comparison, tmp_path, capsys):
    import rmtsweep
    pending = stores[0]
    code, out, err = run_main(["plot", str(pending), "--x", "snr", "--y", "delta", "--var", "eigenvalues",
                               "--out", str(tmp_path / "maps"), "--format", "png"], capsys)
    assert code == 0, err
    assert f"{pending}: {NOT_YET}: the map is drawn from the Monte Carlo alone" in err
    assert out.strip().endswith(".png")
    m = rmtsweep.open_store(pending).rmt.plot("snr", "delta", "eigenvalues")
    assert m.attrs["theory"].startswith("pending:")
    assert not m.figure.transitions and "pending" in m.figure.caption      # no theory drawn over it
    assert all(not p.curves for p in m.figure.panels)
    from rmtsweep.analysis.maps.plot import map_data
    da, _ = map_data(pending, "eigenvalues")                            # k = 1: lambda_1, over the done replicates
    assert da.attrs["theory"].startswith("pending:")
    xr.testing.assert_allclose(da.reset_coords(drop=True).transpose(*comparison["lambda1_mean"].dims),
                               comparison["lambda1_mean"].reset_coords(drop=True))


@pytest.mark.parametrize("fmt, name", [("netcdf", "mc.nc"), ("csv", "mc.csv")])
def test_an_export_of_the_monte_carlo_of_a_pending_store_says_so(stores, comparison, tmp_path, capsys, fmt, name):
    from rmtsweep.analysis.export import read_tidy
    pending = stores[0]
    out = tmp_path / name
    code, _, err = run_main(["export", str(pending), "--format", fmt, "--out", str(out), "--var", "eigenvalues"],
                            capsys)
    assert code == 0, err
    assert f"{pending}: {NOT_YET}: {out} is written from the Monte Carlo alone" in err
    got = xr.open_dataset(out) if fmt == "netcdf" else read_tidy(out)
    if fmt == "netcdf":
        assert got.attrs["theory"].startswith("pending:")
    done = got["done"].isel({d: 0 for d in ("snr", "k") if d in got["done"].dims}, drop=True)   # tidy: repeated
    lam1 = got["eigenvalues"].sel(k=1, drop=True).where(done.astype(bool)).mean("replicate")
    xr.testing.assert_allclose(lam1.transpose(*comparison["lambda1_mean"].dims).reset_coords(drop=True),
                               comparison["lambda1_mean"].reset_coords(drop=True).astype(lam1.dtype))


def test_an_export_refuses_a_pending_stores_theory_and_the_finished_ones_is_the_comparisons(
        stores, comparison, tmp_path, capsys):
    pending, finished = stores
    code, _, err = run_main(["export", str(pending), "--format", "netcdf", "--out", str(tmp_path / "p.nc")], capsys)
    _refused(code, err, pending)
    assert "--var eigenvalues" in err                                   # what exports now
    out = tmp_path / "f.nc"
    code, _, err = run_main(["export", str(finished), "--format", "netcdf", "--out", str(out)], capsys)
    assert code == 0 and NOT_YET not in err, err
    got = xr.open_dataset(out)
    assert "theory" not in got.attrs and "finite_size_null_location" in got
    xr.testing.assert_allclose(got["theory_snr_sample"].broadcast_like(comparison["transition_snr_theory"])
                               .transpose(*comparison["transition_snr_theory"].dims).reset_coords(drop=True),
                               comparison["transition_snr_theory"].reset_coords(drop=True))


def test_a_map_of_an_unknown_variable_names_an_opened_store_in_one_line(stores):
    import rmtsweep
    from rmtsweep.errors import SelectionError
    finished = stores[1]
    with pytest.raises(SelectionError) as info:
        rmtsweep.open_store(finished).rmt.plot("snr", "delta", "no_such_variable")
    assert "\n" not in str(info.value) and str(info.value).startswith(
        f"--var 'no_such_variable': not a variable of {finished} (valid: ")
