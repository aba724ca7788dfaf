"""Job arrays without a driver: the store made once, then elements that each compute one share of the tasks.

`rmtsweep submit SWEEP --array N` makes the store (:func:`rmtsweep.run.ready_store`) and submits N jobs that
each run `rmtsweep work STORE --share I/N`. Here the elements are started by hand, side by side on this
machine (the real SLURM array is in tests/integration/test_slurm.py); the reference store is built
in-process, task by task (tests.helpers.build_store).
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from rmtsweep.errors import StoreError
from rmtsweep.run import Blocking, ready_store
from rmtsweep.run.grid import share_done, share_tasks, tasks, tasks_left
from rmtsweep.spec import parse_sweep
from rmtsweep.store import open_store
from rmtsweep.store.lock import StoreLock, conflicts, holders, lock_file
from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM, MEDIUM_TASKS, build_store, writes, sigterm_once_written

pytestmark = pytest.mark.usefixtures("in_process_runs")     # runs of the store, not of worker processes


@pytest.fixture(scope="module")
def medium(tmp_path_factory) -> tuple[Path, Path]:
    """The MEDIUM sweep's file and its store built in this process: (sweep file, store)."""
    root = tmp_path_factory.mktemp("array")
    sweep = root / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    return sweep, build_store(root / "reference.zarr", MEDIUM)


def element(store: Path, i: int, n: int, nice: int = 0) -> subprocess.Popen:
    """``rmtsweep work STORE --share i/n`` as a process of its own session, at niceness ``nice``."""
    return subprocess.Popen([sys.executable, "-m", "rmtsweep.cli", "work", str(store), "--share", f"{i}/{n}",
                             "--workers", "1", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, preexec_fn=(lambda: os.nice(nice)) if nice else None)


def writes_of(store: Path, share: tuple[int, int]) -> int:
    """Tasks the element computing ``share`` has written so far (its run's lines in the journal)."""
    import zarr
    runs = zarr.open_group(str(store), mode="r").attrs.get("runs", [])
    return sum(writes(store, run=r["run"]) for r in runs if tuple(r.get("share", ())) == share)


def keys(found) -> list[tuple]:
    return [(t.d_pos, t.index) for t in found]


ON_D_AXIS = {**{k: v for k, v in MEDIUM.items() if k != "d"}, "grid": {**MEDIUM["grid"], "d": [16, 24, 32]}}


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100])
@pytest.mark.parametrize("data, shape", [({**MEDIUM, "d": 24}, (2, 2, 2, 3, 16)), (ON_D_AXIS, (3, 2, 2, 2, 3, 16))],
                         ids=["top-level d", "d axis"])
def test_the_shares_of_an_array_partition_what_is_left(n, data, shape):
    """Whatever is done already, the N shares hold every task left exactly once, and the same tasks as a run;
    tasks_left counts them without making them."""
    sweep = parse_sweep(data)
    rng = np.random.default_rng(n)
    for blocking in (Blocking(1, 1, 1, 2), Blocking(2, 1, 2, 3)):
        for done in (None, rng.random(shape) < 0.4, rng.random(shape) < 0.97):
            expected = keys(tasks(sweep, blocking, done))
            shares = [keys(share_tasks(sweep, blocking, done, (i, n))) for i in range(n)]
            together = list(itertools.chain(*shares))
            assert sorted(together) == sorted(expected) and len(together) == len(set(together))
            assert tasks_left(sweep, blocking, done) == len(expected)
            assert [tasks_left(sweep, blocking, done, (i, n)) for i in range(n)] == list(map(len, shares))
            if done is None:                                   # balanced: sizes differ by at most one
                assert max(map(len, shares)) - min(map(len, shares)) <= 1


@pytest.mark.parametrize("n", [1, 3, 64])
@pytest.mark.parametrize("data, shape", [({**MEDIUM, "d": 24}, (2, 2, 2, 3, 16)), (ON_D_AXIS, (3, 2, 2, 2, 3, 16))],
                         ids=["top-level d", "d axis"])
