"""Finite size over ``T >= 2`` positions: the signal outlier over the realised pooling matrix (docs/theory.md §6.5).

Fixed weights ``w`` over ``T >= 2`` positions, class-centred table. Let ``A`` be the ``N x V`` token-weight
matrix centred within each class (:func:`.pooling.pooling_draw`) and ``a = xi w`` the pooled signs. The
pooled data are ``C = W + sqrt(snr) a u^T`` with the noise ``W = A Z^T`` (``Z`` the table's Gaussian noise,
independent of ``A``, ``a`` and ``u``). The signal does not enter through ``D = (V / (N kappa)) A^T A``'s
eigenvectors in token space (the centred ``A`` sends the class signs ``s`` to 0) but in sample space.

**Derived here.** ``S = C^T C / N`` is ``S_0 = W^T W / N`` plus a rank-two term in the span of ``u`` and
``W^T a``. With ``G(l) = (1/d) tr (l - S_0)^{-1}`` and ``u`` independent of ``W``, the determinant of the
2 x 2 secular equation reduces to ``1 = l G(l) (snr / N) a^T (l - W W^T / N)^{-1} a``. Given ``A``,
``W W^T / N`` is a sample covariance of ``d`` Gaussian vectors in ``R^N`` whose companion is ``S_0`` itself,
and the anisotropic deterministic equivalent ``(l - W W^T / N)^{-1} ~ (1/l) (I - delta G D~)^{-1}`` with
``D~ = (V / (N kappa)) A A^T`` (the ``N x N`` twin of ``D``, the same nonzero eigenvalues) gives, in units of
``kappa``,

    1 = (snr alpha_hat / kappa) G E_{nu_s}[beta(G)],      beta(G) = 1 / (1 - delta p G),

where ``alpha_hat = |a|^2 / N`` and ``nu_s`` is the spectral measure of ``a / |a|`` with respect to ``D~``
(its mass on ``D~``'s null space sits at ``p = 0``). The outlier is ``l(G)`` over ``nu`` (``D``'s
eigenvalues: the bulk of :func:`.null_law.null_parts`) where the root lies below the bulk's edge ``G_e``,
and its alignment is ``|u_hat^T u|^2 = -G^2 l'(G) / (1 + G^2 F'(G))`` with
``F(G) = (snr alpha_hat / kappa) E_{nu_s}[beta(G)]``. ``nu_s`` is a Gauss quadrature from
:data:`LANCZOS_STEPS` Lanczos steps on ``D~`` started at ``a`` (no eigenvectors of a dense matrix).

Over draws of ``A``: ``alpha_hat`` fluctuates by ``O(N^(-1/2))`` and moves the outlier at first order,
so each draw is evaluated at :data:`ALPHA_NODES` Gauss-Hermite values of ``alpha_hat`` about the cell's
``alpha = w^T R w`` (its variance estimated from the draw's ``a``), which takes that spread out of the
draw-to-draw noise. ``lambda_1`` is the mean of ``max(outlier, null lambda_1)`` under the draw's null law
(the same candidates as the detection null), the null's mean where there
is no outlier; the alignment is the outlier's where it is on top, weighed by the probability that it is on
top, and else the top bulk eigenvector's. That one is not independent of ``u`` below the threshold: the
same 2 x 2 reduction gives ``u^T (l - S)^(-1) u = G / (1 - Phi(G))``, ``Phi = c G E_{nu_s}[beta]``, so its
alignment is ``1/d`` times :func:`.finite_d.bulk_overlap_factor` at the bulk's edge (``1/d`` at ``snr = 0``;
order ``d^(-1/3)`` at the threshold). In the critical window both take the spiked window law's corrections
(:mod:`.window_law`): its coordinate is ``(Phi_e - 1) sigma d / Phi'_e`` below the threshold and the outlier's exit
from the edge, ``sqrt((l - l_e) / sigma)``, above it (the two agree at the threshold).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr
from threadpoolctl import threadpool_limits

from ..model.correlation import Correlation
from ..model.replicate import CellModel
from ._common import bisect
from .finite_d import bulk_overlap_factor
from .finite_t import edge_point, moments_g
from .null_law import POOLED_DRAWS, POOLED_TAIL, null_parts, pooled_model, pooled_seed, pooled_seed_words
from .pooling import DrawCache, PoolingDraw, cached_draws, entry_key, save_records
from .tracy_widom import tw_cdf
from .window_law import lean, lift, overlap_unit, window_coordinate

__all__ = ["ALPHA_NODES", "LANCZOS_STEPS", "PooledSpikes", "gauss_quadrature", "pooled_spikes", "pooled_stream",
           "spike_record"]

Float = NDArray[np.float64]

LANCZOS_STEPS = 24
"""Lanczos steps for ``nu_s``: exact for polynomials of degree 47 in ``D~``, and ``beta`` is analytic over the
spectrum wherever an outlier exists (its pole lies above it); 16, 24, 32 and 48 steps gave the same predictions
to 6 digits at d = 400 (T = 2 and 4)."""

ALPHA_NODES = 7
"""Gauss-Hermite nodes over the sampling spread of ``alpha_hat`` per draw."""


@dataclass(frozen=True)
class PooledSpikes:
    """:func:`pooled_spikes`'s predictions (units of ``kappa``) and the null candidates of the same draws.

    Attributes
    ----------
    lambda1, lambda1_se, overlap, overlap_se : ndarray (snr,)
        Means over the draws of ``E max(outlier, null lambda_1)`` and of the top alignment, and the
        standard errors of those means.
    location, scale : ndarray (draws, 1 + CANDIDATES)
        The null's candidates per draw (:func:`.null_law.pooled_null`'s, from the same draws).
    """

    lambda1: Float
    lambda1_se: Float
    overlap: Float
    overlap_se: Float
    location: Float
    scale: Float


def gauss_quadrature(matvec, v: Float, steps: int) -> tuple[Float, Float]:
    """Nodes and weights (summing to 1) of the Gauss quadrature of ``v / |v|``'s spectral measure.

    Lanczos with full reorthogonalisation on the symmetric operator ``matvec``; stops early on an
    invariant subspace, where the quadrature is the measure itself.

    Examples
    --------
    >>> M = np.diag([1.0, 2.0, 3.0])
    >>> nodes, weights = gauss_quadrature(lambda x: M @ x, np.array([1.0, 1.0, 0.0]), 8)
    >>> np.round(nodes, 12).tolist(), np.round(weights, 12).tolist()
    ([1.0, 2.0], [0.5, 0.5])
    """
    q = np.asarray(v, float) / np.linalg.norm(v)
    Q = np.empty((steps, q.size))
    diag: list[float] = []
    off: list[float] = []
    for j in range(steps):
        Q[j] = q
        z = matvec(q)
        diag.append(float(q @ z))
        for _ in range(2):                       # twice is enough (Kahan-Parlett)
            z -= Q[:j + 1].T @ (Q[:j + 1] @ z)
        b = float(np.linalg.norm(z))
        if j == steps - 1 or b <= 1e-10 * (max(abs(x) for x in diag) + max(off, default=0.0)):
            break
        off.append(b)
        q = z / b
    if not off:
        return np.array(diag), np.ones(1)
    nodes, vecs = scipy.linalg.eigh_tridiagonal(np.array(diag), np.array(off))
    return nodes, vecs[0] ** 2


@functools.cache
def _tw_table() -> tuple[Float, Float]:
    """``TW_1``'s cdf on [-10, 8] (0.1 s once, where each draw's own evaluation took 0.1 s; interpolated on a
    draw's grid it agreed with :func:`.null_law.mixture_cdf` to 1e-9)."""
    s = np.linspace(-10.0, 8.0, 801)
    return s, tw_cdf(s)


