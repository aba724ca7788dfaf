"""End to end: sweep file -> LocalCluster -> zarr store, through the Python API and the CLI."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
from distributed import Client, LocalCluster

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.cli import main
from rmtsweep.errors import StoreError
from rmtsweep.testing import assert_stores_equal
from rmtsweep.theory.null_law import POOLED_DRAWS

def _run(sweep_path, store_path, workers: int):
    cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
    try:
        with Client(cluster) as client:
            return run_sweep(load_sweep(sweep_path), store_path, client, progress=False)
    finally:
        # the store is complete by now; on a starved machine the worker processes may outlast distributed's close
        # timeout, which says nothing of the run
        with contextlib.suppress(TimeoutError):
            cluster.close()


@pytest.fixture(scope="module")
def stores(reference, tmp_path_factory):
    """The tiny sweep run on 1 worker (the shared reference) and on 2 workers."""
    path, one = reference
    two = tmp_path_factory.mktemp("e2e") / "two.zarr"
    rep2 = _run(path, two, 2)
    return path, one, two, rep2


def test_same_store_from_one_and_two_workers(stores):
    _, one, two, rep2 = stores
    # the cost model puts both (cheap) delta points in one task: 2 replicate blocks of 2 (replicates_per_task)
    assert (rep2.tasks_computed, rep2.points_computed, rep2.replicates_computed) == (2, 4, 16)
    assert rep2.cells_computed == rep2.points_computed                  # the old name
    assert_stores_equal(one, two)
    assert bool(open_store(one)["done"].all())


def test_store_layout(stores):
    _, one, *_ = stores
    ds = open_store(one)
    assert dict(ds.sizes) == {"delta": 2, "gamma": 1, "snr": 2, "T": 1, "weights": 2, "replicate": 4, "k": 2,
                              "pool_draw": POOLED_DRAWS, "null_candidate": 9}      # the detection null of the T = 4 cells
    assert ds["eigenvalues"].dims == ("delta", "gamma", "T", "weights", "replicate", "snr", "k")
    for name in ("eigenvalues", "overlap", "alpha", "kappa", "done", "theory_rho", "theory_edge",
                 "theory_outlier", "theory_overlap", "theory_phase"):
        assert "long_name" in ds[name].attrs and "units" in ds[name].attrs, name
    assert ds["eigenvalues"].encoding["chunks"] == (2, 1, 1, 2, 2, 2, 2)   # one task = one chunk
    assert list(ds.weights.values) == ["mean", "optimal"]
    for key in ("sweep_hash", "sweep_text", "rmtsweep_version", "git_revision", "seed", "created"):
        assert key in ds.attrs, key
    ev = ds["eigenvalues"].values
    assert np.all(np.isfinite(ev)) and np.all(np.diff(ev, axis=-1) <= 0)
    # kappa = ||w||^2 in closed form (T = 4): mean weights 1/T, optimal weights have unit norm
    for var in ("kappa", "theory_kappa"):
        assert np.allclose(ds[var].sel(weights="mean"), 1 / 4), var
        assert np.allclose(ds[var].sel(weights="optimal"), 1.0), var
    # alpha = w^T R w by hand for prefix(L=2): the copied pair acts as one sign, (w1 + w2)^2 + w3^2 + w4^2
    assert np.allclose(ds["theory_alpha"].sel(weights="mean"), (2 / 4) ** 2 + 2 / 16)
    assert np.allclose(ds["theory_alpha"].sel(weights="optimal"), 2.0)
    # realised alpha: optimal pools the copied pair only, so (w . xi)^2 = 2 in every sample; for mean
    # weights each sample is in [0, 1] (SD <= 1/2), so the mean over 8 replicates of N = 48 has SE <= 1/(2 sqrt(384))
    assert np.allclose(ds["alpha"].sel(weights="optimal"), 2.0)
    assert abs(float(ds["alpha"].sel(weights="mean").mean()) - 0.375) <= 4 / (2 * np.sqrt(8 * 48))


def test_rerun_of_complete_store_computes_nothing(stores, tmp_path):
    path, one, *_ = stores
    copy = tmp_path / "again.zarr"
    shutil.copytree(one, copy)
    chunks = {p: p.read_bytes() for p in copy.rglob("*") if p.is_file() and "eigenvalues" in p.parts}
    assert _run(path, copy, 1).tasks_computed == 0
    assert chunks == {p: p.read_bytes() for p in copy.rglob("*") if p.is_file() and "eigenvalues" in p.parts}


def test_partial_store_is_resumed(stores, tmp_path):
    """A store whose done flags are partly false recomputes exactly those tasks, to the same values."""
    import zarr
    path, one, *_ = stores
    copy = tmp_path / "partial.zarr"
    shutil.copytree(one, copy)
    g = zarr.open_group(str(copy), mode="r+")
    g["done"][0, 0, 0, 1, 2:4] = False
    g["eigenvalues"][0, 0, 0, 1, 2:4] = -1.0          # data written, done not: never trusted
    g["eigenvalues"][1, 0, 0, 1, 3] = -1.0            # ... while done data are never rewritten
    assert _run(path, copy, 1).tasks_computed == 1
    with pytest.raises(AssertionError, match="eigenvalues: 4 of 64 values differ"):   # 1 replicate x 2 snr x 2 k
        assert_stores_equal(copy, one)                 # only the done replicate keeps its (planted) -1
    fixed = zarr.open_group(str(copy), mode="r+")
    assert np.array_equal(fixed["eigenvalues"][0, 0, 0, 1, 2:4], zarr.open_group(str(one))["eigenvalues"][0, 0, 0, 1, 2:4])


def test_other_sweep_is_refused(stores, sweep_data, write_sweep):
    _, one, *_ = stores
    sweep_data["seed"] = 99
    with pytest.raises(StoreError, match=r"this sweep changes `seed` \(7 in the store, 99 in the file\)"):
        _run(write_sweep(sweep_data), one, 1)


def test_cli_status(stores, capsys):
    _, one, *_ = stores
    main(["status", str(one)])
    out = capsys.readouterr().out
    assert "sweep tiny" in out and "tasks done: 2 / 2 (100.0%)" in out and "complete" in out


@pytest.mark.parametrize("argv, message", [
    (["run", "nope.yaml"], r"rmtsweep: error: nope\.yaml: no such sweep file, and not a shipped sweep \(shipped: .*demo"),
    (["status", "nope.zarr"], r"rmtsweep: error: nope\.zarr: does not exist$"),
])
def test_cli_user_errors_exit_2_with_one_line(argv, message, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", *argv], cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and __import__("re").match(message, lines[0]), proc.stderr


def test_cli_bad_sweep_writes_nothing(sweep_data, write_sweep, tmp_path):
    sweep_data["grid"]["delta"] = [-1]
    store_path = tmp_path / "s.zarr"
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(write_sweep(sweep_data)),
                           "--store", str(store_path)], capture_output=True, text=True)
    assert proc.returncode == 2 and "grid.delta[0]" in proc.stderr
    assert not store_path.exists()


def test_cli_run_then_read_with_xarray(sweep_data, write_sweep, tmp_path):
    sweep_data["grid"]["weights"] = ["harmonic"]
    store_path = tmp_path / "cli.zarr"
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(write_sweep(sweep_data)),
                           "--store", str(store_path), "--workers", "1"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "2/2 tasks done" in proc.stdout
    assert "tiny: tasks 2/2 (100%), 8 replicates in" in proc.stderr   # no TTY: progress as plain lines, not a bar
    assert "\r" not in proc.stderr
    ds = xr.open_zarr(store_path)
    assert bool(ds["done"].all()) and ds["eigenvalues"].notnull().all()


def test_run_reads_minus_one_until_a_run_writes_and_stores_equal_compares_it(stores, tmp_path):
    """A fresh template reads run = -1 everywhere; assert_stores_equal sees a replicate no run computed."""
    import zarr

    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import load_sweep
    path, one, *_ = stores
    fresh = tmp_path / "fresh.zarr"
    prepare_store(load_sweep(path), fresh)
    assert (open_store(fresh)["run"].values == -1).all()
    assert (open_store(one)["run"].values == 0).all()          # the reference was written by run 0

    renumbered = tmp_path / "renumbered.zarr"
    shutil.copytree(one, renumbered)
    g = zarr.open_group(str(renumbered), mode="r+")
    g["run"][0, 0, 0, 0, 1] = 3                                  # as if a later run had computed it
    assert_stores_equal(renumbered, one)                          # who computed it is provenance ...
    with pytest.raises(AssertionError, match="run: 1 of 16 values differ"):
        assert_stores_equal(renumbered, one, same_runs=True)      # ... unless asked
    g["run"][0, 0, 0, 0, 1] = -1                                  # no run computed it
    with pytest.raises(AssertionError, match="run: 1 of 16 values differ"):
        assert_stores_equal(renumbered, one)


def test_a_stop_signal_between_the_done_flags_and_the_journal_waits_for_both(sweep_data, write_sweep, tmp_path,
                                                                             monkeypatch):
    """SIGTERM landing right after a batch's done flags are set (a batch system's walltime, in CI once) is held
    until the batch is journaled too: every task the store calls done has its journal line, then the run stops."""
    import signal

    from rmtsweep import status
    from rmtsweep.store import writer as writer_module

    class Stopped(Exception):
        pass

    def stop(signum, frame):
        raise Stopped
    calls = []
    mark = writer_module.Writer.mark_done_many

    def mark_then_signal(self, regions, *null):
        mark(self, regions, *null)
        calls.append(len(regions))
        if len(calls) == 1:                       # the first batch: on a loaded machine both tasks may finish
            signal.raise_signal(signal.SIGTERM)   # before the driver marks any, and there is no second (seen in CI)
    monkeypatch.setattr(writer_module.Writer, "mark_done_many", mark_then_signal)
    previous = signal.signal(signal.SIGTERM, stop)
    store = tmp_path / "s.zarr"
    try:
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
                Client(c) as client, pytest.raises(Stopped):
            run_sweep(load_sweep(write_sweep(sweep_data)), store, client, progress=False)
    finally:
        signal.signal(signal.SIGTERM, previous)
    from tests.helpers import writes
    # a task that has come back written by then is marked done too as the run stops, in a batch of its own (under
    # load, once); either way every task marked done is journaled
    assert calls and status(store).tasks_done == sum(calls) == writes(store)
