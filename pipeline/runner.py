"""One sweep end to end: validated sweep -> store template -> remaining tasks -> dask -> store.

This is the Python entry point behind ``rmtsweep run``::

    from distributed import Client, LocalCluster
    from pipeline import load_sweep, run_sweep
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        run_sweep(load_sweep("sweeps/demo.yaml"), "store/demo.zarr", client)

What a run guarantees (tested in tests/test_resume.py):

- a store holds one sweep; a rerun computes only tasks whose ``done`` flags are not all set, and
  never rewrites a finished one; a task killed between its data and its ``done`` is recomputed;
- one run writes a store at a time (:mod:`pipeline.lock`);
- a sweep file that adds replicates or axis values extends the store (:mod:`pipeline.extend`);
- ``attrs['runs']`` records every run's provenance, and the ``run`` variable says which run computed
  each replicate;
- ``.rmtsweep-journal.log`` in the store lists every task the run submitted and wrote.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from importlib import metadata
from pathlib import Path

from distributed import Client
from tqdm.auto import tqdm

from . import extend, store
from .errors import StoreError
from .execute import RunReport, check_memory, run_tasks
from .grid import Task, n_tasks, replicate_blocks, task_memory_bytes, tasks
from .lock import LOCK_NAME, StoreLock
from .predict import theory_dataset
from .spec import SweepFile

JOURNAL = ".rmtsweep-journal.log"


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


def _template(sweep_file: SweepFile):
    return store.template(sweep_file, theory_dataset(sweep_file.sweep),
                          store.provenance(sweep_file, package_version(), git_revision()))


def _extend(sweep_file: SweepFile, path: Path) -> int:
    """Rebuild the store for the larger sweep, carrying finished replicates over. Returns how many."""
    attrs = store.open_dataset(path).attrs
    stored = store.stored_sweep(path, attrs)
    new_path = path.with_name(path.name + extend.NEW_SUFFIX)
    ds = _template(sweep_file)
    ds.attrs["runs"] = attrs.get("runs", [])
    ds.attrs["created"] = attrs.get("created")
    store.write_template(new_path, ds)
    carried = extend.copy_finished(path, new_path, recompute_all=stored.grid.snr != sweep_file.sweep.grid.snr)
    for name in (LOCK_NAME, JOURNAL):
        if (path / name).exists():
            shutil.copy2(path / name, new_path / name)
    extend.swap(path, new_path)
    return carried


def check_store_path(path: Path) -> None:
    """Fail fast, before any cluster starts, on a path that cannot become or be an rmtsweep store."""
    extend.recover(path)
    if path.exists():
        if not store.is_store(path):
            raise StoreError(f"{path}: exists and is not an rmtsweep store; choose another --store path")
        if not os.access(path, os.W_OK):
            raise StoreError(f"{path}: the store is not writable")
        return
    parent = path.absolute().parent
    if not parent.is_dir():
        raise StoreError(f"{path}: cannot create the store: {parent} is not a directory")
    if not os.access(parent, os.W_OK):
        raise StoreError(f"{path}: cannot create the store: {parent} is not writable")


def prepare_store(sweep_file: SweepFile, path: Path) -> None:
    """Create the store's template if there is none; refuse a path that is something else."""
    check_store_path(path)
    if not path.exists():
        store.create(path, _template(sweep_file))


def run_sweep(sweep_file: SweepFile, path: str | Path, client: Client, progress: bool = True,
              force: bool = False) -> RunReport:
    """Run, resume or extend a sweep into the store at ``path``; only unfinished tasks are computed.

    Parameters
    ----------
    sweep_file
        From :func:`pipeline.load_sweep`.
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
    path = Path(path)
    sweep = sweep_file.sweep
    check_memory(client, task_memory_bytes(sweep), force)
    prepare_store(sweep_file, path)
    with StoreLock(path):
        if extend.plan(store.stored_sweep(path, store.open_dataset(path).attrs), sweep, path) == "extend":
            _extend(sweep_file, path)
        run = store.record_run(path, {"started": store.now(), "host": socket.gethostname(), "pid": os.getpid(),
                                      "rmtsweep_version": package_version(), "git_revision": git_revision() or "unknown",
                                      "sweep_hash": sweep.digest(), "sweep_file": sweep_file.path})
        writer = store.Writer(path, run=run)
        skip = writer.done_tasks(replicate_blocks(sweep))
        total = n_tasks(sweep)
        with open(path / JOURNAL, "a", buffering=1) as journal, \
                tqdm(total=total, initial=int(skip.all(axis=-2).sum()), desc=f"{sweep.name}: tasks", unit="task",
                     disable=not progress, dynamic_ncols=True) as bar:
            def log(event: str, task: Task) -> None:
                journal.write(f"run {run} {event} {'-'.join(map(str, task.index))} r{task.replicates[0]}\n")

            def write(task: Task, values: dict) -> None:
                writer.write(task.index, task.weights, task.replicates, values)
                log("write", task)
                bar.update()

            return run_tasks(client, tasks(sweep, skip=skip), write=write,
                             on_submit=lambda t: log("submit", t))
