"""The sweep grid: points, tasks (one store chunk each) and the random stream of every replicate.

The words are those of docs/glossary.md. A *point* is one value of ``(delta, gamma, T)`` — and of ``d``
when ``d`` is a grid axis; every weights scheme of a point shares its draws (paired comparisons), and one
draw serves every SNR value (common random numbers), so a *replicate* of a point gives a value to each
of its *cells* (a point with one scheme and one SNR). A *task* is a block of points and replicates — one
chunk of every per-replicate variable of the store, cut by :func:`rmtsweep.run.cost.choose_blocking` so that it
runs about a second. A task holds one ``d`` value (blocks along ``d`` have size 1); its
:class:`Context` carries that ``d``, which sets the model's ``V``, ``N`` and table.

Seeding: replicate ``r`` of a point draws from
``SeedSequence(seed, spawn_key=(key(delta), key(gamma), T, r))`` where ``key(x)`` is the IEEE-754
bit pattern of ``x``, when the sweep has a top-level ``d``: the key is the one of every earlier
version, so every existing store and published number is reproduced bit for bit. When ``d`` is a
grid axis (``grid.d``, even with a single value) the key is ``(int(d), key(delta), key(gamma), T, r)``,
so that each ``d`` gets its own independent streams (without ``d`` in the key, two values of ``d``
would start from the same random numbers). Keys come from the coordinate *values*, not their
positions, so results do not depend on the batching, worker count, task order, which run computed a
point, or values added to an axis later. The weights scheme is deliberately not part of the key.

A scheduled null replicate ``n`` of a point (``snr = 0`` only, for the cells without a law at the
store's size) draws from the same key with :data:`NULL_STREAM` appended, ``(..., T, n, NULL_STREAM)``:
one word longer than every regular replicate's key, so never one of their streams. Null replicates have
tasks of their own (:attr:`Task.null`): a block of points and of null replicates, one chunk of
``null_eigenvalue``, marked done in ``null_done``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from ..errors import ArgumentError
from ..model import Attention, CellModel, Correlation, Scheme
from ..results import present
from ..spec import Sweep, sizes
from ..types import AttentionScale, Centering
from .cost import Blocking

__all__ = ["NULL_STREAM", "Context", "Order", "Task", "grid_shape", "n_tasks", "replicate_rng", "share_done",
           "share_tasks", "spawn_key", "tasks_left", "task_memory_bytes", "tasks", "value_key"]

NULL_STREAM = 0x6E756C6C     # "null" in ASCII: the last word of a scheduled null replicate's spawn key


def value_key(x: float) -> int:
    """A stable non-negative integer for a coordinate value (its float64 bit pattern)."""
    return int(np.float64(x).view(np.uint64))


def spawn_key(delta: float, gamma: float, T: int, replicate: int, d: int | None = None) -> tuple[int, ...]:
    """The ``SeedSequence`` spawn key of one replicate of one point (module docstring).

    ``d=None`` (a sweep with a top-level ``d``): ``(key(delta), key(gamma), T, replicate)``, as in every
    earlier version; with ``d`` (a sweep whose ``d`` is a grid axis): ``(d, key(delta), ...)``.
    """
    key = (value_key(delta), value_key(gamma), int(T), int(replicate))
    return key if d is None else (int(d),) + key


def replicate_rng(seed: int, delta: float, gamma: float, T: int, replicate: int,
                  d: int | None = None, null: bool = False) -> np.random.Generator:
    """The generator of one replicate of one point (independent of everything but these values).

    Pass ``d`` only for a sweep whose ``d`` is a grid axis (:func:`spawn_key`); ``null`` for the scheduled
    null replicate numbered ``replicate`` (module docstring).
    """
    key = spawn_key(delta, gamma, T, replicate, d) + ((NULL_STREAM,) if null else ())
    ss = np.random.SeedSequence(seed, spawn_key=key)
    return np.random.Generator(np.random.PCG64(ss))


@dataclass(frozen=True)
class Context:
    """What every task of one ``d`` shares: ``d``, seed, model choices, the SNR and weights axes.

    Built once per run and ``d`` value from the sweep (:meth:`from_sweep`); it does not grow with the
    grid's ``delta``, ``gamma`` or ``T`` axes. ``d_axis`` says whether ``d`` is a grid axis, and so
    part of the seeds' key (module docstring). ``null_replicates`` are scheduled per point for the schemes at
    ``null_schemes`` over ``T >= 2`` (:attr:`rmtsweep.spec.Sweep.null_replicate_count`).
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
    d_axis: bool = False
    results: tuple[tuple[str, tuple[int, ...]], ...] = ()
    """The measured variables a task fills, and their trailing shapes (:data:`rmtsweep.results.RESULTS`)."""
    null_replicates: int = 0
    null_schemes: tuple[int, ...] = ()

    @classmethod
    def from_sweep(cls, sweep: Sweep, d: int | None = None) -> Context:
        """The sweep's shared part, for the tasks of dimension ``d`` (default: the top-level ``d``)."""
        if d is None:
            if sweep.d_axis:
                raise ArgumentError(f"sweep {sweep.name!r} sweeps d (grid.d = {list(sweep.d_values)}); pass d")
            assert sweep.d is not None                       # a sweep without a d axis has a top-level d
            d = sweep.d
        obs = sweep.observables
        return cls(d=int(d), d_axis=sweep.d_axis, seed=sweep.seed, correlation=sweep.correlation,
                   centering=sweep.table_centering, top_k=sweep.top_k, snr=tuple(sweep.grid.snr),
                   schemes=tuple(sweep.grid.weights),
                   spectrum_edges=tuple(obs.spectrum.edges()) if obs.spectrum else None,
                   ridge_penalty=obs.ridge.penalty if obs.ridge else None,
                   test_samples=obs.ridge.test_samples if obs.ridge else 0,
                   results=tuple((r.name, r.trailing_shape(sweep)) for r in present(sweep) if r.measured),
                   null_replicates=sweep.null_replicate_count, null_schemes=sweep.null_schemes)

    def sizes(self, delta: float, gamma: float) -> tuple[int, int]:
        """``V`` and ``N`` of a point (:func:`rmtsweep.spec.sizes`)."""
        return sizes(self.d, delta, gamma)

    def models(self, delta: float, gamma: float, T: int, schemes: list[int]) -> list[CellModel]:
        """One :class:`~rmtsweep.model.CellModel` per scheme position in ``schemes``."""
        V, N = self.sizes(delta, gamma)
        R = self.correlation.matrix(T)
        edges = np.asarray(self.spectrum_edges) if self.spectrum_edges is not None else None
        return [CellModel(d=self.d, V=V, N=N, T=T, w=self.schemes[w].weights(R), correlation=self.correlation,
                          centering=self.centering, top_k=self.top_k, spectrum_edges=edges,
                          ridge_penalty=self.ridge_penalty, test_samples=self.test_samples,
                          attention=_attention(self.schemes[w]))
                for w in schemes]

    @property
    def data_dependent(self) -> bool:
        """Whether some scheme computes its weights from the embeddings (finite-d attention)."""
        return any(s.data_dependent for s in self.schemes)


