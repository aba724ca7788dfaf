"""The null distribution of the top eigenvalue at a store's size, and its upper quantiles (docs/theory.md §6.4).

A detection at false-alarm level ``alpha`` declares an outlier when ``lambda_1 / kappa`` exceeds the
``1 - alpha`` quantile of its distribution without signal. Three nulls, by the cell's law and weights
(``theory_law``):

**The cubic bulk** (``theory_law = 0``): ``lambda_1 / kappa = lambda_+ + sigma_d TW_1``
(:mod:`.finite_d`, edge universality), so the threshold is ``lambda_+ + sigma_d q_{1-alpha}`` with
``q`` the quantile of ``TW_1`` (:func:`tw_threshold`).

**One token per sequence** (``theory_law = 1``, derived here). Given the token counts, the bulk of
``S / kappa`` is the main component of the law over the tokens' ``p = V c / N`` (the component that
holds the median), and a token whose atom lies above it, count ``c``, is a rank-one term ``(c/N) z z^T`` of it with
``z ~ N(0, I_d)`` independent of the rest ``W``. Its eigenvalue ``l`` solves
``(c/N) z^T (l - W)^(-1) z = 1``. The quadratic form has mean ``d G(l)`` and variance
``2 d g2(l)``, ``g2 = (1/d) tr (l - W)^(-2) = -dG/dl = 1 / |l'(G)|`` in the parametrisation
``l(G)`` of :func:`.finite_t.location`, so to first order ``l = l(G_c) + s eps`` with
``G_c = N / (d c)``, ``eps ~ N(0, 1)`` and ``s = sqrt(2 |l'(G_c)| / d)``. The main bulk's edge
``l_e = l(G_e)`` fluctuates on the Tracy-Widom scale of its own square-root edge: with
``l(G) ≈ l_e + l''(G_e) (G - G_e)^2 / 2`` the density is ``(c_e / pi) sqrt(l_e - x)``,
``c_e = sqrt(2 / l''(G_e))``, so ``sigma = (c_e d)^(-2/3)`` (the scale of :func:`.finite_d.tw_scale`
for the cubic; the two agree for ``nu = delta_1``, tested). Treating the candidates as independent
given the counts, ``P(lambda_1 <= x | counts) = F_1((x - l_e) / sigma) prod_c Phi((x - l_c) / s_c)``;
the null law is its average over seeded draws of the counts (:func:`count_null`), and
:func:`mixture_quantile` inverts it.

**Fixed weights over ``T >= 2`` positions** (derived here): given the sequences, ``S / kappa`` is
``(1/V) Z^T D Z`` with ``D`` the realised pooling matrix's ``(V / (N kappa)) A^T A``, independent of ``Z``,
so the same construction applies to ``D``'s eigenvalues (:func:`pooled_null`, averaged over seeded draws
of the tokens and signs).

**Finite-size centring** (:func:`matched_edge`, the default of :func:`count_null` and :func:`pooled_null`).
The bulk edge's candidate gets Johnstone's real-case centring and scaling with ``n - 1/2`` and ``d - 1/2`` (Ma
2012 shows it cuts the error at conventional levels to second order) of the white Wishart whose edge has the
same location, curvature and third derivative: few tokens make the edge, so the shift is larger than with ``n``
all the tokens (:func:`half_corrected_edge`). Without it the tests at level 0.05 were conservative
(docs/theory.md §6.4).

Everything here is in units of ``kappa`` (eigenvalues of ``S / kappa``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr
from threadpoolctl import threadpool_limits

from ..model.correlation import Correlation, draw_signs
from ..model.replicate import CellModel, draw_tokens, token_weight_matrix
from ._common import broadcast
from .bulk import edge
from .finite_d import tw_scale
from .finite_t import moments_g, edge_point
from .pooling import DrawCache, padded_eigenvalues, cached_draws, draw_eigenvalues, entry_key, pooling_draw
from .token_counts import seed_words
from .token_law import DiscreteLaw, empirical_law
from .tracy_widom import tw_cdf, tw_quantile

__all__ = ["CANDIDATES", "POOLED_DRAWS", "POOLED_TAIL", "CountNull", "count_null", "count_null_draw", "gram",
           "gram_eigenvalues", "half_corrected_edge", "matched_edge", "mixture_cdf", "mixture_quantile", "null_parts",
           "pooled_model", "pooled_null", "pooled_seed", "pooled_seed_words", "pooling_eigenvalues", "pooling_matrix",
           "population_null_draw", "tw_threshold"]

Float = NDArray[np.float64]

CANDIDATES = 8
"""Spike candidates kept per count draw (the highest; a ninth lies far below the top at any size tested)."""


def tw_threshold(alpha: ArrayLike, delta: ArrayLike, gamma: ArrayLike, d: ArrayLike) -> Float:
    """``lambda_+ + sigma_d q_{1-alpha}``: the ``1 - alpha`` quantile of the top null eigenvalue of ``S / kappa``.

    Parameters
    ----------
    alpha
        False-alarm level in ``(0, 1)``.
    delta, gamma, d
        Ratios and dimension.

    Examples
    --------
    >>> t = tw_threshold(0.05, 0.5, 0.5, 400)
    >>> bool(edge(0.5, 0.5) < t < edge(0.5, 0.5) + 0.2)
    True
    """
    alpha, delta, gamma, d = broadcast(alpha, delta, gamma, d)
    q = tw_quantile(1.0 - alpha)                   # one root per distinct level, whatever the shape
    return np.asarray(edge(delta, gamma) + tw_scale(delta, gamma, d) * q)


@dataclass(frozen=True)
class CountNull:
    """The ``T = 1`` null at one size, over count draws (units of ``kappa``).

    Attributes
    ----------
    location : ndarray (draws, 1 + CANDIDATES)
        Column 0: the main bulk's edge ``l_e``; then the spike candidates ``l(G_c)``, highest first,
        NaN-padded.
    scale : ndarray (draws, 1 + CANDIDATES)
        Column 0: the edge's Tracy-Widom scale ``sigma``; then each spike's Gaussian sd ``s_c``.
    """

    location: Float
    scale: Float


def _second_derivative(G: float, nu, delta: float) -> float:
    """``l''(G) = 2/G^3 + 2 delta^2 E_nu[p^3 beta^3]``, ``beta = 1 / (1 - delta p G)``."""
    beta = 1.0 / (1.0 - delta * nu.points * G)
    return float(2.0 / G**3 + 2.0 * delta**2 * (nu.points**3 * beta**3) @ nu.weights)


def count_null_draw(counts: np.ndarray, V: int, N: int, delta: float, d: int, half: bool = False
                    ) -> tuple[Float, Float]:
    """Locations and scales of the null candidates given one draw of the token counts (module docstring).

    At ``T = 1`` the population of ``S / kappa`` is diagonal, ``p = V c / N`` per token
    (:func:`population_null_draw`). Nothing is calibrated.
    """
    return population_null_draw(V * np.asarray(counts, float) / N, delta, d, half=half)


def population_null_draw(p: ArrayLike, delta: float, d: int, tail: float = 0.5, half: bool = False
                         ) -> tuple[Float, Float]:
    """Locations and scales of the null candidates of ``S / kappa = (1/V) Z^T D Z`` given ``D``'s eigenvalues ``p``.

    ``Z`` (``V x d``) has independent standard normal entries and ``D`` is independent of it, so ``Z``
    may be rotated into ``D``'s eigenbasis: only the ``V`` eigenvalues ``p`` matter. The bulk is the
    main component of the law over ``p`` (the component that holds the median,
    :func:`.finite_t.edge_point`); every ``p`` whose atom lies above it (its pole ``1 / (delta p)``
    below the component's ``G_e``) is a spike of that bulk, the :data:`CANDIDATES` highest kept. At
    ``T = 1`` the ``p`` are the scaled token counts (:func:`count_null_draw`); for longer sequences
    they are the eigenvalues of the realised pooling matrix's ``(V / (N kappa)) A^T A`` (:func:`pooled_null`).
    ``tail`` (a fraction of the ``d`` eigenvalues) bounds the search: the bulk is the component below the
    lowest gap with at most that mass above it (0.5: the component that holds the median).
    """
    return null_parts(p, delta, d, tail, half)[2:]


def half_corrected_edge(nu: DiscreteLaw, delta: float, d: int, tail: float = 0.5) -> tuple[float, float]:
    """The bulk edge and its Tracy-Widom scale with ``n - 1/2``, ``d - 1/2`` put into the law as it is.

    ``S / kappa = (1/V) sum_j p_j z_j z_j^T`` is a weighted sample covariance of the ``n`` tokens with
    ``p_j > 0`` in dimension ``d``; here the law over those ``n`` (rescaled to keep ``S``'s mean) is taken at
    ratio ``(d - 1/2) / (n - 1/2)`` and its edge and scale times ``(n - 1/2) / n``. Exact for ``nu = delta_1``
    (Johnstone's ``mu_np``, ``sigma_np``); too small a correction otherwise, so the store uses :func:`matched_edge`.
    """
    p, wt = nu.points, nu.weights
    keep = p > 0
    f = float(wt[keep].sum())                          # the fraction of tokens drawn
    n = f / delta * d                                  # their number (V f, with V = d / delta)
    law = DiscreteLaw(p[keep] * f, wt[keep] / f)
    ratio = (d - 0.5) / (n - 0.5)
    g_edge, top = edge_point(law, ratio, tail=tail)
    sigma = (np.sqrt(2.0 / _second_derivative(g_edge, law, ratio)) * (d - 0.5)) ** (-2.0 / 3.0)
    shrink = (n - 0.5) / n
    return top * shrink, sigma * shrink


def _johnstone(n: float, p: float) -> tuple[float, float]:
    """Johnstone's ``(mu_np, sigma_np)`` of a white real Wishart ``W_p(I, n)``, unnormalised."""
    a, b = np.sqrt(n), np.sqrt(p)
    return (a + b) ** 2, (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)


def matched_edge(nu: DiscreteLaw, delta: float, d: int, tail: float = 0.5) -> tuple[float, float]:
    """The bulk edge and its Tracy-Widom scale with the real-case finite-size centring of the matched white Wishart.

    For white real Wishart matrices the top eigenvalue is centred and scaled far better at finite size with
    ``n - 1/2`` and ``d - 1/2`` in place of ``n`` and ``d`` (Johnstone 2001; Ma 2012, Bernoulli 18: the error
    at conventional levels falls from ``O(n^(-1/3))`` to ``O(n^(-2/3))``). For a general ``nu`` (derived here,
    docs/theory.md §6.4) the edge of the deterministic equivalent is matched to a white Wishart's,
    ``s W_d'(I, n') / n'``. Its ``l_w(G) = 1/G + s / (1 - c s G)`` has ``G_e l_w'''(G_e) / l_w''(G_e) =
    3 (sqrt(c) - 1)`` whatever ``s``, so the shape ``rho = G_e l'''(G_e) / l''(G_e)`` of ``nu``'s edge fixes
    ``c' = (1 + rho / 3)^2``; the edge fixes ``s = l_e / (1 + sqrt(c'))^2``; the Tracy-Widom scale (the
    curvature ``l''``) fixes ``d' = d sqrt(l_w'' / l'')``, and ``n' = d' / c'``. That Wishart has the same
    edge, scale and third derivative, and its correction (Johnstone's ``mu``, ``sigma`` with ``n' - 1/2``,
    ``d' - 1/2`` against ``n'``, ``d'``) is added. ``n'`` counts the tokens that make the edge: where a few
    large ``p`` hold it (``n'`` of 2-50 at these sizes) the shift is larger than ``n - 1/2`` over all the
    tokens gives (:func:`half_corrected_edge`); for ``nu = delta_1`` the two agree (``n' = n``, ``d' = d``).
    ``n'`` and ``d'`` are kept at 1 or more.
    """
    g_edge, top = edge_point(nu, delta, tail=tail)
    beta = 1.0 / (1.0 - delta * nu.points * g_edge)
    l2 = _second_derivative(g_edge, nu, delta)
    l3 = float(-6.0 / g_edge**4 + 6.0 * delta**3 * (nu.points**4 * beta**4) @ nu.weights)
    sigma = (np.sqrt(2.0 / l2) * d) ** (-2.0 / 3.0)
    root_c = max(1.0 + g_edge * l3 / (3.0 * l2), 1e-6)        # sqrt(c'), from the shape at the edge
    s = top / (1.0 + root_c) ** 2
    l2_white = 2.0 * s**3 * root_c**3 * (1.0 + root_c) ** 4  # l_w''(G_e) = 2 s^3 c^(3/2) (1 + sqrt c)^4
    d_w = max(d * np.sqrt(l2_white / l2), 1.0)
    n_w = max(d_w / root_c**2, 1.0)
    (mu, sd), (mu_h, sd_h) = _johnstone(n_w, d_w), _johnstone(n_w - 0.5, d_w - 0.5)
    return top + s * (mu_h - mu) / n_w, sigma * sd_h / sd


def null_parts(p: ArrayLike, delta: float, d: int, tail: float = 0.5, half: bool = False
               ) -> tuple[DiscreteLaw, float, Float, Float]:
    """``(nu, G_e, location, scale)``: :func:`population_null_draw`'s candidates with the bulk's law and edge point.

    ``nu`` is the empirical law of the ``p`` that form the main bulk and ``G_e`` its edge's ``G``
    (:func:`.finite_t.edge_point`): what a signal outlier over the same ``D`` needs (:mod:`.pooled_spikes`).
    ``half``: the edge candidate with the finite-size centring of :func:`matched_edge`.
    """
    p = np.asarray(p, float)
    with np.errstate(divide="ignore"):
        pole = 1.0 / (delta * p)
    g_all, _ = edge_point(empirical_law(p), delta, tail=tail)
    nu = empirical_law(p[pole >= g_all])
    g_edge, top = edge_point(nu, delta, tail=tail)
    loc, scale = np.full(1 + CANDIDATES, np.nan), np.full(1 + CANDIDATES, np.nan)
    loc[0], scale[0] = top, (np.sqrt(2.0 / _second_derivative(g_edge, nu, delta)) * d) ** (-2.0 / 3.0)
    if half:
        loc[0], scale[0] = matched_edge(nu, delta, d, tail)
    G = np.sort(pole[pole < g_all])[:CANDIDATES]
    G = G[G < g_edge]
    if G.size:
        m = moments_g(G, nu, delta)
        loc[1:1 + G.size], scale[1:1 + G.size] = m["l"], np.sqrt(2.0 * np.abs(m["dl"]) / d)
    return nu, g_edge, loc, scale


def count_null(delta: float, gamma: float, d: int, *, draws: int = 64, seed: int = 0, half: bool = True
               ) -> CountNull:
    """The ``T = 1`` null over ``draws`` seeded multinomial count vectors at ``V = d / delta``, ``N = d / gamma``.

    Seeded like :func:`.token_counts.realised_count_spikes` (by ``seed`` and the values of ``delta``,
    ``gamma``, ``d``), from its own stream. ``half``: the bulk edge with the finite-size centring of
    :func:`matched_edge` (the default; ``False`` gives the edge of the deterministic equivalent as it is).
    """
    V, N = round(d / delta), round(d / gamma)
    rng = np.random.default_rng(np.random.SeedSequence([seed, *seed_words(delta, gamma), int(d), 1]))
    out = [count_null_draw(np.bincount(rng.integers(V, size=N), minlength=V), V, N, delta, int(d), half)
           for _ in range(draws)]
    return CountNull(np.array([o[0] for o in out]), np.array([o[1] for o in out]))


POOLED_DRAWS = 16
"""Draws of the pooling matrix per cell of :func:`pooled_null`. With 8 the 0.95 quantile of the mixture moved by
up to 0.4 of the null's spread with the seed of the draws where a few tokens make the top of ``D``'s spectrum,
and its noise raised the false alarms (docs/theory.md §6.4); 16 halve its variance and keep a store of
d = 1000, ``V = N = 2000`` within the setting ``rmtsweep.theory.pooled-budget``."""

POOLED_TAIL = 16
"""Eigenvalues from the top within which :func:`pooled_null` looks for a gap of the support: on 36 cells at
d = 100-200 its null was the same whether the search stopped 1, 2, 4, 8 or 16 eigenvalues from the top or
went down to the median (docs/theory.md §6.4); the bound keeps a cell cheap."""


def pooling_matrix(model: CellModel, rng: np.random.Generator) -> tuple[Float, Float]:
    """``(A, a)`` for one draw of the cell's signs and tokens: the dense ``N x V`` token-weight matrix
    (:func:`.token_weight_matrix`) centred within each class, as the class-centred table is, and the
    pooled signs ``a = xi w`` (the signal's coefficient of each sequence, ``A s`` before the centring).

    The dense float64 reference of :func:`.pooling.pooling_draw` (the same generator calls), with :func:`gram` and
    :func:`gram_eigenvalues`."""
    xi, _ = draw_signs(model.correlation, model.T, model.N, rng)
    A = token_weight_matrix(draw_tokens(model, xi, rng), model.w, model.V).toarray()
    n_pos = model.n_pos
    A[:, :n_pos] -= A[:, :n_pos].mean(1, keepdims=True)
    A[:, n_pos:] -= A[:, n_pos:].mean(1, keepdims=True)
    return A, xi @ model.w


def gram(A: Float) -> Float:
    """The smaller Gram matrix of ``A``: ``A A^T`` if ``A`` has no more rows than columns, else ``A^T A``."""
    return A @ A.T if A.shape[0] <= A.shape[1] else A.T @ A


def gram_eigenvalues(K: Float, model: CellModel) -> Float:
    """The ``V`` eigenvalues of ``D = (V / (N kappa)) A^T A`` from :func:`gram` ``K`` (zeros for the rest), in
    float64: the reference of :func:`.pooling.draw_eigenvalues`."""
    return padded_eigenvalues(np.linalg.eigvalsh(K), model)


def pooling_eigenvalues(model: CellModel, rng: np.random.Generator) -> Float:
    """The ``V`` eigenvalues of ``D = (V / (N kappa)) A^T A`` for one draw of the cell's signs and tokens.

    ``A`` (``N x V``) holds each sequence's pooling weights on its tokens (:func:`.pooling.pooling_draw`),
    centred within each class as the class-centred table is; the table's noise ``Z`` is independent of it.
    """
    return draw_eigenvalues(pooling_draw(model, rng), model)


def pooled_seed_words(w: Float, delta: float, gamma: float, d: int, seed: int = 0) -> list[int]:
    """The entropy of :func:`pooled_seed`'s generator."""
    return [seed, *seed_words(delta, gamma, *w), int(d), 2]


def pooled_seed(w: Float, delta: float, gamma: float, d: int, seed: int = 0) -> np.random.Generator:
    """The generator of :func:`pooled_null`'s draws (by ``seed`` and the values of ``w``, ``delta``, ``gamma``,
    ``d``)."""
    return np.random.default_rng(np.random.SeedSequence(pooled_seed_words(w, delta, gamma, d, seed)))


def pooled_model(w: Float, correlation: Correlation, delta: float, gamma: float, d: int) -> CellModel:
    """The cell at ``V = d / delta``, ``N = d / gamma`` on a class-centred table."""
    return CellModel(d=int(d), V=round(d / delta), N=round(d / gamma), T=w.size, w=w, correlation=correlation,
                     centering="class", top_k=1)


def pooled_null(w: ArrayLike, correlation: Correlation, delta: float, gamma: float, d: int, *,
                draws: int = POOLED_DRAWS, seed: int = 0, half: bool = True,
                cache: DrawCache | None = None) -> CountNull:
    """The null of ``lambda_1 / kappa`` for fixed weights ``w`` (``T >= 2``) over ``draws`` seeded pooling matrices.

    Without signal ``S / kappa = (1/V) Z^T D Z`` (class-centred table), so given the realised ``D`` only its
    eigenvalues matter (:func:`pooling_eigenvalues`), and :func:`population_null_draw` gives the candidates
    of each draw: the main bulk's edge of the deterministic equivalent over them, with its own Tracy-Widom
    scale (their law has no ties, and its support had no gap within :data:`POOLED_TAIL` eigenvalues of the top
    in any cell measured, so in practice this is the top of the support, without spikes). Seeded by ``seed``
    and the values of ``w``, ``delta``, ``gamma``, ``d``; ``half`` as in :func:`count_null`. ``cache`` keeps the
    draws' eigenvalues between calls (:func:`.pooling.cached_draws`; the same result). Measured against
    simulation in docs/theory.md §6.4.
    """
    w = np.asarray(w, float)
    model, rng = pooled_model(w, correlation, delta, gamma, d), pooled_seed(w, delta, gamma, d, seed)
    key = entry_key("pooled-eigenvalues", model, pooled_seed_words(w, delta, gamma, d, seed), draws)
    # one BLAS thread (beside busy workers, threads only contend); the gap search meets poles exactly
    with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
        spectra = cached_draws(model, rng, draws, lambda _, p: {"p": p}, key, cache)
        out = [population_null_draw(rec["p"], delta, int(d), tail=min(0.5, POOLED_TAIL / d), half=half)
               for rec in spectra]
    return CountNull(np.array([o[0] for o in out]), np.array([o[1] for o in out]))


def mixture_cdf(x: ArrayLike, location: ArrayLike, scale: ArrayLike) -> Float:
    """``P(lambda_1 <= x)`` under a :class:`CountNull` (or any edge + Gaussian candidates), averaged over draws.

    ``location`` and ``scale`` are ``(..., draws, candidates)``; column 0 is a Tracy-Widom edge, the
    others Gaussian; NaN candidates are absent. ``x`` broadcasts against ``location[..., 0, 0]``.
    """
    x = np.asarray(x, float)[..., None, None]
    loc, scale = np.asarray(location, float), np.asarray(scale, float)
    with np.errstate(invalid="ignore", divide="ignore"):
        edge_part = tw_cdf((x[..., 0] - loc[..., 0]) / scale[..., 0])
        spikes = ndtr((x - loc[..., 1:]) / scale[..., 1:])
    spikes = np.where(np.isnan(loc[..., 1:]), 1.0, spikes)
    return np.asarray((edge_part * spikes.prod(-1)).mean(-1))


def mixture_quantile(p: float, location: ArrayLike, scale: ArrayLike) -> float:
    """The ``p`` quantile of :func:`mixture_cdf` (one law: ``location`` is ``(draws, candidates)``); NaN if
    undefined."""
    loc, scale = np.asarray(location, float), np.asarray(scale, float)
    if not np.isfinite(loc[:, 0]).all() or not np.isfinite(scale[:, 0]).all():
        return float("nan")
    spread = np.nanmax(np.where(np.isnan(loc), 0, scale)) * 20 + 1e-12
    lo, hi = float(np.nanmin(loc)) - spread, float(np.nanmax(loc)) + spread
    from scipy.optimize import brentq      # here, not above: scipy.optimize is slow to import
    return float(brentq(lambda x: float(mixture_cdf(x, loc, scale)) - p, lo, hi, xtol=1e-10))
