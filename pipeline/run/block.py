"""The worker's computation of one task: every point, scheme, replicate and SNR value of its chunk."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..model import simulate_schemes
from .grid import Task

__all__ = ["compute_block", "result_names"]


def result_names(task: Task) -> tuple[str, ...]:
    """The per-replicate variables a task of this sweep fills."""
    return tuple(name for name, _ in task.context.results)


def compute_block(task: Task) -> dict[str, np.ndarray]:
    """Compute a task with BLAS on one thread; entries outside ``task.todo`` stay NaN.

    Each point's replicate is drawn once and measured under every scheme it still needs (the draws
    do not depend on the weights).

    Returns
    -------
    dict
        Chunk-shaped arrays ``(delta, gamma, T, weights, replicate, ...)``, one per measured variable of
        :data:`rmtsweep.results.RESULTS` that the sweep has, with its trailing dims.
    """
    c = task.context
    shape = task.shape
    out = {name: np.full(shape + trail, np.nan) for name, trail in c.results}
    snr = task.snr
    with threadpool_limits(limits=1):
        for pos, point in task.points():
            need = np.ones(shape[3:], bool) if task.todo is None else task.todo[pos]    # (weights, replicate)
            if not need.any():
                continue
            every = c.models(*point, list(range(shape[3])))
            for r in range(shape[4]):
                schemes = [int(w) for w in np.flatnonzero(need[:, r])]
                if not schemes:
                    continue
                models = [every[w] for w in schemes]
                for w, res in zip(schemes, simulate_schemes(models, snr, task.rng(point, r)), strict=True):
                    at = pos + (w, r)
                    for name in out:
                        out[name][at] = getattr(res, name)
    return out