def _attention(scheme: Scheme) -> tuple[float, AttentionScale] | None:
    return (float(scheme.tau), scheme.scale) if isinstance(scheme, Attention) else None


@dataclass(frozen=True)
class Task:
    """One unit of work: a block of points and replicates, every scheme, every SNR (one store chunk).

    Attributes
    ----------
    index
        Position of the chunk on the chunk grid, ``(delta, gamma, T, replicate)`` (``d_pos`` aside).
    start, stop
        Its region on the store's ``(delta, gamma, T, replicate)`` axes.
    delta, gamma, T
        The coordinate values of its points.
    todo
        Which of its ``(delta, gamma, T, weights, replicate)`` entries to compute (``None``: all of
        them); a chunk of a store that was extended holds some done already.
    context
        What every task of its ``d`` shares, ``d`` included (:attr:`d`).
    d_pos
        Its position on the store's ``d`` axis, or ``None`` for a store with a top-level ``d``.

    null
        Whether it computes scheduled null replicates instead: then ``index``, ``start`` and ``stop`` count
        along ``null_replicate`` in place of ``replicate``, its chunk is one of ``null_eigenvalue`` and
        ``null_done``, and ``todo`` is taken from ``null_done``.
    """

    index: tuple[int, int, int, int]
    start: tuple[int, int, int, int]
    stop: tuple[int, int, int, int]
    delta: tuple[float, ...]
    gamma: tuple[float, ...]
    T: tuple[int, ...]
    todo: np.ndarray | None
    context: Context
    d_pos: int | None = None
    null: bool = False

    @property
    def d(self) -> int:
        """The task's embedding dimension."""
        return self.context.d

    @property
    def shape(self) -> tuple[int, int, int, int, int]:
        """``(delta, gamma, T, weights, replicate)`` sizes of its chunk."""
        n = [b - a for a, b in zip(self.start, self.stop, strict=True)]
        return n[0], n[1], n[2], len(self.context.schemes), n[3]

    @property
    def region(self) -> tuple[int | slice, ...]:
        """Its chunk of a ``([d,] delta, gamma, T, weights, replicate, ...)`` array.

        With a ``d`` axis the first entry is the integer ``d_pos``: it selects the task's ``d`` and
        drops that axis, so the chunk has the task's :attr:`shape` either way.
        """
        s = [slice(a, b) for a, b in zip(self.start, self.stop, strict=True)]
        lead = () if self.d_pos is None else (self.d_pos,)
        return lead + (s[0], s[1], s[2], slice(None), s[3])

    @property
    def snr(self) -> np.ndarray:
        """The SNR values, all computed by this task."""
        return np.asarray(self.context.snr, dtype=float)

    @property
    def n_points(self) -> int:
        """``(delta, gamma, T)`` points in the task."""
        return len(self.delta) * len(self.gamma) * len(self.T)

    @property
    def n_replicates(self) -> int:
        """The replicates it computes: one per point, weights scheme and replicate number (its ``done`` flags);
        for a null task, one per point over ``T >= 2``, scheme without a law and null replicate number."""
        if self.null:
            need = self.null_needed()
            return int(np.count_nonzero(need if self.todo is None else need & self.todo))
        return int(np.prod(self.shape)) if self.todo is None else int(np.count_nonzero(self.todo))

    def null_needed(self) -> np.ndarray:
        """Which entries of its chunk's shape a null task computes: the schemes without a law over ``T >= 2``."""
        c = self.context
        many_T = np.asarray(self.T) >= 2
        schemes = np.isin(np.arange(len(c.schemes)), c.null_schemes)
        return np.broadcast_to((many_T[:, None] & schemes[None, :])[None, None, :, :, None], self.shape)

    @property
    def key(self) -> str:
        """A short identity for keys and the journal, e.g. ``0-1-0-2`` (``d_pos`` first with a ``d`` axis);
        ``null-0-1-0-2`` for a null task."""
        lead = () if self.d_pos is None else (self.d_pos,)
        return ("null-" if self.null else "") + "-".join(map(str, lead + self.index))

    @property
    def name(self) -> str:
        """A readable identity naming the points and replicates."""
        def span(values) -> str:
            return f"{values[0]:g}" if len(values) == 1 else f"{values[0]:g}..{values[-1]:g}"
        r0, r1 = self.start[3], self.stop[3]
        lead = "" if self.d_pos is None else f"d={self.d} "
        return (f"{lead}delta={span(self.delta)} gamma={span(self.gamma)} T={span(self.T)} "
                f"{'null replicates' if self.null else 'replicates'} {r0}-{r1 - 1}")

    def points(self) -> Iterator[tuple[tuple[int, int, int], tuple[float, float, int]]]:
        """``(position in the block, (delta, gamma, T))`` of every point, in block order."""
        for pos in itertools.product(range(len(self.delta)), range(len(self.gamma)), range(len(self.T))):
            yield pos, (self.delta[pos[0]], self.gamma[pos[1]], self.T[pos[2]])

    def rng(self, point: tuple[float, float, int], r: int) -> np.random.Generator:
        """The generator of replicate ``start[3] + r`` of ``point``."""
        delta, gamma, T = point
        c = self.context
        return replicate_rng(c.seed, delta, gamma, T, self.start[3] + r, d=c.d if c.d_axis else None)

    def null_rng(self, point: tuple[float, float, int], n: int) -> np.random.Generator:
        """The generator of scheduled null replicate ``n`` of ``point`` (module docstring)."""
        delta, gamma, T = point
        c = self.context
        return replicate_rng(c.seed, delta, gamma, T, n, d=c.d if c.d_axis else None, null=True)


