"""Reading never shows what was not computed: every reader masks replicates whose ``done`` is false.

The store is a tiny sweep run to completion, then edited with zarr directly as an interrupted run
leaves it: one task's chunk keeps its data but has ``done`` false (killed between its data write and
its done flag), another was never written (fill values, ``run`` -1). Every expectation is computed
from the raw zarr arrays with numpy, masked by hand.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr

import rmtsweep
from rmtsweep.analysis.export import export
from rmtsweep.analysis.maps.plot import map_data, map_figure, plot
from rmtsweep.cli import main
from tests.helpers import TINY, build_store

WRITTEN = (0, 0, 0, slice(None), slice(0, 2))     # (delta, gamma, T, weights, replicate): data, done false
NEVER = (1, 1, 0, slice(None), slice(2, 4))       # never written
N_NOT_DONE, N_TOTAL = 8, 32                       # 2 tasks of 2 weights x 2 replicates, of 2 x 2 x 1 x 2 x 4


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> tuple[Path, Path]:
    """(complete, partial): the same tiny sweep, one point per task (8 tasks of 4 replicates)."""
    root = tmp_path_factory.mktemp("masking")
    complete = build_store(root / "complete.zarr", {**TINY, "cells_per_task": 1})
    partial = root / "partial.zarr"
    shutil.copytree(complete, partial)
    group = zarr.open_group(str(partial), mode="r+")
    assert group["done"].chunks == (1, 1, 1, 2, 2)                    # each region above is one task
    for name in _per_replicate(partial):
        group[name][NEVER] = group[name].fill_value
    group["done"][WRITTEN] = False
    group["done"][NEVER] = False
    eig = group["eigenvalues"][...]                  # what an unmasked read would show, and what it would not
    assert np.isfinite(eig[WRITTEN]).all() and np.isnan(eig[NEVER]).all()
    assert (~group["done"][...]).sum() == N_NOT_DONE
    return complete, partial


def _per_replicate(store: Path) -> list[str]:
    group = zarr.open_group(str(store), mode="r")
    done = set(group["done"].attrs["_ARRAY_DIMENSIONS"])
    return sorted(n for n, a in group.arrays() if done <= set(a.attrs["_ARRAY_DIMENSIONS"]) and n != "done")


def _raw(store: Path, name: str) -> tuple[np.ndarray, list[str]]:
    """A variable read with zarr (no xarray, no rmtsweep): values and dims."""
    a = zarr.open_array(str(store / name), mode="r")
    return a[...], list(a.attrs["_ARRAY_DIMENSIONS"])


def _coord(store: Path, dim: str) -> np.ndarray:
    values = _raw(store, dim)[0]
    return np.array([str(v) for v in values]) if values.dtype.kind in "OTUS" else values


def _masked(store: Path, name: str) -> tuple[np.ndarray, list[str]]:
    """The reference: the raw array with its fill value where the raw ``done`` is false."""
    values, dims = _raw(store, name)
    done = _raw(store, "done")[0]
    fill = -1 if name == "run" else np.nan
    return np.where(done.reshape(done.shape + (1,) * (values.ndim - done.ndim)), values, fill), dims


def _reference_mean(store: Path, name: str) -> xr.DataArray:
    """The mean over done replicates of ``name`` at k = 1, by hand, with the store's coordinates."""
    values, dims = _masked(store, name)
    values = values[..., 0] if dims[-1] == "k" else values
    dims = [d for d in dims if d != "k"]
    mean = np.nanmean(values, axis=dims.index("replicate"))
    dims.remove("replicate")
    return xr.DataArray(mean, dims=dims, coords={d: _coord(store, d) for d in dims})


@pytest.mark.parametrize("variables", [None, ["eigenvalues"]], ids=["default", "eigenvalues"])
def test_tidy_csv_masks_replicates_not_done(stores, tmp_path, variables):
    _, partial = stores
    df = pd.read_csv(export(partial, tmp_path / "t.csv", "csv", variables=variables))
    assert "done" in df.columns and "run" in df.columns
    shown = [v for v in _per_replicate(partial) if v in df.columns]
    assert "eigenvalues" in shown and ("overlap" in shown) == (variables is None)
    done_raw, done_dims = _raw(partial, "done")
    for name in shown + ["done"]:
        values, dims = _raw(partial, name)
        at = tuple(pd.Index(_coord(partial, d)).get_indexer(df[d].astype(_coord(partial, d).dtype)) for d in dims)
        assert all((i >= 0).all() for i in at), name
        done = done_raw[at[:len(done_dims)]]
        column = df[name].to_numpy()
        if name == "done":
            assert np.array_equal(column.astype(bool), values[at]), "done column"
            continue
        assert np.isfinite(values[at][~done]).any() or name == "run", name     # there was something to hide
        if name == "run":
            assert (column[~done] == -1).all()
        else:
            assert np.isnan(column[~done].astype(float)).all(), f"{name}: a value shown where done is false"
        assert np.array_equal(column[done], values[at][done], equal_nan=True), f"{name}: stored values changed"


