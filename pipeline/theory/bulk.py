"""Bulk law of ``S / kappa``: the free multiplicative convolution ``MP_delta ⊠ MP_gamma`` (docs/theory.md §3.1).

With ``G(z) = ∫ dmu(t) / (z - t)`` and ``g = z G(z)``, the S-transform
``S(w) = 1 / ((1 + delta w)(1 + gamma w))`` gives ``z = z(g) = g (1 - delta + delta g)(1 - gamma + gamma g)
/ (g - 1)``, i.e. the cubic

    delta*gamma*g^3 + [delta(1-gamma) + gamma(1-delta)] g^2 + [(1-delta)(1-gamma) - z] g + z = 0.

Writing ``g = 1 + 1/a`` turns ``z(g)`` into ``lam(a) = (a + 1)(a + delta)(a + gamma) / a^2``. The right edge
is the minimum of ``lam`` over ``a > 0``, reached at the largest root ``a_c`` of
``a^3 - (delta + gamma + delta gamma) a - 2 delta gamma = 0`` (setting ``d log lam / da = 0``). The same
``a_c`` gives the sample threshold ``rho_c = delta + a_c`` of :mod:`rmtsweep.theory.spikes`, and the sample
outlier there is ``lam(rho - delta)``: at ``rho_c`` it sits exactly on the edge.

All functions broadcast their arguments against each other and return float64 arrays (0-d for scalars).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import MAX_NEWTON, bin_average, broadcast, critical_a

__all__ = ["atom", "density", "edge", "histogram", "moments", "stieltjes", "stieltjes_derivative"]

Float = NDArray[np.float64]

def _lam(a: Float, delta: Float, gamma: Float) -> Float:
    """``z(1 + 1/a) = (a + 1)(a + delta)(a + gamma) / a^2`` (1 at ``a = delta = gamma = 0``)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = (a + 1.0) * (1.0 + delta / a) * (1.0 + gamma / a)
    return np.where(a == 0, 1.0, lam)  # a_c = 0 only when delta = gamma = 0; NaN stays NaN


def _lower_edge(delta: Float, gamma: Float) -> Float:
    """Left end ``lambda_-`` of the density's support: ``max(0, lam(a_3))``, ``a_3`` the smallest root of
    ``a^3 - p a - q`` (trigonometric form; the cubic always has three real roots since
    ``4 p^3 >= 27 q^2``). Checked against the density on a grid of (delta, gamma) in [0, 50]^2; it is
    ``(1 - sqrt(c))^2`` in the Marchenko–Pastur case. Masking ``x < lambda_-`` removes spurious imaginary
    parts of near-double real roots (e.g. at ``x -> 0`` when ``delta = gamma``)."""
    p = delta + gamma + delta * gamma
    q = 2.0 * delta * gamma
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.arccos(np.clip(1.5 * q / p * np.sqrt(3.0 / p), -1.0, 1.0))
        a = 2.0 * np.sqrt(p / 3.0) * np.cos((phi - 4.0 * np.pi) / 3.0)
        lam = (a + 1.0) * (a + delta) * (a + gamma) / a**2
    return np.where(lam > 0, lam, 0.0)


