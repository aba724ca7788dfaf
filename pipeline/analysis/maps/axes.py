"""Where a map's cells begin and end: the scale of each axis and the edges of its cells.

A numeric grid axis is drawn on a log scale (base 2) when its values are positive, span at least
a factor :data:`LOG_SPAN` and are spaced more evenly in log than in linear terms, as the shipped
delta and gamma grids (powers of 2) are; a categorical axis (T, weights) holds the positions
``0..n-1``. The edges between two cells are the midpoints of their values on the axis' scale
(geometric midpoints on a log axis), and the outer edges lie half a step beyond the extreme values,
never past the axis' natural bound: no cell of a non-negative quantity (SNR, delta, gamma, d)
reaches below 0.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = ["AxisScale", "LOG_SPAN", "LOWER_BOUND", "axis_scale", "cell_edges"]

AxisScale = Literal["linear", "log"]
LOG_SPAN = 4.0            # max / min from which geometric spacing earns a log axis
LOWER_BOUND = {"snr": 0.0, "delta": 0.0, "gamma": 0.0, "d": 0.0}   # no cell of these starts below


def _unevenness(steps: np.ndarray) -> float:
    """Spread of the steps relative to their mean (0: equally spaced)."""
    return float(np.std(steps) / np.mean(steps)) if steps.size and np.mean(steps) > 0 else 0.0


def axis_scale(values) -> AxisScale:
    """``log`` for positive values spanning >= :data:`LOG_SPAN` that are more even in log than linearly.

    Examples
    --------
    >>> axis_scale([0.25, 0.5, 1.0, 2.0]), axis_scale([0.0, 1.5, 3.0, 6.0]), axis_scale([1.0, 2.0, 3.0, 4.0])
    ('log', 'linear', 'linear')
    """
    v = np.unique(np.asarray(values, dtype=float))
    if v.size < 2 or v[0] <= 0 or v[-1] / v[0] < LOG_SPAN:
        return "linear"
    return "log" if _unevenness(np.diff(np.log(v))) < _unevenness(np.diff(v)) or v.size == 2 else "linear"


def cell_edges(values, scale: AxisScale = "linear", lower: float | None = None) -> np.ndarray:
    """The ``n + 1`` edges of the cells centred on ``n`` ascending ``values``.

    Parameters
    ----------
    values
        The axis' values, ascending.
    scale
        ``linear``: arithmetic midpoints; ``log``: geometric midpoints (the outer edges half a log
        step beyond the extremes).
    lower
        The axis' natural bound: the first edge is not put below it (half the neighbouring step,
        cut at ``lower``). Ignored when a value lies below it.

    Examples
    --------
    >>> cell_edges([0.0, 1.5, 3.0, 6.0], lower=0.0).tolist()
    [0.0, 0.75, 2.25, 4.5, 7.5]
    >>> np.log2(cell_edges([0.25, 0.5, 1.0], "log")).round(12).tolist()
    [-2.5, -1.5, -0.5, 0.5]
    """
    v = np.asarray(values, dtype=float)
    t = np.log2(v) if scale == "log" else v
    half = np.diff(t) / 2 if t.size > 1 else np.array([0.5])
    inner = t[:-1] + half[: t.size - 1]
    edges = np.concatenate([[t[0] - half[0]], inner, [t[-1] + half[-1]]])
    edges = 2.0 ** edges if scale == "log" else edges
    if lower is not None and scale == "linear" and v.size and v.min() >= lower:
        edges[0] = max(edges[0], lower)
    return edges
