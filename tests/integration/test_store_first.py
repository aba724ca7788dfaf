"""The store, its template and its lock exist before the cluster starts, so ``rmtsweep status`` answers at once.

A run's cluster start is slowed here by a wrapper around :func:`rmtsweep.cluster.engine.connect`: it waits up to
``DELAY`` seconds (or until the test says go) before it connects, as a cluster on a busy machine or in a
batch queue would. Meanwhile the store must be there, complete and with no task done, and a stop must
release its lock. Every wait is for an event, under a generous ceiling.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import xarray as xr
import yaml

from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM, MEDIUM_TASKS
from tests.integration.test_startup_failures import INTERRUPTED, TERMINATED, finish, one_line

DELAY = 20.0           # seconds the wrapped cluster start takes unless the test says go

# `python -c WRAPPER STARTED GO rmtsweep-args...`: the command line, its cluster start slowed. STARTED is made
# when the cluster start begins, STARTED.cluster when it ends (the real connection begins).
WRAPPER = f"""
import contextlib, pathlib, sys, time
import rmtsweep.cluster.engine as engine
started, go = pathlib.Path(sys.argv.pop(1)), pathlib.Path(sys.argv.pop(1))
real = engine.connect

@contextlib.contextmanager
def slow(*args, **kwargs):
    started.touch()
    deadline = time.monotonic() + {DELAY}
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    started.with_suffix(".cluster").touch()
    with real(*args, **kwargs) as connected:
        yield connected

engine.connect = slow
from rmtsweep.cli import script
script()
"""


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """MEDIUM run through the API with a client made first: the order of the run before the store came first."""
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep
    root = tmp_path_factory.mktemp("reference")
    sweep = root / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        run_sweep(load_sweep(sweep), root / "ref.zarr", client, progress=False)
    return root / "ref.zarr"


def _start(tmp_path: Path, store: Path) -> tuple[subprocess.Popen, Path, Path]:
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    started, go = tmp_path / "started", tmp_path / "go"
    args = ["run", str(sweep), "--store", str(store), "--workers", "2", "--in-process", "--no-progress"]
    proc = subprocess.Popen([sys.executable, "-c", WRAPPER, str(started), str(go), *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, started, go


def _until(proc: subprocess.Popen, reached, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not reached():
        assert proc.poll() is None, f"ended before {what}: {proc.stderr.read()[-3000:]}"
        assert time.monotonic() < deadline, f"{what} not reached in {timeout} s"
        time.sleep(0.02)


def _status(store: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True,
                          text=True, timeout=120)


def _same(store: Path, reference: Path) -> None:
    """Bit for bit the reference: results, which replicates a run computed, task sizes and theory."""
    from rmtsweep.store import RESULT_VARS, blocking_of
    assert blocking_of(store) == blocking_of(reference)
    assert_stores_equal(store, reference)
    a, b = (xr.open_zarr(p, chunks=None) for p in (store, reference))
    rest = [name for name in b.data_vars if name not in (*RESULT_VARS, "run")]
    assert rest and sorted(a.data_vars) == sorted(b.data_vars)
    xr.testing.assert_equal(a[rest], b[rest])


def test_status_answers_while_a_slow_cluster_starts(reference, tmp_path):
    """On a loaded machine, with the cluster's start taking 20 s: `status` answers before the cluster is up, then
    the run finishes into the store a run whose client came first makes."""
    store = tmp_path / "s.zarr"
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        proc, started, go = _start(tmp_path, store)
        cluster = started.with_suffix(".cluster")
        _until(proc, lambda: (store / ".zattrs").exists() or cluster.exists(), "the store or the cluster")
        assert not cluster.exists(), "the cluster started before the store existed"
        seen = _status(store)
        assert not cluster.exists(), "the cluster started before `status` answered"
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
    assert seen.returncode == 0, seen.stderr
    assert f"tasks done: 0 / {MEDIUM_TASKS} " in seen.stdout, seen.stdout
    assert started.exists()                    # the cluster was starting all along
    go.touch()
    code, err, _ = finish(proc, timeout=300)
    assert code == 0, err[-3000:]
    one_line(err, ())
    _same(store, reference)


@pytest.mark.parametrize(("sig", "code", "line"), [(signal.SIGINT, 130, INTERRUPTED), (signal.SIGTERM, 143, TERMINATED)],
                         ids=["ctrl-c", "sigterm"])
def test_a_stop_while_the_cluster_starts_releases_the_store(sig, code, line, reference, tmp_path):
    """Stopped while its cluster starts: the same exit status and line as ever, the store a complete one with no
    task done, its lock released; the same command then finishes it."""
    from rmtsweep.store import lock_file, tasks_done
    store = tmp_path / "s.zarr"
    proc, started, _ = _start(tmp_path, store)
    _until(proc, started.exists, "the cluster's start")
    assert (store / ".zattrs").exists(), "no store while the cluster starts"
    os.killpg(proc.pid, sig)
    got, err, took = finish(proc)
    assert got == code, err[-3000:]
    assert one_line(err, (line,)) == [line]
    assert not started.with_suffix(".cluster").exists()
    assert tasks_done(store) == (0, MEDIUM_TASKS)
    assert not Path(str(lock_file(store))).exists()
    again = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(tmp_path / "medium.yaml"), "--store",
                            str(store), "--workers", "2", "--in-process", "--no-progress"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    _same(store, reference)


def test_a_memory_refusal_once_workers_joined_leaves_the_store_complete_and_says_so(tmp_path):
    """The memory check needs the workers' limits, so it comes after the store: refused in one line that says the
    store stays as prepared, with no task done and no lock."""
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep
    from rmtsweep.errors import UserError
    from rmtsweep.run import open_run
    from rmtsweep.store import lock_file, tasks_done
    sweep, store = tmp_path / "medium.yaml", tmp_path / "s.zarr"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    with open_run(load_sweep(sweep), store, threads=1) as opened:
        assert tasks_done(store) == (0, MEDIUM_TASKS)
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, memory_limit="100kB",
                          dashboard_address="127.0.0.1:0") as cluster, Client(cluster) as client, \
                pytest.raises(UserError) as refused:
            opened.compute(client, progress=False)
    assert "exceeds the 0.00 GiB a worker thread has" in str(refused.value)
    assert str(refused.value).endswith(f"; {store} stays as this run prepared it, with no task computed now")
    assert tasks_done(store) == (0, MEDIUM_TASKS)
    assert not Path(str(lock_file(store))).exists()


def test_a_template_cut_by_a_stop_leaves_nothing_beside_the_store(tmp_path, monkeypatch):
    """Ctrl-C while the template is written (now before the cluster, where a stop is likelier): no half template
    is left beside the store, and no store."""
    from rmtsweep.run.runner import make_template
    from rmtsweep.spec import load_sweep
    from rmtsweep.store import io, locate
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    tpl = make_template(load_sweep(sweep), (1, 1, 1, 2))
    real = io.write_template

    def cut(path, template):
        real(path, template)
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "write_template", cut)
    with pytest.raises(KeyboardInterrupt):
        io.create(locate(tmp_path / "s.zarr"), tpl)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["medium.yaml"]
