"""One writer per store: the fenced lease of rmtsweep.store.lock, step by step (see its module docstring)."""

from __future__ import annotations

import json
import multiprocessing
import os
import socket
import subprocess
import sys
import time

import pytest

from rmtsweep.errors import RunError, StoreError
from rmtsweep.store.lock import StoreLock, holds, judge, lock_file


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _remote(path, token="remote", beat=0):
    """A lock file as a run on another host writes it: a new file renamed over the old (written in place, a
    reader under load once caught it empty and refused the store with its owner unknown, `pid ? on ?`)."""
    tmp = path.with_name(path.name + ".tmp-remote")
    tmp.write_text(json.dumps({"token": token, "host": "elsewhere", "pid": 1, "started": "earlier", "beat": beat}))
    os.replace(tmp, path)


def test_the_lock_lives_beside_the_store_not_in_it(tmp_path):
    store = tmp_path / "demo.zarr"
    with StoreLock(store) as lock:
        assert lock.path == tmp_path / "demo.zarr.lock" and lock.path.exists()
        assert not store.exists()                                    # taken before the store is created
        assert json.loads(lock.path.read_text())["token"] == lock.token and holds(store, lock.token)
    assert not lock.path.exists()


def test_second_lock_is_refused_while_the_first_lives(tmp_path):
    with StoreLock(tmp_path / "s.zarr"):
        start = time.monotonic()
        with pytest.raises(StoreError, match=rf"another rmtsweep run is writing this store \(pid {os.getpid()} on "):
            StoreLock(tmp_path / "s.zarr").acquire()
        assert time.monotonic() - start < 1                          # a live owner on this host: at once
    with StoreLock(tmp_path / "s.zarr"):                              # free again after release
        pass


def test_lock_of_a_dead_process_on_this_host_is_taken_over_at_once(tmp_path):
    path = lock_file(tmp_path / "s.zarr")
    path.write_text(json.dumps({"token": "old", "host": socket.gethostname(), "pid": _dead_pid(), "beat": 3}))
    assert judge(path, lease=3600)[0] == "stale"
    with StoreLock(tmp_path / "s.zarr") as lock:
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()


def test_staleness_is_the_beat_on_the_readers_clock_not_the_files_mtime(tmp_path):
    """An NFS server's clock stamps the mtime: an hour-old mtime with a moving beat is live, a fresh one
    with a still beat is stale."""
    path = lock_file(tmp_path / "s.zarr")
    _remote(path)
    hour_ago = time.time() - 3600
    os.utime(path, (hour_ago, hour_ago))
    ticks = iter(range(100))

    def beating(_):
        beat = next(ticks)
        _remote(path, beat=beat)
        os.utime(path, (hour_ago, hour_ago))
    assert judge(path, lease=0.3, poll=0.01, sleep=beating)[0] == "live"
    future = time.time() + 3600
    os.utime(path, (future, future))
    start = time.monotonic()
    assert judge(path, lease=0.3, poll=0.01)[0] == "stale"
    assert 0.3 <= time.monotonic() - start < 2                       # judged after one lease, on our clock


def test_a_live_remote_lock_is_refused_and_a_still_one_taken_over(tmp_path):
    store = tmp_path / "s.zarr"
    _remote(lock_file(store))
    with pytest.raises(StoreError, match="pid 1 on elsewhere"):
        _acquire_while_beating(store)
    with StoreLock(store, lease=0.2) as lock:                           # nobody beats it: stale after 0.2 s
        assert holds(store, lock.token)


def _acquire_while_beating(store):
    """Acquire with a short lease while a fake remote owner keeps beating in a thread."""
    import threading
    stop = threading.Event()

    def owner():
        beat = 0
        while not stop.wait(0.02):
            beat += 1
            _remote(lock_file(store), beat=beat)
    thread = threading.Thread(target=owner)
    thread.start()
    try:
        StoreLock(store, lease=0.5).acquire()
    finally:
        stop.set()
        thread.join()