@pytest.mark.parametrize("variables", [None, ["eigenvalues"]], ids=["default", "eigenvalues"])
def test_netcdf_masks_replicates_not_done(stores, tmp_path, variables):
    _, partial = stores
    back = xr.open_dataset(export(partial, tmp_path / "t.nc", "netcdf", variables=variables)).load()
    assert "done" in back and "run" in back
    shown = [v for v in _per_replicate(partial) if v in back]
    assert "eigenvalues" in shown and ("spectrum" in shown) == (variables is None)
    assert np.array_equal(back["done"].values, _raw(partial, "done")[0])
    for name in shown:
        expected, dims = _masked(partial, name)
        assert list(back[name].dims) == dims, name
        assert all(np.array_equal([str(v) for v in back[d].values], [str(v) for v in _coord(partial, d)]) for d in dims)
        assert np.array_equal(back[name].values, expected, equal_nan=True), name


def test_accessor_masks_and_counts(stores):
    _, partial = stores
    ds = rmtsweep.open_store(partial)
    assert (ds.rmt.not_done.count, ds.rmt.not_done.total) == (N_NOT_DONE, N_TOTAL)
    masked = ds.rmt.masked()
    assert masked["done"].equals(ds["done"])
    for name in _per_replicate(partial):
        expected, dims = _masked(partial, name)
        got = masked[name].transpose(*dims).values
        assert got.dtype == expected.dtype or name != "run", "run keeps its integer type"
        assert np.array_equal(got, expected, equal_nan=True), name
    cmp = ds.rmt.compare().compute()
    for var, name in (("lambda1_mean", "eigenvalues"), ("overlap_mean", "overlap")):
        ref = _reference_mean(partial, name)
        np.testing.assert_allclose(cmp[var].transpose(*ref.dims).values, ref.values, rtol=1e-12, err_msg=var)
    n_done = _raw(partial, "done")[0].sum(axis=-1)
    assert np.array_equal(cmp["n_done"].transpose("delta", "gamma", "T", "weights").values, n_done)


@pytest.mark.parametrize("var, name", [("overlap", "overlap"), ("lambda1_mean", "eigenvalues")])
def test_map_draws_only_done_replicates_and_says_how_many_are_not(stores, tmp_path, var, name):
    _, partial = stores
    ref = _reference_mean(partial, name)
    da, ds = map_data(partial, var)
    np.testing.assert_allclose(da.transpose(*ref.dims).values, ref.values, rtol=1e-12)
    fig = map_figure(da.rename(var), ds, "snr", "gamma")
    assert len(fig.panels) == 4                                        # delta x weights
    for panel in fig.panels:
        at = {d: panel.data[d].item() for d in fig.facets}
        drawn = panel.data.transpose("gamma", "snr").values
        np.testing.assert_allclose(drawn, ref.sel(at).transpose("gamma", "snr").values, rtol=1e-12)
    notes: list[str] = []
    plot(partial, "snr", "gamma", var).save(tmp_path, formats="png", notes=notes.append)
    said = [n for n in notes if "not done" in n]
    assert said == [f"{partial}: {N_NOT_DONE} of {N_TOTAL} replicates not done (interrupted run); the map counts "
                    f"only the done ones"]


COMMANDS = {
    "csv": ["export", "{store}", "--var", "eigenvalues", "--out", "{out}/t.csv"],
    "netcdf": ["export", "{store}", "--format", "netcdf", "--out", "{out}/t.nc"],
    "phase-diagram": ["export", "{store}", "--phase-diagram", "--bootstrap", "20", "--out", "{out}/phase.csv"],
    "plot": ["plot", "{store}", "--x", "snr", "--y", "gamma", "--var", "overlap", "--format", "png",
             "--out", "{out}/maps"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_warns_once_with_the_count(stores, tmp_path, capsys, command):
    complete, partial = stores
    for store, expected in ((partial, 1), (complete, 0)):
        out = tmp_path / store.stem
        main([a.format(store=store, out=out) for a in COMMANDS[command]])
        err = capsys.readouterr().err.splitlines()
        said = [line for line in err if "not done" in line]
        assert len(said) == expected, (store.stem, err)
        if expected:
            assert said[0].startswith(f"{partial}: {N_NOT_DONE} of {N_TOTAL} replicates not done (interrupted run); ")
    if command == "phase-diagram":                   # the table itself counted the done replicates only
        table = pd.read_csv(tmp_path / "partial" / "phase.csv")
        n_done = _raw(partial, "done")[0].sum(axis=-1)              # (delta, gamma, T, weights)
        at = tuple(pd.Index(_coord(partial, d)).get_indexer(table[d].astype(_coord(partial, d).dtype))
                   for d in ("delta", "gamma", "T", "weights"))
        assert np.array_equal(table["n_replicates"].to_numpy(), n_done[at])
