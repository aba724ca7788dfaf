"""The dask side: tasks go out to workers in a window that follows the cluster, results come back.

A task is a block of points (:mod:`rmtsweep.run.grid`); the worker that computes it writes its data
chunks into the store itself (``writes="workers"``, the default: the store must be on a filesystem
the workers see, as on any HPC cluster's shared scratch) and returns a few counts, or returns the
arrays for this process to write (``writes="driver"``). Either way only this process writes ``done``,
after the data, and only for a task whose result says its data were written (:func:`written`), on
every path: a normal finish, a failure of another task, Ctrl-C. Every task carries the run's fencing
token; a worker writes nothing for a run that no longer holds the store's lock
(:func:`rmtsweep.store.lock.holds`). At most :class:`Window` tasks are in flight, handed to the scheduler
in batches of ``rmtsweep.run.submit-batch`` (:mod:`rmtsweep.config`), so a grid of 10^6 points starts at
once and the scheduler never holds a graph of every chunk; the window is re-read as workers join and leave, and
on an adaptive cluster it is sized for the largest cluster allowed, so the scheduler's adaptive target asks for
every job.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from distributed import Client, Future, as_completed

from .. import config
from ..errors import RmtsweepError, RunError, StorageUnavailableError, StoreWriteError, TaskFailedError, UserError
from ..types import Writes
from ..store.fence import make_fence
from ..store.location import Location, locate
from ..store.lock import Share, lock_file
from ..store.writer import Writer
from .block import compute_block
from .grid import Task
from .work import compute_task, write_task

if TYPE_CHECKING:
    from dask.typing import Key

__all__ = ["RunReport", "Window", "check_memory", "compute_task",
           "run_tasks", "salvage", "write_task", "written"]


def written(results: Iterable[tuple[Task, dict]]) -> list[tuple[Task, dict]]:
    """The ``(task, result)`` pairs whose result says the task's data are in the store.

    The one rule by which a task may be marked done: a failed write (``os_error``), a fenced one or a
    driver-side result not yet written never passes.
    """
    return [(task, result) for task, result in results if isinstance(result, dict) and result.get("written") is True]


def salvage(ready: Iterable[tuple[Task, Future]], on_done: Callable[[list[tuple[Task, dict]]], None]) -> None:
    """Hand the finished tasks of a run that is stopping to ``on_done``: those whose data are in the store.

    A task whose result cannot be had (it failed, was cancelled, or does not arrive in 5 s) stays to do; if
    the store or its lock refuses the marking, nothing more is marked, and the exception that stopped the run
    is the one its caller reports.
    """
    results = []
    for task, fut in ready:
        try:
            results.append((task, fut.result(timeout=5)))
        except (Exception, asyncio.CancelledError):  # noqa: BLE001 - whatever the task raised: it stays to do
            continue
    done = written(results)
    if done:
        try:
            on_done(done)
        except (RmtsweepError, OSError):
            pass


@dataclass
class RunReport:
    """What a run did: tasks and replicates computed (docs/glossary.md), wall seconds, the largest in-flight window."""

    tasks_computed: int
    seconds: float
    in_flight: int = 0
    points_computed: int = 0
    """Points of the tasks computed, summed over tasks (a point in two tasks counts twice)."""
    replicates_computed: int = 0
    """Replicates computed, one per point, weights scheme and replicate number."""

    @property
    def cells_computed(self) -> int:
        """The old name of :attr:`points_computed`."""
        return self.points_computed


class Window:
    """How many tasks to keep in flight: follows the worker threads there now (re-read every ``refresh`` seconds).

    ``max(min-in-flight, per-thread * threads, adaptive-per-thread * expected_threads)``, where
    ``expected_threads`` is what an adaptive cluster may grow to (0 for a fixed one); the three factors and
    ``refresh`` are the settings ``rmtsweep.run.window.*`` when the window is made (:mod:`rmtsweep.config`).
    """

    def __init__(self, client: Client, expected_threads: int = 0, refresh: float | None = None) -> None:
        self.client, self.expected = client, expected_threads
        self.refresh = float(config.get("run.window.refresh") if refresh is None else refresh)
        self.least = int(config.get("run.window.min-in-flight"))
        self.per_thread = int(config.get("run.window.per-thread"))
        self.adaptive_per_thread = int(config.get("run.window.adaptive-per-thread"))
        self.read_at = -np.inf
        self.value = self.least
        self.largest = 0

    def size(self) -> int:
        """The window now."""
        now = time.monotonic()
        if now - self.read_at >= self.refresh:
            self.read_at = now
            threads = sum(self.client.nthreads().values())
            self.value = max(self.least, self.per_thread * threads, self.adaptive_per_thread * self.expected)
            self.largest = max(self.largest, self.value)
        return self.value


def run_tasks(client: Client, tasks: Iterable[Task], on_done: Callable[[list[tuple[Task, dict]]], None],
              path: str | Path | Location, run: int, writes: Writes = "workers", window: Window | None = None,
              retries: int | None = None, on_submit: Callable[[Task], None] | None = None, fence: str | None = None,
              share: Share | None = None) -> RunReport:
    """Compute ``tasks`` on ``client``, keeping a window in flight; call ``on_done`` as each one's data is written.

    Parameters
    ----------
    client
        A connected ``distributed.Client`` (LocalCluster, jobqueue cluster or remote scheduler).
    tasks
        The tasks still to do (consumed lazily).
    on_done
        Called in this process once tasks' data are in the store (mark ``done``, journal, progress),
        with a list of ``(task, {"replicates", ...})``: every task that finished since the last call, so a
        busy driver handles many at once.
    path, run
        The store and this run's index (recorded in ``run``).
    writes
        ``"workers"``: each worker writes its task's chunks; ``"driver"``: this process does.
    window
        The in-flight window (default: :class:`Window` on ``client``, no adaptive growth).
    retries
        Times a failing task is retried (worker deaths are rescheduled by dask regardless; default: the
        setting ``rmtsweep.run.retries``).
    on_submit
        Called when a task is handed to the scheduler (the run's journal).
    fence, share
        The run's fencing token (its lock's), carried by every task (:func:`write_task`), and the share whose
        lock it is (an array element's; ``None``: the store's own lock).

    Raises
    ------
    TaskFailedError
        When a task still fails after its retries; tasks already written stay written.
    """
    start = time.perf_counter()
    window = window or Window(client)
    retries = int(config.get("run.retries") if retries is None else retries)
    per_message = int(config.get("run.submit-batch"))
    token = uuid.uuid4().hex
    where = locate(path)                      # travels with each task, with the options of its storage
    writer = None
    if writes == "driver":
        writer = Writer(where, None if fence is None else make_fence(where, lock_file(where, share), fence))
    pending = iter(tasks)
    by_key: dict[Key, Task] = {}              # submitted and not yet handed to on_done
    futures: dict[Key, Future] = {}
    queue = as_completed()
    exhausted = False

    def top_up() -> None:
        nonlocal exhausted
        while not exhausted and (room := window.size() - queue.count()) > 0:
            batch = list(islice(pending, min(room, per_message)))
            exhausted = len(batch) < min(room, per_message)
            if not batch:
                return
            keys = [f"rmtsweep-task-{task.key}-{token[:8]}" for task in batch]
            futs = (client.map(write_task, batch, key=keys, retries=retries, path=where, run=run, token=token,
                               fence=fence, share=share) if writer is None
                    else client.map(compute_block, batch, key=keys, retries=retries))
            for task, fut in zip(batch, futs, strict=True):
                by_key[fut.key] = task
                futures[fut.key] = fut
            queue.update(futs)
            if on_submit is not None:
                for task in batch:
                    on_submit(task)

    computed = points = replicates = 0
    top_up()
    try:
        computed, points, replicates = _drain(queue, by_key, futures, writer, run, retries, on_done, top_up)
    except BaseException:
        # stopped (Ctrl-C, SIGTERM) or failed: what has come back written is marked done, the rest cancelled
        try:
            if writer is None:
                salvage([(by_key[k], f) for k, f in futures.items() if k in by_key and f.status == "finished"],
                        on_done)
        finally:
            for key in by_key:
                futures[key].cancel()
        raise
    return RunReport(tasks_computed=computed, seconds=time.perf_counter() - start, in_flight=window.largest,
                     points_computed=points, replicates_computed=replicates)


def _drain(queue: as_completed, by_key: dict, futures: dict, writer: Writer | None, run: int, retries: int,
           on_done: Callable[[list[tuple[Task, dict]]], None], top_up: Callable[[], None]) -> tuple[int, int, int]:
    """Hand finished tasks to ``on_done`` in batches until none is left; returns (tasks, points, replicates)."""
    computed = points = replicates = 0
    while queue.count():
        finished: list[tuple[Task, dict]] = []
        for fut in queue.next_batch(block=True):               # every future done by now, at least one
            task = by_key.pop(fut.key)
            futures.pop(fut.key, None)
            try:
                # a result lost with its worker (status "lost") is recomputed by dask: result() waits for it
                result = fut.result()
            except (Exception, asyncio.CancelledError) as exc:  # noqa: BLE001 - any task's failure ends the run, named
                if finished:
                    on_done(finished)                          # what finished before the failure stays done
                if isinstance(exc, StorageUnavailableError):
                    raise StorageUnavailableError(str(exc)) from None     # the storage's one line, not the task's
                raise TaskFailedError(f"task {task.name} failed after {retries} retries: "
                                      f"{type(exc).__name__}: {exc}") from None
            if "os_error" in result or "fenced" in result:
                if finished:
                    on_done(finished)
                if "fenced" in result:
                    raise RunError(f"{result['fenced']}: the store's lock is no longer this run's: another run "
                                   f"took the store over (task {task.name} was not written); nothing more is "
                                   f"written; rerun to resume")
                errno, message, filename = result["os_error"]
                raise StoreWriteError(f"{filename}: {message} (a worker writing task {task.name}); "
                                      f"fix it and rerun the same command to resume")
            if writer is not None:                 # checked by on_done before the done flags, fenced meanwhile
                writer.prepare([task.region], writer.data_names(task.null))
                writer.write_block(task.region, result, task.todo, run, task.null)
                result = {"written": True, "replicates": task.n_replicates}
            fut.release()
            finished.append((task, result))
            computed += 1
            points += task.n_points
            replicates += task.n_replicates
        on_done(finished)
        top_up()
    return computed, points, replicates


def check_memory(client: Client, need: int, force: bool = False, fallback: float | None = None) -> str:
    """Refuse a sweep whose estimated memory per task exceeds what a worker thread has.

    The limit is the smallest per-thread memory of the workers there now; with none yet (an
    adaptive or remote cluster still starting) it is ``fallback`` (e.g. the batch config's memory
    per job divided by its cores). Returns what was checked, in one line.

    Raises
    ------
    UserError
        With the estimate and the limit, unless ``force``.
    """
    workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
    limits = [w["memory_limit"] / max(w.get("nthreads", 1), 1) for w in workers if w.get("memory_limit")]
    if limits:
        limit, source = min(limits), "the workers' memory limit"
    elif fallback:
        limit, source = fallback, "the cluster config's memory per core (no worker has joined yet)"
    else:
        return (f"memory check not made: no worker with a memory limit has joined and no cluster config "
                f"gives one (estimated {need / 2**30:.2f} GiB per task)")
    if need > limit:
        what = (f"estimated memory per task {need / 2**30:.2f} GiB exceeds the {limit / 2**30:.2f} GiB a worker "
                f"thread has ({source})")
        if not force:
            raise UserError(f"{what}; lower d or raise the workers' memory, or pass --force to run anyway")
        return f"memory check: {what}; running anyway (--force)"
    return f"memory check: {need / 2**30:.2f} GiB per task within {limit / 2**30:.2f} GiB per thread ({source})"