def _null_mean_above(loc: Float, scale: Float) -> tuple[Float, Float, Float]:
    """A grid ``x``, the draw's null cdf ``F(x)`` (:func:`.null_law.mixture_cdf` of one draw, its Tracy-Widom
    factor interpolated) and ``I(x) = int_x^inf (1 - F)`` (so ``E max(l, X) = l + I(l)``)."""
    width = np.where(np.isnan(loc), 0.0, scale)
    x = np.linspace(loc[0] - 10.0 * scale[0], np.nanmax(loc + 8.0 * width), 801)
    s, tw = _tw_table()
    spikes = [ndtr((x - m) / sd) for m, sd in zip(loc[1:], scale[1:], strict=True) if np.isfinite(m)]
    F = np.interp((x - loc[0]) / scale[0], s, tw, left=0.0, right=1.0) * np.prod(spikes, axis=0)
    rest = 1.0 - F
    steps = 0.5 * (rest[1:] + rest[:-1]) * np.diff(x)
    return x, F, np.append(np.cumsum(steps[::-1])[::-1], 0.0)


def _draw_prediction(snr: Float, p: Float, nodes: Float, weights: Float, alpha: float, alpha_var: float,
                     kappa: float, delta: float, d: int, tail: float) -> tuple[Float, Float, Float, Float]:
    """``(lambda1, overlap, location, scale)`` of one draw (module docstring), over ``snr``."""
    nu, g_edge, loc, scale = null_parts(p, delta, d, tail, half=True)     # the detection null's candidates
    x, F, above = _null_mean_above(loc, scale)
    z, hw = np.polynomial.hermite_e.hermegauss(ALPHA_NODES)
    c = np.clip(alpha + np.sqrt(alpha_var) * z, 0.0, None)[None, :] * snr[:, None] / kappa   # (snr, node)
    nodes = np.clip(nodes, 0.0, None)
    hi = g_edge if nodes.max() <= 0 else min(g_edge, 1.0 / (delta * nodes.max()))
    hi *= 1.0 - 1e-12

    def e_beta(G: Float, power: int = 1) -> Float:
        return (weights * nodes ** (power - 1) / (1.0 - delta * nodes * G[..., None]) ** power).sum(-1)

    exists = c * hi * e_beta(np.array(hi)) > 1.0
    lo_, hi_ = bisect(lambda mid: c * mid * e_beta(mid) < 1.0,   # c G E beta(G) increases with G below the poles
                      np.zeros(c.shape), np.full(c.shape, hi), 100)
    G = np.where(exists, 0.5 * (lo_ + hi_), hi)
    m = moments_g(G, nu, delta)
    align = -(G**2) * m["dl"] / (1.0 + G**2 * c * delta * e_beta(G, 2))
    l_out = np.where(exists, m["l"], x[0])
    lam = np.maximum(l_out, x[0]) + np.interp(l_out, x, above, right=0.0)
    on_top = np.where(exists, np.interp(l_out, x, F, left=0.0, right=1.0), 0.0)
    # else the top eigenvector is the bulk's, still tilted toward u by the spike: Phi = c G E beta at the edge
    eb, eb2 = e_beta(np.array(hi)), e_beta(np.array(hi), 2)
    phi, slope, numerator = c * hi * eb, c * (eb + hi * delta * eb2), 1.0 + c * delta * hi**2 * eb2
    bulk = bulk_overlap_factor(phi, slope, numerator, scale[0], d)
    ov = on_top * align + (1.0 - on_top) * bulk / d
    # in the critical window, what the maximum of two candidates misses (the spiked window law, .window_law); above
    # the threshold the coordinate is the outlier's exit from the bulk's edge, w^2 scales, which grows without bound
    exit_w = np.sqrt(np.clip(l_out - edge_point(nu, delta, tail=tail)[1], 0.0, None) / scale[0])
    w_c = np.where(exists, exit_w, window_coordinate(phi, slope, scale[0], d))
    lam = lam + scale[0] * lift(w_c)
    ov = ov + overlap_unit(slope, numerator, scale[0], d) * lean(w_c)
    hw = hw / hw.sum()
    return lam @ hw, ov @ hw, loc, scale