def edge(delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Right edge ``lambda_+`` of ``MP_delta ⊠ MP_gamma``.

    Parameters
    ----------
    delta, gamma
        Ratios ``d / V`` and ``d / N`` (>= 0), broadcast against each other.

    Returns
    -------
    ndarray
        ``min_{g > 1} g (1 - delta + delta g)(1 - gamma + gamma g) / (g - 1)``; 1 when ``delta = gamma = 0``,
        ``(1 + sqrt(c))^2`` when one ratio is 0 and the other is ``c``.

    Examples
    --------
    >>> round(float(edge(0.5, 0.5)), 3)
    4.409
    """
    delta, gamma = broadcast(delta, gamma)
    return _lam(critical_a(delta, gamma), delta, gamma)


def atom(delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Mass of the point at 0: ``1 - min(1, 1/delta, 1/gamma)``.

    ``S = C C^T / N`` has rank at most ``min(d, V, N)``. At ``z -> 0`` the cubic factorises as
    ``g (delta g + 1 - delta)(gamma g + 1 - gamma) = 0``, and ``g(0) = lim z G(z)`` is the atom; the
    branch picks ``max(0, 1 - 1/delta, 1 - 1/gamma)``, the same number. Checked against
    ``1 - ∫ density`` in the tests.
    """
    delta, gamma = broadcast(delta, gamma)
    with np.errstate(divide="ignore"):
        return np.asarray(1.0 - np.minimum(1.0, np.minimum(1.0 / delta, 1.0 / gamma)))


def histogram(edges: ArrayLike, delta: float, gamma: float) -> Float:
    """The law's histogram density on bins ``edges`` (atom at 0 included), as the ``spectrum`` observable bins it."""
    return bin_average(edges, lambda x: density(x, delta, gamma), float(atom(delta, gamma)))


def moments(delta: ArrayLike, gamma: ArrayLike) -> tuple[Float, Float]:
    """First and second moments ``(1, 1 + delta + gamma)`` of the law (atom included)."""
    delta, gamma = broadcast(delta, gamma)
    return np.ones_like(delta), np.asarray(1.0 + delta + gamma)


def _residual(g: NDArray, x: Float, delta: Float, gamma: Float) -> tuple[NDArray, NDArray]:
    """The cubic in factored form ``g (1 - delta + delta g)(1 - gamma + gamma g) - x (g - 1)`` and its
    derivative: unlike the expanded coefficients, it keeps ``x`` when ``x`` is tiny next to a
    near-double root (``delta = gamma``, ``x -> 0``)."""
    u, v = 1.0 - delta + delta * g, 1.0 - gamma + gamma * g
    return g * u * v - x * (g - 1.0), u * v + g * (delta * v + gamma * u) - x


def density(x: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Absolutely continuous density of ``MP_delta ⊠ MP_gamma``.

    ``f(x) = -Im g(x + i0) / (pi x)`` with ``g`` the root of the cubic with negative imaginary part, from
    batched companion-matrix eigenvalues polished by Newton steps. When ``delta gamma = 0`` the cubic is
    the Marchenko–Pastur quadratic of ratio ``delta + gamma``, solved in closed form; when
    ``delta = gamma = 0`` the law is a point mass at 1 and the density is 0.

    Parameters
    ----------
    x
        Points (0 outside ``(lambda_-, lambda_+)``, in particular for ``x <= 0``; the atom at 0 is
        :func:`atom`).
    delta, gamma
        Ratios, broadcast with ``x``.

    Returns
    -------
    ndarray
        The density, ``>= 0``.
    """
    x, delta, gamma = broadcast(x, delta, gamma)
    out = np.zeros(x.shape)
    inside = (x > 0) & (x > _lower_edge(delta, gamma)) & (x < edge(delta, gamma)) & (delta + gamma > 0)
    cub = inside & (delta * gamma > 0)
    quad = inside & ~cub
    if np.any(cub):
        xs, ds, gs = x[cub], delta[cub], gamma[cub]
        coef = (ds * gs, ds * (1 - gs) + gs * (1 - ds), (1 - ds) * (1 - gs) - xs, xs)
        comp = np.zeros(xs.shape + (3, 3))
        comp[:, 0, :] = -np.stack(coef[1:], axis=-1) / coef[0][:, None]
        comp[:, 1, 0] = comp[:, 2, 1] = 1.0
        roots = np.linalg.eigvals(comp)
        g = roots[np.arange(len(xs)), np.argmin(roots.imag, axis=-1)]
        for _ in range(8):  # Newton polish on the factored cubic, kept only where it lowers the residual
            with np.errstate(all="ignore"):
                f, fp = _residual(g, xs, ds, gs)
                g_new = g - f / fp
                better = np.abs(_residual(g_new, xs, ds, gs)[0]) < np.abs(f)
            g = np.where(better & (g_new.imag < 0), g_new, g)
        out[cub] = np.maximum(-g.imag, 0.0) / (np.pi * xs)
    if np.any(quad):
        xs, c = x[quad], delta[quad] + gamma[quad]
        disc = 4.0 * c * xs - (1.0 - c - xs) ** 2  # = (lambda_+ - x)(x - lambda_-)
        out[quad] = np.sqrt(np.maximum(disc, 0.0)) / (2.0 * np.pi * c * xs)
    out[np.isnan(x) | np.isnan(delta) | np.isnan(gamma)] = np.nan
    return out


def _a_of_z(z: Float, delta: Float, gamma: Float) -> Float:
    """Largest root ``a`` of ``(a + 1)(a + delta)(a + gamma) - z a^2`` for ``z > edge`` (NaN otherwise).

    Newton from ``a0 = z`` (right of the largest root, where the monic cubic is increasing and
    convex) is monotone; it is linear only at ``z = edge``, a double root.
    """
    s1, s2, s3 = 1.0 + delta + gamma, delta + gamma + delta * gamma, delta * gamma
    valid = z > edge(delta, gamma)
    a = np.where(valid, z, np.nan)
    for _ in range(MAX_NEWTON):
        f = ((a + s1 - z) * a + s2) * a + s3
        fp = (3.0 * a + 2.0 * (s1 - z)) * a + s2
        with np.errstate(divide="ignore", invalid="ignore"):
            step = np.where((fp > 0) & (f > 0), f / fp, 0.0)
        a_new = a - step
        if not np.any(a_new < a):
            break
        a = np.where(a_new < a, a_new, a)
    return a


def stieltjes(z: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Stieltjes transform ``G(z) = ∫ dmu(t) / (z - t)`` for real ``z > edge`` (atom included).

    ``G = g / z`` with ``g = 1 + 1/a`` the root of the cubic continuous from ``g -> 1`` at ``z -> inf``
    (so ``G(z) ~ 1/z``). NaN for ``z <= edge``.
    """
    z, delta, gamma = broadcast(z, delta, gamma)
    return np.asarray((1.0 + 1.0 / _a_of_z(z, delta, gamma)) / z)


def stieltjes_derivative(z: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> Float:
    """``G'(z)`` for real ``z > edge``, by implicit differentiation of ``z = z(g)``.

    ``G' = (1/z^2) (1 / (d log z / dg) - g)`` with
    ``d log z / dg = 1/g + delta/(1 - delta + delta g) + gamma/(1 - gamma + gamma g) - 1/(g - 1)``;
    it tends to ``-inf`` at the edge (square-root edge). NaN for ``z <= edge``.
    """
    z, delta, gamma = broadcast(z, delta, gamma)
    a = _a_of_z(z, delta, gamma)
    t = 1.0 / a  # t = g - 1
    dlog = 1.0 / (1.0 + t) + delta / (1.0 + delta * t) + gamma / (1.0 + gamma * t) - a
    with np.errstate(divide="ignore"):
        return np.asarray((1.0 / dlog - (1.0 + t)) / z**2)
