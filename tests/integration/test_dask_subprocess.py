"""A plain `dask scheduler` + `dask worker` pair on loopback, as in deploy/README.md."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from distributed import Client

from rmtsweep.testing import assert_stores_equal

pytestmark = pytest.mark.slow


@pytest.fixture
def dask_cli(tmp_path: Path) -> Iterator[Callable[..., subprocess.Popen]]:
    """Start `dask ...` subprocesses (own process groups); stop every one of them afterwards."""
    started: list[subprocess.Popen] = []

    def start(*args: str) -> subprocess.Popen:
        log = open(tmp_path / f"{args[0]}-{len(started)}.log", "w")
        proc = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        started.append(proc)
        return proc

    yield start
    for proc in reversed(started):  # workers first, then the scheduler
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def wait_for_file(path: Path, proc: subprocess.Popen, log: Path, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"dask scheduler exited with {proc.returncode}:\n{log.read_text()}")
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.2)
    raise AssertionError(f"no scheduler file after {timeout} s:\n{log.read_text()}")


def test_scheduler_and_two_workers_on_loopback(dask_cli, tmp_path):
    sched_file = tmp_path / "scheduler.json"
    scheduler = dask_cli("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                         "--scheduler-file", str(sched_file))
    info = wait_for_file(sched_file, scheduler, tmp_path / "scheduler-0.log")
    assert info["address"].startswith("tcp://127.0.0.1:")
    workers = [dask_cli("worker", "--scheduler-file", str(sched_file), "--nthreads", "1",
                        "--host", "127.0.0.1", "--no-dashboard") for _ in range(2)]
    with Client(scheduler_file=str(sched_file), timeout=30) as client:
        client.wait_for_workers(2, timeout=60)
        seen = client.scheduler_info()["workers"]
        assert len(seen) == 2
        assert all(w["nthreads"] == 1 and w["host"] == "127.0.0.1" for w in seen.values())
        futures = client.map(lambda x: x + 1, range(10))
        assert client.gather(futures) == list(range(1, 11))
        assert len(client.run(os.getpid)) == 2
    assert all(proc.poll() is None for proc in [scheduler, *workers])


def test_sweep_through_a_plain_scheduler_equals_local_cluster(dask_cli, reference, tmp_path):
    """`rmtsweep run --scheduler-file FILE` against `dask scheduler` + two `dask worker` processes."""
    sched_file = tmp_path / "scheduler.json"
    scheduler = dask_cli("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                         "--scheduler-file", str(sched_file))
    address = wait_for_file(sched_file, scheduler, tmp_path / "scheduler-0.log")["address"]
    for _ in range(2):
        dask_cli("worker", address, "--nthreads", "1", "--host", "127.0.0.1", "--no-dashboard")
    with Client(address, timeout=30) as client:
        client.wait_for_workers(2, timeout=60)
    sweep_path, local_store = reference
    store_path = tmp_path / "remote.zarr"
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store", str(store_path),
                           "--scheduler-file", str(sched_file), "--no-progress"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert_stores_equal(store_path, local_store)