def spike_record(draw: PoolingDraw, p: Float, model: CellModel) -> dict[str, Float]:
    """What :func:`pooled_spikes` keeps of one draw: ``D``'s eigenvalues ``p``, the Gauss quadrature of the pooled
    signs' spectral measure (``nodes``, ``weights``) and ``var(a^2)`` (``a2var``)."""
    scale_d = model.V / (model.N * float(model.w @ model.w))
    nodes, weights = gauss_quadrature(lambda v: scale_d * draw.matvec(v), draw.a, LANCZOS_STEPS)
    return {"p": p, "nodes": nodes, "weights": weights, "a2var": np.array([np.var(draw.a**2)])}


def pooled_stream(w: ArrayLike, correlation: Correlation, delta: float, gamma: float, d: int, *,
                  draws: int = POOLED_DRAWS, seed: int = 0) -> tuple[CellModel, np.random.Generator, str | None]:
    """The cell, the generator of its draws and its cache key: what decides :func:`pooled_spikes`' draws.

    Its draws are :func:`.pooling.pooled_spectra` of the two, each kept as :func:`spike_record`; a caller may
    compute them apart (:func:`.pooling.draw_batches`, :func:`.pooling.batch_records`) and hand them back as
    ``records``.
    """
    w = np.asarray(w, float)
    model, rng = pooled_model(w, correlation, delta, gamma, d), pooled_seed(w, delta, gamma, d, seed)
    key = entry_key("pooled-draws", model, pooled_seed_words(w, delta, gamma, d, seed), draws,
                    lanczos_steps=LANCZOS_STEPS)
    return model, rng, key


