"""The shape of a bulk law's right edge: ``a`` in ``f(x) ~ (edge - x)^a`` (docs/theory.md §6.2).

The finite-d transition moves as ``d^-1/3`` because the bulk's edge is a square root (``a = 1/2``): edge
fluctuations are ``O(d^-2/3)``. An edge with another exponent changes the window's exponent (Kwak, Lee and
Park, arXiv 1908.07444), so the ``d -> infinity`` extrapolation of :mod:`rmtsweep.analysis.limits` checks the
edge's shape first. The exponent is fitted over the distances to the edge that a sweep's ``d`` values probe:
``edge * d^-2/3`` from the largest ``d`` to the smallest (:func:`window`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from . import bulk
from .cell_law import EXACT, exact_law
from .finite_t import density as finite_t_density

__all__ = ["SQUARE_ROOT", "edge_exponent", "law_edge_exponent", "window"]

SQUARE_ROOT = 0.5


def window(d_values: Sequence[float] | NDArray) -> tuple[float, float]:
    """Relative distances to the edge that the ``d`` values probe: ``(max(d)^-2/3, min(d)^-2/3)``.

    Examples
    --------
    >>> [round(x, 4) for x in window([100, 200, 400, 800])]
    [0.0116, 0.0464]
    """
    d = np.asarray(d_values, float)
    return float(d.max() ** (-2 / 3)), float(d.min() ** (-2 / 3))


def edge_exponent(density: Callable[[NDArray], NDArray], edge: float, lo: float, hi: float,
                  points: int = 8) -> float:
    """Least-squares slope of ``log f(edge - s)`` on ``log s``, ``s`` log-spaced over ``[lo, hi] * edge``.

    ``density`` maps points to the law's density. NaN where the density is not positive at every point.

    Examples
    --------
    >>> round(edge_exponent(lambda x: (2.0 - x) ** 1.5, 2.0, 1e-3, 1e-1), 6)
    1.5
    """
    s = np.geomspace(lo, hi, points) * edge
    f = np.asarray(density(edge - s), float)
    if not (np.isfinite(f).all() and (f > 0).all()):
        return float("nan")
    return float(np.polyfit(np.log(s), np.log(f), 1)[0])


def law_edge_exponent(delta: float, gamma: float, law: int, d_values: Sequence[float] | NDArray) -> float:
    """The edge exponent of the law a line's threshold comes from, over :func:`window` of its ``d`` values.

    ``law`` is a store's ``theory_law``: the cubic ``MP_delta ⊠ MP_gamma`` (0) or the exact one-position law
    over ``(gamma/delta) Poisson(delta/gamma)`` at its main edge (1). The sampled finite-T law of ``T >= 2``
    has no stable edge (docs/theory.md §6.2) and is not tested here.
    """
    lo, hi = window(d_values)
    if law == EXACT:
        nu, edge, _ = exact_law(delta, gamma)
        return edge_exponent(lambda x: finite_t_density(x, nu, delta), edge, lo, hi)
    return edge_exponent(lambda x: bulk.density(x, delta, gamma), float(bulk.edge(delta, gamma)), lo, hi)