def test_an_element_reads_only_its_own_chunks_of_done_and_finds_the_same_tasks(n, data, shape):
    sweep, blocking = parse_sweep(data), Blocking(2, 1, 2, 3)
    rng = np.random.default_rng(n)
    full = rng.random(shape) < 0.5
    for i in range(n):
        reads = []

        def read(region):
            reads.append(region)
            return full[region]

        mine = share_done(sweep, blocking, (i, n), full.shape, read)
        assert keys(share_tasks(sweep, blocking, mine, (i, n))) == keys(share_tasks(sweep, blocking, full, (i, n)))
        assert tasks_left(sweep, blocking, mine, (i, n)) == tasks_left(sweep, blocking, full, (i, n))
        assert len(reads) == tasks_left(sweep, blocking, None, (i, n))      # one chunk per task of its share


@pytest.mark.parametrize("recorded", [True, False], ids=["runs recorded by submit", "each element records its run"])
def test_three_elements_side_by_side_equal_a_local_run(medium, tmp_path, recorded):
    """``submit --array N`` records the N elements' runs (``ready_store(..., elements=N)``), so an element joining
    writes no metadata (a thousand joins used to queue on its lock); a store readied without N still works,
    each element recording its own run."""
    sweep, reference = medium
    store = tmp_path / "array.zarr"
    assert ready_store(sweep, store, 3, 3 if recorded else None) == (MEDIUM_TASKS, MEDIUM_TASKS)
    assert not open_store(store)["done"].values.any()           # the store made, nothing computed
    before = open_store(store).attrs["runs"]
    metadata = {name: (store / name).read_bytes() for name in (".zattrs", ".zmetadata")}
    if recorded:
        assert [(r["run"], tuple(r["share"]), r["array"]) for r in before] == [(i, (i, 3), 3) for i in range(3)]
    procs = [element(store, i, 3) for i in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-3000:]
        assert "no dashboard" in err          # RMTSWEEP_DASHBOARD_ADDRESS=none (conftest.py), as for `run`
    assert_stores_equal(store, reference)
    runs = open_store(store).attrs["runs"]
    assert sorted(tuple(r["share"]) for r in runs) == [(0, 3), (1, 3), (2, 3)]
    from rmtsweep.store import blocking_of
    blocking = Blocking(*blocking_of(store))
    for i in range(3):                                             # each share's writes carry its own run index
        assert writes_of(store, (i, 3)) == tasks_left(parse_sweep(MEDIUM), blocking, None, (i, 3))
    assert writes(store) == MEDIUM_TASKS                           # no task written twice
    assert not holders(store)                                      # every lock released
    from rmtsweep.store import journal_file
    joined = [line for line in journal_file(store).read_text().splitlines() if " joined " in line]
    if recorded:
        assert runs == before                                      # the elements recorded nothing more ...
        assert {name: (store / name).read_bytes() for name in metadata} == metadata   # ... nor rewrote metadata
        assert sorted(line.split()[3] for line in joined) == [f"share-{i}-of-3" for i in range(3)]
    else:
        assert not joined and len(runs) == 3 and not before


def test_a_killed_element_loses_only_its_own_tasks_and_rerunning_it_finishes_the_store(medium, tmp_path):
    sweep, reference = medium
    store = tmp_path / "killed.zarr"
    ready_store(sweep, store, 2)
    # element 0 runs at the lowest priority, so that a busy machine slows it as much as this test's polling: its
    # 32 tasks take about a second, and a poll delayed that long would otherwise find it finished, not under way
    first, second = element(store, 0, 2, nice=19), element(store, 1, 2)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        running = first.poll() is None                  # before the count: a share it finished would count 32
        if writes_of(store, (0, 2)) >= 3:               # element 0 is well under way
            break
        assert running, first.stderr.read()[-3000:]
        time.sleep(0.01)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    _, err = second.communicate(timeout=180)
    assert second.returncode == 0, err[-3000:]
    sw, blocking = parse_sweep(MEDIUM), Blocking(1, 1, 1, 2)
    done = open_store(store)["done"].values
    assert not list(share_tasks(sw, blocking, done, (1, 2)))       # the other element finished its share
    assert list(share_tasks(sw, blocking, done, (0, 2)))            # the killed one's is not finished
    assert lock_file(store, (0, 2)).exists()                        # and its lock is left behind
    rerun = element(store, 0, 2)                                    # taken over at once (its pid is gone)
    _, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err[-3000:]
    assert_stores_equal(store, reference)


