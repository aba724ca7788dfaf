"""One sweep end to end: *prepare* (store, lock, plan), then *execute* (dask) — ``rmtsweep run``.

The Python entry point::

    from rmtsweep import run_sweep
    run_sweep("sweeps/demo.yaml", "store/demo.zarr")          # dask's current client, or a LocalCluster

    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        run_sweep(load_sweep("sweeps/demo.yaml", ["replicates=32"]), "store/demo.zarr", client)

What a run guarantees (tested in tests/integration/test_resume.py):

- a store holds one sweep; a rerun computes only tasks whose ``done`` flags are not all set, and
  never rewrites a finished one; a task killed between its data and its ``done`` is recomputed;
- one run writes a store at a time (:class:`rmtsweep.store.StoreLock`);
- a sweep file that adds replicates or axis values extends the store (:mod:`rmtsweep.store.migrate`);
- ``attrs['runs']`` records every run's provenance, and the ``run`` variable says which run computed
  each replicate;
- the store's journal (:func:`rmtsweep.store.journal_file`, beside it) lists every task the run submitted and wrote.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from dataclasses import dataclass
from typing import Any

import numpy as np
from distributed import Client, Future
from threadpoolctl import threadpool_limits

from .. import config
from ..errors import RunError, StorageUnavailableError, StoreWriteError, UserError
from ..shipped import resolve_sweep
from ..signals import Held
from ..spec import Sweep, SweepFile, load_sweep
from ..store import Location, PreparedRun, Store, Template, local_path, locate, now, provenance, template
from ..store.io import open_group
from ..store.lock import Share
from ..store.pending import PENDING, theory_pending, write_theory
from ..theory.estimate import LIMIT_SECONDS, theory_seconds
from ..theory.grid import TheoryBudgets
from ..theory.on_grid import sized_theory, theory_dataset
from .cost import Blocking, choose_blocking, task_target
from ..types import Writes
from .execute import RunReport, Window, check_memory, run_tasks
from .grid import Order, Task, n_tasks, share_done, share_tasks, task_memory_bytes, tasks, tasks_left
from .forkserver import LOOPBACK, cluster_options, forking_workers
from .plan import theory_budgets
from .recorded import recorded_budgets, resume_check
from .theory_cache import FolderCache, theory_cache
from .progress import Progress

__all__ = ["OpenRun", "git_revision", "make_template", "open_run", "package_version", "prepare_store", "ready_store",
           "run_info", "run_sweep"]


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


def make_template(sweep_file: SweepFile, blocking: tuple[int, ...],
                  notes: Callable[[str], None] | None = None, defer: bool = False) -> Template:
    """The store template of ``sweep_file`` with tasks of ``blocking``: coordinates, theory, provenance
    (``notes``: where a line goes before a theory computation of several seconds).

    With ``defer`` the theory at the store's own size is left out (``theory_pending``), where there is any to
    compute: a run computes it as tasks beside its first ones (:mod:`rmtsweep.store.pending`), so the store
    exists from the start.

    The theory is bounded by the settings ``rmtsweep.theory.*`` now; they and ``rmtsweep.batching.*``, which
    shape what the store holds, are recorded in ``attrs["config"]``.
    """
    sweep = sweep_file.sweep
    attrs = provenance(sweep_file, package_version(), git_revision())
    attrs["config"] = {"theory": config.recordable("theory"), "batching": config.recordable("batching")}
    budgets = theory_budgets()
    defer = defer and theory_seconds(sweep, budgets) > LIMIT_SECONDS     # the limits alone: at once
    if defer:
        attrs[PENDING] = True
    theory = theory_dataset(sweep, notes, budgets, part="template" if defer else "all", cache=theory_cache())
    return template(sweep, theory, attrs, blocking)


def run_sweep(sweep_file: SweepFile | Sweep | str | Path, path: str | Path | Location, client: Client | None = None,
              progress: bool = True, force: bool = False, writes: Writes = "workers", expected_threads: int = 0,
              memory_per_thread: float | None = None, notes: Callable[[str], None] | None = None,
              share: Share | None = None, storage_options: dict | None = None,
              order: Order = "progressive") -> RunReport:
    """Run, resume or extend a sweep into the store at ``path``; only unfinished tasks are computed.

    Parameters
    ----------
    sweep_file
        A sweep file's path or a shipped sweep's name (``"demo"``), a :class:`~rmtsweep.spec.SweepFile`
        (:func:`rmtsweep.load_sweep`, which also takes overrides) or a :class:`~rmtsweep.spec.Sweep` (recorded in
        the store as its canonical form).
    path
        The zarr store (created if missing, with the batching of :func:`rmtsweep.run.cost.choose_blocking`).
    client
        A connected dask client whose workers do the computing; default: dask's current client, else a
        LocalCluster of one single-threaded worker process per core, for this call only, started once the store
        is ready and locked (so ``rmtsweep status`` answers while it starts; :func:`open_run`).
    progress
        Show progress on stderr (a bar on a terminal, a line every 15 s otherwise).
    force
        Run even when the estimated memory per task exceeds a worker thread's limit.
    writes
        ``"workers"`` (each worker writes its chunks; the store must be on a filesystem they see) or
        ``"driver"`` (workers return arrays, this process writes them).
    expected_threads
        Worker threads an adaptive cluster may grow to (sizes the in-flight window before they join).
    memory_per_thread
        Memory limit per worker thread to check against while no worker has joined (bytes).
    notes
        Where one-line notes go (the memory check, the batching); default: nowhere.
    storage_options
        For a store at a URL (``s3://bucket/run.zarr``): the options of its storage (``endpoint_url``,
        ``key``, ...; credentials and endpoint also come from the environment). They travel with each task to
        the workers, which write their chunks straight to the bucket.
    share
        ``(i, n)``: compute only element ``i``'s share of an array of ``n`` (:func:`rmtsweep.run.grid.share_tasks`),
        beside the array's other elements, in a store that :func:`ready_store` made (it must hold this sweep).
    order
        ``"progressive"`` (default): every point gets a first block of replicates before any gets a second,
        so a partly done store already covers the grid; ``"grid"``: each point's replicates in turn. The
        results are the same bit for bit.

    Raises
    ------
    StoreError
        The path is not a store, holds an incompatible sweep, or another run is writing it; or a URL whose
        filesystem is not installed.
    SettingsError
        A setting ``rmtsweep.*`` out of its range (:func:`rmtsweep.config.check`), before a cluster starts.
    UserError
        The memory estimate exceeds the workers' (unless ``force``).
    TaskFailedError
        A task kept failing; finished tasks stay done.
    RunError
        Tasks were left uncomputed though none failed (nothing could be handed to the scheduler).
    """
    config.check()                                       # every setting, before a cluster starts
    sweep_file, path = _as_sweep_file(sweep_file), locate(path, storage_options)
    resume_check(sweep_file, path)
    note = notes or (lambda _: None)
    client = client or _current_client()
    with _run_errors(path), threadpool_limits(limits=1):
        if client is None:             # a LocalCluster of a worker per core: made once the store is (see open_run)
            with _opened(sweep_file, path, os.cpu_count() or 1, note, share) as opened, _local_cluster() as made:
                return opened.compute(made, progress, force, writes, expected_threads, memory_per_thread, order)
        threads = max(expected_threads, sum(client.nthreads().values()))
        new = choose_blocking(sweep_file.sweep, task_target(threads))       # used only if the store is new
        note(check_memory(client, task_memory_bytes(sweep_file.sweep, new), force, memory_per_thread))
        with _opened(sweep_file, path, threads, note, share) as opened:
            return opened.compute(client, progress, force, writes, expected_threads, memory_per_thread, order,
                                  checked=True)


@contextmanager
def open_run(sweep_file: SweepFile | Sweep | str | Path, path: str | Path | Location, threads: int,
             notes: Callable[[str], None] | None = None, share: Share | None = None,
             storage_options: dict | None = None) -> Iterator[OpenRun]:
    """The store of a run made ready before its cluster starts: created or extended, locked, the run recorded.

    So ``rmtsweep status`` answers while the cluster starts. A new store's tasks are sized for ``threads``
    worker threads (:func:`rmtsweep.run.cost.choose_blocking`), as :func:`run_sweep` sizes them for a client
    of that many; the lock's heartbeat keeps it while the cluster starts. Inside, start the cluster and call
    :meth:`OpenRun.compute` with its client::

        with open_run("demo", "store/demo.zarr", threads=4) as opened:
            with LocalCluster(n_workers=4, threads_per_worker=1) as cluster, Client(cluster) as client:
                opened.compute(client)

    Parameters are those of :func:`run_sweep`.

    Raises
    ------
    StoreError, SettingsError
        As :func:`run_sweep`, before anything is written.
    """
    config.check()
    sweep_file, path = _as_sweep_file(sweep_file), locate(path, storage_options)
    resume_check(sweep_file, path)
    with _run_errors(path), threadpool_limits(limits=1), \
            _opened(sweep_file, path, threads, notes or (lambda _: None), share) as opened:
        yield opened


@contextmanager
def _run_errors(path: Location) -> Iterator[None]:
    """A run's storage and file errors, each in one line that says how to resume."""
    try:
        yield
    except StorageUnavailableError as exc:
        # the store's lock lapses and its finished tasks stay done: the same command picks up where this one stopped
        # (the error's last clause, what to do, is replaced by what to do after a run)
        raise StorageUnavailableError(f"{str(exc).rsplit('; ', 1)[0]}; finished tasks stay in the store: rerun the "
                                      f"same command to resume once it answers") from exc
    except OSError as exc:
        # a file error without its file (the journal's buffered write, metadata): name the store. An error
        # that names its file is printed as it is, and one with no errno (a lost dask connection) is no
        # store error at all.
        if exc.filename or exc.errno is None:
            raise
        raise StoreWriteError(f"{path}: {exc.strerror or exc} (writing the store's journal or metadata); fix it "
                              f"and rerun the same command to resume") from None


