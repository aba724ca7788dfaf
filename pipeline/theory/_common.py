"""Helpers shared by the theory modules: broadcasting and the critical root of the edge cubic."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MAX_NEWTON", "broadcast", "critical_a"]

Float = NDArray[np.float64]

MAX_NEWTON = 200  # cap on the (early-stopping) monotone Newton iterations of the theory modules


def broadcast(*args: ArrayLike) -> list[Float]:
    """Float64 copies of the arguments, broadcast against each other."""
    arrays = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in args))
    return [np.array(a) for a in arrays]


def critical_a(delta: Float, gamma: Float) -> Float:
    """Top root ``a_c >= 0`` of ``a^3 - p a - q``; ``p = delta + gamma + delta gamma``, ``q = 2 delta gamma``.

    Newton from ``a0 = sqrt(p) + q^(1/3)`` (where the cubic is >= 0, increasing and convex) decreases
    monotonically to the root, so it cannot overshoot. ``a_c = 0`` when ``delta = gamma = 0``.
    """
    p = delta + gamma + delta * gamma
    q = 2.0 * delta * gamma
    a = np.sqrt(p) + np.cbrt(q)
    for _ in range(MAX_NEWTON):
        f = a**3 - p * a - q
        fp = 3.0 * a**2 - p
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((fp > 0) & (f > 0), f / fp, 0.0)
        a_new = a - step
        if not np.any(a_new < a):  # no element moved down any more: converged to machine precision
            break
        a = np.minimum(a, a_new)
    return a
