"""Export: tidy CSV and netCDF of a store and of its comparison group, read back unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from rmtsweep.analysis.compare import open_source
from rmtsweep.errors import SelectionError
from rmtsweep.errors import StoreError
from rmtsweep.analysis.export import export, read_tidy


def _same(a: xr.DataArray, b: xr.DataArray) -> bool:
    a = a.broadcast_like(b).transpose(*b.dims)
    b = b.sel({d: a[d].values for d in b.dims})
    return np.array_equal(np.asarray(a.values, float), np.asarray(b.values, float), equal_nan=True)


@pytest.mark.parametrize("group", [None, "comparison"])
def test_csv_round_trip(tiny_store, tmp_path, group):
    src = open_source(tiny_store, group).load()
    out = export(tiny_store, tmp_path / "t.csv", "csv", group)
    back = read_tidy(out)
    # not the histogram, nor the detection nulls' draws and candidates: each would multiply the rows
    expected = [v for v in src.data_vars if not {"bin", "pool_draw", "count_draw", "null_candidate"} & set(src[v].dims)]
    if group is None:                                                # the TINY store has both kinds
        assert {"spectrum", "pooled_null_location", "pooled_null_scale"} <= set(src.data_vars) - set(expected)
    assert sorted(back.data_vars) == sorted(expected)
    for v in expected:
        assert _same(src[v], back[v]), v
    first = out.read_text().splitlines()[0].split(",")
    assert first[:4] == ["delta", "gamma", "T", "weights"]           # dimensions first: tidy


def test_csv_of_chosen_variables_with_bins(tiny_store, tmp_path):
    back = read_tidy(export(tiny_store, tmp_path / "s.csv", "csv", variables=["spectrum"]))
    assert list(back.data_vars) == ["spectrum", "done", "run"] and "bin" in back.dims   # a per-replicate variable
    assert _same(open_source(tiny_store)["spectrum"].load(), back["spectrum"])            # says what was computed
    theory = read_tidy(export(tiny_store, tmp_path / "e.csv", "csv", variables=["theory_edge"]))
    assert list(theory.data_vars) == ["theory_edge"]                                      # no replicates: no flags
    null = read_tidy(export(tiny_store, tmp_path / "n.csv", "csv", variables=["pooled_null_location"]))
    assert _same(open_source(tiny_store)["pooled_null_location"].load(), null["pooled_null_location"])


@pytest.mark.parametrize("group", [None, "comparison"])
def test_netcdf_round_trip(tiny_store, tmp_path, group):
    src = open_source(tiny_store, group).load()
    back = xr.open_dataset(export(tiny_store, tmp_path / "t.nc", "netcdf", group)).load()
    assert set(back.data_vars) == set(src.data_vars)
    for v in src.data_vars:
        assert back[v].dims == src[v].dims, v
        assert np.array_equal(np.asarray(src[v].values, float), np.asarray(back[v].values, float), equal_nan=True), v
    if group is None:
        assert back["done"].dtype == bool                          # written as int8 with flag_values, read as bool
    else:
        assert back["n_done"].dtype.kind == "i"                    # an integer count (netCDF-3 has no int64: int32)
        assert np.array_equal(back["n_done"].values, src["n_done"].values)
    assert back["theory_phase"].dtype == np.int8                   # in both groups: the phase flags stay int8
    assert [str(w) for w in back["weights"].values] == [str(w) for w in src["weights"].values]
    assert back.attrs.get("sweep_name", back.attrs.get("title"))


def test_export_errors(tiny_store, tmp_path):
    with pytest.raises(SelectionError, match=r"--format 'xlsx': unknown format \(valid: csv, netcdf\)"):
        export(tiny_store, tmp_path / "x", "xlsx")
    with pytest.raises(SelectionError, match=r"--var 'nope': not a variable .*valid: .*eigenvalues"):
        export(tiny_store, tmp_path / "x.csv", "csv", variables=["nope"])
    with pytest.raises(SelectionError, match="no group 'other'"):
        export(tiny_store, tmp_path / "x.csv", "csv", group="other")
    with pytest.raises(StoreError, match=r"missing\.zarr: does not exist$"):
        export(tmp_path / "missing.zarr", tmp_path / "x.csv")


def test_cli_export(tiny_store, tmp_path):
    from rmtsweep.cli import main
    out = tmp_path / "c.nc"
    main(["export", str(tiny_store), "--format", "netcdf", "--group", "comparison", "--out", str(out)])
    assert "detection_rate" in xr.open_dataset(out)
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tiny_store), "--format", "parquet", "--out", str(out)])
    assert exc.value.code == 2


def test_netcdf_export_of_a_real_store_reopens(reference, tmp_path):
    """A store made by `run` carries a list of runs in its attrs: exported as JSON, the file reopens."""
    import json

    _, store = reference
    out = export(store, tmp_path / "real.nc", "netcdf")
    back = xr.open_dataset(out, engine="scipy")
    runs = json.loads(back.attrs["runs"])
    assert runs and runs[0]["run"] == 0 and "started" in runs[0]
    src = open_source(store)
    assert np.array_equal(back["eigenvalues"].values, src["eigenvalues"].values)
    assert not list(tmp_path.glob(".*.tmp"))                      # the temporary file was renamed into place


def test_store_parents_are_created(reference, tmp_path):
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep
    sweep_path, _ = reference
    deep = tmp_path / "a" / "b" / "c.zarr"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(sweep_path), deep, client, progress=False)
    assert open_source(deep)["done"].values.all()


def test_netcdf_of_a_partly_computed_store_keeps_run_minus_one(tmp_path):
    """`run` is -1 where no run computed a replicate; the netCDF reads back -1 (an int), not NaN."""
    import yaml as _yaml

    from rmtsweep.analysis.export import export as export_store
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile, parse_sweep
    from rmtsweep.store import Writer, blocking_of
    from tests.helpers import BASE
    path = tmp_path / "partial.zarr"
    sweep = parse_sweep({**BASE, "cells_per_task": 1})
    prepare_store(SweepFile(sweep, "partial.yaml", _yaml.safe_dump(BASE)), path)
    first = next(iter(tasks(sweep, Blocking(*blocking_of(path)))))
    writer = Writer(path)
    writer.write_block(first.region, compute_task(first), first.todo, run=0)
    writer.mark_done(first.region)
    back = xr.open_dataset(export_store(path, tmp_path / "partial.nc", "netcdf"))
    run = back["run"].values
    assert run.dtype.kind == "i" and set(np.unique(run)) == {-1, 0}
    assert np.array_equal(run, xr.open_zarr(path, mask_and_scale=False)["run"].values)