def _as_sweep_file(sweep: SweepFile | Sweep | str | Path) -> SweepFile:
    if isinstance(sweep, SweepFile):
        return sweep
    if isinstance(sweep, Sweep):
        return SweepFile(sweep, "<a Sweep made in Python>", json.dumps(sweep.canonical(), indent=1, sort_keys=True))
    return load_sweep(resolve_sweep(sweep))               # a file, or a shipped sweep's name ("demo")


def _current_client() -> Client | None:
    """The current client of dask, if there is one."""
    from distributed import get_client
    try:
        return get_client()
    except ValueError:                                    # no client
        return None


@contextmanager
def _local_cluster() -> Iterator[Client]:
    """A client of a LocalCluster of one single-threaded worker process per core, made (and closed) here: closed to
    every other user of the machine, as `rmtsweep run`'s (:func:`rmtsweep.run.forkserver.cluster_options`)."""
    from distributed import LocalCluster
    with forking_workers():
        # no dashboard (as `rmtsweep run`): its HTTP server for health and metrics on loopback
        cluster = LocalCluster(n_workers=os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=f"{LOOPBACK}:0", scheduler_kwargs={"dashboard": False},
                               **cluster_options())
    with cluster, Client(cluster) as made:
        yield made


@contextmanager
def _opened(sweep_file: SweepFile, path: Location, threads: int, note: Callable[[str], None],
            share: Share | None) -> Iterator[OpenRun]:
    """:func:`open_run` once its arguments are checked: the store prepared (or joined) under its lock."""
    new = choose_blocking(sweep_file.sweep, task_target(threads))      # used only if the store is new
    store = Store(path)
    info = run_info(sweep_file)
    opened = store.prepare(sweep_file, lambda b: make_template(sweep_file, b, note, defer=True), info, new.chunking()) \
        if share is None else store.join(sweep_file, share, info)
    with opened as run:
        try:
            yield OpenRun(sweep_file, path, run, new, note, share)
        finally:
            run.writer.close()            # also when the cluster never started


