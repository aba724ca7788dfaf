"""One writer per store; a dead run's lock is taken over, a live one's never."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from rmtsweep.errors import StoreError
from rmtsweep.store.lock import LOCK_NAME, STALE_AFTER, StoreLock, is_stale


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_second_lock_is_refused_while_the_first_lives(tmp_path):
    with StoreLock(tmp_path):
        with pytest.raises(StoreError, match=rf"another rmtsweep run is writing this store \(pid {os.getpid()} on "):
            StoreLock(tmp_path).acquire()
    assert not (tmp_path / LOCK_NAME).exists()
    with StoreLock(tmp_path):            # free again after release
        pass


def test_lock_of_a_dead_process_is_taken_over(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"host": socket.gethostname(), "pid": _dead_pid(),
                                                  "started": "earlier"}))
    assert is_stale(tmp_path / LOCK_NAME)
    with StoreLock(tmp_path) as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()


def test_lock_from_another_host_is_stale_only_without_heartbeat(tmp_path):
    path = tmp_path / LOCK_NAME
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "started": "earlier"}))
    assert not is_stale(path)
    with pytest.raises(StoreError, match="pid 1 on elsewhere"):
        StoreLock(tmp_path).acquire()
    old = time.time() - STALE_AFTER - 5
    os.utime(path, (old, old))
    assert is_stale(path)
    with StoreLock(tmp_path):
        pass


def test_cli_refuses_a_store_another_run_writes(reference, tmp_path):
    import shutil
    sweep_path, ref = reference
    store = tmp_path / "busy.zarr"
    shutil.copytree(ref, store)
    with StoreLock(store):
        proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store", str(store),
                               "--workers", "1", "--no-progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith(f"rmtsweep: error: {store}: another rmtsweep run")
