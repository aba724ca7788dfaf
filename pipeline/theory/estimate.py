"""How long a new store's theory takes to compute, estimated from the grid alone (nothing is computed).

The parts are those of :func:`rmtsweep.theory.on_grid.theory_dataset`, each within its budget
(:class:`~rmtsweep.theory.grid.TheoryBudgets`): the limit formulas, the exact one-token law, the
finite-size laws over token counts and over the realised pooling matrix, and the finite-T spectrum law.
Their unit costs are the ones the budgets already use, fitted on a 2-core machine with one BLAS thread.
"""

from __future__ import annotations

import numpy as np

from ..spec import Sweep
from .cell_law import one_position
from .finite_size import POOLED_CELL, draw_work, pair_seconds
from .null_law import POOLED_DRAWS
from .grid import TheoryBudgets, weight_scalars
from .spectrum import HISTOGRAM_SECONDS, finite_t_cells, spectrum_cost

__all__ = ["FINITE_SIZE_POINT_SECONDS", "LIMIT_SECONDS", "ONE_TOKEN_POINT_SECONDS", "spectrum_seconds",
           "theory_parts", "theory_seconds"]

LIMIT_SECONDS = 0.3                # the limit formulas on any grid: closed forms and small root finds
ONE_TOKEN_POINT_SECONDS = 0.03     # the exact one-token law's edge and threshold, per (delta, gamma)
# the finite-size laws over token counts, per (d, delta, gamma): 0.23-0.27 CPU-s measured at d = 100-3200
# (finite-t-alignment's grid, one BLAS thread), whatever d is
FINITE_SIZE_POINT_SECONDS = 0.3


def theory_seconds(sweep: Sweep, budgets: TheoryBudgets | None = None) -> float:
    """Estimated seconds of the theory a new store of ``sweep`` computes, on one core."""
    return sum(theory_parts(sweep, budgets))


def theory_parts(sweep: Sweep, budgets: TheoryBudgets | None = None) -> tuple[float, float]:
    """:func:`theory_seconds` in two parts: what one task computes, and the pooled nulls' (point, weights)
    pairs, which a run spreads over its workers as tasks of their own."""
    budgets = budgets or TheoryBudgets()
    if sweep.table_centering != "class":
        return LIMIT_SECONDS + spectrum_seconds(sweep, budgets), 0.0
    g = sweep.grid
    d_values = np.asarray(sweep.d_values, float)
    pairs = len(g.delta) * len(g.gamma)
    single = set(one_position(sweep))
    seconds = LIMIT_SECONDS + spectrum_seconds(sweep, budgets)
    if single and pairs <= budgets.one_token_budget:
        seconds += ONE_TOKEN_POINT_SECONDS * pairs
    if single and d_values.size * pairs <= budgets.finite_size_budget:
        seconds += FINITE_SIZE_POINT_SECONDS * d_values.size * pairs
    lengths = [int(T) for a, T in enumerate(g.T) for b, scheme in enumerate(g.weights)
               if int(T) >= 2 and not scheme.data_dependent and (a, b) not in single]
    cells = len(lengths)
    # each point costs at least POOLED_CELL: a grid beyond the budget is known so without visiting its points
    if cells and cells * d_values.size * pairs * POOLED_CELL <= budgets.pooled_budget:
        sizes = [(round(d / dl), round(d / gm)) for d in d_values for dl in g.delta for gm in g.gamma]
        work = cells * sum(POOLED_DRAWS * draw_work(V, N) + POOLED_CELL for V, N in sizes)
        if work <= budgets.pooled_budget:
            return float(seconds), float(sum(pair_seconds(V, N, T) for T in lengths for V, N in sizes))
    return float(seconds), 0.0


def spectrum_seconds(sweep: Sweep, budgets: TheoryBudgets | None = None) -> float:
    """Estimated seconds of the finite-T spectrum law a new store of ``sweep`` computes (0 beyond its budget)."""
    budgets = budgets or TheoryBudgets()
    spec = sweep.observables.spectrum
    if spec is None:
        return 0.0
    edges = spec.edges()
    per_histogram = HISTOGRAM_SECONDS[0] + HISTOGRAM_SECONDS[1] * (edges.size - 1)
    if len(sweep.grid.delta) * len(sweep.grid.gamma) * per_histogram > budgets.finite_t_budget:
        return 0.0                          # beyond the budget with a single weight profile: no need to list them
    wanted, profile, pairs = finite_t_cells(sweep, weight_scalars(sweep), budgets.finite_t_below)
    if not wanted:
        return 0.0
    seconds = spectrum_cost(set(profile.values()), pairs, edges)[2]
    return 0.0 if seconds > budgets.finite_t_budget else seconds
