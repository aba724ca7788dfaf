"""Sweeps that survive: SIGKILL and resume, worker deaths, repeated failures, extension, the lock."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import yaml

from distributed import Client, LocalCluster

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.run import work
from rmtsweep.errors import StoreError, TaskFailedError
from rmtsweep.store import journal_file
from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM, MEDIUM_TASKS, run_main, writes

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as cl:
        yield cl


@pytest.fixture(scope="module")
def medium(tmp_path_factory, client):
    """The medium sweep file and its uninterrupted store."""
    root = tmp_path_factory.mktemp("medium")
    path = root / "medium.yaml"
    path.write_text(yaml.safe_dump(MEDIUM))
    run_sweep(load_sweep(path), root / "clean.zarr", client, progress=False)
    return path, root / "clean.zarr"


def _journal(store: Path) -> dict[int, dict[str, set[str]]]:
    runs: dict[int, dict[str, set[str]]] = defaultdict(lambda: {"submit": set(), "write": set()})
    for line in journal_file(store).read_text().splitlines():
        _, run, event, task = line.split()
        runs[int(run)][event].add(task)
    return runs


def test_sigkill_at_three_random_points_then_resume(medium, tmp_path):
    sweep_path, clean = medium
    store = tmp_path / "killed.zarr"
    cmd = [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store", str(store),
           "--workers", "1", "--no-progress"]
    rng = np.random.default_rng(20261129)
    targets = sorted(rng.choice(np.arange(4, 33), size=3, replace=False))   # >= 32 tasks left for the last run
    for k, target in enumerate(targets):         # kill run k once `target` tasks are written in total and
        proc = subprocess.Popen(cmd, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120        # run k itself has written at least one
        while ((writes(store) < target or writes(store, run=k) < 1) and proc.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.005)
        assert proc.poll() is None, f"the run ended before the kill at {target}: {proc.stderr.read()[-2000:]}"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert writes(store) < 64, "the kill landed after the sweep had finished"
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert_stores_equal(store, clean)

    runs = _journal(store)
    assert sorted(runs) == [0, 1, 2, 3]
    in_flight = 4 * 1                            # the default: four tasks per worker thread, one thread
    recomputed = 0
    for run in (0, 1, 2):
        lost = runs[run]["submit"] - runs[run]["write"]
        assert len(lost) <= in_flight                                   # at most what was in flight
        later = set().union(*(runs[r]["submit"] for r in range(run + 1, 4)))
        assert not runs[run]["write"] & later                           # finished tasks never rerun
        recomputed += len(lost & later)
    written = [runs[r]["write"] for r in range(4)]
    assert sum(map(len, written)) == len(set().union(*written))           # no task written twice
    assert len(set().union(*written)) >= 64 - 3    # a kill may fall between a task's done flag and its log line
    assert recomputed <= 3 * in_flight
    # every replicate says which run computed it
    st = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True, text=True)
    assert "tasks done: 64 / 64 (100.0%)" in st.stdout


def test_killed_worker_is_replaced_and_result_identical(medium, tmp_path):
    sweep_path, clean = medium
    store = tmp_path / "worker-killed.zarr"
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as cl:
        pids = cl.run(os.getpid)
        victim = sorted(pids.values())[0]
        errors = []
        thread = threading.Thread(target=lambda: _guard(errors, run_sweep, load_sweep(sweep_path), store, cl,
                                                        progress=False))
        thread.start()
        address = next(a for a, pid in pids.items() if pid == victim)
        deadline = time.monotonic() + 60
        held: list[str] = []
        while (writes(store) < 10 or not held) and time.monotonic() < deadline:
            held = [k for k in cl.processing(workers=[address]).get(address, ()) if "rmtsweep-task-" in k]
            time.sleep(0.01)
        written_at_kill = writes(store)
        os.kill(victim, signal.SIGKILL)
        thread.join(timeout=300)
        assert not thread.is_alive(), "the run had not finished 300 s after the kill"
        assert held, "the killed worker held no task when it died: nothing was rescheduled"
        assert 10 <= written_at_kill < MEDIUM_TASKS, written_at_kill      # the kill landed mid-sweep
        assert not errors, errors
        assert victim not in cl.run(os.getpid).values()          # the nanny started a new process
    # every task the dead worker held was computed again elsewhere and written, once
    lines = journal_file(store).read_text().splitlines()
    written = [line.split()[3] for line in lines if " write " in line]
    assert len(written) == len(set(written)) == MEDIUM_TASKS
    held_tasks = {k.split("rmtsweep-task-")[1].rsplit("-", 1)[0] for k in held if "rmtsweep-task-" in k}
    assert held_tasks <= set(written)
    assert held_tasks & set(written[written_at_kill:]), "no task the dead worker held was finished after its death"
    assert_stores_equal(store, clean)


def _guard(errors, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)


def test_repeated_failure_names_the_cell_and_keeps_done_cells(reference, tmp_path, monkeypatch):
    sweep_path, _ = reference
    original = work.compute_block

    def flaky(task):
        if task.start[3] == 2:                              # the second replicate block (both delta points)
            raise FloatingPointError("injected failure")
        return original(task)

    monkeypatch.setattr(work, "compute_block", flaky)
    store = tmp_path / "failing.zarr"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as cl:
        with pytest.raises(TaskFailedError, match=r"task delta=0\.5\.\.1 gamma=0\.5 T=4 replicates "
                                                  r"2-3 failed after 2 retries: FloatingPointError: injected"):
            run_sweep(load_sweep(sweep_path), store, cl, progress=False)
    done = open_store(store)["done"]
    assert not bool(done.sel(replicate=[2, 3]).any())
    assert bool(done.sel(replicate=[0, 1]).all())                    # tasks before the failure stayed done
    assert not (store / ".rmtsweep.lock").exists()                   # the lock went with the run


def _chunks_where(store, select) -> int:
    """How many chunks of ``done`` (tasks) hold at least one replicate where ``select(ds)`` is true."""
    import zarr

    from rmtsweep.store import chunk_done
    flags = np.asarray(select(open_store(store)).values, bool)
    return int((~chunk_done(~flags, zarr.open_group(str(store))["done"].chunks)).sum())


def _variant(base: dict, **grid) -> dict:
    data = yaml.safe_load(yaml.safe_dump(base))
    data["grid"].update(grid)
    return data


def test_extension_adds_replicates_and_axis_values(reference, sweep_data, write_sweep, client, tmp_path):
    sweep_path, small = reference
    store = tmp_path / "grow.zarr"
    shutil.copytree(small, store)
    bigger = _variant(sweep_data, delta=[0.5, 0.75, 1.0], weights=["mean", "optimal", "harmonic"])
    bigger["replicates"] = 6
    big_path = write_sweep(bigger, "bigger.yaml")
    report = run_sweep(load_sweep(big_path), store, client, progress=False)
    # the store keeps its batching: a task per chunk that holds anything new (the new scheme, the new point,
    # new replicates), read from the store itself, not from the cost model that chose the batching
    assert report.tasks_computed == _chunks_where(store, lambda ds: ds["run"] == 1)
    fresh = tmp_path / "fresh.zarr"
    run_sweep(load_sweep(big_path), fresh, client, progress=False)
    assert_stores_equal(store, fresh)
    ds = open_store(store)
    carried = ds["run"].sel(delta=[0.5, 1.0], weights=["mean", "optimal"], replicate=[0, 1, 2, 3])
    assert bool((carried == 0).all())                                     # computed by the original run
    status = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True,
                            text=True)
    assert "differ in sweep, version or revision" in status.stdout
    assert re.search(r"run 0 started .*: 16 replicates", status.stdout)


def test_changing_the_snr_axis_recomputes_every_cell_identically(reference, sweep_data, write_sweep, client,
                                                                tmp_path):
    sweep_path, small = reference
    store = tmp_path / "snr.zarr"
    shutil.copytree(small, store)
    report = run_sweep(load_sweep(write_sweep(_variant(sweep_data, snr=[0.0, 1.0, 4.0]))), store, client,
                       progress=False)
    assert report.tasks_computed == _chunks_where(store, lambda ds: ds["done"])      # every chunk, recomputed
    assert (open_store(store)["run"] == 1).all()
    old, new = open_store(small), open_store(store)
    assert np.array_equal(old["eigenvalues"].sel(snr=[0.0, 4.0]), new["eigenvalues"].sel(snr=[0.0, 4.0]))


@pytest.mark.parametrize("field, value, message", [
    ("d", 30, r"changes `d` \(24 in the store, 30 in the file\)"),
    ("seed", 8, r"changes `seed`"),
    ("table_centering", "none", r"changes `table_centering` \('class' in the store, 'none' in the file\)"),
    ("correlation", {"model": "iid"}, r"changes `correlation`"),
    ("replicates", 2, r"replicates = 2 but the store holds 4"),
    ("grid.delta", [0.5], r"grid\.delta drops \[1\.0\]"),
])
def test_incompatible_change_is_refused_and_store_untouched(reference, sweep_data, write_sweep, client, tmp_path,
                                                            field, value, message):
    _, small = reference
    store = tmp_path / "keep.zarr"
    shutil.copytree(small, store)
    if field.startswith("grid."):
        sweep_data["grid"][field[5:]] = value
    else:
        sweep_data[field] = value
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    with pytest.raises(StoreError, match=message + r".*start a new store with --store NEW_PATH"):
        run_sweep(load_sweep(write_sweep(sweep_data)), store, client, progress=False)
    after = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    assert after == before


def test_the_cli_refuses_another_sweep_before_a_cluster_starts_and_names_both(reference, monkeypatch, tmp_path,
                                                                              capsys):
    sweep_path, small = reference
    store = tmp_path / "keep.zarr"
    shutil.copytree(small, store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}
    stored_hash = open_store(store).attrs["sweep_hash"][:12]

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for a run the store refuses")
    monkeypatch.setattr("rmtsweep.cluster.engine.connect", no_cluster)
    code, _, err = run_main(["run", str(sweep_path), "seed=8", "--store", str(store), "--no-progress"], capsys)
    new_hash = load_sweep(sweep_path, ["seed=8"]).sweep.digest()[:12]
    assert code != 0 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert re.search(rf"changes `seed`.*\(the store: sweep hash {stored_hash}, overrides none; this run: sweep hash "
                     rf"{new_hash}, overrides seed=8\)", err), err
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before


def test_submit_refuses_another_sweep_before_the_queue(reference, monkeypatch, tmp_path, capsys):
    sweep_path, small = reference
    store = tmp_path / "keep.zarr"
    shutil.copytree(small, store)

    def no_job(*args, **kwargs):
        raise AssertionError("a driver job was submitted for a store that refuses its sweep")
    monkeypatch.setattr("rmtsweep.cluster.batch.submit_driver", no_job)
    code, _, err = run_main(["submit", str(sweep_path), "seed=8", "--store", str(store), "--cluster", "slurm"], capsys)
    assert code != 0 and "Traceback" not in err and "changes `seed`" in err and "overrides seed=8" in err, err


def test_interrupted_extension_is_recovered(reference, sweep_data, write_sweep, client, tmp_path):
    """Killed between the two renames of the swap: the original store comes back."""
    _, small = reference
    store = tmp_path / "swap.zarr"
    shutil.copytree(small, store.with_name("swap.zarr.rmtsweep-old"))
    shutil.copytree(small, store.with_name("swap.zarr.rmtsweep-new"))
    report = run_sweep(load_sweep(write_sweep(sweep_data)), store, client, progress=False)
    assert report.tasks_computed == 0
    assert not store.with_name("swap.zarr.rmtsweep-old").exists()
    assert not store.with_name("swap.zarr.rmtsweep-new").exists()
    assert_stores_equal(store, small)
