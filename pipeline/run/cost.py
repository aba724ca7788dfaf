"""How long a task takes, and how many points and replicates it should hold (the batching).

A task should run about ``rmtsweep.batching.target-task-seconds`` (:mod:`rmtsweep.config`) whatever ``d`` is:
long enough that dask's per-task overhead (about a millisecond of scheduler time, plus the driver's ``done`` write) is
noise, short enough that the work spreads over many workers and a kill loses little. The model
below predicts one replicate of one ``(delta, gamma, T)`` point with every weights scheme; its
constants were fitted on a 2-core development machine with one BLAS thread per task, from d = 8 to 300, and
those of the Gram, attention, ridge and direct solves measured from d = 400 to 1600 (``benchmarks/start.py``
holds the whole run against the model).
A faster or slower machine shifts every task by the same factor, which keeps tasks within the
0.5-2 s band on any ordinary CPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import config
from ..model.topk import LANCZOS_MIN_N
from ..results import PointWork, present
from ..spec import Observables, Sweep, sizes

__all__ = ["Blocking", "PointCost",
           "choose_blocking", "null_sweep", "point_cost", "point_seconds", "task_target"]

# Fitted cost coefficients stay constants (they describe the code, not a choice): seconds per unit, fitted by
# non-negative least squares on replicates timed one by one.
_PER_SCHEME_RANK2 = 1.1e-3     # Python overhead of the rank-2 path (bisection set-up), per scheme
_PER_SCHEME_SNR = 9.7e-5       # one direct top-k solve of a small matrix, per scheme and SNR value
_TABLE = 2.24e-8               # Gaussian table draw, per d * V
_POOL = 9.1e-8                 # sparse pooling, per scheme and N * T
_GRAM = 5.0e-11                # Gram product, per scheme and N * d * min(d, N) (syrk measured at d = 400-1600, x 2)
_EIGH = 1.5e-10                # full decomposition (rank-2 path, spectrum observable), per n^3
_SUBSET = 7.0e-11              # LAPACK's top-k (syevr, below LANCZOS_MIN_N), per n^3: 66 ms at n = 1000
_BISECT = 5.3e-9 * 80          # rank-2 bisection, per scheme, SNR value and n
# measured at d = 400-1600 on one core, then scaled by 1.3: a worker beside a busy neighbour runs that much slower
# (benchmarks/start.py measures a run's tasks against this model)
# a Gram and its Lanczos top-k (attention, ridge), per N * d * n: refit at d = 800-1600 from attention's
# replicates and null replicates, whose thread CPU ran 1.4-1.5x the earlier 2.0e-11's figure
_DIRECT = 3.6e-11
_SCORES = 1.5e-10              # attention scores of the gathered rows, per N T^2 d


@dataclass(frozen=True)
class PointCost:
    """Predicted seconds of one replicate of each ``(delta, gamma, T)`` point, kept separable.

    The cost is ``by_delta[i] + by_gamma[j] + rows[j] * by_T[l]``: a sum over axes, never one value per
    point, so a grid of 10^9 points is planned in memory of the axes' lengths. ``rows`` (``N``) is
    positive and ``by_T`` is not negative, which the maximum relies on.
    """

    by_delta: np.ndarray
    by_gamma: np.ndarray
    rows: np.ndarray
    by_T: np.ndarray

    @property
    def shape(self) -> tuple[int, int, int]:
        return len(self.by_delta), len(self.by_gamma), len(self.by_T)

    def max(self) -> float:
        """The most expensive point's seconds."""
        return float(self.by_delta.max() + (self.by_gamma + self.rows * self.by_T.max()).max())

    def mean(self) -> float:
        """The mean over points."""
        return float(self.by_delta.mean() + self.by_gamma.mean() + self.rows.mean() * self.by_T.mean())

    def total(self) -> float:
        """The sum over points."""
        n_delta, n_gamma, n_T = self.shape
        return float(self.by_delta.sum() * n_gamma * n_T + self.by_gamma.sum() * n_delta * n_T
                     + n_delta * self.rows.sum() * self.by_T.sum())

    def array(self) -> np.ndarray:
        """Every point's seconds, shape ``(n_delta, n_gamma, n_T)`` (one value per point: small grids only)."""
        return (self.by_delta[:, None, None] + self.by_gamma[None, :, None]
                + self.rows[None, :, None] * self.by_T[None, None, :])


def point_cost(sweep: Sweep, d: int | None = None) -> PointCost:
    """The :class:`PointCost` of ``sweep`` at ``d``, by default the largest ``d`` of a grid axis.

    A task holds one ``d`` value, so the batching is cut for the most expensive one and tasks of a
    smaller ``d`` run shorter.
    """
    g = sweep.grid
    d, S, k = max(sweep.d_values) if d is None else d, len(g.weights), sweep.top_k
    n_snr = len(g.snr)
    rank2 = sum(1 for s in g.snr if s > 0) >= 6
    V = np.array([sizes(d, x, 1.0)[0] for x in g.delta], float)
    N = np.array([sizes(d, 1.0, x)[1] for x in g.gamma], float)
    T = np.array(g.T, float)
    n = np.minimum(d, N)
    solve = np.where(n >= LANCZOS_MIN_N, _EIGH * n * n * k, _SUBSET * n**3)     # one direct top-k: Lanczos, or LAPACK
    eig = (_PER_SCHEME_RANK2 + _EIGH * n**3 + _BISECT * n_snr * n) if rank2 else n_snr * (_PER_SCHEME_SNR + solve)
    attention = sum(1 for w in g.weights if w.data_dependent)
    fixed = S - attention                   # the schemes of fixed weights: one Gram, then the SNR axis
    by_gamma = fixed * (_GRAM * N * d * n + eig)
    by_T = fixed * _POOL * T
    if attention:       # scores of the gathered rows once, then per SNR value a softmax, pooling and a direct solve
        by_T = by_T + attention * (_SCORES * T * T * d + n_snr * _POOL * T)
        # measured on paper-attention (n = 400): its per-value solves cost a full n^3, not LAPACK's top-k
        full = np.where(n >= LANCZOS_MIN_N, _EIGH * n * n * k, _EIGH * n**3)
        by_gamma = by_gamma + attention * n_snr * (_DIRECT * N * d * n + _PER_SCHEME_SNR + full)
    work = PointWork(d=d, N=N, n=n, schemes=S, n_snr=n_snr, eigh=lambda m: _EIGH * m**3,
                     gram=lambda rows, cols, m: _GRAM * rows * cols * m,
                     direct=lambda rows, cols, m: _DIRECT * rows * cols * m)
    for r in present(sweep):
        if r.cost is not None:
            by_gamma = by_gamma + r.cost(work)
    return PointCost(_TABLE * d * V, by_gamma, N, by_T)