@dataclass
class OpenRun:
    """A run whose store is ready and locked (:func:`open_run`): :meth:`compute` computes its tasks."""

    sweep_file: SweepFile
    path: Location
    run: PreparedRun
    new: Blocking
    """The tasks' size for a new store: the one the memory check estimates."""
    note: Callable[[str], None]
    share: Share | None = None

    def compute(self, client: Client, progress: bool = True, force: bool = False, writes: Writes = "workers",
                expected_threads: int = 0, memory_per_thread: float | None = None, order: Order = "progressive",
                checked: bool = False) -> RunReport:
        """Compute the store's unfinished tasks on ``client``'s workers (the parameters of :func:`run_sweep`).

        ``checked``: the memory check was made before the store, else it is made here, once workers joined.

        Raises
        ------
        UserError
            The memory estimate exceeds the workers' (unless ``force``); the store is left as it is.
        TaskFailedError, RunError
            As :func:`run_sweep`.
        """
        sweep, path, run, note, share = self.sweep_file.sweep, self.path, self.run, self.note, self.share
        threads = max(expected_threads, sum(client.nthreads().values()))
        if not checked:
            try:
                note(check_memory(client, task_memory_bytes(sweep, self.new), force, memory_per_thread))
            except UserError as exc:
                # the store was made ready before the workers joined: it is complete, with no task of this run
                raise UserError(f"{exc}; {path} stays as this run prepared it, with no task computed now") from None
        # the theory at the store's size: tasks beside the first ones, written as soon as they are back
        attrs = dict(open_group(path).attrs)
        theory = None
        if share is None and theory_pending(attrs):
            budgets, differ = recorded_budgets(attrs, path)      # the store's own, whatever the settings say now
            if differ:
                note(differ)
            theory = _TheoryTask(client, sweep, path, note, threads, budgets)

        def submitted(task: Task) -> None:
            run.log("submit", task.key)
            if theory is not None and threads > 1:       # once a first Monte Carlo task is out
                theory.start()                            # (one thread: after them, see _TheoryTask.write)
        blocking = Blocking(*run.blocking)
        if sweep.null_replicate_count and not run.writer.null:     # a store made before the run scheduled them
            sweep = sweep.model_copy(update={"null_replicates": 0})
        done, null_done = _done_masks(run, sweep, blocking, share)
        total = n_tasks(sweep, blocking)
        left = tasks_left(sweep, blocking, done, share, null_done)  # the tasks are made as the window takes them
        todo = tasks(sweep, blocking, done, order, null_done) if share is None else \
            share_tasks(sweep, blocking, done, share, order, null_done)
        per_d = f", one d value each (d = {', '.join(map(str, sweep.d_values))})" if sweep.d_axis else ""
        if run.recompute:
            note(f"{path}: extended; {run.recompute}")
        elif run.plan == "extend":
            note(f"{path}: extended; {run.carried} finished replicate(s) carried over")
        mine = "" if share is None else f"; element {share[0]} of {share[1]}: one task in {share[1]}"
        note(f"{total} tasks of up to {blocking.cells} points x {blocking.replicate} replicates{per_d}{mine} "
             f"({left} to compute)")
        if share is None:
            bar = Progress(sweep.name, total, total - left, enabled=progress)
        else:
            bar = Progress(f"{sweep.name} [{share[0]}/{share[1]}]", left, 0, enabled=progress)

        def finished(batch: list[tuple[Task, dict]]) -> None:
            for null in (False, True):                    # before the check (store.fence)
                run.writer.prepare([task.region for task, _ in batch if task.null == null],
                                   ["null_done" if null else "done"])
            run.check()                                   # never mark done under a lock we may have lost
            if theory is not None:
                theory.write_if_ready()
            # run_tasks hands over only tasks whose data were written (execute.written, on every path); a stop
            # signal waits until the batch is both marked done and journaled (the journal lists what is done)
            with Held() as stop:
                run.writer.mark_done_many([task.region for task, _ in batch],
                                          [task.null_needed() if task.null else None for task, _ in batch])
                for task, _ in batch:
                    run.log("write", task.key)
                    bar.update(task.n_replicates)
            stop.deliver()

        try:
            report = run_tasks(client, todo, finished, path, run.index, writes=writes,
                               window=Window(client, expected_threads), on_submit=submitted,
                               fence=run.token, share=run.share)
            if report.tasks_computed < left:             # nothing failed, yet tasks are left: never a success
                raise RunError(f"{path}: {left - report.tasks_computed} of {left} tasks were left uncomputed "
                               f"though none failed (at most {report.in_flight} in flight); check the settings "
                               f"rmtsweep.run.*; finished tasks are in the store: rerun to resume")
            if theory is not None:
                run.check()
                theory.write()
            return report
        finally:
            if theory is not None:
                theory.cancel()
            bar.close()
            run.writer.close()


