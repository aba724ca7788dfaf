"""What users of Hydra, dask and peers expect of the command line: KEY=VALUE overrides, run --dry-run,
status --json, sweeps with their size and cost."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import xarray as xr
import yaml

from rmtsweep.cli import main
from rmtsweep.testing import assert_stores_equal
from tests.helpers import BASE, MEDIUM, build_store


@pytest.fixture
def half(tmp_path):
    """The reference sweep with half its replicates and another seed, as a file."""
    path = tmp_path / "half.yaml"
    path.write_text(yaml.safe_dump({**BASE, "replicates": 2, "seed": 99}))
    return path


def test_overrides_give_the_sweep_they_describe_and_are_kept(reference, half, tmp_path, capsys):
    """A file with replicates=2 and seed=99, run with replicates=4 seed=7: the reference sweep, bit for bit."""
    _, ref_store = reference
    store = tmp_path / "over.zarr"
    main(["run", str(half), "replicates=4", "seed=7", "--store", str(store), "--workers", "1", "--no-progress"])
    assert "dask LocalCluster: 1 worker(s), no dashboard\n" in capsys.readouterr().err   # the suite's setting
    assert_stores_equal(store, ref_store)
    attrs = xr.open_zarr(store).attrs
    assert attrs["sweep_overrides"] == ["replicates=4", "seed=7"] and attrs["runs"][0]["sweep_overrides"] == \
        ["replicates=4", "seed=7"]
    assert attrs["sweep_text"] == half.read_text()                   # the file as it was; the overrides beside it
    capsys.readouterr()
    main(["run", str(half), "replicates=4", "seed=7", "--store", str(store), "--dry-run"])   # resume: nothing to do
    assert re.search(r"store: \S+over\.zarr exists, 2/2 tasks done; a run computes the rest", capsys.readouterr().out)


def test_dry_run_says_what_a_run_would_do_and_writes_nothing(half, tmp_path, capsys, monkeypatch):
    store = tmp_path / "new.zarr"
    main(["run", str(half), "grid.T=[4, 8]", "--store", str(store), "--workers", "2", "--dry-run"])
    out = capsys.readouterr().out
    assert not store.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["half.yaml"]
    assert f"sweep tiny ({half} with grid.T=[4, 8])" in out
    assert "grid: 4 points (2 delta x 1 gamma x 2 T) x 2 weights x 2 SNR = 16 cells, 2 replicates each" in out
    tasks = int(re.search(r"tasks: (\d+) of up to", out)[1])
    assert re.search(r"cost model: .* of one core", out)
    assert re.search(r"estimate: about .* end to end on 2 worker threads "
                     r"\(start-up .*, tasks .*; the store.s theory .* of one core beside them\)", out)
    assert f"store: {store} (new)" in out and out.rstrip().endswith("dry run: nothing was started or written")
    monkeypatch.delenv("RMTSWEEP_DASHBOARD_ADDRESS")          # conftest.py's
    main(["run", str(half), "grid.T=[4, 8]", "--store", str(store), "--workers", "1", "--no-progress",
          "--dashboard-address", "127.0.0.1:0"])
    out, err = capsys.readouterr()
    assert f"/{tasks} tasks done" in out                                # the run made the tasks it announced
    assert re.search(r"^dask LocalCluster: 1 worker\(s\), dashboard http://127\.0\.0\.1:\d+/status$", err, re.M), err


@pytest.mark.parametrize("overrides", [[], ["grid.T=4,8", "grid.weights=mean,harmonic", "replicates_per_task=1"]])
def test_show_prints_the_resolved_sweep_which_reads_back_to_it(half, tmp_path, capsys, overrides):
    """`show` prints the sweep a run would use, defaults filled in; as a file it is the same sweep (and hash)."""
    from rmtsweep.spec import load_sweep
    main(["show", str(half), *overrides])
    out = capsys.readouterr().out
    expected = load_sweep(half, overrides).sweep
    assert out.startswith(f"# sweep tiny ({half}{' with ' if overrides else ''}{' '.join(overrides)}), "
                          f"hash {expected.digest()[:12]}\n")
    shown = yaml.safe_load(out)
    assert shown["top_k"] == 2 and shown["observables"] == {"spectrum": None, "ridge": None}   # defaults filled in
    assert "table_centering: class\n" in out and "  snr: [0.0, 4.0]\n" in out
    (tmp_path / "shown.yaml").write_text(out)
    again = load_sweep(tmp_path / "shown.yaml").sweep
    assert again == expected and again.digest() == expected.digest()


def test_status_json(reference, capsys):
    _, ref_store = reference
    main(["status", str(ref_store), "--json"])
    st = json.loads(capsys.readouterr().out)
    assert (st["tasks_done"], st["tasks_total"], st["replicates_done"]) == (2, 2, 16)
    assert st["sweep_name"] == "tiny" and st["complete"] is True and st["d_axis"] is None


def test_sweeps_lists_size_and_cost(capsys):
    main(["sweeps"])
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["name", "d", "points", "one"]
    demo = next(line for line in out if line.startswith("demo "))
    assert re.match(r"demo\s+300\s+4\s+\d+ s\s+Mean, optimal", demo), demo
    finite = next(line for line in out if line.startswith("finite-d "))
    assert re.match(r"finite-d\s+axis 100,200,400,800\s+4\s", finite), finite


def test_in_process_runs_the_same_store_without_a_worker_process(reference, half, tmp_path, capsys, monkeypatch):
    """--in-process: the reference store bit for bit, with no process started (dask's process wrapper refuses)."""
    import distributed.process

    def no_process(*args, **kwargs):
        raise AssertionError("a worker process was started")

    monkeypatch.setattr(distributed.process.AsyncProcess, "__init__", no_process)
    store = tmp_path / "threads.zarr"
    main(["run", str(half), "replicates=4", "seed=7", "--store", str(store), "--workers", "2", "--in-process",
          "--no-progress"])
    assert "dask LocalCluster: 2 thread(s) of this process, no dashboard\n" in capsys.readouterr().err
    assert_stores_equal(store, reference[1])
    monkeypatch.setenv("RMTSWEEP_IN_PROCESS", "1")                       # the same, from the environment
    with pytest.raises(SystemExit) as stop:
        main(["run", str(half), "--store", str(store), "--scheduler", "tcp://127.0.0.1:1", "--no-progress"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--in-process (or RMTSWEEP_IN_PROCESS) is for the embedded LocalCluster, not for --scheduler" in err


# A process whose command line is rmtsweep's, with a thread that is no daemon, an atexit hook and output still in
# stdout's buffer (a pipe: block-buffered) when the command ends.
_ENDING = """
import atexit, sys, threading, time
from pathlib import Path
from rmtsweep.cli import script

def late():
    time.sleep(0.3)
    Path("thread.txt").write_text("joined")

threading.Thread(target=late).start()
atexit.register(lambda: print("the atexit hook ran"))
sys.stdout.write("written before the command, not flushed\\n")
sys.argv = ["rmtsweep", *sys.argv[1:]]
script()
"""


@pytest.mark.parametrize("argv, status, stderr", [(["--version"], 0, ""),
                                                  (["status", "nope.zarr"], 2, "rmtsweep: error: nope.zarr: does not "
                                                                               "exist\n")])
def test_the_command_ends_as_a_normal_exit_does(argv, status, stderr, tmp_path):
    """The command leaves without the interpreter's teardown, and otherwise as Python's own exit does: the
    thread is joined, the atexit hook runs, stdout is flushed, and the status is the command's."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}      # stdout buffered, as by default
    proc = subprocess.run([sys.executable, "-c", _ENDING, *argv], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == status and proc.stderr == stderr, proc.stderr
    assert proc.stdout.startswith("written before the command, not flushed\n")
    assert proc.stdout.endswith("the atexit hook ran\n")
    assert (tmp_path / "thread.txt").read_text() == "joined"


def test_two_worker_threads_compute_what_one_process_does_bit_for_bit(tmp_path):
    """`--in-process --workers 2`: two tasks at a time in the run's threads, on the process's own BLAS (two threads
    on two cores). Each task's numbers are those of the same sweep computed one task after another in this process
    (one BLAS thread), bit for bit; with each task setting the limit alone, 3, 4 and 13 of the 2,304 eigenvalues
    differed in their last bits in three runs."""
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump(MEDIUM))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}    # the BLAS's own threads
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep), "--store", str(tmp_path / "t.zarr"),
                           "--workers", "2", "--in-process", "--no-progress"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "2 thread(s) of this process" in proc.stderr
    assert_stores_equal(tmp_path / "t.zarr", build_store(tmp_path / "serial.zarr", MEDIUM))


@pytest.mark.parametrize("in_process", [False, True])
def test_a_local_run_serves_no_dashboard_unless_asked_and_never_imports_bokeh(half, tmp_path, in_process):
    """The embedded LocalCluster's dashboard costs the run bokeh's import and its serving: only on request."""
    env = {k: v for k, v in os.environ.items() if k not in ("RMTSWEEP_DASHBOARD_ADDRESS", "RMTSWEEP_IN_PROCESS")}
    args = ["run", str(half), "--store", str(tmp_path / "s.zarr"), "--workers", "1", "--no-progress",
            *(["--in-process"] if in_process else [])]
    script = ("import sys; from rmtsweep.cli import main; main(sys.argv[1:]); "
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'bokeh', 'panel', 'hvplot', 'holoviews'}))")
    done = subprocess.run([sys.executable, "-c", script, *args], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", done.stdout
    assert re.search(r"^dask LocalCluster: 1 (worker\(s\)|thread\(s\) of this process), no dashboard$", done.stderr,
                     re.M), done.stderr