def point_seconds(sweep: Sweep, d: int | None = None) -> np.ndarray:
    """Predicted seconds of one replicate of each ``(delta, gamma, T)`` point, every scheme included.

    One value per point: :func:`point_cost` gives the maximum, mean and sum of a grid of any size.

    Returns
    -------
    ndarray, shape (n_delta, n_gamma, n_T)
    """
    return point_cost(sweep, d).array()


def null_sweep(sweep: Sweep) -> Sweep | None:
    """The sweep whose one replicate costs what one scheduled null replicate does, or None without any.

    A null replicate runs the schemes without a law at ``snr = 0`` only, without optional observables, over the
    ``T >= 2`` values (:attr:`rmtsweep.spec.Sweep.null_replicate_count`).
    """
    if not sweep.null_replicate_count:
        return None
    g = sweep.grid
    return sweep.model_copy(update={"observables": Observables(), "grid": g.model_copy(update={
        "snr": (0.0,), "T": tuple(t for t in g.T if t >= 2),
        "weights": tuple(g.weights[i] for i in sweep.null_schemes)})})


@dataclass(frozen=True)
class Blocking:
    """How the grid is cut into tasks: points per task along ``delta``, ``gamma``, ``T``, and replicates.

    One task is one chunk of every per-replicate variable of the store (every weights scheme). A sweep with
    scheduled null replicates has tasks of its own for them: ``null`` of them per task, over the same blocks of
    points (one chunk of ``null_eigenvalue`` each); 0 for a sweep without any.
    """

    delta: int
    gamma: int
    T: int
    replicate: int
    null: int = 0

    def chunking(self) -> tuple[int, ...]:
        """The store's chunks: :meth:`as_tuple`, then ``null`` when the sweep has scheduled null replicates."""
        return self.as_tuple() + ((self.null,) if self.null else ())

    @property
    def cells(self) -> int:
        """``(delta, gamma, T)`` points per task."""
        return self.delta * self.gamma * self.T

    def as_tuple(self) -> tuple[int, int, int, int]:
        """``(delta, gamma, T, replicate)``."""
        return self.delta, self.gamma, self.T, self.replicate


def task_target(threads: int = 0) -> float:
    """Seconds a task should take on a cluster of ``threads`` worker threads ): the settings
    ``rmtsweep.batching.target-task-seconds`` and ``driver-tasks-per-second`` now. The driver and the scheduler
    spend CPU on every task (``benchmarks/scale.py``), so a large cluster gets longer tasks, not a saturated driver."""
    return max(float(config.get("batching.target-task-seconds")),
               threads / float(config.get("batching.driver-tasks-per-second")))


def choose_blocking(sweep: Sweep, target: float | None = None) -> Blocking:
    """The batching of a new store: ``replicates_per_task`` and ``cells_per_task`` if given, else the cost model.

    Replicates are grouped first (while one point's replicates fit the target, and into at least
    ``rmtsweep.batching.progressive-blocks`` blocks where there are that many replicates), then points: along ``T``,
    then ``gamma``, then ``delta`` (whole axes where they fit), so that a task of average cost takes about
    ``target`` seconds (:func:`task_target`; default: that of no threads). The block count and the target are the
    settings ``rmtsweep.batching.*``. Scheduled null replicates are cut along ``null_replicate`` into tasks of the
    same blocks of points, each about ``target`` seconds (:attr:`Blocking.null`).
    """
    target = task_target() if target is None else target
    blocks = int(config.get("batching.progressive-blocks"))
    g = sweep.grid
    cost = point_cost(sweep)
    R = sweep.replicates
    reps = sweep.replicates_per_task or max(1, min(R, math.ceil(R / blocks),
                                                    math.floor(target / cost.max())))
    reps = min(reps, R)
    cells = sweep.cells_per_task or max(1, math.floor(target / (reps * cost.mean())))
    sizes = []
    for n in (len(g.T), len(g.gamma), len(g.delta)):
        take = max(1, min(n, cells))
        sizes.append(take)
        cells = max(1, cells // take)
    cT, cg, cd = sizes
    return Blocking(delta=cd, gamma=cg, T=cT, replicate=reps, null=_null_block(sweep, cd * cg * cT, target))


def _null_block(sweep: Sweep, cells: int, target: float) -> int:
    """Null replicates per null task: a block of ``cells`` points of average null cost runs about ``target``."""
    null = null_sweep(sweep)
    if null is None:
        return 0
    m = sweep.null_replicate_count
    per_replicate = cells * point_cost(null).mean()
    return max(1, min(m, math.floor(target / per_replicate))) if per_replicate > 0 else m