def test_locks_let_one_array_in_and_keep_overlapping_writers_out(medium, tmp_path):
    """Shares of one array side by side; a run, an array of another size, or the same share twice, refused."""
    sweep, _ = medium
    store = tmp_path / "locks.zarr"
    ready_store(sweep, store, 2)
    with StoreLock(store, share=(0, 2)):
        conflicts(store, (1, 2))                                    # the same array: no conflict
        with pytest.raises(StoreError, match=r"an array job is computing this store \(element 0 of 2, pid"):
            conflicts(store, None)
        with pytest.raises(StoreError, match=r"an array of 2 elements is computing this store .* an array of 3"):
            conflicts(store, (1, 3))
        with pytest.raises(StoreError, match=r"element 0 of 2 is already being computed"):
            StoreLock(store, share=(0, 2)).acquire()
        with pytest.raises(StoreError, match=r"an array job is computing this store"):
            ready_store(sweep, store, 2)                            # a resubmission while elements work
        other = element(store, 1, 3)                                # an element of an array of another size
        _, err = other.communicate(timeout=60)
        assert other.returncode == 2 and "an array of 2 elements is computing this store" in err, err
        assert "dask LocalCluster" not in err, err                  # refused before any cluster started
        assert [w["share"] for w in holders(store)] == [(0, 2)]
    with StoreLock(store):
        with pytest.raises(StoreError, match=r"another rmtsweep run is writing this store"):
            conflicts(store, (0, 2))
    # a share lock left by a process that is gone is no conflict: it is removed
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    with StoreLock(store, share=(1, 5)) as lock:
        info = lock.path.read_text().replace(f'"pid": {os.getpid()}', f'"pid": {dead}')
    lock_file(store, (1, 5)).write_text(info)
    conflicts(store, (0, 2))
    assert not lock_file(store, (1, 5)).exists()


def test_an_element_of_a_store_that_is_not_there_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "work", str(tmp_path / "none.zarr"), "--share", "0/2"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.strip() == f"rmtsweep: error: {tmp_path / 'none.zarr'}: does not exist"
    bad = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "work", str(tmp_path), "--share", "2/2"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--share" in bad.stderr and "I must be in 0..N-1" in bad.stderr


@pytest.mark.parametrize("kind, lines", [
    ("slurm", ["#SBATCH --array=0-3%2", "#SBATCH --signal=B:TERM@120", "#SBATCH --cpus-per-task=1",
               'work {store} --share "${{SLURM_ARRAY_TASK_ID:?not an element of a job array}}/4" --workers 1']),
    ("pbs", ["#PBS -J 0-3", "#PBS -W max_run_subjobs=2", "timeout --foreground --signal=TERM",
             'work {store} --share "${{PBS_ARRAY_INDEX:?not an element of a job array}}/4" --workers 1']),
])
def test_the_array_script_of_a_dry_run(kind, lines, medium, tmp_path):
    sweep, _ = medium
    store = tmp_path / "dry.zarr"
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "submit", str(sweep), "--store", str(store),
                           "--cluster", kind, "--array", "4", "--max-running", "2", "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for line in lines:
        assert line.format(store=store.resolve()) in proc.stdout, proc.stdout
    assert not store.exists()