def grid_shape(sweep: Sweep) -> tuple[int, int, int, int]:
    """Sizes of the ``(delta, gamma, T, replicate)`` axes (of each ``d`` value)."""
    g = sweep.grid
    return len(g.delta), len(g.gamma), len(g.T), sweep.replicates


def _null_shape(sweep: Sweep) -> tuple[int, int, int, int]:
    """Sizes of the ``(delta, gamma, T, null_replicate)`` axes of the null tasks (of each ``d`` value)."""
    return (*grid_shape(sweep)[:3], sweep.null_replicate_count)


def _null_blocking(sweep: Sweep, blocking: Blocking) -> tuple[int, int, int, int]:
    """The null tasks' size along ``(delta, gamma, T, null_replicate)``: all of a point's in one without ``null``."""
    return (*blocking.as_tuple()[:3], blocking.null or sweep.null_replicate_count)


def _chunk_counts(sweep: Sweep, blocking: Blocking, null: bool = False) -> tuple[int, ...]:
    """Tasks (or null tasks) along ``(d, delta, gamma, T, replicate)``: the chunk grid, one ``d`` value per task."""
    shape, block = (_null_shape(sweep), _null_blocking(sweep, blocking)) if null else \
        (grid_shape(sweep), blocking.as_tuple())
    return (len(sweep.d_values), *(-(-n // c) for n, c in zip(shape, block, strict=True)))   # counted, not listed


def _null_T_blocks(sweep: Sweep, blocking: Blocking) -> np.ndarray:
    """Whether each block along ``T`` holds a value ``T >= 2`` (only those have null tasks)."""
    many_T = np.asarray(sweep.grid.T) >= 2
    return np.logical_or.reduceat(many_T, np.arange(0, len(many_T), blocking.T))


def n_tasks(sweep: Sweep, blocking: Blocking) -> int:
    """Total number of tasks (chunks) of the sweep under ``blocking`` (one ``d`` value per task), null ones included."""
    out = int(np.prod(_chunk_counts(sweep, blocking)))
    if sweep.null_replicate_count:
        d, n_delta, n_gamma, _, n_null = _chunk_counts(sweep, blocking, null=True)
        out += d * n_delta * n_gamma * int(_null_T_blocks(sweep, blocking).sum()) * n_null
    return out


Order = Literal["progressive", "grid"]
"""The order tasks are made in: ``"progressive"`` gives every point a first block of its replicates before
any point gets a second; ``"grid"`` completes each point's replicates in chunk order (``d`` outermost)."""


def tasks(sweep: Sweep, blocking: Blocking, done: np.ndarray | None = None,
          order: Order = "progressive", null_done: np.ndarray | None = None) -> Iterator[Task]:
    """The tasks still to do, lazily, in ``order``.

    Results do not depend on the order (each replicate has its own random stream), only what a partly
    done store holds: in progressive order a sweep stopped early covers the whole grid at fewer replicates.
    The null tasks of a block of points follow its regular ones: in progressive order the ``i``-th null block of
    every point comes after the ``i``-th regular one.

    Parameters
    ----------
    blocking
        The store's chunking along ``(delta, gamma, T, replicate)`` and ``null_replicate``; along ``d`` (if it is
        an axis) every task holds one value.
    done
        Optional ``done`` mask of the store, shape ``([d,] delta, gamma, T, weights, replicate)``: a
        chunk with all done is skipped; one with some done computes the rest (``Task.todo``).
    order
        ``"progressive"`` (replicate blocks outermost) or ``"grid"`` (chunk order, ``d`` outermost).
    null_done
        The store's ``null_done`` mask, as ``done`` for the null tasks (``None``: every null task is to do).
    """
    if order not in ("progressive", "grid"):
        raise ValueError(f"order must be 'progressive' or 'grid', got {order!r}")
    contexts = [Context.from_sweep(sweep, d) for d in sweep.d_values]
    counts = _chunk_counts(sweep, blocking)
    n_null = _chunk_counts(sweep, blocking, null=True)[4] if sweep.null_replicate_count else 0
    with_null = _null_T_blocks(sweep, blocking) if n_null else np.zeros(counts[3], bool)
    def points() -> Iterator[tuple[int, ...]]:
        return itertools.product(*(range(n) for n in counts[1:4]))
    if order == "grid":
        keys = ((pos, point, null, r) for pos in range(counts[0]) for point in points()
                for null, r in itertools.chain(((False, r) for r in range(counts[4])),
                                               ((True, r) for r in range(n_null) if with_null[point[2]])))
    else:
        keys = ((pos, point, null, r) for r in range(max(counts[4], n_null)) for null in (False, True)
                for pos in range(counts[0]) for point in points()
                if ((r < n_null and with_null[point[2]]) if null else r < counts[4]))
    for pos, point, null, r in keys:
        mask = null_done if null else done
        mask = mask if mask is None or not sweep.d_axis else mask[pos]
        task = _task(sweep, contexts[pos], blocking, (*point, r), mask, pos if sweep.d_axis else None, null)
        if task is not None:
            yield task


def _four(values: Iterable[int]) -> tuple[int, int, int, int]:
    """The four ``(delta, gamma, T, replicate)`` entries of ``values`` as a tuple."""
    a, b, c, d = values
    return a, b, c, d


def _task(sweep: Sweep, context: Context, blocking: Blocking, index: tuple[int, ...], done: np.ndarray | None,
          d_pos: int | None, null: bool = False) -> Task | None:
    """The task (or null task) at chunk ``index`` of one ``d`` value, or None if ``done`` (its mask) says it is
    done; a null task's entries outside :meth:`Task.null_needed` count as done."""
    g = sweep.grid
    shape, block = (_null_shape(sweep), _null_blocking(sweep, blocking)) if null else \
        (grid_shape(sweep), blocking.as_tuple())
    start = _four(i * c for i, c in zip(index, block, strict=True))
    stop = _four(min(a + c, n) for a, c, n in zip(start, block, shape, strict=True))
    task = Task(index=_four(index), start=start, stop=stop, delta=tuple(g.delta[start[0]:stop[0]]),
                gamma=tuple(g.gamma[start[1]:stop[1]]), T=tuple(g.T[start[2]:stop[2]]), todo=None,
                context=context, d_pos=d_pos, null=null)
    if done is None:
        return task
    flags = done[start[0]:stop[0], start[1]:stop[1], start[2]:stop[2], :, start[3]:stop[3]]
    finished = flags | ~task.null_needed() if null else flags
    if finished.all():
        return None
    return task if not flags.any() else dataclasses.replace(task, todo=~flags)


def _left(sweep: Sweep, blocking: Blocking, done: np.ndarray | None, null: bool) -> np.ndarray:
    """Whether each task (or null task) is left, on the chunk grid of :func:`_chunk_counts`."""
    counts = _chunk_counts(sweep, blocking, null)
    if null:
        with_null = _null_T_blocks(sweep, blocking)[None, None, None, :, None]
        if done is None:
            return np.broadcast_to(with_null, counts).copy()
        g, schemes = sweep.grid, sweep.null_schemes
        need = (np.asarray(g.T) >= 2)[:, None] & np.isin(np.arange(len(g.weights)), schemes)[None, :]
        done = np.asarray(done, bool) | ~need[:, :, None]
    elif done is None:
        return np.ones(counts, bool)
    from ..store.io import chunk_done           # here, not at the top: a worker imports this module
    b = _null_blocking(sweep, blocking) if null else blocking.as_tuple()
    chunks = (*(1,) * (np.ndim(done) - 5), b[0], b[1], b[2], np.shape(done)[-2], b[3])   # every scheme
    return ~chunk_done(np.asarray(done, bool), chunks).reshape(counts)


def tasks_left(sweep: Sweep, blocking: Blocking, done: np.ndarray | None,
               share: tuple[int, int] | None = None, null_done: np.ndarray | None = None) -> int:
    """How many tasks :func:`tasks` (or :func:`share_tasks` of ``share``) would yield, counted from ``done`` and
    ``null_done`` at once.

    So that a run need not hold its tasks in a list to know how many there are: the driver makes them one
    by one as the window takes them (50 MiB and 7 s for 10^5 tasks in a list).
    """
    out = 0
    for null, mask in ((False, done), (True, null_done)):
        if null and not sweep.null_replicate_count:
            continue
        left = _left(sweep, blocking, mask, null)
        if share is not None:
            left &= (_ordinal_base(sweep, blocking, null) + np.arange(left.size).reshape(left.shape)) % share[1] \
                == share[0]
        out += int(left.sum())
    return out


def _ordinal_base(sweep: Sweep, blocking: Blocking, null: bool) -> int:
    """The ordinal of a kind's first task: null tasks are numbered after every regular one."""
    return int(np.prod(_chunk_counts(sweep, blocking))) if null else 0


def share_tasks(sweep: Sweep, blocking: Blocking, done: np.ndarray | None, share: tuple[int, int],
                order: Order = "progressive", null_done: np.ndarray | None = None) -> Iterator[Task]:
    """The tasks still to do of ``share = (i, n)``, element ``i`` of an array of ``n``: those whose ordinal in
    chunk order (``d`` outermost, over every task, done or not; null tasks after the regular ones) is ``i``
    modulo ``n``.

    The shares of one ``n`` partition the tasks, whatever is done already, so a resubmitted array computes
    exactly what is missing; consecutive tasks (neighbouring points, with similar costs) go to different
    elements. ``order`` is the order they are made in (:func:`tasks`), not which element has them.
    """
    i, n = share
    for task in tasks(sweep, blocking, done, order, null_done):
        ordinal = np.ravel_multi_index((task.d_pos or 0, *task.index), _chunk_counts(sweep, blocking, task.null))
        if (_ordinal_base(sweep, blocking, task.null) + int(ordinal)) % n == i:
            yield task


def share_done(sweep: Sweep, blocking: Blocking, share: tuple[int, int], shape: tuple[int, ...],
               read: Callable[[tuple], np.ndarray], null: bool = False) -> np.ndarray:
    """The ``done`` mask (``null_done`` with ``null``) as element ``share`` needs it: the chunks of its own tasks
    read (``read(region)``, one chunk each), every other chunk set, so :func:`share_tasks` and :func:`tasks_left`
    give what they give on the whole mask. An element of an array of N reads 1/N of ``done``, not all of it
    (1,000 elements each reading the 1,000 chunks of a store was a million reads)."""
    done = np.ones(shape, bool)
    for task in share_tasks(sweep, blocking, None, share):
        if task.null == null:
            done[task.region] = read(task.region)
    return done


def task_memory_bytes(sweep: Sweep, blocking: Blocking | None = None) -> int:
    """Upper estimate of one task's peak memory: its largest point's working set, plus its results.

    Tasks compute their points one after the other, so the working set (table, pooled matrix, Gram,
    tokens) is that of the largest point: the largest ``d``, the smallest ``delta`` and ``gamma``
    (largest ``V``, ``N``) and the largest ``T``. The results of every point, replicate, scheme and
    SNR value of the task (the chunk of each per-replicate variable) are held until written, twice
    over while they are encoded; ``blocking`` defaults to that of a new store (:func:`choose_blocking`).
    """
    from ..store.layout import data_variables
    from .cost import choose_blocking

    d, g = max(sweep.d_values), sweep.grid
    V, N = sizes(d, min(g.delta), min(g.gamma))
    n = min(d, N)
    T = max(g.T)
    # R and what is factored from it (the sign law's sin(pi R / 2) and its eigenvectors, the weights' solves)
    working = 8 * (d * V + 2 * N * d + 3 * n * n + 6 * N * T + 3 * T * T)
    blocking = blocking or choose_blocking(sweep)
    results = sum(math.prod(v.chunks) * np.dtype(v.dtype).itemsize
                  for v in data_variables(sweep, blocking.chunking()))
    return working + 2 * results
