"""The sweep grid: cells, tasks (one store chunk each) and the random stream of every replicate.

A *cell* is one point of the non-SNR axes ``(delta, gamma, T, weights)``. A *task* is one point
of ``(delta, gamma, T)`` with every weights scheme, one block of ``replicate_chunk`` replicates and
every SNR value: each replicate is drawn once and pooled with every scheme (the draws do not depend
on the weights), and one draw serves all SNR values (common random numbers). A task writes exactly
one chunk of each per-replicate variable in the store.

Seeding: replicate ``r`` of a cell draws from
``SeedSequence(seed, spawn_key=(key(delta), key(gamma), T, r))`` where ``key(x)`` is the IEEE-754
bit pattern of ``x``. Keys come from the coordinate *values*, not their positions, so results do
not depend on worker count, task order, which run computed a cell, or values added to an axis
later. The weights scheme is deliberately not part of the key: every scheme of a cell sees the same
table, signs and tokens, so comparisons between schemes are paired.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from .model import CellModel, WeightScheme, correlation_matrix, pooling_weights
from .spec import Sweep


def value_key(x: float) -> int:
    """A stable non-negative integer for a coordinate value (its float64 bit pattern)."""
    return int(np.float64(x).view(np.uint64))


def replicate_rng(seed: int, delta: float, gamma: float, T: int, replicate: int) -> np.random.Generator:
    """The generator of one replicate of one cell (independent of everything but these values)."""
    ss = np.random.SeedSequence(seed, spawn_key=(value_key(delta), value_key(gamma), int(T), int(replicate)))
    return np.random.Generator(np.random.PCG64(ss))


@dataclass(frozen=True)
class Task:
    """One unit of work: a cell and a block of replicates.

    Attributes
    ----------
    index
        Positions ``(i_delta, i_gamma, i_T)`` of the task on the grid.
    replicates
        ``(start, stop)`` of the replicate block.
    weights
        Positions on the ``weights`` axis of the schemes to compute: all of them, except when a
        store extended with new schemes already holds the others.
    """

    index: tuple[int, int, int]
    replicates: tuple[int, int]
    weights: tuple[int, ...]
    delta: float
    gamma: float
    T: int
    V: int
    N: int
    sweep: Sweep

    @property
    def snr(self) -> np.ndarray:
        """The SNR values, all computed by this task."""
        return np.asarray(self.sweep.grid.snr, dtype=float)

    @property
    def schemes(self) -> tuple[WeightScheme, ...]:
        """The weights schemes this task computes (at positions ``weights`` of the axis)."""
        every = self.sweep.weight_schemes()
        return tuple(every[w] for w in self.weights)

    @property
    def name(self) -> str:
        """A readable identity, e.g. ``delta=0.5 gamma=0.25 T=16 replicates 0-7``."""
        r0, r1 = self.replicates
        return f"delta={self.delta:g} gamma={self.gamma:g} T={self.T} replicates {r0}-{r1 - 1}"

    def models(self) -> list[CellModel]:
        """One :class:`~pipeline.model.CellModel` per weights scheme, in the order of the axis."""
        corr = self.sweep.correlation_model()
        R = correlation_matrix(corr, self.T)
        obs = self.sweep.observables
        return [CellModel(d=self.sweep.d, V=self.V, N=self.N, T=self.T, w=pooling_weights(scheme, R),
                          correlation=corr, centering=self.sweep.table_centering, top_k=self.sweep.top_k,
                          spectrum_edges=obs.spectrum.edges() if obs.spectrum else None,
                          ridge_penalty=obs.ridge.penalty if obs.ridge else None,
                          test_samples=obs.ridge.test_samples if obs.ridge else 0)
                for scheme in self.schemes]

    def rngs(self) -> list[np.random.Generator]:
        """One generator per replicate of the block."""
        return [replicate_rng(self.sweep.seed, self.delta, self.gamma, self.T, r) for r in range(*self.replicates)]


def task_shape(sweep: Sweep) -> tuple[int, int, int]:
    """Number of task points along ``(delta, gamma, T)`` (each covers every weights scheme)."""
    g = sweep.grid
    return len(g.delta), len(g.gamma), len(g.T)


def replicate_blocks(sweep: Sweep) -> list[tuple[int, int]]:
    """The replicate blocks (store chunks along ``replicate``)."""
    c = sweep.replicate_chunk
    return [(r, min(r + c, sweep.replicates)) for r in range(0, sweep.replicates, c)]


def tasks(sweep: Sweep, skip: np.ndarray | None = None) -> Iterator[Task]:
    """All tasks of the sweep, lazily, in grid order.

    Parameters
    ----------
    skip
        Optional boolean array of shape ``task_shape(sweep) + (n_weights, n_blocks)``: schemes
        already done in a block are left out of its task, and a block with all done is skipped.
    """
    g = sweep.grid
    blocks = replicate_blocks(sweep)
    for idx in itertools.product(*(range(n) for n in task_shape(sweep))):
        i_d, i_g, i_t = idx
        V, N = sweep.sizes(g.delta[i_d], g.gamma[i_g])
        for b, block in enumerate(blocks):
            todo = tuple(w for w in range(len(g.weights)) if skip is None or not skip[idx + (w, b)])
            if todo:
                yield Task(index=idx, replicates=block, weights=todo, delta=g.delta[i_d], gamma=g.gamma[i_g],
                           T=g.T[i_t], V=V, N=N, sweep=sweep)


def n_tasks(sweep: Sweep) -> int:
    """Total number of tasks."""
    return int(np.prod(task_shape(sweep))) * len(replicate_blocks(sweep))


def task_memory_bytes(sweep: Sweep) -> int:
    """Upper estimate of one task's peak memory (largest cell): table, pooled matrix, Gram, tokens."""
    d, g = sweep.d, sweep.grid
    worst = 0
    for delta, gamma, T in itertools.product(g.delta, g.gamma, g.T):
        V, N = sweep.sizes(delta, gamma)
        n = min(d, N)
        worst = max(worst, 8 * (d * V + 2 * N * d + 3 * n * n + 6 * N * T))
    return worst
