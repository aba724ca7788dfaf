"""What a worker runs: one task computed, and its data chunks written into the store (not ``done``).

The only code a worker process needs for its Monte Carlo tasks, kept apart from the driver's (dask's client
side, the store's template and theory, xarray), so that a worker a batch system starts imports numpy, scipy's
sparse and dense linear algebra, pydantic (the model's types) and zarr, and nothing else of ours. A local
cluster's workers are forked from a server that imported more (:data:`rmtsweep.run.forkserver.SERVED`).
"""

from __future__ import annotations

import time

import numpy as np

from ..errors import StoreError
from ..signals import quiet_finalizers
from ..store.backend import Location
from ..store.fence import Fenced, make_fence
from ..store.location import locate
from ..store.lock import Share, holds, lock_file
from ..store.writer import Writer
from .block import compute_block
from .forkserver import apply_unset
from .grid import Task

__all__ = ["compute_task", "dask_setup", "write_task"]


def dask_setup(worker: object) -> None:
    """What dask runs as a worker process loads this module as its preload: its environment made the one
    its cluster's maker has (:func:`rmtsweep.run.forkserver.worker_env`); the process ends with its cluster,
    and a client its tasks made is then collected after its event loop closed (quietly)."""
    apply_unset()
    quiet_finalizers()


def compute_task(task: Task) -> dict[str, np.ndarray]:
    """The task's chunk-shaped results (:func:`rmtsweep.run.block.compute_block`), returned, not written."""
    return compute_block(task)


_WRITERS: dict[tuple, Writer] = {}


def write_task(task: Task, path: str | Location, run: int, token: str, fence: str | None = None,
               share: Share | None = None) -> dict:
    """On a worker: compute ``task`` and write its data chunks (not ``done``) into the store at ``path``.

    The store's arrays are opened once per worker and run (``token``). ``fence`` is the run's fencing
    token: the data are written only while the store's lock (an array element's: that of its ``share``)
    carries it (checked after computing, right before writing). Returns ``{"written": True, "replicates": ...,
    "seconds": ...}``; ``{"os_error": (errno, message, filename)}`` when the store cannot be written (full disk,
    permission, read-only or vanished store): retrying would not help, so the run stops with that one
    line instead of retrying and logging the task's traceback on every worker; or ``{"fenced": path}``
    when the run no longer holds the store (nothing written).
    """
    start = time.perf_counter()
    values = compute_block(task)
    key = (path, token, fence, share)
    try:
        writer = _WRITERS.get(key)          # held here: a worker's other threads may replace the entry meanwhile
        if writer is None:
            where = locate(path)
            writer = Writer(where, None if fence is None else make_fence(where, lock_file(where, share), fence))
            _WRITERS.clear()
            _WRITERS[key] = writer
        # the chunks as they are before the check: a write is refused if another run changed them since
        writer.prepare([task.region], writer.data_names(task.null))
        if fence is not None and not holds(path, fence, share, strict=True):
            return {"fenced": path}
        writer.write_block(task.region, values, task.todo, run, task.null)
    except Fenced:
        return {"fenced": path}
    except OSError as exc:
        _WRITERS.clear()
        return {"os_error": (exc.errno, exc.strerror or str(exc), exc.filename or path)}
    except StoreError as exc:           # the storage refused the write (access denied, a bucket gone): as above
        _WRITERS.clear()
        return {"os_error": (None, str(exc).removeprefix(f"{path}: "), path)}
    return {"written": True, "replicates": task.n_replicates, "seconds": time.perf_counter() - start}