def pooled_spikes(snr: ArrayLike, w: ArrayLike, correlation: Correlation, delta: float, gamma: float, d: int, *,
                  draws: int = POOLED_DRAWS, seed: int = 0, cache: DrawCache | None = None,
                  records: list[dict[str, Float]] | None = None) -> PooledSpikes:
    """``lambda_1 / kappa`` and the top alignment at size ``d`` for fixed weights ``w`` over ``T >= 2`` positions.

    Over ``draws`` seeded draws of the realised pooling matrix, the draws of :func:`.null_law.pooled_null`
    (same seed, same null candidates). Derived in the module docstring; measured against simulation in
    docs/theory.md §6.5.

    Parameters
    ----------
    snr
        SNR values (``||mu||^2``).
    w, correlation
        The cell's weights and sign-correlation model.
    delta, gamma, d
        Ratios and dimension (``V = d / delta``, ``N = d / gamma``).
    cache
        Where each draw's eigenvalues, quadrature and ``var(a^2)`` are kept between calls
        (:func:`.pooling.cached_draws`; the same result with or without it).
    records
        The draws' :func:`spike_record` computed elsewhere, in order (:func:`pooled_stream`): kept in ``cache``,
        not computed again.
    """
    snr = np.atleast_1d(np.asarray(snr, float))
    w = np.asarray(w, float)
    model, rng, key = pooled_stream(w, correlation, delta, gamma, d, draws=draws, seed=seed)
    kappa = float(w @ w)
    alpha = float(w @ correlation.matrix(w.size) @ w)
    tail = min(0.5, POOLED_TAIL / d)

    def record(draw: PoolingDraw, p: Float) -> dict[str, Float]:
        return spike_record(draw, p, model)

    with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
        if records is None:
            records = cached_draws(model, rng, draws, record, key, cache)
        else:
            save_records(key, cache, records)
        out = [_draw_prediction(snr, rec["p"], rec["nodes"], rec["weights"], alpha, float(rec["a2var"][0]) / model.N,
                                kappa, delta, int(d), tail)
               for rec in records]
    lam, ov = np.array([o[0] for o in out]), np.array([o[1] for o in out])

    def se(x: Float) -> Float:
        return x.std(axis=0, ddof=1) / np.sqrt(draws) if draws > 1 else np.full(snr.size, np.nan)

    return PooledSpikes(lam.mean(0), se(lam), ov.mean(0), se(ov), np.array([o[2] for o in out]),
                        np.array([o[3] for o in out]))
