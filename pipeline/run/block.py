"""The worker's computation of one task: every point, scheme, replicate and SNR value of its chunk."""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

from ..model import simulate_schemes
from .grid import Task

__all__ = ["compute_block", "compute_null", "result_names"]


def result_names(task: Task) -> tuple[str, ...]:
    """The per-replicate variables a task of this sweep fills."""
    null = ("null_eigenvalue",) if task.computes_null else ()
    return tuple(name for name, _ in task.context.results) + null


def compute_block(task: Task) -> dict[str, np.ndarray]:
    """Compute a task with BLAS on one thread; entries outside ``task.todo`` stay NaN.

    Each point's replicate is drawn once and measured under every scheme it still needs (the draws
    do not depend on the weights).

    Returns
    -------
    dict
        Chunk-shaped arrays ``(delta, gamma, T, weights, replicate, ...)``, one per measured variable of
        :data:`rmtsweep.results.RESULTS` that the sweep has, with its trailing dims; for a task of the first
        replicate block of a sweep with scheduled null replicates, ``null_eigenvalue`` (``..., null_replicate`` in
        place of ``replicate``: :func:`compute_null`).
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
        if task.computes_null:
            out["null_eigenvalue"] = compute_null(task)
    return out


def compute_null(task: Task) -> np.ndarray:
    """The largest eigenvalue at ``snr = 0`` of each scheduled null replicate of the task's points.

    Shape ``(delta, gamma, T, weights, null_replicate)``; computed for the schemes without a law at the store's
    size (``context.null_schemes``) at ``T >= 2`` where ``task.todo`` has something left of the scheme (a store
    extended by a scheme), NaN elsewhere. Each null replicate has its own stream (:meth:`Task.null_rng`), shared
    by the schemes as a regular replicate's is.
    """
    c = task.context
    shape = task.shape
    out = np.full(shape[:4] + (c.null_replicates,), np.nan)
    zero = np.zeros(1)
    for pos, point in task.points():
        schemes = [w for w in c.null_schemes if point[2] >= 2 and (task.todo is None or task.todo[pos][w].any())]
        if not schemes:
            continue
        models = c.models(*point, schemes)
        for n in range(c.null_replicates):
            for w, res in zip(schemes, simulate_schemes(models, zero, task.null_rng(point, n)), strict=True):
                out[pos + (w, n)] = res.eigenvalues[0, 0]
    return out
