"""The Tracy-Widom laws ``F_1`` (GOE) and ``F_2`` (GUE), by Bornemann's quadrature of their Fredholm determinants.

Both are Fredholm determinants on ``L^2(s, inf)`` (Bornemann, "On the numerical evaluation of Fredholm
determinants", Math. Comp. 79 (2010) 871-915; "On the numerical evaluation of distributions in random
matrix theory: a review", Markov Process. Related Fields 16 (2010) 803-866):

- ``F_2(s) = det(I - K_Ai)``, ``K_Ai(x, y) = (Ai(x) Ai'(y) - Ai'(x) Ai(y)) / (x - y)`` (Tracy & Widom 1994),
  with ``K_Ai(x, x) = Ai'(x)^2 - x Ai(x)^2``;
- ``F_1(s) = det(I - K_1)``, ``K_1(x, y) = Ai((x + y) / 2) / 2`` (Ferrari & Spohn 2005; Sasamoto 2005).

Nystrom's method turns each into a matrix determinant: with the nodes ``x_i = s + 10 tan(pi u_i / 2)``
and weights ``w_i`` of ``M`` Gauss-Legendre points ``u_i`` on ``(0, 1)`` mapped onto ``(s, inf)``,
``F(s) ≈ det(delta_ij - sqrt(w_i) K(x_i, x_j) sqrt(w_j))``. The kernels are entire, so the error falls
exponentially in ``M``; with :data:`NODES` points the values agree with ``2 M`` points to 2.5e-14
absolute (``tests/unit/test_tracy_widom.py``). The density is the exact derivative of the same
determinant (Jacobi's formula, ``F' = -F tr((I - K)^(-1) dK/ds)``: shifting ``s`` moves every node, so
``dK/ds`` is ``Ai'((x + y) / 2) / 2`` for ``K_1`` and ``-Ai(x) Ai(y)`` for ``K_Ai``); the quantile is a
root of ``F(s) = p`` (:func:`scipy.optimize.brentq`).

Outside ``[S_MIN, S_MAX]`` the quadrature is not used: below ``S_MIN = -10`` the law is returned as 0
(``F_1(-10) = 3.2e-22``, ``F_2(-10) = 4.2e-37``; the oscillating Airy function needs ever more nodes
there), above ``S_MAX = 16`` as 1 (``1 - F_1(16) < 1e-20``). Airy values at arguments above
:data:`_AI_NEGLIGIBLE` are set to 0 (``Ai(20) = 1.7e-27``), which is exact to double precision and
saves most of the cost.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Literal

import numpy as np
from numpy.polynomial.legendre import leggauss
from numpy.typing import ArrayLike, NDArray
from scipy.special import airy, kv

from ..errors import ArgumentError

__all__ = ["NODES", "S_MAX", "S_MIN", "tw_cdf", "tw_pdf", "tw_quantile"]

Float = NDArray[np.float64]
Beta = Literal[1, 2]

NODES = 48            # Gauss-Legendre points of the Nystrom discretisation
S_MIN = -10.0         # below: the law is 0 to 4e-22 (beta 1) and 5e-37 (beta 2)
S_MAX = 16.0          # above: the law is 1 to 1e-20
_AI_NEGLIGIBLE = 20.0  # Ai(z) < 2e-27 for z above it: set to 0 without calling airy
_BATCH = 256          # points per batch of determinants (bounds the (batch, M, M) arrays)


@lru_cache(maxsize=4)
def _nodes(m: int) -> tuple[Float, Float]:
    """Offsets ``x_i - s = 10 tan(pi u_i / 2)`` and weights of ``m`` Gauss-Legendre points mapped onto ``(0, inf)``."""
    u, w = leggauss(m)
    t = np.pi * (u + 1.0) / 4.0                    # pi u / 2 for u on (0, 1)
    return 10.0 * np.tan(t), w * (np.pi / 4.0) * 10.0 / np.cos(t) ** 2


def _airy(z: Float, derivative: bool) -> tuple[Float, Float | None]:
    """``Ai(z)`` and (if asked) ``Ai'(z)``; 0 above :data:`_AI_NEGLIGIBLE`.

    For ``z > 2`` through ``K_nu`` (DLMF 9.6.1-9.6.2: ``Ai(z) = sqrt(z/3) K_{1/3}(zeta) / pi``,
    ``Ai'(z) = -z K_{2/3}(zeta) / (pi sqrt 3)``, ``zeta = 2 z^(3/2) / 3``): three times faster than
    :func:`scipy.special.airy` there, which also computes the growing ``Bi``; the two agree to 1e-13.
    """
    ai = np.zeros_like(z)
    aip: Float | None = None
    near, far = z <= 2.0, (z > 2.0) & (z <= _AI_NEGLIGIBLE)
    a, ap, _, _ = airy(z[near])
    ai[near] = a
    zf = z[far]
    zeta = (2.0 / 3.0) * zf**1.5
    ai[far] = np.sqrt(zf / 3.0) / np.pi * kv(1.0 / 3.0, zeta)
    if derivative:
        aip = np.zeros_like(z)
        aip[near] = ap
        aip[far] = -zf / (np.pi * np.sqrt(3.0)) * kv(2.0 / 3.0, zeta)
    return ai, aip


def _kernel(s: Float, beta: Beta, m: int, density: bool) -> tuple[Float, Float | None]:
    """The Nystrom matrices ``sqrt(w_i) K(x_i, x_j) sqrt(w_j)``, shape ``(len(s), m, m)``, and (if
    ``density``) their ``s``-derivative."""
    x, w = _nodes(m)
    sw = np.sqrt(w)
    scale = sw[:, None] * sw[None, :]
    if beta == 1:
        i, j = np.triu_indices(m)                   # the kernel is symmetric: evaluate each pair once
        ai, aip = _airy(s[:, None] + (x[i] + x[j])[None, :] / 2.0, density)
        out = []
        for val in [ai] if aip is None else [ai, aip]:          # aip is there iff density
            mat = np.empty((s.size, m, m))
            mat[:, i, j] = mat[:, j, i] = val / 2.0
            out.append(mat * scale)
        return out[0], (out[1] if density else None)
    X = s[:, None] + x[None, :]
    ai, aip = _airy(X, True)
    assert aip is not None
    diff = X[:, :, None] - X[:, None, :]
    np.einsum("nii->ni", diff)[...] = 1.0           # the diagonal is replaced below
    k = (ai[:, :, None] * aip[:, None, :] - aip[:, :, None] * ai[:, None, :]) / diff
    np.einsum("nii->ni", k)[...] = aip**2 - X * ai**2
    dk = -ai[:, :, None] * ai[:, None, :] * scale if density else None
    return k * scale, dk


def _evaluate(s: ArrayLike, beta: Beta, m: int, density: bool) -> Float:
    """``F_beta`` or its density at every ``s`` (any shape); each distinct value is computed once."""
    if beta not in (1, 2):
        raise ArgumentError(f"beta must be 1 (GOE) or 2 (GUE); got {beta!r}")
    s = np.asarray(s, dtype=np.float64)
    out = np.full(s.shape, np.nan)
    out[s < S_MIN] = 0.0
    out[s > S_MAX] = 0.0 if density else 1.0
    inside = (s >= S_MIN) & (s <= S_MAX)
    values, where = np.unique(s[inside], return_inverse=True)
    result = np.empty(values.size)
    for lo in range(0, values.size, _BATCH):
        k, dk = _kernel(values[lo:lo + _BATCH], beta, m, density)
        a = np.eye(m) - k
        det = np.linalg.det(a)
        if dk is not None:                          # density
            trace = np.einsum("nii->n", np.linalg.solve(a, dk))
            result[lo:lo + _BATCH] = np.maximum(-det * trace, 0.0)
        else:
            result[lo:lo + _BATCH] = np.clip(det, 0.0, 1.0)
    out[inside] = result[where.reshape(-1)]
    return out


def tw_cdf(s: ArrayLike, beta: Beta = 1, nodes: int = NODES) -> Float:
    """Distribution function ``F_beta(s) = P(TW_beta <= s)`` of the Tracy-Widom law (module docstring).

    Parameters
    ----------
    s
        Points, any shape. NaN stays NaN; ``-inf`` and ``inf`` give 0 and 1.
    beta
        1 for the GOE law (real symmetric matrices, what :mod:`.finite_d` uses), 2 for the GUE law.
    nodes
        Gauss-Legendre points of the quadrature (:data:`NODES`; more only to check convergence).

    Returns
    -------
    ndarray
        ``F_beta(s)`` in ``[0, 1]``, nondecreasing, same shape as ``s``; rounding errors of about 1e-14.

    Examples
    --------
    >>> round(float(tw_cdf(-1.2685)), 4), round(float(tw_cdf(0.0, beta=2)), 6)
    (0.5, 0.969373)
    """
    return _evaluate(s, beta, nodes, density=False)


def tw_pdf(s: ArrayLike, beta: Beta = 1, nodes: int = NODES) -> Float:
    """Density ``F_beta'(s)``: the exact ``s``-derivative of the quadrature of :func:`tw_cdf` (Jacobi's formula).

    Same arguments as :func:`tw_cdf`; 0 outside ``[S_MIN, S_MAX]``.

    Examples
    --------
    >>> bool(tw_pdf(-1.5) > tw_pdf(1.0) > tw_pdf(3.0) > 0)
    True
    """
    return _evaluate(s, beta, nodes, density=True)


def tw_quantile(p: ArrayLike, beta: Beta = 1, xtol: float = 1e-13) -> Float:
    """Quantile function: the ``s`` with ``F_beta(s) = p``, by :func:`scipy.optimize.brentq` on ``[S_MIN, S_MAX]``.

    Parameters
    ----------
    p
        Probabilities, any shape. 0 and 1 give ``-inf`` and ``inf``; NaN stays NaN.
    beta
        1 (GOE) or 2 (GUE).
    xtol
        Absolute tolerance on ``s``.

    Returns
    -------
    ndarray
        The quantiles, same shape as ``p``.

    Raises
    ------
    ArgumentError
        (a ``ValueError``) For ``p`` outside ``[0, 1]``, or so small that the quantile lies below ``S_MIN``
        (``p < F_beta(S_MIN)``, about 3e-22 for ``beta = 1``).

    Examples
    --------
    >>> round(float(tw_quantile(0.5)), 4), round(float(tw_quantile(0.95, beta=2)), 4)
    (-1.2686, -0.2325)
    """
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    out[p == 0.0] = -np.inf
    out[p == 1.0] = np.inf
    bad = (p < 0.0) | (p > 1.0)
    if bad.any():
        raise ArgumentError(f"p must lie in [0, 1]; got {p[bad].ravel()[0]!r}")
    floor = float(tw_cdf(S_MIN, beta))
    inner = (p > 0.0) & (p < 1.0)
    if (p[inner] <= floor).any():
        raise ArgumentError(f"p = {p[inner][p[inner] <= floor].min()!r} is below F_{beta}(S_MIN = {S_MIN}) = "
                            f"{floor:.3g}; its quantile lies where the quadrature is not used")
    from scipy.optimize import brentq      # here, not above: scipy.optimize is slow to import

    values, where = np.unique(p[inner], return_inverse=True)
    roots = [brentq(lambda s, q=q: float(tw_cdf(s, beta)) - q, S_MIN, S_MAX, xtol=xtol) for q in values]
    out[inner] = np.asarray(roots, dtype=np.float64)[where.reshape(-1)]
    return out
