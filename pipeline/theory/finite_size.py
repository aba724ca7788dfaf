"""The theory at the sweep's own ``d`` where the limit law is exact but finite size is not small.

Where the weights sit on one position (``theory_law = 1``: every scheme at ``T = 1``) the token
counts do not average out at finite size: the top of the spectrum and the signal outlier's alignment
depend on how often the most repeated tokens were drawn. :func:`rmtsweep.theory.token_counts.realised_count_spikes`
averages the deterministic equivalent over seeded count draws at the sweep's ``V``, ``N`` (docs/theory.md
§6.1). This module puts it on the grid once, when the store's theory is made (``finite_size_*``, read by
the comparison): a seeded Monte Carlo of about 0.5 s per ``(d, delta, gamma)`` point.

Elsewhere (fixed weights over ``T >= 2`` positions) the bulk is the cubic's in the limit, but at the store's
size few pooled tokens leave the null top eigenvalue above its Tracy-Widom law and move the signal's outlier.
:func:`pooled_arrays` keeps, per such cell and from the same seeded draws of the realised pooling matrix, the
null for the detection threshold (:func:`rmtsweep.theory.null_law.pooled_null`) and ``lambda_1`` and the top
alignment (:func:`rmtsweep.theory.pooled_spikes.pooled_spikes`), in the same ``finite_size_*`` variables as
the ``T = 1`` cells'; ``finite_size_law`` says which construction each cell got.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import xarray as xr

from ..dims import D
from ..spec import Sweep
from ..shipped import default
from .null_law import CANDIDATES, POOLED_DRAWS, count_null
from .pooled_spikes import LANCZOS_STEPS, PooledSpikes, pooled_spikes, pooled_stream, spike_record
from .pooling import DrawBatch, DrawCache, batch_records, cached_records, draw_batches
from .token_counts import realised_count_spikes

Mapper = Callable[[Callable, list], list]
"""How independent computations are done: ``mapper(fn, items)`` is ``[fn(item) for item in items]``, perhaps on
other machines."""

__all__ = ["COUNTS", "DRAWS", "NONE", "POOLING", "Mapper", "finite_size_arrays",
           "finite_size_law", "pooled_arrays"]

DRAWS = 64     # count draws per (d, delta, gamma): Monte Carlo s.e. ~0.02 on the alignment near threshold
ABS = "same units as the eigenvalues of S"
POOLED_CELL = 1.2e8    # what a cell costs at any size (~6 ms), in the same units: at most ~1,700 cells
POOLED_TASK = 2e9        # the least work, in the same units, of a task of a pair's draws (~0.2 s): a pair whose draws
                         # cost more is cut into batches of about this much (:func:`pooled_arrays`)
# Seconds of a (point, weights) pair's draws on one core (one BLAS thread), fitted by non-negative least squares on
# pairs at d = 100-1500 (benchmarks/README.md): the float32 eigenvalues per min(V, N)^3 of a draw, the pooling and
# quadrature per N T of a draw, and a pair's fixed cost. They estimate time; the budget counts work units.
POOLED_EIGH_SECONDS = 3.5e-11
POOLED_POOL_SECONDS = 3.2e-7
POOLED_PAIR_SECONDS = 0.15
POOLED_SAY = 3.0         # estimated seconds past which the nulls' computation is announced (``notes``)
NONE, COUNTS, POOLING = 0, 1, 2   # finite_size_law: no finite-size prediction, realised token counts, realised pooling


def _long_name(what: str) -> str:
    return (f"finite-size prediction of the {what} at the store's d: over realised token counts where theory_law = 1 "
            f"({DRAWS} seeded draws), over the realised pooling matrix at fixed weights over T >= 2 positions "
            f"({POOLED_DRAWS} seeded draws); see finite_size_law")


def finite_size_arrays(sweep: Sweep, law: xr.DataArray, kappa: xr.DataArray,
                       budget: int | None = None) -> dict[str, xr.DataArray]:
    """``finite_size_lambda1`` / ``_overlap`` and their Monte Carlo errors, NaN where ``law != 1``; and the
    null's candidates ``finite_size_null_location`` / ``_scale`` (:func:`rmtsweep.theory.null_law.count_null`,
    dims ``([d,] delta, gamma, count_draw, null_candidate)``, units of kappa) for the detection threshold.

    Dims ``([d,] delta, gamma, snr, T, weights)``: ``d`` only where it is a grid axis of the sweep (else the arrays
    are at its one ``d``). Empty when no cell has ``law == 1``, or beyond ``budget`` ``(d, delta, gamma)`` points
    (default: the shipped ``rmtsweep.theory.finite-size-budget``, each about 0.5 s). ``rho = alpha snr / kappa`` is
    ``snr`` at these cells (``alpha = kappa = w_t^2``), so one prediction serves every scheme of a point. NaN at a
    point too small for it (a tiny ``V``, ``N`` where some draw's counts leave the law no main gap).

    Parameters
    ----------
    sweep
        The validated sweep (its ``d`` values, grid and ``V = d / delta``, ``N = d / gamma``).
    law
        ``theory_law`` (T, weights) of :func:`rmtsweep.theory.cell_law.one_token_spikes`.
    kappa
        ``theory_kappa`` (T, weights): ``lambda1`` is in the absolute units of ``S``.
    """
    exact = law == 1
    if not bool(exact.any()):
        return {}
    g = sweep.grid
    d_values = np.asarray(sweep.d_values, np.int64)
    delta, gamma, snr = (np.asarray(v, float) for v in (g.delta, g.gamma, g.snr))
    if d_values.size * delta.size * gamma.size > (default("theory.finite-size-budget") if budget is None else budget):
        return {}
    shape = (d_values.size, delta.size, gamma.size, snr.size)
    res = {k: np.empty(shape) for k in ("lambda1", "lambda1_se", "overlap", "overlap_se")}
    null = {k: np.full((*shape[:3], DRAWS, 1 + CANDIDATES), np.nan) for k in ("location", "scale")}
    for i, dd in enumerate(d_values):
        for j, dl in enumerate(delta):
            for k, gm in enumerate(gamma):
                try:
                    fs = realised_count_spikes(snr, dl, gm, int(dd), draws=DRAWS)
                    cn = count_null(dl, gm, int(dd), draws=DRAWS)
                except ValueError:                # a tiny V, N: some draw's counts leave no main gap
                    for name in res:
                        res[name][i, j, k] = np.nan
                    continue
                for name in res:
                    res[name][i, j, k] = getattr(fs, name)
                null["location"][i, j, k], null["scale"][i, j, k] = cn.location, cn.scale
    dims = (D, "delta", "gamma", "snr")
    coords = {D: d_values, "delta": delta, "gamma": gamma, "snr": snr}
    out = {}
    for name, what in (("lambda1", "lambda_1"), ("overlap", "top alignment |u_hat_1^T u|^2")):
        scale = kappa if name == "lambda1" else 1.0
        for suffix in ("", "_se"):
            arr = xr.DataArray(res[name + suffix], dims=dims, coords=coords)
            if not sweep.d_axis:
                arr = arr.isel({D: 0}, drop=True)
            arr = (arr * scale).where(exact)
            long = _long_name(what) if not suffix else f"Monte Carlo standard error of finite_size_{name}"
            units = ABS if name == "lambda1" else "1"
            out[f"finite_size_{name}{suffix}"] = arr.assign_attrs(long_name=long, units=units)
    for name, what in (("location", "location"),
                       ("scale", "scale (Tracy-Widom for the edge, Gaussian sd for a spike)")):
        arr = xr.DataArray(null[name], dims=(*dims[:3], "count_draw", "null_candidate"),
                           coords={k: coords[k] for k in dims[:3]})
        if not sweep.d_axis:
            arr = arr.isel({D: 0}, drop=True)
        out[f"finite_size_null_{name}"] = arr.assign_attrs(
            long_name=f"{what} of the null top-eigenvalue candidates of S/kappa over realised token counts "
                      f"({DRAWS} seeded draws; candidate 0 the bulk edge, then spikes; NaN: absent)", units="1")
    return out


def pooled_arrays(sweep: Sweep, law: xr.DataArray, notes: Callable[[str], None] | None = None,
                  budget: float | None = None, mapper: Mapper | None = None,
                  cache: DrawCache | None = None) -> dict[str, xr.DataArray]:
    """At cells of fixed weights over ``T >= 2`` positions: the null's candidates and the finite-size spikes.

    ``pooled_null_location`` / ``_scale``, dims ``([d,] delta, gamma, T, weights, pool_draw, null_candidate)``
    (units of kappa; candidate 0 the bulk edge with its Tracy-Widom scale, then spikes, NaN where absent), and
    ``finite_size_lambda1`` / ``_overlap`` with their standard errors, dims ``([d,] delta, gamma, snr, T,
    weights)``, both from the same seeded draws of the realised pooling matrix
    (:func:`rmtsweep.theory.pooled_spikes.pooled_spikes`). NaN at the cells with ``theory_law = 1`` (they have
    :func:`finite_size_arrays`), with weights computed from the data (finite-d attention: ``D`` is not
    independent of the table) or ``T = 1``. Empty when no cell qualifies or when the work would exceed
    ``budget`` (default: the shipped ``rmtsweep.theory.pooled-budget``; the detection then uses the cubic's
    Tracy-Widom threshold there, and the cells have no finite-size prediction). ``notes`` gets one line first when
    the work is expected to take more than :data:`POOLED_SAY` seconds. ``mapper`` computes the (point, weights)
    pairs, each independent and seeded by its own values, and first, where they cost more than :data:`POOLED_TASK`,
    a pair's draws in batches (default: one after another; a run hands them to its cluster's workers; the same
    arrays). ``cache`` keeps the draws' results between stores (:func:`rmtsweep.theory.pooling.cached_draws`; the
    same arrays).
    """
    g = sweep.grid
    d_values = np.asarray(sweep.d_values, np.int64)
    delta, gamma, snr = (np.asarray(v, float) for v in (g.delta, g.gamma, g.snr))
    cells = [(a, b, scheme.weights(sweep.correlation.matrix(int(T))))
             for a, T in enumerate(g.T) for b, scheme in enumerate(g.weights)
             if int(T) >= 2 and not scheme.data_dependent and int(law.values[a, b]) != 1]
    work = len(cells) * sum(POOLED_DRAWS * draw_work(V, N) + POOLED_CELL
                            for d in d_values for dl in delta for gm in gamma
                            for V, N in [(round(d / dl), round(d / gm))])
    if not cells or work > (default("theory.pooled-budget") if budget is None else budget):
        return {}
    seconds = sum(pair_seconds(round(d / dl), round(d / gm), int(g.T[a]))
                  for a, _, _ in cells for d in d_values for dl in delta for gm in gamma)
    if notes is not None and seconds > POOLED_SAY:
        n = len(cells) * d_values.size * delta.size * gamma.size
        notes(f"{sweep.name}: computing the detection nulls and finite-size spikes of {n} (point, weights scheme) "
              f"pairs over T >= 2 positions (about {seconds:.0f} s, when a store is made or extended)")
    cells_w = {(a, b): w for a, b, w in cells}
    point = (d_values.size, delta.size, gamma.size)
    null = {k: np.full((*point, len(g.T), len(g.weights), POOLED_DRAWS, 1 + CANDIDATES), np.nan)
            for k in ("location", "scale")}
    res = {k: np.full((*point, snr.size, len(g.T), len(g.weights)), np.nan)
           for k in ("lambda1", "lambda1_se", "overlap", "overlap_se")}
    where = [(i, j, k, a, b) for i in range(d_values.size) for j in range(delta.size) for k in range(gamma.size)
             for a, b, _ in cells]
    pairs = [(float(delta[j]), float(gamma[k]), int(d_values[i]), cells_w[(a, b)]) for i, j, k, a, b in where]
    found = _pooled_pairs(pairs, snr, sweep.correlation, mapper or (lambda fn, items: list(map(fn, items))), cache)
    for (i, j, k, a, b), ps in zip(where, found, strict=True):
        if ps is None:                        # a tiny V, N: no main gap in some draw
            continue
        null["location"][i, j, k, a, b], null["scale"][i, j, k, a, b] = ps.location, ps.scale
        kappa = float(cells_w[(a, b)] @ cells_w[(a, b)])
        for name in res:
            res[name][i, j, k, :, a, b] = getattr(ps, name) * (kappa if name.startswith("lambda1") else 1)
    coords = {D: d_values, "delta": delta, "gamma": gamma}
    cell = {"T": law["T"].values, "weights": law["weights"].values}
    out = {}
    for name, what in (("location", "location"),
                       ("scale", "scale (Tracy-Widom for the edge, Gaussian sd for a spike)")):
        arr = xr.DataArray(null[name], dims=(*coords, *cell, "pool_draw", "null_candidate"), coords={**coords, **cell})
        out[f"pooled_null_{name}"] = arr.assign_attrs(
            long_name=f"{what} of the null top-eigenvalue candidates of S/kappa over the realised pooling matrix "
                      f"({POOLED_DRAWS} seeded draws; fixed weights, T >= 2; candidate 0 the bulk edge; NaN: absent)",
            units="1")
    for name, what in (("lambda1", "lambda_1"), ("overlap", "top alignment |u_hat_1^T u|^2")):
        for suffix in ("", "_se"):
            arr = xr.DataArray(res[name + suffix], dims=(*coords, "snr", *cell), coords={**coords, "snr": snr, **cell})
            long = _long_name(what) if not suffix else f"Monte Carlo standard error of finite_size_{name}"
            out[f"finite_size_{name}{suffix}"] = arr.assign_attrs(long_name=long,
                                                                  units=ABS if name == "lambda1" else "1")
    if not sweep.d_axis:
        out = {k: v.isel({D: 0}, drop=True).assign_attrs(v.attrs) for k, v in out.items()}
    return out


def draw_work(V: int, N: int) -> int:
    """One draw's work in the units of the setting ``rmtsweep.theory.pooled-budget``: the Gram matrix's eigenvalues,
    the dense ``N x V`` matrices and the Lanczos steps, as first counted for a dense float64 null. The budget keeps
    these units, so that what a store holds does not move with a faster solver; :func:`pair_seconds` estimates time."""
    return min(V, N) ** 3 + (100 + 2 * LANCZOS_STEPS) * V * N


def pair_seconds(V: int, N: int, T: int) -> float:
    """Estimated seconds on one core of a (point, weights) pair's :data:`POOLED_DRAWS` draws at ``V``, ``N``, ``T``."""
    return (POOLED_DRAWS * (POOLED_EIGH_SECONDS * min(V, N) ** 3 + POOLED_POOL_SECONDS * N * T)
            + POOLED_PAIR_SECONDS)


