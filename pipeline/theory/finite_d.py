"""Finite-``d`` theory: edge fluctuations, outlier fluctuations and the detection probability (docs/theory.md §6.2).

All eigenvalues are those of ``S / kappa`` (so the bulk edge is ``lambda_+`` of :func:`.bulk.edge`).

**Tracy-Widom scale (derived).** With ``g = z G(z)`` the bulk's Stieltjes transform is the inverse of
``z(g) = g (1 - delta + delta g)(1 - gamma + gamma g) / (g - 1)``; in ``g = 1 + 1/a`` this is
``lam(a) = (a + 1)(a + delta)(a + gamma) / a^2``, minimal at ``a_c`` (the edge, :mod:`.bulk`). Near the
edge ``z - lambda_+ ≈ lam''(a_c) a_c^4 (g - g_c)^2 / 2``, so for ``x < lambda_+`` the root has
``Im g ≈ -sqrt(2 (lambda_+ - x) / (lam'' a_c^4))`` and the density ``-Im g / (pi x)`` is
``(c / pi) sqrt(lambda_+ - x)`` with ``c = sqrt(2 / lam''(a_c)) / (a_c^2 lambda_+)``. Edge universality
(Lee & Schnelli 2016 for sample covariances with a general population, which is our model given the
table; El Karoui 2007 and Onatski 2008 for the Gaussian case) says the top eigenvalue of a real
symmetric ensemble whose ``d`` eigenvalues have this square-root edge is ``lambda_+ + sigma_d TW_1``
with the ``sigma_d`` that maps the edge onto the GOE one (``(1/pi) sqrt(2 - x)``, scale ``n^(-2/3)``):
``d c sigma_d^(3/2) = 1``, i.e. ``sigma_d = (c d)^(-2/3)``. The table's randomness moves the deterministic
edge only through a smooth linear statistic of its spectrum, ``O(1/d)``, below this scale. When
``delta -> 0`` (or ``gamma -> 0``: the law is symmetric) this is Johnstone's
``(1 + sqrt c)^(4/3) c^(-1/6) n^(-2/3)``, ``c`` the other ratio, ``n = d / c`` (tested).

**Outlier fluctuations (derived).** Two levels, conditionally independent. (1) The table: given it,
``Sigma / kappa = W + rho u u^T`` exactly (class-centred table), ``W ~ MP_delta``; its outlier ``ell``
solves ``u^T (ell - W)^(-1) u = 1/rho``, and the quadratic form of a uniform unit vector has variance
``(2/d)(-G' - G^2)``, so ``Var(ell) = (2/d) rho^2 zeta_pop (1 - zeta_pop)``. (2) The samples, given the
table: Bai & Yao 2008 (Paul 2007 for a white bulk), ``Var(lambda_1) = (ell^2 / N)(2 psi' + k4 psi'^2)``
with ``psi'`` of docs/theory.md §3.3 and ``k4`` the excess kurtosis of the samples' projection on the population
spike, ``k4 = (rho zeta_pop / ell)^2 kurt(b)``, ``b = w^T xi`` the pooled signs (the noise part of the
projection is Gaussian). Total ``Var = psi'^2 Var(ell) + (ell^2 gamma / d)(2 psi' + k4 psi'^2)``. Check:
near ``rho_c`` it is ``4 w sigma_d^2`` (``w^2 sigma_d`` = the outlier's exit above the edge), the GOE
spike's value, so both derived scales agree with the universal critical window.

**Detection probability (interpolation, documented).** Detection: ``lambda_1 > lambda_+ (1 + m d^(-2/3))``
(:mod:`rmtsweep.analysis.compare`), i.e. ``x_t = m lambda_+ c^(2/3)`` in Tracy-Widom units, independent of
``d``. The top eigenvalue is modelled as the larger of two independent candidates: the top bulk
eigenvalue ``lambda_+ + sigma_d TW_1`` and, above ``rho_c``, a Gaussian outlier ``N(psi(rho), Var)``;
``P = 1 - F_1(x_t) Phi((t - psi) / sd)``. It is continuous at ``rho_c`` (``sd -> 0``, ``psi -> lambda_+``),
tends to the Tracy-Widom false-alarm rate below and to the Gaussian law above; in the window
``|rho - rho_c| ~ d^(-1/3)`` it replaces the exact spiked law (Bloemendal & Virág 2013) by this maximum.

**Derived vs calibrated.** Nothing here is fitted: ``sigma_d``, the outlier variance and the
interpolation are derived; ``F_1`` is Bornemann's quadrature of its Fredholm determinant
(:mod:`.tracy_widom`, exact to about 1e-14; the ``tracywidom`` package it replaces was off by up to
4e-5, which moved the predicted probabilities by at most 5e-6). Checks, on runs not used for anything
else: the null mean/sd and the detection rate at d = 150, 300 (96 replicates) and
d = 100, 200, 400 (48 replicates) agree with the prediction in 98 % of cells
(3 binomial sigma + 0.03). Known bias, measured on the GOE rank-one spike (tridiagonal model,
n = 1e6, 4000 draws; universal, so not our model's data): for ``x_t = 1.23`` the exact window law
gives ``P = 0.05, 0.10, 0.20, 0.32`` at ``w = -3, -1, 0, 0.5`` where this interpolation gives
``0.035, 0.035, 0.035, 0.27`` (window coordinate ``w = (rho - rho_c) / sqrt(2 sigma_d / psi_rr)``,
``psi_rr = d^2 psi / d rho^2`` at ``rho_c``, so the outlier exits the edge by ``w^2 sigma_d``): a
subcritical spike already pushes the top eigenvalue up, which the maximum ignores; from ``w ≈ 1`` they
agree within 0.02. :mod:`.pooled_spikes` corrects its mean top eigenvalue and alignment with that window law
(:mod:`.window_law`); this probability does not. The transition shift ``rho_{1/2} - rho_c`` is ``∝ d^(-1/3)``
(fixed ``w``) only asymptotically; its local exponent here is -0.39 at d = 100 and -0.36 at d = 1000.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr

from ._common import broadcast, critical_a
from .bulk import edge
from .spikes import population_outlier, population_overlap, sample_outlier, sample_threshold
from .tracy_widom import tw_cdf

__all__ = [
    "TW1_MEAN",
    "TW1_SD",
    "bulk_overlap_factor",
    "detection_probability",
    "edge_density_coefficient",
    "null_top_eigenvalue",
    "outlier_sd",
    "pooled_sign_excess_kurtosis",
    "subcritical_overlap",
    "tw1_cdf",
    "tw_scale",
]

Float = NDArray[np.float64]

TW1_MEAN = -1.2065335745820  # mean of TW_1 (Bornemann 2010, Math. Comp. 79, table 10)
TW1_SD = float(np.sqrt(1.6077810345810))  # square root of its variance, same source


def tw1_cdf(x: ArrayLike) -> Float:
    """Distribution function ``F_1(x) = P(TW_1 <= x)`` of the GOE Tracy-Widom law.

    :func:`.tracy_widom.tw_cdf` with ``beta = 1``: Bornemann's Gauss-Legendre quadrature of the
    Fredholm determinant ``det(I - K_1)``, about 1e-14 absolute; 0 below -10 and 1 above 16, where
    ``F_1`` is 0 and 1 to double precision. ``-inf`` and ``inf`` give 0 and 1, NaN stays NaN. Each
    distinct value is computed once, so a threshold broadcast along ``rho`` costs one evaluation.
    """
    return tw_cdf(x, beta=1)


def edge_density_coefficient(delta: ArrayLike, gamma: ArrayLike) -> Float:
    """``c`` in ``density(x) ≈ (c / pi) sqrt(lambda_+ - x)`` as ``x -> lambda_+`` (module docstring).

    ``c = sqrt(2 / lam''(a_c)) / (a_c^2 lambda_+)`` with ``lam''(a_c) = lambda_+ [2/a^2 - 1/(a+1)^2
    - 1/(a+delta)^2 - 1/(a+gamma)^2]`` at ``a = a_c``. For Marchenko-Pastur of ratio ``c0`` it is
    ``c0^(-3/4) / (1 + sqrt(c0))^2``. ``inf`` when ``delta = gamma = 0`` (a point mass).
    """
    delta, gamma = broadcast(delta, gamma)
    a = critical_a(delta, gamma)
    lam = edge(delta, gamma)
    with np.errstate(divide="ignore", invalid="ignore"):
        curv = lam * (2.0 / a**2 - 1.0 / (a + 1.0) ** 2 - 1.0 / (a + delta) ** 2 - 1.0 / (a + gamma) ** 2)
        c = np.sqrt(2.0 / curv) / (a**2 * lam)
    return np.asarray(np.where(a > 0, c, np.inf))


def tw_scale(delta: ArrayLike, gamma: ArrayLike, d: ArrayLike) -> Float:
    """Tracy-Widom scale ``sigma_d = (c d)^(-2/3)`` of the top bulk eigenvalue of ``S / kappa``.

    Parameters
    ----------
    delta, gamma
        Ratios ``d / V`` and ``d / N``.
    d
        Dimension (number of eigenvalues of ``S``).

    Returns
    -------
    ndarray
        ``sigma_d``: ``lambda_max ≈ lambda_+ + sigma_d TW_1``. Johnstone's scale when one ratio is 0.

    Examples
    --------
    >>> round(float(tw_scale(0.0, 0.25, 100)), 5) == round((1.5 ** (4 / 3) * 0.25 ** (-1 / 6) * 400 ** (-2 / 3)), 5)
    True
    """
    delta, gamma, d = broadcast(delta, gamma, d)
    return np.asarray((edge_density_coefficient(delta, gamma) * d) ** (-2.0 / 3.0))


def null_top_eigenvalue(delta: ArrayLike, gamma: ArrayLike, d: ArrayLike) -> tuple[Float, Float]:
    """Predicted mean and standard deviation of the top eigenvalue of ``S / kappa`` without a spike:
    ``lambda_+ + sigma_d TW1_MEAN`` and ``sigma_d TW1_SD``."""
    delta, gamma, d = broadcast(delta, gamma, d)
    s = tw_scale(delta, gamma, d)
    return np.asarray(edge(delta, gamma) + s * TW1_MEAN), np.asarray(s * TW1_SD)


def bulk_overlap_factor(phi: ArrayLike, slope: ArrayLike, numerator: ArrayLike, sigma: ArrayLike, d: ArrayLike,
                        spread: float = -TW1_MEAN) -> Float:
    """``d E|u_1^T u|^2`` of a top eigenvector that belongs to the bulk, when a spike acts through ``phi``.

    Where the signal enters as a rank-one term, ``u^T (z - S)^(-1) u = G / (1 - Phi(G))`` with ``G`` the
    bulk's Stieltjes transform and ``1 = Phi`` the outlier's equation (for the cubic ``Phi = rho l G G~``,
    docs/theory.md §3.3; over a realised ``D``, :mod:`.pooled_spikes` and :mod:`.token_counts`). Inside the
    bulk ``G = G_e + i y``, so ``u``'s spectral weight per eigenvalue, relative to the uniform ``1/d``, is
    ``Im[G / (1 - Phi)] / Im G = (1 - Phi + G Phi') / |1 - Phi|^2`` (the isotropic local law of Bloemendal,
    Knowles, Yau and Yin 2016 makes this hold eigenvector by eigenvector near the edge). At the top eigenvalue,
    ``spread`` Tracy-Widom scales ``sigma`` below the edge on average (``-E TW_1``), ``y^2 = spread / (sigma d)^2``
    (the square-root edge ``Im G = c sqrt(lambda_+ - x)`` with ``sigma = (c d)^(-2/3)``), so

        factor = numerator / ((1 - phi)^2 + slope^2 spread / (sigma d)^2),

    ``phi``, ``slope = dPhi/dG`` and ``numerator = 1 - Phi + G Phi'`` at the edge. It is 1 without signal and
    stays finite through the threshold, where it is of order ``d^(2/3)`` (the critical window).
    """
    phi, slope, numerator, sigma, d = broadcast(phi, slope, numerator, sigma, d)
    return np.asarray(numerator / ((1.0 - phi) ** 2 + slope**2 * spread / (sigma * d) ** 2))


def subcritical_overlap(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike, d: ArrayLike) -> Float:
    """``E |u_1^T u|^2`` at size ``d`` when the top eigenvalue is the bulk's (the cubic law; derived here).

    :func:`bulk_overlap_factor` ``/ d`` with the cubic's ``Phi = rho l G G~``, ``G~ = gamma G + (1 - gamma)/l``.
    At the edge (``l G = 1 + 1/a_c``, ``l G~ = 1 + gamma/a_c``) ``Phi = rho / rho_c``, the numerator is
    ``1 + rho gamma (1 + 1/a_c)^2 / lambda_+`` and ``Phi' = rho (1 - gamma + 2 gamma (1 + 1/a_c))``. With
    ``delta -> 0`` the factor is ``(1 + rho) / (1 - rho / sqrt(gamma))^2`` away from the threshold, the
    subcritical projection of the classical spiked covariance. ``1/d`` at ``rho = 0``.

    Examples
    --------
    >>> round(float(subcritical_overlap(0.0, 0.5, 0.5, 300)) * 300, 12)
    1.0
    >>> bool(subcritical_overlap(1.7, 0.5, 0.5, 300) > 5 * subcritical_overlap(0.5, 0.5, 0.5, 300))
    True
    """
    rho, delta, gamma, d = broadcast(rho, delta, gamma, d)
    a = critical_a(delta, gamma)
    lam = edge(delta, gamma)
    lg = 1.0 + 1.0 / a
    phi = rho / sample_threshold(delta, gamma)
    numerator = 1.0 + rho * gamma * lg**2 / lam
    slope = rho * (1.0 - gamma + 2.0 * gamma * lg)
    return bulk_overlap_factor(phi, slope, numerator, tw_scale(delta, gamma, d), d) / d


def pooled_sign_excess_kurtosis(w: ArrayLike, q: ArrayLike) -> float:
    """Excess kurtosis ``E b^4 / (E b^2)^2 - 3`` of the pooled signs ``b = w^T xi`` of a label model.

    Given the label ``y`` the signs are independent with means ``q_t y``; the cumulants of
    ``w_t xi_t`` are ``w m, w^2 (1 - m^2), -2 w^3 m (1 - m^2), -2 w^4 (1 - m^2)(1 - 3 m^2)`` (``m = q_t y``),
    they add over ``t``, and the moments follow (the same for ``y = ±1``). ``-2/T`` for i.i.d. signs and
    mean weights; ``-2`` when ``|b|`` is constant (e.g. ``prefix(L)`` with optimal weights).

    Parameters
    ----------
    w
        Pooling weights (length ``T``).
    q
        Copy probabilities ``q_t`` of the label model (``Correlation.copy_probabilities(T)``).
    """
    w, m = (np.asarray(v, dtype=np.float64) for v in (w, q))
    k1, k2 = np.sum(w * m), np.sum(w**2 * (1 - m**2))
    k3, k4 = np.sum(-2 * w**3 * m * (1 - m**2)), np.sum(-2 * w**4 * (1 - m**2) * (1 - 3 * m**2))
    m2 = k2 + k1**2
    m4 = k4 + 4 * k3 * k1 + 3 * k2**2 + 6 * k2 * k1**2 + k1**4
    return float(m4 / m2**2 - 3.0) if m2 > 0 else 0.0


def _dpsi(rho: Float, delta: Float, gamma: Float) -> Float:
    """``psi'(ell(rho))`` of docs/theory.md §3.3 in closed form, ``(a^3 - p a - q) / (a (a^2 - delta))``,
    ``a = rho - delta``."""
    a = rho - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        return (a**3 - (delta + gamma + delta * gamma) * a - 2 * delta * gamma) / (a * (a**2 - delta))


def outlier_sd(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike, d: ArrayLike,
               excess_kurtosis: ArrayLike = 0.0) -> Float:
    """Standard deviation of the outlier ``lambda_1 / kappa`` above the transition (module docstring).

    Parameters
    ----------
    rho
        Effective SNR ``alpha snr / kappa``.
    delta, gamma, d
        Ratios and dimension (``V = d / delta`` table tokens, ``N = d / gamma`` samples).
    excess_kurtosis
        Of the pooled signs ``b = w^T xi`` (:func:`pooled_sign_excess_kurtosis`); 0 for Gaussian samples.

    Returns
    -------
    ndarray
        ``sqrt(psi'^2 (2/d) rho^2 zeta_pop (1 - zeta_pop) + (gamma ell^2 / d)(2 psi' + k4 psi'^2))``;
        NaN at or below ``rho_c`` (no outlier).
    """
    rho, delta, gamma, d, kurt = broadcast(rho, delta, gamma, d, excess_kurtosis)
    above = rho > sample_threshold(delta, gamma)
    r = np.where(above, rho, np.nan)
    ell, zeta = population_outlier(r, delta), population_overlap(r, delta)
    dpsi = _dpsi(r, delta, gamma)
    k4 = (r * zeta / ell) ** 2 * kurt
    var = dpsi**2 * 2.0 * r**2 * zeta * (1.0 - zeta) / d + gamma * ell**2 * (2.0 * dpsi + k4 * dpsi**2) / d
    return np.asarray(np.sqrt(np.maximum(var, 0.0)))


def detection_probability(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike, d: ArrayLike,
                          margin_factor: ArrayLike = 1.0, excess_kurtosis: ArrayLike = 0.0,
                          threshold: ArrayLike | None = None) -> Float:
    """Predicted probability that ``lambda_1 / kappa > lambda_+ (1 + margin_factor d^(-2/3))`` (or ``> threshold``).

    Parameters
    ----------
    rho
        Effective SNR ``alpha snr / kappa`` (convert an SNR with the weights' ``alpha / kappa``).
    delta, gamma
        Ratios ``d / V`` and ``d / N``.
    d
        Dimension.
    margin_factor
        Detection margin in units of ``lambda_+ d^(-2/3)`` (``rmtsweep.analysis.compare.MARGIN_FACTOR``).
    excess_kurtosis
        Of the pooled signs (:func:`pooled_sign_excess_kurtosis`); enters only the outlier's spread.
    threshold
        The detection threshold on ``lambda_1 / kappa`` itself, replacing the margin (e.g. the
        false-alarm level's :func:`rmtsweep.theory.null_law.tw_threshold`).

    Returns
    -------
    ndarray
        ``1 - F_1(x_t) Phi((t - psi(rho)) / sd(rho))`` (module docstring), in ``[0, 1]``,
        nondecreasing in ``rho``; broadcast over all arguments.

    Examples
    --------
    >>> p = detection_probability([0.5, 1.8, 2.5, 4.0], 0.5, 0.5, 200)
    >>> bool(p[0] < 0.1 and p[-1] > 0.99 and (p[1:] >= p[:-1]).all())
    True
    """
    given = np.nan if threshold is None else threshold
    rho, delta, gamma, d, m, kurt, given = broadcast(rho, delta, gamma, d, margin_factor, excess_kurtosis, given)
    lam = edge(delta, gamma)
    sigma = tw_scale(delta, gamma, d)
    t = lam * (1.0 + m * d ** (-2.0 / 3.0)) if threshold is None else given
    bulk_below = tw1_cdf((t - lam) / sigma)
    above = rho > sample_threshold(delta, gamma)
    loc = sample_outlier(rho, delta, gamma)
    sd = outlier_sd(rho, delta, gamma, d, kurt)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(above & (sd > 0), (t - loc) / sd, np.where(loc > t, -np.inf, np.inf))
    out_below = np.where(above, ndtr(z), 1.0)
    p = 1.0 - bulk_below * out_below
    p = np.where(np.isnan(rho) | np.isnan(lam) | np.isnan(d), np.nan, p)
    return np.asarray(np.clip(p, 0.0, 1.0))