def test_two_runs_that_judged_one_lock_stale_end_with_one_holder(tmp_path):
    """The check-then-rename race, forced: B takes over *after* A already did, from the same judgement."""
    store = tmp_path / "s.zarr"
    path = lock_file(store)
    _remote(path, token="dead")
    a, b = StoreLock(store, lease=0.1), StoreLock(store, lease=0.1)
    state, judged = judge(path, lease=0.1)                          # both see the same stale lock
    assert state == "stale"
    a._take_over(judged)
    assert a._create()                                               # A holds it now
    b._take_over(judged)                                             # B acts on its earlier judgement
    assert holds(store, a.token)                                     # ... and put A's lock back
    assert not b._create()
    assert judge(path)[0] == "live"                                  # B's next look refuses (A's pid lives)
    assert not list(tmp_path.glob("*.stale-*"))


def _contender(store: str, lease: float, barrier, results) -> None:
    barrier.wait()
    try:
        lock = StoreLock(store, heartbeat=0.05, lease=lease)
        lock.acquire()
    except StoreError:
        results.put("refused")
        return
    time.sleep(1.5)                                                  # hold it while the others try
    try:
        lock.check()
        results.put("held")
    except RunError:
        results.put("lost")
    finally:
        lock.release()


def test_six_processes_taking_over_one_stale_lock_leave_one_holder(tmp_path):
    store = tmp_path / "s.zarr"
    _remote(lock_file(store), token="dead")
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_contender, args=(str(store), 0.3, barrier, results)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=60)
    outcomes = sorted(results.get(timeout=5) for _ in procs)
    # safety: never two holders, and no holder loses the lock it took. (Under heavy load every contender
    # may be refused with "try again" -- seen once in CI -- which is allowed: the lock promises one writer
    # at most, not that a race of six always has a winner.)
    assert outcomes.count("held") <= 1, outcomes
    assert outcomes.count("lost") == 0, outcomes


@pytest.mark.parametrize("error, words", [(OSError(5, "Input/output error"), "Input/output error"),
                                          (RuntimeError("Could not connect to the endpoint URL"),
                                           "Could not connect to the endpoint URL")],
                         ids=["file system", "a bucket's endpoint (not an OSError)"])
def test_the_heartbeat_retries_transient_errors_until_the_lease_would_lapse(tmp_path, monkeypatch, error, words):
    lock = StoreLock(tmp_path / "s.zarr", heartbeat=0.05, lease=1.0)
    real = StoreLock._write_beat
    failures = {"left": 3}                                            # -1: fail for ever

    def flaky(self):
        if failures["left"] != 0:
            failures["left"] -= failures["left"] > 0
            raise error
        real(self)
    monkeypatch.setattr(StoreLock, "_write_beat", flaky)
    lock.acquire()
    try:
        time.sleep(0.5)
        lock.check()                                                  # three failed beats, then healthy again
        assert lock.beat > 0 and failures["left"] == 0
        failures["left"] = -1                                          # from now on every beat fails
        time.sleep(0.4)
        lock.check()                                                  # within the lease: still running
        time.sleep(1.0)
        with pytest.raises(RunError, match=rf"cannot refresh the store's lock \({words}\)"):
            lock.check()
    finally:
        lock.release()


def test_a_lock_taken_over_stops_its_old_holder(tmp_path):
    store = tmp_path / "s.zarr"
    lock = StoreLock(store, heartbeat=0.05)
    lock.acquire()
    try:
        lock.check()
        _remote(lock.path, token="intruder")                        # another run took the store over
        with pytest.raises(RunError, match=r"is no longer this run's; stopped so that no other run"):
            lock.check()
    finally:
        lock.release()
    assert json.loads(lock_file(store).read_text())["token"] == "intruder"     # not removed by the old holder


def test_cli_refuses_a_store_another_run_writes(reference, tmp_path):
    import shutil
    sweep_path, ref = reference
    store = tmp_path / "busy.zarr"
    shutil.copytree(ref, store)
    with StoreLock(store):
        proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store", str(store),
                               "--workers", "1", "--no-progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]       # one line, before any cluster starts
    assert proc.stderr.startswith(f"rmtsweep: error: {store}: another rmtsweep run")


def test_the_metadata_lock_passes_from_hand_to_hand_without_failing_a_patient_waiter(tmp_path):
    """Twenty holders of 0.15 s each, one at a time: the last waits about 3 s, three times the lock's 1 s
    timeout, and still gets it, since the lock kept changing hands (the elements of an array starting together)."""
    import threading

    from rmtsweep.store.metalock import metadata_lock
    inside, most, got, errors = [0], [0], [], []
    guard = threading.Lock()

    def take(i: int) -> None:
        try:
            with metadata_lock(tmp_path, timeout=1.0):
                with guard:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                time.sleep(0.15)
                with guard:
                    inside[0] -= 1
                got.append(i)
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert sorted(got) == list(range(20)) and most[0] == 1          # every one, and never two at once