def _pooled_pairs(pairs: list[tuple[float, float, int, np.ndarray]], snr: np.ndarray, correlation, mapper: Mapper,
                  cache: DrawCache | None) -> list[PooledSpikes | None]:
    """:func:`_pooled_pair` of each (delta, gamma, d, weights) pair, through ``mapper``.

    A pair whose draws together cost more than :data:`POOLED_TASK`, and that ``cache`` does not hold, has its draws
    mapped first, in batches of at least that (:func:`.pooling.draw_batches`: the same stream, cut where each batch
    starts), so that one pair's draws spread over the workers; then it reduces them. The others are one item each.
    """
    batches: dict[int, list[DrawBatch]] = {}
    for n, (delta, gamma, d, w) in enumerate(pairs):
        size = max(1, int(np.ceil(POOLED_TASK / draw_work(round(d / delta), round(d / gamma)))))
        if size >= POOLED_DRAWS:
            continue
        model, rng, key = pooled_stream(w, correlation, delta, gamma, d, draws=POOLED_DRAWS)
        if cached_records(key, cache, POOLED_DRAWS) is None:
            batches[n] = draw_batches(model, rng, POOLED_DRAWS, size)
    first = [batch for n in batches for batch in batches[n]] + \
            [(*pair, None) for n, pair in enumerate(pairs) if n not in batches]
    work = partial(_pooled_work, snr=snr, correlation=correlation, cache=cache)
    done = iter(mapper(work, first))
    records = {n: [next(done) for _ in batches[n]] for n in batches}
    found: dict[int, PooledSpikes | None] = {n: next(done) for n in range(len(pairs)) if n not in batches}
    whole = [n for n in batches if all(r is not None for r in records[n])]
    found.update(dict.fromkeys(batches))
    reduced = mapper(work, [(*pairs[n], [rec for r in records[n] for rec in r]) for n in whole])
    found.update(zip(whole, reduced, strict=True))
    return [found[n] for n in range(len(pairs))]


