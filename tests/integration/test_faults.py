"""Faults end one line long: SIGTERM stops cleanly and resumes, I/O errors and a lost lock are run failures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from rmtsweep.store.lock import lock_file
from tests.helpers import MEDIUM, build_store, writes, sigterm_once_written

pytestmark = pytest.mark.slow


def test_sigterm_stops_within_ten_seconds_and_resumes(tmp_path):
    from rmtsweep.testing import assert_stores_equal
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    store, clean = tmp_path / "term.zarr", tmp_path / "clean.zarr"
    cmd = [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep), "--workers", "1", "--no-progress"]
    proc = subprocess.Popen(cmd + ["--store", str(store)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while writes(store) < 5 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proc.poll() is None, proc.stderr.read()[-2000:]
    t0 = time.monotonic()
    os.kill(proc.pid, signal.SIGTERM)                      # the driver only, as a batch system does
    out, err = proc.communicate(timeout=60)
    elapsed = time.monotonic() - t0
    assert proc.returncode == 143, err[-3000:]
    assert elapsed < 10, f"took {elapsed:.1f} s to stop"
    assert err.strip().splitlines()[-1] == "rmtsweep: stopped by SIGTERM; rerun the same command to resume"
    assert "Traceback" not in err and "Exception ignored" not in err
    assert not lock_file(store).exists()                 # the lock went with the run
    assert 5 <= writes(store) < 64                         # stopped mid-sweep, finished tasks kept
    done = subprocess.run(cmd + ["--store", str(store)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert_stores_equal(store, build_store(clean, MEDIUM))


def test_a_failed_done_write_is_one_line_and_the_rerun_recomputes_those_tasks(reference, tmp_path, monkeypatch,
                                                                              capsys):
    """ENOSPC on the driver's ``done`` write, after the workers wrote the data: one line, exit 1; the data
    are there without ``done`` (never trusted), and the rerun recomputes them into the reference store."""

    import zarr

    from rmtsweep.cli import main
    from rmtsweep.store import Writer
    from rmtsweep.testing import assert_stores_equal
    sweep_path, small = reference
    store = tmp_path / "full.zarr"
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import load_sweep
    prepare_store(load_sweep(sweep_path), store)                        # an empty store: every task to compute

    def full(self, regions, *null):
        raise OSError(28, "No space left on device", str(store / "done" / "0.0.0.0.0"))

    with monkeypatch.context() as patch:
        patch.setattr(Writer, "mark_done_many", full)
        with pytest.raises(SystemExit) as exc:
            main(["run", str(sweep_path), "--store", str(store), "--workers", "1", "--no-progress"])
    assert exc.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"rmtsweep: error: {store / 'done' / '0.0.0.0.0'}: No space left on device"
    group = zarr.open_group(str(store))
    assert not group["done"][...].any()
    assert list((store / "eigenvalues").glob("0.*"))                  # the data of a task came first ...
    assert not lock_file(store).exists()
    main(["run", str(sweep_path), "--store", str(store), "--workers", "1", "--no-progress"])
    assert "computed now" in capsys.readouterr().out
    assert_stores_equal(store, small)                                   # ... and were recomputed, not trusted


def test_a_store_that_cannot_be_read_is_told_from_one_that_is_not_a_store(reference, tmp_path):
    import shutil

    from rmtsweep.errors import StoreError
    from rmtsweep.store import open_store, store_problem
    _, small = reference
    broken = tmp_path / "broken.zarr"
    shutil.copytree(small, broken)
    (broken / ".zattrs").write_text((broken / ".zattrs").read_text()[:40])       # truncated metadata
    assert store_problem(broken).startswith("cannot read its metadata (.zattrs is truncated or corrupt")
    with pytest.raises(StoreError, match=r"broken\.zarr: cannot read its metadata"):
        open_store(broken)
    other = tmp_path / "plain"
    other.mkdir()
    assert store_problem(other) == "not an rmtsweep store (no 'rmtsweep-store-1' marker)"
    assert store_problem(small) is None


def test_compare_write_and_a_starting_run_wait_for_the_metadata_lock(reference, tmp_path):
    """Both rewrite the consolidated metadata, so each waits while the other holds the metadata lock."""
    import json
    import shutil
    import threading

    from rmtsweep.analysis.compare import compare, write_comparison
    from rmtsweep.store import metadata_lock, record_run
    _, small = reference
    store = tmp_path / "busy.zarr"
    shutil.copytree(small, store)
    cmp = compare(store)
    for writer in (lambda: write_comparison(store, cmp), lambda: record_run(store, {"started": "now"})):
        with metadata_lock(store):
            thread = threading.Thread(target=writer)
            thread.start()
            thread.join(timeout=0.5)
            assert thread.is_alive()                                  # it waits for the lock ...
        thread.join(timeout=30)
        assert not thread.is_alive()                                  # ... and then writes
    meta = json.loads((store / ".zmetadata").read_text())["metadata"]
    assert "comparison/.zgroup" in meta and meta[".zattrs"]["runs"][-1]["started"] == "now"
    assert not (store / ".rmtsweep-metadata.lock").exists()


def test_the_pbs_driver_script_stops_rmtsweep_cleanly_before_its_walltime(tmp_path):
    """PBS has no warning signal: the driver script's ``timeout`` prefix sends SIGTERM, rmtsweep stops in one line.

    The prefix is taken from a real PBS driver script (a 60 s walltime with a 50 s warning: SIGTERM
    after 10 s). On a busy machine 10 s may pass before a first write, so the test runs the same prefix
    with a long duration and sends the SIGTERM itself once a task is written: ``timeout`` relays it to
    rmtsweep as it sends its own. rmtsweep must stop before ``--kill-after`` would kill it (exit 143, not 137).
    """
    import re
    import shlex

    from rmtsweep.cluster.batch import ClusterConfig, driver_script
    script = driver_script("pbs", ClusterConfig(driver_walltime="00:01:00", driver_stop_warning=50),
                           tmp_path / "s.yaml", tmp_path / "s.zarr", None, None)
    exec_line = shlex.split(script.splitlines()[-1])
    prefix = exec_line[1:exec_line.index(next(a for a in exec_line if a.endswith("rmtsweep")))]
    assert prefix == ["timeout", "--foreground", "--signal=TERM", "--kill-after=60", "--preserve-status", "10s"]
    sweep = tmp_path / "long.yaml"
    sweep.write_text(yaml.safe_dump({**MEDIUM, "name": "long", "replicates": 4096, "replicates_per_task": 16}))
    store = tmp_path / "pbs.zarr"
    proc = subprocess.Popen([*prefix[:-1], "3600s", sys.executable, "-m", "rmtsweep.cli", "run", str(sweep),
                             "--store", str(store), "--workers", "1", "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sigterm_once_written(proc, lambda: writes(store))
    assert not lock_file(store).exists() and 0 < writes(store) < 2048
    assert re.search(r"tasks done: \d+ / 2048", subprocess.run(
        [sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True, text=True).stdout)