def _done_masks(run: PreparedRun, sweep: Sweep, blocking: Blocking,
                share: Share | None) -> tuple[np.ndarray, np.ndarray | None]:
    """The store's ``done`` and ``null_done`` masks, as the run (or its ``share``) needs them."""
    writer = run.writer
    if share is None:
        return writer.done_mask(), writer.null_done_mask()
    done = share_done(sweep, blocking, share, writer.done.shape, writer.done_in)
    if "null_done" not in writer.null:
        return done, None
    return done, share_done(sweep, blocking, share, writer.null["null_done"].shape, writer.null_done_in, null=True)


class _TheoryTask:
    """The store's theory at its own size, computed on the cluster (its pairs, and a costly pair's draws, as tasks
    of their own), written here."""

    def __init__(self, client: Client, sweep: Sweep, path: Any, note: Callable[[str], None], threads: int,
                 budgets: TheoryBudgets) -> None:
        self.client, self.sweep, self.path, self.note, self.threads = client, sweep, path, note, threads
        self.budgets = budgets
        self.written = False
        self.future: Future | None = None
        self.early = not locate(path).contended_writes     # written as soon as it is back (see write_if_ready)

    def start(self) -> None:
        """Submit it (once). A run on one worker thread submits it after its Monte Carlo tasks, whose results
        then come first for the same total; on more threads it runs beside them."""
        if self.future is not None:
            return
        # the driver's cache folder: the workers share it where they share the driver's files
        self.future = self.client.submit(_theory_on_cluster, self.sweep, self.budgets, theory_cache(), pure=False,
                                         key=f"rmtsweep-theory-{uuid.uuid4().hex[:8]}")
        where = "after the tasks" if self.threads == 1 else "beside the first tasks"
        self.note(f"{self.path}: computing the theory at the store's size {where}")

    def write_if_ready(self) -> None:
        # on object storage the theory is written once the tasks are: its listing and writes of many objects
        # would otherwise run beside every worker's conditional chunk writes on the same service
        if not self.written and self.future is not None and self.future.done() and self.early:
            self.write()

    def write(self) -> None:
        if self.written:
            return
        self.start()                              # one thread, or no Monte Carlo task left: the theory now
        assert self.future is not None
        try:
            theory = self.future.result()
        except Exception as exc:  # noqa: BLE001 - whatever the task raised, in one line
            raise RunError(f"{self.path}: computing the theory at the store's size failed ({type(exc).__name__}: "
                           f"{exc}); finished tasks are in the store; rerun to resume") from None
        write_theory(self.path, theory)
        self.written = True
        self.note(f"{self.path}: the theory at the store's size is written")

    def cancel(self) -> None:
        if not self.written and self.future is not None:
            self.future.cancel()


