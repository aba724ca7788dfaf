"""Helpers shared by the theory modules: broadcasting, the critical root of the edge cubic, bin averages."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["MAX_NEWTON", "bin_average", "bisect", "broadcast", "critical_a"]

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


def bisect(below: Callable[[Float], NDArray[np.bool_]], lo: Float, hi: Float, steps: int) -> tuple[Float, Float]:
    """Elementwise bisection: up to ``steps`` halvings of ``[lo, hi]``, ``mid`` kept as ``lo`` where ``below(mid)``.

    Stops at the first halving that changes no bracket: every bracket is then down to adjacent floats (or
    empty) and each further halving would give the same ``mid`` and the same answer, so the result is the
    one all ``steps`` give, bit for bit, with ``below`` a pure function. Returns the final ``(lo, hi)``.

    Examples
    --------
    >>> lo, hi = bisect(lambda x: x * x < 2.0, np.array([0.0]), np.array([2.0]), 200)
    >>> bool(hi[0] - lo[0] <= np.spacing(lo[0])), bool(lo[0] == np.sqrt(2.0) or hi[0] == np.sqrt(2.0))
    (True, True)
    """
    for _ in range(steps):
        mid = 0.5 * (lo + hi)
        go_up = below(mid)
        new_lo, new_hi = np.where(go_up, mid, lo), np.where(go_up, hi, mid)
        if np.array_equal(new_lo, lo, equal_nan=True) and np.array_equal(new_hi, hi, equal_nan=True):
            break
        lo, hi = new_lo, new_hi
    return lo, hi


def bin_average(edges: ArrayLike, density: Callable[[Float], Float], atom: float, nodes: int = 16) -> Float:
    """A law's histogram density on bins ``edges``: ``(∫_bin f + atom 1[0 in bin]) / width``.

    Bins follow ``np.histogram`` (``[e_i, e_{i+1})``, last closed), as the ``spectrum`` observable
    does. ``nodes``-point Gauss–Legendre per bin; the bin holding 0 is cut into 40 geometric pieces
    (``[b 2^-(j+1), b 2^-j]``), which resolves an integrable singularity or a lower edge near 0.
    ``density`` is the absolutely continuous part (0 for ``x <= 0``), ``atom`` the mass at 0.
    """
    edges = np.asarray(edges, float)
    lo, hi = np.maximum(edges[:-1], 0.0), edges[1:]
    s, ws = np.polynomial.legendre.leggauss(nodes)
    s, ws = (s + 1) / 2, ws / 2
    first = (edges[:-1] <= 0) & (hi > 0)
    a_parts, b_parts, owner_parts = [lo[~first]], [hi[~first]], [np.flatnonzero(~first)]
    for i in np.flatnonzero(first):
        top = hi[i] * 0.5 ** np.arange(40)
        a_parts.append(np.append(top[1:], 0.0))
        b_parts.append(top)
        owner_parts.append(np.full(40, i))
    a_sub, b_sub, owner = np.concatenate(a_parts), np.concatenate(b_parts), np.concatenate(owner_parts)
    width = np.where(b_sub > a_sub, b_sub - a_sub, 0.0)
    x = a_sub[:, None] + width[:, None] * s
    f = np.asarray(density(x.ravel())).reshape(x.shape)
    mass = np.bincount(owner, weights=(f * ws).sum(axis=1) * width, minlength=lo.size)
    mass += np.where(first, atom, 0.0)
    return mass / np.diff(edges)
