"""A writer stopped past its lease writes nothing once another run took the store over.

The old writer runs on "another node" (its host name patched, so its lock is judged by its heartbeat, as
a remote one is), computes another version's numbers (every eigenvalue + 1, so any chunk it writes shows),
and stops itself with SIGSTOP right after its lock check returned true and before its first write: the
window a frozen node or a suspended job leaves. A replacement then takes the lock over (its lease lapsed)
and computes the whole sweep. The old writer is continued during the replacement's run, or after it. The
store must then equal a clean run bit for bit, and the old writer must end in one line, exit status 1.

``fencing_trials.py`` beside this file runs the same sequence many times on each backend and counts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM, build_store

pytestmark = pytest.mark.slow

LEASE = "2"

FROZEN = r'''
import os, signal, socket, sys
socket.gethostname = lambda: "a-node-that-froze"      # judged by its heartbeat, as a remote writer is
import rmtsweep.run.work as work
checked, compute = work.holds, work.compute_block
stopped = []

def holds(*args, **kwargs):
    ok = checked(*args, **kwargs)
    if ok and not stopped:
        stopped.append(1)
        os.kill(os.getpid(), signal.SIGSTOP)            # frozen between the lock check and the write
    return ok

def other_version(task):
    out = compute(task)
    out["eigenvalues"] = out["eigenvalues"] + 1.0
    return out

work.holds, work.compute_block = holds, other_version
from rmtsweep.cli import _group
sys.exit(_group.main(sys.argv[1:]) or 0)
'''

SWEEP = {**MEDIUM, "name": "fenced", "cells_per_task": 2, "replicates_per_task": 4}


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait(predicate, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def trial(root: Path, args: list[str], env: dict, when: str, lock: callable) -> tuple[subprocess.CompletedProcess,
                                                                                       subprocess.CompletedProcess]:
    """One stop, take-over and continue; ``when`` is ``"during"`` or ``"after"`` the replacement's run."""
    frozen = root / "frozen.py"
    frozen.write_text(FROZEN)
    old = subprocess.Popen([sys.executable, str(frozen), *args], cwd=root, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait(lambda: old.poll() is not None or _state(old.pid) == "T", "the old writer to stop itself")
        assert old.poll() is None, old.communicate()[1][-2000:]
        new = subprocess.Popen([sys.executable, "-m", "rmtsweep.cli", *args], cwd=root, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        if when == "during":
            _wait(lambda: new.poll() is not None or lock() != "a-node-that-froze", "the take-over")
            os.kill(old.pid, signal.SIGCONT)
        replaced = subprocess.CompletedProcess(new.args, new.wait(timeout=300), *new.communicate())
        if when == "after":
            os.kill(old.pid, signal.SIGCONT)
        stale = subprocess.CompletedProcess(old.args, old.wait(timeout=120), *old.communicate())
    finally:
        for proc in (old,):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
    return replaced, stale


def _lock_host(path: Path):
    def host() -> str | None:
        try:
            return yaml.safe_load(path.read_text()).get("host")
        except (OSError, AttributeError, yaml.YAMLError):
            return None
    return host


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("clean") / "clean.zarr", SWEEP)


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "RMTSWEEP_IN_PROCESS"}
    return {**env, "DASK_RMTSWEEP__LOCK__LEASE": LEASE, "DASK_RMTSWEEP__LOCK__HEARTBEAT": "0.5",
            "RMTSWEEP_DASHBOARD_ADDRESS": "none"}


@pytest.mark.parametrize("when", ["during", "after"])
def test_a_stopped_array_element_writes_nothing_after_the_take_over(when, tmp_path, reference):
    from rmtsweep.run import ready_store
    from rmtsweep.spec import load_sweep
    sweep = tmp_path / "fenced.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    store = tmp_path / "s.zarr"
    ready_store(load_sweep(sweep), store, 1)
    args = ["work", str(store), "--share", "0/1", "--workers", "1", "--in-process", "--no-progress"]
    replaced, stale = trial(tmp_path, args, _env(), when, _lock_host(store.with_name("s.zarr.share-0-of-1.lock")))
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    assert stale.returncode == 1, stale.stderr[-2000:]
    last = stale.stderr.strip().splitlines()[-1]
    assert last.startswith("rmtsweep: error:") and "another run" in last, stale.stderr
    assert_stores_equal(store, reference)


@pytest.mark.parametrize("when", ["during", "after"])
def test_a_stopped_run_writes_nothing_after_the_take_over(when, tmp_path, reference):
    sweep = tmp_path / "fenced.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    store = tmp_path / "s.zarr"
    args = ["run", str(sweep), "--store", str(store), "--workers", "1", "--in-process", "--no-progress"]
    replaced, stale = trial(tmp_path, args, _env(), when, _lock_host(store.with_name("s.zarr.lock")))
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    assert stale.returncode == 1, stale.stderr[-2000:]
    assert_stores_equal(store, reference)


@pytest.mark.parametrize("when", ["during", "after"])
def test_a_stopped_run_writes_nothing_in_a_bucket_after_the_take_over(when, tmp_path, reference, s3_endpoint):
    import s3fs
    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, use_listings_cache=False)
    bucket = f"fence-{when}"
    fs.mkdir(bucket)
    sweep = tmp_path / "fenced.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP))
    url = f"s3://{bucket}/s.zarr"

    def host() -> str | None:
        try:
            return yaml.safe_load(fs.cat_file(f"{bucket}/s.zarr.lock")).get("host")
        except (OSError, AttributeError, yaml.YAMLError):
            return None

    args = ["run", str(sweep), "--store", url, "--storage-option", f"endpoint_url={s3_endpoint}", "--workers", "1",
            "--in-process", "--no-progress"]
    replaced, stale = trial(tmp_path, args, _env(), when, host)
    assert replaced.returncode == 0, replaced.stderr[-2000:]
    assert stale.returncode == 1, stale.stderr[-2000:]
    import xarray as xr
    assert_stores_equal(xr.open_zarr(url, storage_options={"endpoint_url": s3_endpoint}, chunks=None).load(),
                        reference)