@pytest.fixture(params=["disk", "bucket"])
def beside(request, tmp_path):
    """Where stores live side by side: a directory, or a prefix of a bucket on the tests' moto server."""
    from rmtsweep.store.location import locate
    if request.param == "disk":
        return lambda name: locate(tmp_path / name)
    import uuid

    import s3fs
    endpoint = request.getfixturevalue("s3_endpoint")
    s3fs.S3FileSystem(endpoint_url=endpoint).makedirs("wildcards", exist_ok=True)
    prefix = f"s3://wildcards/{uuid.uuid4().hex}"
    return lambda name: locate(f"{prefix}/{name}", {"endpoint_url": endpoint})


@pytest.mark.parametrize(("odd", "plain"), [("a?.zarr", "a1.zarr"), ("b*.zarr", "bx.zarr"), ("c[1].zarr", "c1.zarr")])
def test_a_store_named_like_a_pattern_leaves_the_locks_it_would_match_alone(beside, odd, plain):
    from rmtsweep.store.fence import staging_dir
    live = [StoreLock(beside(plain)), StoreLock(beside(plain), share=(0, 2))]
    for lock in live:
        lock.acquire()
    try:
        for share in (None, (1, 3)):                    # a run and a share of another size: nothing live is theirs
            with StoreLock(beside(odd), share=share) as mine:
                mine.check()
        for lock in live:
            lock.check()                                # still the holder: not taken over, not removed
            assert holds(lock.store, lock.token, lock.share, strict=True)
            assert not lock.path.renames or staging_dir(lock.path, lock.token).exists()
    finally:
        for lock in live:
            lock.release()


def test_a_cli_run_into_a_store_named_like_a_pattern_leaves_a_live_run_beside_it_alone(reference, tmp_path):
    from rmtsweep.store.fence import staging_dir
    sweep_path, _ = reference
    with StoreLock(tmp_path / "a1.zarr") as live:
        proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store",
                               str(tmp_path / "a?.zarr"), "--workers", "1", "--no-progress"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        live.check()
        assert staging_dir(live.path, live.token).is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a?.zarr", "a?.zarr.journal"]


@pytest.mark.parametrize("left", ["released", "held by the new run"])
def test_a_heartbeat_frozen_between_its_read_and_its_write_never_brings_back_a_lock_taken_over(request, monkeypatch,
                                                                                           left):
    """A bucket's lock: the old holder read its own token, froze, another run took the store over (its lease had
    lapsed) and finished or still runs; the old holder's heartbeat then resumes. Its write must change nothing: a
    lock brought back with the old token would let the old run's workers pass their lock check again."""
    import uuid

    import s3fs

    from rmtsweep.store.location import locate
    endpoint = request.getfixturevalue("s3_endpoint")
    s3fs.S3FileSystem(endpoint_url=endpoint).makedirs("heartbeats", exist_ok=True)
    store = locate(f"s3://heartbeats/{uuid.uuid4().hex}/s.zarr", {"endpoint_url": endpoint})
    lock = StoreLock(store, heartbeat=3600.0)                  # no beat of its own: this test makes the one beat
    lock.acquire()
    new_run = json.dumps({"token": "new", "host": "elsewhere", "pid": 1, "started": "now", "beat": 0}).encode()
    kind, read = type(lock.path), type(lock.path).read
    frozen = []

    def read_then_taken_over(path):
        raw = read(path)
        if str(path) == str(lock.path) and not frozen:          # the heartbeat's read: then the take-over
            frozen.append(raw)
            if left == "released":
                path.remove()
            else:
                path.write(new_run)
        return raw
    monkeypatch.setattr(kind, "read", read_then_taken_over)
    try:
        with pytest.raises(LookupError):
            lock._write_beat()
        assert json.loads(frozen[0])["token"] == lock.token     # it had read its own lock
        assert read(lock.path) == (None if left == "released" else new_run)
        assert not holds(store, lock.token, strict=True)
    finally:
        monkeypatch.undo()
        lock.release()
