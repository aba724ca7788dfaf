"""A store's theory at its size on the cluster: a costly (point, weights) pair's draws are tasks of their own, and
the arrays are those of the serial functions (pooled_null, pooled_spikes) bit for bit, on one worker or two, in
this process or in worker processes, with the theory cache cold or warm."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from collections import Counter

import dask.config
import numpy as np
import pytest
import xarray as xr
import yaml

from tests.helpers import BASE

pytestmark = pytest.mark.slow

# d = 250, V = N = 500: one draw costs more than POOLED_TASK / 16, so each pair's 16 draws are two tasks of 8
SWEEP = {**copy.deepcopy(BASE), "name": "draws", "d": 250, "replicates": 2, "replicates_per_task": 2,
         "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0, 4.0], "T": [4], "weights": ["mean", "optimal"]}}
SIZED = ("finite_size_lambda1", "finite_size_lambda1_se", "finite_size_overlap", "finite_size_overlap_se",
         "pooled_null_location", "pooled_null_scale")


def _sweep_file(tmp_path):
    from rmtsweep.spec import load_sweep
    path = tmp_path / "draws.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    return load_sweep(path)


def _run(tmp_path, name: str, workers: int, cache: str, stream: bool = False):
    """The store of a run on an in-process cluster of ``workers`` workers, and the theory tasks' keys."""
    from distributed import Client, LocalCluster, get_task_stream

    from rmtsweep import open_store, run_sweep
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") \
            as cluster, Client(cluster) as client, dask.config.set({"rmtsweep.theory.cache": cache}), \
            get_task_stream(client) as ts:
        run_sweep(_sweep_file(tmp_path), tmp_path / name, client, progress=False)
    keys = [str(t["key"]) for t in ts.data if str(t["key"]).startswith("rmtsweep-theory-")]
    ds = open_store(tmp_path / name)
    assert "theory_pending" not in ds.attrs
    return ds, keys


@pytest.fixture(scope="module")
def serial():
    """The arrays of the serial functions, cell by cell (no cluster, no cache): ``(weights label) -> arrays``."""
    from rmtsweep.spec import parse_sweep
    from rmtsweep.theory.null_law import pooled_null
    from rmtsweep.theory.pooled_spikes import pooled_spikes
    sweep = parse_sweep(SWEEP)
    out = {}
    for scheme in sweep.grid.weights:
        w = scheme.weights(sweep.correlation.matrix(4))
        spikes = pooled_spikes(SWEEP["grid"]["snr"], w, sweep.correlation, 0.5, 0.5, 250)
        null = pooled_null(w, sweep.correlation, 0.5, 0.5, 250)
        kappa = float(w @ w)
        out[scheme.label] = {"finite_size_lambda1": spikes.lambda1 * kappa,
                             "finite_size_lambda1_se": spikes.lambda1_se * kappa,
                             "finite_size_overlap": spikes.overlap, "finite_size_overlap_se": spikes.overlap_se,
                             "pooled_null_location": null.location, "pooled_null_scale": null.scale}
    return out


def _assert_serial(ds: xr.Dataset, serial) -> None:
    for label, arrays in serial.items():
        for name in SIZED:
            np.testing.assert_array_equal(ds[name].sel(delta=0.5, gamma=0.5, T=4, weights=label).values,
                                          arrays[name], err_msg=f"{name} {label}")


def _theory(ds: xr.Dataset) -> xr.Dataset:
    out = ds[[v for v in ds.data_vars if v.startswith(("theory_", "paper_", "finite_size_", "pooled_"))]].load()
    out.attrs = {}
    return out


def test_a_pairs_draws_are_tasks_and_the_store_holds_the_serial_arrays(tmp_path, serial):
    from rmtsweep.run.theory_cache import FolderCache
    folder = tmp_path / "cache"
    two, keys = _run(tmp_path, "two.zarr", 2, str(folder))
    # two mapped rounds: the 2 pairs' draws in 2 batches each, then the 2 pairs of the draws' records (the first
    # item of each on the theory task's own thread)
    rounds = Counter(k.split("-")[2] for k in keys if k.count("-") == 3)
    assert sorted(rounds.values()) == [1, 3], keys
    _assert_serial(two, serial)
    assert len(FolderCache(folder).files()) == 2                  # the split pairs' entries, written once
    one, keys = _run(tmp_path, "one.zarr", 1, str(folder))        # warm: the entries are read, no draw task
    assert sorted(Counter(k.split("-")[2] for k in keys if k.count("-") == 3).values()) == [1], keys
    _assert_serial(one, serial)
    off, _ = _run(tmp_path, "off.zarr", 1, "none")
    _assert_serial(off, serial)
    for other in (one, off):
        xr.testing.assert_identical(_theory(other), _theory(two))
        for name in _theory(two).data_vars:
            assert two[name].values.tobytes() == other[name].values.tobytes(), name


def test_worker_processes_give_the_serial_arrays(tmp_path, serial):
    from rmtsweep import open_store
    sf = _sweep_file(tmp_path)
    env = {**os.environ, "DASK_RMTSWEEP__THEORY__CACHE": "none"}
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", sf.path, "--store", str(tmp_path / "s.zarr"),
                           "--workers", "2", "--no-progress"], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "computing the theory at the store's size beside the first tasks" in proc.stderr, proc.stderr
    ds = open_store(tmp_path / "s.zarr")
    assert "theory_pending" not in ds.attrs
    _assert_serial(ds, serial)
