"""One sweep end to end: *prepare* (store, lock, plan), then *execute* (dask) — ``rmtsweep run``.

The Python entry point::

    from distributed import Client, LocalCluster
    from rmtsweep import load_sweep, run_sweep
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        run_sweep(load_sweep("sweeps/demo.yaml"), "store/demo.zarr", client)

What a run guarantees (tested in tests/test_resume.py):

- a store holds one sweep; a rerun computes only tasks whose ``done`` flags are not all set, and
  never rewrites a finished one; a task killed between its data and its ``done`` is recomputed;
- one run writes a store at a time (:class:`rmtsweep.store.StoreLock`);
- a sweep file that adds replicates or axis values extends the store (:mod:`rmtsweep.store.migrate`);
- ``attrs['runs']`` records every run's provenance, and the ``run`` variable says which run computed
  each replicate;
- the store's journal (:data:`rmtsweep.store.JOURNAL_NAME`) lists every task the run submitted and wrote.
"""

from __future__ import annotations

import os
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from distributed import Client
from tqdm.auto import tqdm

from ..spec import SweepFile
from ..store import Store, now, provenance, template
from ..theory.on_grid import theory_dataset
from .execute import RunReport, check_memory, run_tasks
from .grid import Task, n_tasks, replicate_blocks, task_memory_bytes, tasks

__all__ = ["git_revision", "make_template", "package_version", "prepare_store", "run_sweep"]


def package_version() -> str:
    """The installed rmtsweep version."""
    try:
        return metadata.version("rmtsweep")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def git_revision() -> str | None:
    """``git describe --always --dirty`` of the source checkout, if the package runs from one."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=here,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.strip()


def make_template(sweep_file: SweepFile):
    """The store template of ``sweep_file``: coordinates, theory arrays, provenance, unwritten data."""
    sweep = sweep_file.sweep
    return template(sweep, theory_dataset(sweep), provenance(sweep_file, package_version(), git_revision()),
                    sweep.replicate_chunk)


def run_sweep(sweep_file: SweepFile, path: str | Path, client: Client, progress: bool = True,
              force: bool = False) -> RunReport:
    """Run, resume or extend a sweep into the store at ``path``; only unfinished tasks are computed.

    Parameters
    ----------
    sweep_file
        From :func:`rmtsweep.load_sweep`.
    path
        The zarr store (created if missing).
    client
        A connected dask client; its workers do the computing, this process writes.
    progress
        Show a progress bar (tasks done, rate, ETA) on stderr.
    force
        Run even when the estimated memory per task exceeds a worker thread's limit.

    Raises
    ------
    StoreError
        The path is not a store, holds an incompatible sweep, or another run is writing it.
    RmtsweepError
        The memory estimate exceeds the workers' (unless ``force``).
    TaskFailedError
        A task kept failing; finished tasks stay done.
    """
    sweep = sweep_file.sweep
    check_memory(client, task_memory_bytes(sweep), force)
    store = Store(Path(path))
    info = {"started": now(), "host": socket.gethostname(), "pid": os.getpid(),
            "rmtsweep_version": package_version(), "git_revision": git_revision() or "unknown",
            "sweep_hash": sweep.digest(), "sweep_file": sweep_file.path}
    with store.prepare(sweep_file, lambda: make_template(sweep_file), info) as run:
        skip = run.done_tasks(replicate_blocks(sweep))
        with tqdm(total=n_tasks(sweep), initial=int(skip.all(axis=-2).sum()), desc=f"{sweep.name}: tasks",
                  unit="task", disable=not progress, dynamic_ncols=True) as bar:
            def write(task: Task, values: dict) -> None:
                run.writer.write(task.index, task.weights, task.replicates, values)
                run.log("write", task.key)
                bar.update()

            return run_tasks(client, tasks(sweep, skip=skip), write=write,
                             on_submit=lambda t: run.log("submit", t.key))


def prepare_store(sweep_file: SweepFile, path: str | Path) -> None:
    """Create the store's template if there is none (tests and benchmarks that fill stores by hand)."""
    Store(Path(path)).create_if_missing(lambda: make_template(sweep_file))
