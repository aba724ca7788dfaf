"""Sweeps and stores the tests share: plain data and builders (fixtures live in ``conftest.py``)."""

from __future__ import annotations

import copy
import shutil
import subprocess
from functools import cache
from pathlib import Path

import yaml

# A tiny valid sweep: two schemes, an SNR of 0 and of 4, two deltas.
BASE = {
    "name": "tiny",
    "d": 24,
    "replicates": 4,
    "replicates_per_task": 2,
    "seed": 7,
    "correlation": {"model": "prefix", "L": 2},
    "table_centering": "class",
    "top_k": 2,
    "grid": {"delta": [0.5, 1.0], "gamma": [0.5], "snr": [0.0, 4.0], "T": [4],
             "weights": ["mean", "optimal"]},
}

# A tiny sweep with every optional observable, for maps, exports and the accessor.
TINY = {**copy.deepcopy(BASE), "name": "tiny-maps", "d": 20, "top_k": 2,
        "grid": {"delta": [0.5, 1.0], "gamma": [0.5, 1.0], "snr": [0.0, 2.0, 4.0, 6.0], "T": [4],
                 "weights": ["mean", "optimal"]},
        "observables": {"spectrum": {"bins": 16, "max": 8.0}, "ridge": {"test_samples": 50}}}

# Enough small tasks ((2 x 2 x 2) points x 8 replicate blocks = 64, each with 3 schemes; one point per
# task) that a kill lands mid-sweep. The tests that run it are of the run (signals, faults, resumes, job
# arrays, buckets), not of the theory: an uncentred table, whose new store computes its theory in 0.2 CPU-s
# (a class-centred one's finite-size theory at T >= 2 took 0.8-1.3; these tests make about 50 new stores).
MEDIUM = {
    "name": "medium", "d": 100, "replicates": 16, "replicates_per_task": 2, "cells_per_task": 1, "seed": 11,
    "top_k": 2,
    "correlation": {"model": "prefix", "L": 2}, "table_centering": "none",
    "grid": {"delta": [0.5, 1.0], "gamma": [0.5, 1.0], "snr": [0.0, 2.0, 5.0], "T": [4, 8],
             "weights": ["mean", "optimal", "harmonic"]},
}
MEDIUM_TASKS = 64


def build_store(path: Path, data: dict = TINY) -> Path:
    """Run a sweep in this process (no dask): template, then every task's chunk, then its done flag."""
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile, parse_sweep
    from rmtsweep.store import Writer, blocking_of

    sweep = parse_sweep(data)
    prepare_store(SweepFile(sweep, str(path.with_suffix(".yaml")), yaml.safe_dump(data)), path)
    writer = Writer(path)
    for task in tasks(sweep, Blocking(*blocking_of(path))):
        write_and_mark(writer, task, compute_task(task), run=0)
    return path


def write_and_mark(writer, task, values: dict, run: int, mark: bool = True) -> None:
    """Write a task's data as a worker does, then (``mark``) its done flags as the driver does; also under the code
    before null tasks (whose tasks and writer know none), which the tests of unchanged stores run."""
    null = getattr(task, "null", False)
    writer.write_block(task.region, values, task.todo, run=run, **({"null": True} if null else {}))
    if mark:
        writer.mark_done(task.region, **({"null": task.null_needed()} if null else {}))


def build_pending(path: Path, data: dict, tasks_done: int = 1) -> tuple[Path, Path]:
    """A store whose run stopped after its first ``tasks_done`` tasks, before its theory at its size was written
    (``theory_pending``), at ``path / "pending.zarr"``; and its finished counterpart at ``path / "finished.zarr"``:
    the same done replicates, that theory written as a run writes it."""
    from rmtsweep.run.cost import Blocking, choose_blocking
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.runner import make_template, run_info
    from rmtsweep.run.work import compute_task
    from rmtsweep.spec import SweepFile, parse_sweep
    from rmtsweep.store import Store, Writer, blocking_of
    from rmtsweep.store.pending import write_theory
    from rmtsweep.theory.on_grid import sized_theory

    sweep = parse_sweep(data)
    sweep_file = SweepFile(sweep, str(path / "pending.yaml"), yaml.safe_dump(data))
    pending, finished = path / "pending.zarr", path / "finished.zarr"
    with Store(pending).prepare(sweep_file, lambda b: make_template(sweep_file, b, defer=True), run_info(sweep_file),
                                choose_blocking(sweep).as_tuple()):
        pass                                                    # the template, its theory at its size left out
    writer = Writer(pending)
    for task in list(tasks(sweep, Blocking(*blocking_of(pending))))[:tasks_done]:
        write_and_mark(writer, task, compute_task(task), run=0)
    shutil.copytree(pending, finished)
    write_theory(finished, sized_theory(sweep))
    return pending, finished


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``rmtsweep ARGV`` in this process (:func:`rmtsweep.cli.main`, output caught by pytest's ``capsys``): its exit
    status, stdout and stderr."""
    from rmtsweep.cli import main
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


def writes(store: Path, run: int | None = None) -> int:
    """Tasks written so far (by ``run`` only, if given), from the run journal."""
    from rmtsweep.store import journal_file
    try:
        lines = journal_file(store).read_text().splitlines()
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines if " write " in line and (run is None or line.startswith(f"run {run} ")))


SLURM_HOW = "start one with `bash deploy/slurm/local-slurm.sh start DIR` and export SLURM_CONF=DIR/slurm.conf"
CHROMIUM_HOW = "apt-get install --no-install-recommends chromium fonts-dejavu-core"


@cache
def slurm_problem() -> str | None:
    """Why no SLURM controller with an idle node answers here, or None when one does."""
    if shutil.which("sinfo") is None:
        return "no SLURM client (sinfo) on PATH"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo did not answer within 20 s"
    if proc.returncode != 0:
        return f"no SLURM controller answers (sinfo: {(proc.stderr.strip().splitlines() or ['no output'])[-1]})"
    if not {"idle", "mixed"} & set(proc.stdout.split()):
        return f"SLURM has no idle node (sinfo says {proc.stdout.split()})"
    return None


def chromium() -> str | None:
    """The headless browser's path, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def sigterm_once_written(proc, written, ceiling: float = 300.0) -> str:
    """Send ``proc`` (a run behind a ``timeout`` prefix) SIGTERM once ``written()`` counts a task, as a batch
    system's walltime would; check it stops in its one line, exit 143 (not 137: before ``--kill-after``).
    Returns its stderr. Waits on the first write with a generous ceiling, not a fixed time."""
    import signal
    import time
    try:
        deadline = time.monotonic() + ceiling
        while proc.poll() is None and time.monotonic() < deadline and written() == 0:
            time.sleep(0.2)
        assert written() > 0, f"no task written within {ceiling:.0f} s"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143, stderr[-2000:]
    assert stderr.strip().splitlines()[-1] == "rmtsweep: stopped by SIGTERM; rerun the same command to resume"
    assert "Traceback" not in stderr and "Exception ignored" not in stderr
    return stderr
