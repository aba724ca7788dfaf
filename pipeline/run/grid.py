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

from ..model import CellModel, Correlation, Scheme
from ..spec import Sweep
from ..types import Centering

__all__ = ["Context", "Task", "n_tasks", "replicate_blocks", "replicate_rng", "task_memory_bytes", "task_shape", "tasks",
           "value_key"]


def value_key(x: float) -> int:
    """A stable non-negative integer for a coordinate value (its float64 bit pattern)."""
    return int(np.float64(x).view(np.uint64))


def replicate_rng(seed: int, delta: float, gamma: float, T: int, replicate: int) -> np.random.Generator:
    """The generator of one replicate of one cell (independent of everything but these values)."""
    ss = np.random.SeedSequence(seed, spawn_key=(value_key(delta), value_key(gamma), int(T), int(replicate)))
    return np.random.Generator(np.random.PCG64(ss))


@dataclass(frozen=True)
class Context:
    """What every task of a sweep shares: sizes, seed, model choices and the SNR axis.

    Built once per run from the sweep (:meth:`from_sweep`); it does not grow with the grid's
    ``delta``, ``gamma`` or ``T`` axes.
    """

    d: int
    seed: int
    correlation: Correlation
    centering: Centering
    top_k: int
    snr: tuple[float, ...]
    schemes: tuple[Scheme, ...]
    spectrum_edges: tuple[float, ...] | None = None
    ridge_penalty: float | None = None
    test_samples: int = 0

    @classmethod
    def from_sweep(cls, sweep: Sweep) -> "Context":
        """The sweep's shared part."""
        obs = sweep.observables
        return cls(d=sweep.d, seed=sweep.seed, correlation=sweep.correlation, centering=sweep.table_centering,
                   top_k=sweep.top_k, snr=tuple(sweep.grid.snr), schemes=tuple(sweep.grid.weights),
                   spectrum_edges=tuple(obs.spectrum.edges()) if obs.spectrum else None,
                   ridge_penalty=obs.ridge.penalty if obs.ridge else None,
                   test_samples=obs.ridge.test_samples if obs.ridge else 0)

    def sizes(self, delta: float, gamma: float) -> tuple[int, int]:
        """``V = round(d / delta)`` and ``N = round(d / gamma)``."""
        return round(self.d / delta), round(self.d / gamma)


@dataclass(frozen=True)
class Task:
    """One unit of work: a ``(delta, gamma, T)`` point, a block of replicates, the schemes to compute.

    Attributes
    ----------
    index
        Positions ``(i_delta, i_gamma, i_T)`` of the task on the grid.
    replicates
        ``(start, stop)`` of the replicate block.
    weights
        Positions on the ``weights`` axis of the schemes to compute: all of them, except when a
        store extended with new schemes already holds the others.
    point
        The coordinate values ``(delta, gamma, T)``.
    context
        What every task of the sweep shares.
    """

    index: tuple[int, int, int]
    replicates: tuple[int, int]
    weights: tuple[int, ...]
    point: tuple[float, float, int]
    context: Context

    @property
    def snr(self) -> np.ndarray:
        """The SNR values, all computed by this task."""
        return np.asarray(self.context.snr, dtype=float)

    @property
    def schemes(self) -> tuple[Scheme, ...]:
        """The weights schemes this task computes (at positions ``weights`` of the axis)."""
        return tuple(self.context.schemes[w] for w in self.weights)

    @property
    def name(self) -> str:
        """A readable identity, e.g. ``delta=0.5 gamma=0.25 T=16 replicates 0-7``."""
        (delta, gamma, T), (r0, r1) = self.point, self.replicates
        return f"delta={delta:g} gamma={gamma:g} T={T} replicates {r0}-{r1 - 1}"

    @property
    def key(self) -> str:
        """A short identity for keys and the journal, e.g. ``0-1-0 r8``."""
        return f"{'-'.join(map(str, self.index))} r{self.replicates[0]}"

    def models(self) -> list[CellModel]:
        """One :class:`~rmtsweep.model.CellModel` per scheme to compute, in the order of the axis."""
        c = self.context
        delta, gamma, T = self.point
        V, N = c.sizes(delta, gamma)
        R = c.correlation.matrix(T)
        edges = np.asarray(c.spectrum_edges) if c.spectrum_edges is not None else None
        return [CellModel(d=c.d, V=V, N=N, T=T, w=scheme.weights(R), correlation=c.correlation,
                          centering=c.centering, top_k=c.top_k, spectrum_edges=edges,
                          ridge_penalty=c.ridge_penalty, test_samples=c.test_samples)
                for scheme in self.schemes]

    def rngs(self) -> list[np.random.Generator]:
        """One generator per replicate of the block."""
        delta, gamma, T = self.point
        return [replicate_rng(self.context.seed, delta, gamma, T, r) for r in range(*self.replicates)]


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
    context = Context.from_sweep(sweep)
    blocks = replicate_blocks(sweep)
    for idx in itertools.product(*(range(n) for n in task_shape(sweep))):
        i_d, i_g, i_t = idx
        for b, block in enumerate(blocks):
            todo = tuple(w for w in range(len(g.weights)) if skip is None or not skip[idx + (w, b)])
            if todo:
                yield Task(index=idx, replicates=block, weights=todo, point=(g.delta[i_d], g.gamma[i_g], g.T[i_t]),
                           context=context)


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
