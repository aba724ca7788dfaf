"""The dask side: tasks go out to workers in waves, results come back, the driver writes them.

Workers compute and return small arrays (top-k eigenvalues and overlaps per replicate and SNR);
only this process writes the store, so workers never need to see it and two writes never race.
At most ``in_flight`` tasks are submitted at a time, so a grid of 10^5 cells starts at once and
the scheduler never holds a graph of every cell.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
from distributed import Client, as_completed
from threadpoolctl import threadpool_limits

from ..errors import RmtsweepError, TaskFailedError
from ..model import simulate_schemes
from .grid import Task

__all__ = ["RunReport", "check_memory", "compute_task", "run_tasks"]


def compute_task(task: Task) -> dict[str, np.ndarray]:
    """Run one task (every scheme of a grid point, a block of replicates) with BLAS on one thread.

    Returns
    -------
    dict
        ``eigenvalues`` and ``overlap`` of shape (weights, replicates, snr, k); ``alpha``, ``kappa``
        of shape (weights, replicates); and when the sweep asks for them ``spectrum``
        (weights, replicates, snr, bin) and ``accuracy`` (weights, replicates, snr).
    """
    with threadpool_limits(limits=1):
        models = task.models()
        per_rep = [simulate_schemes(models, task.snr, rng) for rng in task.rngs()]   # [replicate][scheme]
    names = [n for n in ("eigenvalues", "overlap", "alpha", "kappa", "spectrum", "accuracy")
             if getattr(per_rep[0][0], n) is not None]
    return {n: np.stack([np.stack([getattr(r[w], n) for r in per_rep]) for w in range(len(models))])
            for n in names}


@dataclass
class RunReport:
    """What a run did."""

    tasks_computed: int
    seconds: float
    in_flight: int = 0


def run_tasks(client: Client, tasks: Iterable[Task], write: Callable[[Task, dict], None],
              in_flight: int | None = None, retries: int = 2,
              on_submit: Callable[[Task], None] | None = None) -> RunReport:
    """Compute ``tasks`` on ``client`` in waves and hand each result to ``write`` as it arrives.

    Parameters
    ----------
    client
        A connected ``distributed.Client`` (LocalCluster, jobqueue cluster or remote scheduler).
    tasks
        The tasks still to do (consumed lazily, ``in_flight`` at a time).
    write
        Called in this process with each task and its result (the store writer, the progress bar).
    in_flight
        Tasks submitted at once; default four per worker thread (at least 4).
    retries
        Times a failing task is retried (worker deaths are rescheduled by dask regardless).
    on_submit
        Called when a task is handed to the scheduler (the run's journal).

    Raises
    ------
    TaskFailedError
        When a task still fails after its retries; tasks already written stay written.
    """
    start = time.perf_counter()
    if in_flight is None:
        threads = sum(client.nthreads().values()) or 1
        in_flight = max(4, 4 * threads)
    pending = iter(tasks)
    by_key: dict[str, Task] = {}

    def submit_next(queue: as_completed) -> None:
        task = next(pending, None)
        if task is not None:
            fut = client.submit(compute_task, task, retries=retries,
                                key=f"rmtsweep-cell-{task.key.replace(' ', '-')}-{uuid.uuid4().hex[:8]}")
            by_key[fut.key] = task
            queue.add(fut)
            if on_submit is not None:
                on_submit(task)

    queue = as_completed()
    for _ in range(in_flight):
        submit_next(queue)
    computed = 0
    for fut in queue:
        task = by_key.pop(fut.key)
        try:
            # a result lost with its worker (status "lost") is recomputed by dask: result() waits for it
            values = fut.result()
        except (Exception, asyncio.CancelledError) as exc:
            for other in list(queue.futures):
                other.cancel()
            raise TaskFailedError(f"cell {task.name} failed after {retries} retries: "
                                  f"{type(exc).__name__}: {exc}") from None
        write(task, values)
        fut.release()
        computed += 1
        submit_next(queue)
    return RunReport(tasks_computed=computed, seconds=time.perf_counter() - start, in_flight=in_flight)


def check_memory(client: Client, need: int, force: bool = False) -> str | None:
    """Refuse a sweep whose estimated memory per task exceeds what a worker thread has.

    Returns a note when the check could not be made (no workers yet, or no memory limits).

    Raises
    ------
    RmtsweepError
        With the estimate and the limit, unless ``force``.
    """
    workers = client.scheduler_info(n_workers=-1).get("workers", {}).values()
    limits = [w["memory_limit"] / max(w.get("nthreads", 1), 1) for w in workers if w.get("memory_limit")]
    if not limits:
        return "memory check skipped: no worker with a memory limit has joined yet"
    limit = min(limits)
    if need > limit and not force:
        raise RmtsweepError(f"estimated memory per task {need / 2**30:.2f} GiB exceeds the "
                            f"{limit / 2**30:.2f} GiB a worker thread has; lower d or raise the workers' "
                            f"memory, or pass --force to run anyway")
    return None