@pytest.mark.parametrize("max_running", [3, None])
def test_an_array_larger_than_the_site_takes_is_cut_into_arrays_that_cover_every_share_once(max_running, medium,
                                                                                            tmp_path):
    """A site whose MaxArraySize is 4 gets --array 10 as arrays of 4, 4 and 2 elements; with --max-running each
    waits for the one before it (at most M elements at once)."""
    sweep, _ = medium
    bin_dir, log = tmp_path / "bin", tmp_path / "sbatch.log"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text("#!/bin/sh\necho 'MaxArraySize            = 4'\n")
    (bin_dir / "sbatch").write_text(f'#!/bin/sh\necho "$@" >> {log}\necho $((100 + $(wc -l < {log})))\n')
    for name in ("scontrol", "sbatch"):
        (bin_dir / name).chmod(0o755)
    store = tmp_path / "cut.zarr"
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "submit", str(sweep), "--store", str(store),
                           "--cluster", "slurm", "--array", "10",
                           *(["--max-running", str(max_running)] if max_running else [])],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "3 job arrays 101, 102, 103 of 4 + 4 + 2 elements" in proc.stdout, proc.stdout
    calls = [line.split() for line in log.read_text().splitlines()]
    waits = [[a for a in call if a.startswith("--dependency")] for call in calls]
    assert waits == ([[], ["--dependency=afterany:101"], ["--dependency=afterany:102"]] if max_running else [[]] * 3)
    shares = []
    for call, size in zip(calls, (4, 4, 2)):
        script = Path(call[-1]).read_text()
        assert f"#SBATCH --array=0-{size - 1}" + (f"%{max_running}" if max_running else "") + "\n" in script
        expression = script.split("--share ")[1].split(" --workers")[0]         # as the element's shell reads it
        for index in range(size):
            shares.append(subprocess.run(["bash", "-c", f"echo {expression}"], capture_output=True, text=True,
                                         env={"SLURM_ARRAY_TASK_ID": str(index)}).stdout.strip())
    assert sorted(shares) == sorted(f"{i}/10" for i in range(10))                # every share once
    assert open_store(store).attrs["sweep_name"] == MEDIUM["name"]             # the store was made


@pytest.mark.slow
def test_an_element_cut_by_its_walltime_stops_cleanly_losing_only_its_tasks_in_flight(tmp_path):
    """The PBS array script itself, run as element 0 of 2: its ``timeout`` prefix (a 60 s walltime with a 50 s
    warning) sends SIGTERM after 10 s, and the element stops in one line with its finished tasks whole. On a busy
    machine 10 s may pass before a first write, so the script runs with a long duration and the test sends the
    SIGTERM itself once a task is written: ``timeout`` (the script's process, by ``exec``) relays it."""
    from rmtsweep.cluster.arrays import array_script
    from rmtsweep.cluster.batch import ClusterConfig
    sweep = tmp_path / "long.yaml"
    sweep.write_text(yaml.safe_dump({**MEDIUM, "name": "long", "replicates": 4096, "replicates_per_task": 16}))
    store = tmp_path / "cut.zarr"
    ready_store(sweep, store, 1)
    script = tmp_path / "element.sh"
    text = array_script("pbs", ClusterConfig(walltime="00:01:00", driver_stop_warning=50), store, 2)
    assert "exec timeout --foreground --signal=TERM --kill-after=60 --preserve-status 10s " in text
    script.write_text(text.replace(" --preserve-status 10s ", " --preserve-status 3600s "))
    proc = subprocess.Popen(["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PBS_ARRAY_INDEX": "0"})
    sigterm_once_written(proc, lambda: writes_of(store, (0, 2)) if store.exists() else 0)
    assert not lock_file(store, (0, 2)).exists()
    assert 0 < writes_of(store, (0, 2)) < 1024                      # part of its share (2048 tasks / 2) done
    from rmtsweep.store import journal_file
    (run,) = [r["run"] for r in open_store(store).attrs["runs"] if tuple(r.get("share", ())) == (0, 2)]
    events = [line.split()[2] for line in journal_file(store).read_text().splitlines()
              if line.startswith(f"run {run} ")]
    assert events.count("submit") - events.count("write") <= 4      # lost: at most the tasks in flight (4 a thread)
    from rmtsweep import status, verify
    state = status(store)
    assert (state.tasks_done, state.tasks_total) == (events.count("write"), 2048)   # done where it wrote
    assert verify(store) == []                                       # what was done is whole
