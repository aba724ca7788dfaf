"""A dask worker preload for ``benchmarks/many_threads.py``: tasks that sleep instead of computing.

Each task sleeps for the seconds the cost model predicts for it (:func:`rmtsweep.run.cost.point_seconds`
of its points, times its replicates), then returns arrays of the right shapes, which the worker writes
into the store as usual (the data are those of the same task computed at d = 8, made once per task shape:
the store is a benchmark's, not a result). So a few worker processes hold hundreds of threads on two
cores, and the driver, the scheduler, the store writes and the ``done`` flags are the real ones.

The sweep comes from the file named by ``RMTSWEEP_SLEEP_SWEEP``. (dask may import a preload twice: the
real computation is therefore taken from :mod:`rmtsweep.run.block`, which is never patched.)
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time

import numpy as np

import rmtsweep.run.work as work
from rmtsweep.run.block import compute_block as _real
from rmtsweep.run.cost import point_seconds
from rmtsweep.spec import load_sweep

SWEEP = load_sweep(os.environ["RMTSWEEP_SLEEP_SWEEP"]).sweep
SECONDS = point_seconds(SWEEP)                     # one replicate of each (delta, gamma, T) point
_made: dict[tuple, dict[str, np.ndarray]] = {}
_lock = threading.Lock()


def predicted_seconds(task) -> float:
    (a0, a1, a2, a3), (b0, b1, b2, b3) = task.start, task.stop
    return float(SECONDS[a0:b0, a1:b1, a2:b2].sum() * (b3 - a3))


def compute_block(task) -> dict[str, np.ndarray]:
    key = task.shape
    with _lock:
        if key not in _made:
            _made[key] = _real(dataclasses.replace(task, context=dataclasses.replace(task.context, d=8)))
    time.sleep(predicted_seconds(task))
    return _made[key]


work.compute_block = compute_block
