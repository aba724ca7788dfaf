"""The worker's computation of one task: every point, scheme, replicate and SNR value of its chunk."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..model import simulate_schemes
from .grid import Task

__all__ = ["compute_block", "compute_null", "result_names"]


def result_names(task: Task) -> tuple[str, ...]:
    """The variables a task of this sweep fills: the measured per-replicate ones, or a null task's."""
    return ("null_eigenvalue",) if task.null else tuple(name for name, _ in task.context.results)


def compute_block(task: Task) -> dict[str, np.ndarray]:
    """Compute a task with BLAS on one thread; entries outside ``task.todo`` stay NaN.

    Each point's replicate is drawn once and measured under every scheme it still needs (the draws
    do not depend on the weights).

    Returns
    -------
    dict
        Chunk-shaped arrays ``(delta, gamma, T, weights, replicate, ...)``, one per measured variable of
        :data:`rmtsweep.results.RESULTS` that the sweep has, with its trailing dims; for a null task,
        ``null_eigenvalue`` alone (``..., null_replicate`` in place of ``replicate``: :func:`compute_null`).
    """
    if task.null:
        return {"null_eigenvalue": compute_null(task)}
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


def compute_null(task: Task) -> np.ndarray:
    """The largest eigenvalue at ``snr = 0`` of each scheduled null replicate of a null task's block.

    Shape ``(delta, gamma, T, weights, null_replicate)`` of the task's chunk; computed for the schemes without a
    law at the store's size (``context.null_schemes``) at ``T >= 2`` where ``task.todo`` leaves it to do, NaN
    elsewhere. Each null replicate has its own stream (:meth:`Task.null_rng`, keyed by its index, so any blocking
    gives the same values), shared by the schemes as a regular replicate's is.
    """
    c = task.context
    shape = task.shape
    out = np.full(shape, np.nan)
    zero = np.zeros(1)
    with threadpool_limits(limits=1):
        for pos, point in task.points():
            if point[2] < 2:
                continue
            need = np.ones(shape[3:], bool) if task.todo is None else task.todo[pos]    # (weights, null_replicate)
            every = dict(zip(c.null_schemes, c.models(*point, list(c.null_schemes)), strict=True))
            for n in range(shape[4]):
                schemes = [w for w in c.null_schemes if need[w, n]]
                if not schemes:
                    continue
                draws = simulate_schemes([every[w] for w in schemes], zero, task.null_rng(point, task.start[3] + n))
                for w, res in zip(schemes, draws, strict=True):
                    out[pos + (w, n)] = res.eigenvalues[0, 0]
    return out