def run_info(sweep_file: SweepFile) -> dict:
    """What ``attrs['runs']`` records of a run started here and now (JSON-able)."""
    return {"started": now(), "host": socket.gethostname(), "pid": os.getpid(),
            "rmtsweep_version": package_version(), "git_revision": git_revision() or "unknown",
            "sweep_hash": sweep_file.sweep.digest(), "sweep_file": sweep_file.path,
            "sweep_overrides": list(sweep_file.overrides)}


def ready_store(sweep_file: SweepFile | Sweep | str | Path, path: str | Path, threads: int,
                elements: int | None = None) -> tuple[int, int]:
    """Create or extend the store for an array job before its elements start.

    Tasks are sized for ``threads`` worker threads (one element's: each element drives its own cores, so no
    single driver sets a pace, and a stopped element loses at most a task per thread, of about a second).
    With ``elements`` (the array's size N), the runs of its N elements are recorded here, once, under the
    store's lock (``attrs['runs']``: one entry per share, ``"array": N``), so that an element starting
    finds its run and records nothing itself; without it, each element records its own run as it joins.
    Returns ``(tasks in all, tasks left to compute)``.

    Raises
    ------
    StoreError
        As :func:`run_sweep`: not a store, another sweep that cannot be extended, or a run or an array
        of another size is writing it.
    """
    sweep_file, path = _as_sweep_file(sweep_file), local_path(path)
    sweep = sweep_file.sweep
    store = Store(path)
    new = choose_blocking(sweep, task_target(threads)).chunking()
    info = None if elements is None else {**run_info(sweep_file), "array": elements}
    with store.prepare(sweep_file, lambda b: make_template(sweep_file, b), info, new) as run:
        blocking = Blocking(*run.blocking)
        total = n_tasks(sweep, blocking)
        return total, tasks_left(sweep, blocking, run.writer.done_mask(), null_done=run.writer.null_done_mask())


def prepare_store(sweep_file: SweepFile, path: str | Path) -> None:
    """Create the store's template if there is none (tests and benchmarks that fill stores by hand)."""
    Store(local_path(path)).create_if_missing(lambda b: make_template(sweep_file, b),
                                              choose_blocking(sweep_file.sweep).chunking())


def _theory_on_cluster(sweep: Sweep, budgets: TheoryBudgets, cache: FolderCache | None = None) -> Any:
    """On a worker: the store's theory at its size, each independent (point, weights) pair a task of its own, and
    first a costly pair's draws in batches of their own (:func:`rmtsweep.theory.finite_size.pooled_arrays`), so
    that a grid's pairs, and even one pair's draws, spread over the workers instead of trailing the run on one.
    This task computes the first item of each round itself."""
    from distributed import get_client, rejoin, secede

    def mapper(fn: Callable, items: list) -> list:
        if len(items) < 2:
            return list(map(fn, items))
        tag = uuid.uuid4().hex[:8]
        client = get_client()
        # ahead of the Monte Carlo tasks already queued: the theory would otherwise trail the run
        rest = client.map(fn, items[1:], key=[f"rmtsweep-theory-{tag}-{n}" for n in range(1, len(items))], priority=1)
        first = fn(items[0])         # here: a queued Monte Carlo task would otherwise take this thread
        secede()                     # this task leaves its thread to its items while it waits
        try:
            return [first, *client.gather(rest)]
        finally:
            rejoin()
    return sized_theory(sweep, budgets, mapper, cache)