def _pooled_work(item: DrawBatch | tuple, snr: np.ndarray, correlation,
                 cache: DrawCache | None = None) -> PooledSpikes | list | None:
    """A batch's draws (:func:`.pooling.batch_records`), or a pair's :func:`_pooled_pair`."""
    if isinstance(item, DrawBatch):
        try:
            return batch_records(item, partial(spike_record, model=item.model))
        except ValueError:
            return None
    return _pooled_pair(item, snr, correlation, cache)


def _pooled_pair(pair: tuple[float, float, int, np.ndarray, list | None], snr: np.ndarray, correlation,
                 cache: DrawCache | None = None) -> PooledSpikes | None:
    """:func:`pooled_spikes` at one (delta, gamma, d) point and weights ``w`` (of its draws' records, where given);
    None where some draw has no main gap."""
    delta, gamma, d, w, records = pair
    try:
        return pooled_spikes(snr, w, correlation, delta, gamma, d, cache=cache, records=records)
    except ValueError:
        return None


def finite_size_law(ds: xr.Dataset) -> xr.DataArray | None:
    """``finite_size_law`` (T, weights): which finite-size construction a cell's ``finite_size_*`` come from.

    :data:`COUNTS` (realised token counts, ``theory_law = 1``), :data:`POOLING` (the realised pooling matrix,
    fixed weights over ``T >= 2``) or :data:`NONE`; None when the dataset has no ``finite_size_lambda1``.
    """
    if "finite_size_lambda1" not in ds:
        return None
    has = ds["finite_size_lambda1"].notnull().any([dim for dim in ds["finite_size_lambda1"].dims
                                                   if dim not in ("T", "weights")])
    flag = xr.where(has, xr.where(ds["theory_law"] == 1, COUNTS, POOLING), NONE).astype(np.int8)
    return flag.transpose("T", "weights").assign_attrs(
        long_name="finite-size construction of finite_size_*: 0 none, 1 realised token counts (theory_law = 1), "
                  "2 realised pooling matrix (fixed weights over T >= 2)",
        flag_values=[NONE, COUNTS, POOLING], flag_meanings="none realised_token_counts realised_pooling_matrix",
        units="1")
