"""Finite size at ``T = 1``: the spikes over the realised token counts (docs/theory.md §6.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .finite_d import bulk_overlap_factor
from .finite_t import edge_point, location, outlier
from .token_law import empirical_law

__all__ = ["MIN_TOKENS", "RealisedCounts", "bulk_overlap", "null_top", "realised_count_spikes", "seed_words"]

MIN_TOKENS = 3
"""Token counts shared by at least this many tokens form the bulk; rarer, higher counts are single spikes.

Chosen on ``sweeps/finite-t-one-token.yaml`` (d = 400; 3 and 4 fit, 6 and more are 0.05-0.6 kappa low) and
checked on ``sweeps/finite-t-alignment.yaml`` (d = 100-800, other seeds): |z| <= 1.9 in 12 of 12 cells."""

Float = NDArray[np.float64]


@dataclass(frozen=True)
class RealisedCounts:
    """Finite-size predictions of :func:`realised_count_spikes` (in units of ``kappa``), over ``rho``.

    Attributes
    ----------
    lambda1, lambda1_se : ndarray
        Mean of ``max(signal outlier, top of the spectrum)`` over token-count draws, and the Monte
        Carlo standard error of that mean.
    overlap, overlap_se : ndarray
        Mean alignment of the top eigenvector with ``u`` (in a draw whose signal outlier sits below the top
        of the spectrum, the top eigenvector's lean toward ``u``, :func:`bulk_overlap`), and its error.
    top, top_sd : float
        Mean and spread over draws of the top eigenvalue without signal (:func:`null_top`).
    draws : int
    """

    lambda1: Float
    lambda1_se: Float
    overlap: Float
    overlap_se: Float
    top: float
    top_sd: float
    draws: int


def seed_words(*values: float) -> list[int]:
    """The bit patterns of ``values`` as float64, as words of a seed: a seed that differs for every different value."""
    return [int(np.float64(v).view(np.uint64)) for v in values]


def null_top(counts: np.ndarray, V: int, N: int, delta: float, min_tokens: int = MIN_TOKENS) -> float:
    """The top eigenvalue of ``S/kappa`` without signal, given the token counts (``T = 1``).

    A count held by ``min_tokens`` tokens or more is part of the bulk: the deterministic equivalent over
    those tokens' empirical law, whose main edge is one candidate. A token with a rarer, higher count
    ``c`` is a rank-one spike ``(c/N) e_v e_v^T`` of that bulk (``e_v`` independent of it): its eigenvalue
    solves ``gamma c G(l) = 1``, i.e. ``l = l(G)`` at ``G = N / (d c)`` (the pole of its atom), when that
    lies above the edge (``G < G_e``); at a tiny ``V`` where no count is held by ``min_tokens`` tokens,
    the counts held by the most tokens form the bulk. The top eigenvalue is the largest candidate. The top of the
    full law's support instead reaches above a piece's single eigenvalue (0.1-0.3 kappa high at d = 400).
    """
    values, holders = np.unique(counts, return_counts=True)
    bulk_max = values[holders >= min(min_tokens, holders.max())].max()   # tiny V: no count may have min_tokens
    p = V * counts / N
    nu = empirical_law(p[counts <= bulk_max])
    g_edge, top = edge_point(nu, delta)
    for c in values[values > bulk_max]:
        G = N / (delta * V * c)                     # 1 / (delta p) at p = V c / N
        if G < g_edge:
            top = max(top, float(location(G, nu, delta)))
    return top


def bulk_overlap(rho: ArrayLike, nu, delta: float, g_top: float, d: int) -> Float:
    """``E |u_1^T u|^2`` when the top eigenvector is the support's (no signal outlier above it), ``T = 1``.

    The 2 x 2 reduction of :func:`.finite_t.outlier` gives ``u^T (l - S)^(-1) u = G / (1 - Phi(G))`` with
    ``Phi = (rho / delta)(1 - 1 / E_nu[beta(G)])`` (``Phi = 1`` is the outlier's equation), so below the
    threshold the top eigenvector still leans toward ``u``: :func:`.finite_d.bulk_overlap_factor` ``/ d`` at the
    top of the support ``g_top`` (``1/d`` at ``rho = 0``), with its own square-root edge's Tracy-Widom scale.
    """
    rho = np.asarray(rho, float)
    beta = 1.0 / (1.0 - delta * nu.points * g_top)
    eb, deb = float(beta @ nu.weights), float(delta * (nu.points * beta**2) @ nu.weights)
    phi = rho / delta * (1.0 - 1.0 / eb)
    slope = rho / delta * deb / eb**2
    curvature = 2.0 / g_top**3 + 2.0 * delta**2 * float((nu.points**3 * beta**3) @ nu.weights)   # l''(G) at the top
    sigma = (np.sqrt(2.0 / curvature) * d) ** (-2.0 / 3.0)
    return bulk_overlap_factor(phi, slope, 1.0 - phi + g_top * slope, sigma, d) / d


def realised_count_spikes(rho: ArrayLike, delta: float, gamma: float, d: int, *, draws: int = 32,
                          seed: int = 0) -> RealisedCounts:
    """``lambda_1`` and the top alignment at size ``d`` and ``T = 1``, over the realised token counts.

    At ``T = 1`` (or any one-hot weights) ``D = (V/N) diag(counts)``: the only randomness that does not
    average out at finite size is the vector of token counts, multinomial(N, uniform over V) whatever
    the sign correlation. Given the counts, the deterministic equivalent of ``S/kappa`` is the bulk law
    over their empirical law (:func:`empirical_law`), in which every token is an atom of mass ``1/d``:
    a token seen ``k`` times is a separate component holding one eigenvalue. This draws ``draws``
    count vectors (seeded by ``seed`` and the values of ``delta``, ``gamma``, ``d``) and in each takes
    the signal outlier above the top of the support (:func:`outlier` with ``tail = 1/(2d)``), with its
    alignment, or else the top eigenvalue without signal (:func:`null_top`). The limit law
    (:func:`poisson_law`) is the ``d -> inf`` limit of this; at ``d = 400`` its pieces above the main
    bulk are mostly empty, which is why the limit formula's alignment is too low near the threshold
    (docs/theory.md §6.1).

    Derived, except :data:`MIN_TOKENS` (one integer, chosen on one sweep and checked on another).
    """
    rho = np.atleast_1d(np.asarray(rho, float))
    V, N = round(d / delta), round(d / gamma)
    rng = np.random.default_rng(np.random.SeedSequence([seed, *seed_words(delta, gamma), int(d)]))
    tail = 0.5 / d
    lam, ov, tops = np.empty((draws, rho.size)), np.empty((draws, rho.size)), np.empty(draws)
    for i in range(draws):
        counts = np.bincount(rng.integers(V, size=N), minlength=V)
        nu = empirical_law(V * counts / N)
        g_top, support = edge_point(nu, delta, tail=tail)
        tops[i] = null_top(counts, V, N, delta)
        loc, align = outlier(rho, nu, delta, tail=tail)
        above = loc > support * (1 + 1e-12)
        lam[i], ov[i] = np.where(above, np.maximum(loc, tops[i]), tops[i]), np.where(
            above, align, bulk_overlap(rho, nu, delta, g_top, d))
    se = (lambda x: x.std(axis=0, ddof=1) / np.sqrt(draws)) if draws > 1 else (lambda x: np.full(rho.size, np.nan))
    return RealisedCounts(lam.mean(0), se(lam), ov.mean(0), se(ov), float(tops.mean()),
                          float(tops.std(ddof=1)) if draws > 1 else np.nan, draws)
