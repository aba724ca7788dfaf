"""Spikes of ``S / kappa``: thresholds, outlier locations and alignments (docs/theory.md §3.2-3.5).

``rho = alpha * snr / kappa`` is the effective SNR. Population level (``N -> inf``): an outlier
``ell = rho (rho + 1 - delta) / (rho - delta)`` with alignment ``zeta_pop = 1 - delta / (rho - delta)^2``
exists iff ``rho > delta + sqrt(delta)``. Sample level: ``psi(ell) = ell (1 - gamma + gamma ell / rho)``,
visible iff ``psi'(ell) > 0``, alignment ``zeta_pop * ell psi'(ell) / psi(ell)``.

With ``a = rho - delta`` the algebra collapses (derived here, checked in the tests):
``psi(ell) = (a + 1)(a + delta)(a + gamma) / a^2`` -- the bulk's ``z(g)`` at ``g = 1 + 1/a`` -- and
``psi'(ell) = (a^3 - (delta + gamma + delta gamma) a - 2 delta gamma) / (a (a^2 - delta))``. So the sample
threshold is ``rho_c = delta + a_c`` with ``a_c`` the largest root of that cubic, which is also where the
bulk edge is attained: the outlier leaves the bulk exactly at ``lambda_+``, and ``rho_c`` is symmetric in
``(delta, gamma)`` up to the shift by ``delta``.

All functions broadcast their arguments against each other and return float64 arrays (0-d for scalars),
except :func:`phase` (int8).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._common import bisect, broadcast, critical_a
from .bulk import edge, stieltjes, stieltjes_derivative

__all__ = [
    "outlier_from_stieltjes",
    "overlap",
    "phase",
    "population_outlier",
    "population_overlap",
    "population_threshold",
    "sample_outlier",
    "sample_threshold",
    "snr_threshold",
    "transition_snr",
    "uncentred",
]

Float = NDArray[np.float64]


def population_threshold(delta: ArrayLike) -> Float:
    """Population threshold ``delta + sqrt(delta)`` on ``rho`` (the ``gamma -> 0`` limit of ``rho_c``)."""
    (delta,) = broadcast(delta)
    return np.asarray(delta + np.sqrt(delta))


def _population(rho: Float, delta: Float) -> tuple[Float, Float, NDArray[np.bool_]]:
    """``ell``, ``zeta_pop`` (NaN where there is no population outlier) and the mask where there is one."""
    above = rho > delta + np.sqrt(delta)
    a = np.where(above, rho - delta, np.nan)
    return rho * (a + 1.0) / a, 1.0 - delta / a**2, above


def population_outlier(rho: ArrayLike, delta: ArrayLike) -> Float:
    """Population outlier ``ell = rho (rho + 1 - delta) / (rho - delta)`` above threshold, NaN below."""
    rho, delta = broadcast(rho, delta)
    return np.asarray(_population(rho, delta)[0])


def population_overlap(rho: ArrayLike, delta: ArrayLike) -> Float:
    """Population alignment ``zeta_pop = 1 - delta / (rho - delta)^2`` above threshold, 0 below."""
    rho, delta = broadcast(rho, delta)
    _, zeta, above = _population(rho, delta)
    return np.where(above, zeta, 0.0)


def sample_threshold(delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Sample threshold ``rho_c``: the ``rho > delta + sqrt(delta)`` where ``psi'(ell(rho)) = 0``.

    Computed as ``delta + a_c`` with ``a_c`` the largest root of
    ``a^3 - (delta + gamma + delta gamma) a - 2 delta gamma`` (module docstring), by monotone Newton.

    Examples
    --------
    >>> [round(float(sample_threshold(d, g)), 3) for d, g in [(0.5, 0.5), (1, 0.25), (0.25, 1)]]
    [1.781, 2.366, 1.616]
    """
    delta, gamma = broadcast(delta, gamma)
    return np.asarray(delta + critical_a(delta, gamma))


def _sample(rho: Float, delta: Float, gamma: Float) -> tuple[Float, Float, NDArray[np.bool_]]:
    """``psi(ell)``, ``zeta_pop * zeta_samp`` (NaN below ``rho_c``) and the mask ``rho > rho_c``."""
    above = rho > delta + critical_a(delta, gamma)
    ell, zeta_pop, _ = _population(np.where(above, rho, np.nan), delta)
    psi = ell * (1.0 - gamma + gamma * ell / rho)
    dpsi = 1.0 - gamma + 2.0 * gamma * ell / rho - gamma * ell**2 / (rho**2 * zeta_pop)
    return psi, zeta_pop * ell * dpsi / psi, above


def sample_outlier(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Top eigenvalue of ``S / kappa``: ``psi(ell(rho))`` above ``rho_c``, the bulk edge below."""
    rho, delta, gamma = broadcast(rho, delta, gamma)
    psi, _, above = _sample(rho, delta, gamma)
    return np.where(above, psi, edge(delta, gamma))


def overlap(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> Float:
    """Alignment ``|u_hat^T u|^2 -> zeta_pop zeta_samp`` with ``zeta_samp = ell psi'(ell) / psi(ell)``.

    0 at or below ``rho_c``.
    """
    rho, delta, gamma = broadcast(rho, delta, gamma)
    _, zeta, above = _sample(rho, delta, gamma)
    return np.where(above, zeta, 0.0)


def phase(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> NDArray[np.int8]:
    """0: no population outlier; 1: population outlier only (invisible in ``S``); 2: sample outlier."""
    rho, delta, gamma = broadcast(rho, delta, gamma)
    pop = rho > delta + np.sqrt(delta)
    samp = rho > delta + critical_a(delta, gamma)
    return np.asarray(pop.astype(np.int8) + (pop & samp).astype(np.int8), dtype=np.int8)


def snr_threshold(rho_threshold: ArrayLike, alpha: ArrayLike, kappa: ArrayLike) -> Float:
    """SNR threshold ``rho_threshold * kappa / alpha`` (``inf`` where ``alpha == 0``)."""
    rho_threshold, alpha, kappa = broadcast(rho_threshold, alpha, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(alpha == 0, np.inf, rho_threshold * kappa / alpha)


def transition_snr(kind: str, alpha: ArrayLike, kappa: ArrayLike, delta: ArrayLike, gamma: ArrayLike,
                   centering: str = "class") -> Float:
    """The SNR of the ``"population"`` or ``"sample"`` transition of a weights scheme.

    ``rho_threshold kappa / alpha`` for a class-centred table; on an uncentred one the signal spike
    has ``rho_s = (alpha/kappa)(snr + delta)``, so the threshold moves down by ``delta`` (and is 0
    where ``delta`` alone passes it).
    """
    alpha, kappa, delta, gamma = broadcast(alpha, kappa, delta, gamma)
    rho = population_threshold(delta) if kind == "population" else sample_threshold(delta, gamma)
    snr = snr_threshold(rho, alpha, kappa)
    return np.asarray(np.maximum(snr - delta, 0.0) if centering == "none" else snr)


def uncentred(
    snr: ArrayLike, alpha: ArrayLike, kappa: ArrayLike, w1: ArrayLike, delta: ArrayLike, gamma: ArrayLike
) -> dict[str, Float]:
    """Theory for the uncentred table (docs/theory.md §3.5): a signal spike and a common-mean spike.

    ``Sigma / kappa = W' + (alpha/kappa) m m^T + (w1^2/kappa) b b^T`` with ``||m||^2 ≈ snr + delta``,
    ``||b||^2 ≈ delta`` and ``b ⟂ m``; each spike follows §4 on its own.

    Parameters
    ----------
    snr, alpha, kappa
        Signal strength ``||mu||^2`` and the weight scalars ``alpha = w^T R w``, ``kappa = ||w||^2``.
    w1
        ``sum_t w_t``.
    delta, gamma
        Ratios ``d / V`` and ``d / N``.

    Returns
    -------
    dict of ndarray
        ``rho_signal = (alpha/kappa)(snr + delta)``; ``signal_outlier`` (kappa units);
        ``signal_overlap = overlap(rho_signal) snr / (snr + delta)`` (alignment with ``u``, 0 where
        ``snr + delta == 0``); ``rho_mean = w1^2 delta / kappa``; ``mean_outlier`` (kappa units; its
        eigenvector lies along ``b``, orthogonal to ``u``) and ``mean_overlap`` (its alignment with ``b``);
        ``signal_phase`` and ``mean_phase``
        (:func:`phase`); ``top`` the larger of the two outliers (the edge when neither exists).
    """
    snr, alpha, kappa, w1, delta, gamma = broadcast(snr, alpha, kappa, w1, delta, gamma)
    rho_signal = alpha / kappa * (snr + delta)
    rho_mean = w1**2 * delta / kappa
    total = snr + delta
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total == 0, 0.0, snr / total)
    signal_outlier = sample_outlier(rho_signal, delta, gamma)
    mean_outlier = sample_outlier(rho_mean, delta, gamma)
    out = {
        "rho_signal": rho_signal,
        "signal_outlier": signal_outlier,
        "signal_overlap": overlap(rho_signal, delta, gamma) * share,
        "rho_mean": rho_mean,
        "mean_outlier": mean_outlier,
        "mean_overlap": overlap(rho_mean, delta, gamma),
        "signal_phase": phase(rho_signal, delta, gamma),
        "mean_phase": phase(rho_mean, delta, gamma),
        "top": np.maximum(signal_outlier, mean_outlier),
    }
    return {key: np.asarray(value) for key, value in out.items()}


def _d_of_l(l: Float, delta: Float, gamma: Float) -> Float:  # noqa: E741 - the paper's name
    """``D(l) = l G(l) G~(l)`` with ``G~(l) = gamma G(l) + (1 - gamma) / l``."""
    g = stieltjes(l, delta, gamma)
    return l * g * (gamma * g + (1.0 - gamma) / l)


def outlier_from_stieltjes(rho: ArrayLike, delta: ArrayLike, gamma: ArrayLike) -> tuple[Float, Float]:
    """Outlier and alignment from the one-shot form: ``rho D(l) = 1``, alignment ``-G(l) / (rho D'(l))``.

    Independent of the closed form of :func:`sample_outlier` (it uses only the bulk's Stieltjes
    transform); a cross-check. ``D`` decreases on ``(edge, inf)``, so a vectorised bisection finds the
    root when ``rho D(edge) > 1``; elsewhere the location is the edge and the alignment 0.

    Returns
    -------
    (location, overlap)
        Both in the units of :func:`sample_outlier` and :func:`overlap`.
    """
    rho, delta, gamma = broadcast(rho, delta, gamma)
    lo = edge(delta, gamma)
    tiny = lo * (1.0 + 1e-12)  # D is finite at the edge; stay just inside the domain of `stieltjes`
    exists = rho * _d_of_l(tiny, delta, gamma) > 1.0
    hi = lo + 2.0 * rho + 2.0
    for _ in range(100):  # bracket: grow hi until rho D(hi) < 1 (D ~ 1/l at infinity)
        short = exists & (rho * _d_of_l(hi, delta, gamma) >= 1.0)
        if not np.any(short):
            break
        hi = np.where(short, lo + 2.0 * (hi - lo), hi)
    lo, hi = bisect(lambda mid: rho * _d_of_l(mid, delta, gamma) > 1.0,      # D decreases: the root is right of mid
                    np.where(exists, tiny, np.nan), np.where(exists, hi, np.nan), 200)
    loc = 0.5 * (lo + hi)
    g, dg = stieltjes(loc, delta, gamma), stieltjes_derivative(loc, delta, gamma)
    d_prime = gamma * g**2 + 2.0 * gamma * loc * g * dg + (1.0 - gamma) * dg
    return np.where(exists, loc, edge(delta, gamma)), np.where(exists, -g / (rho * d_prime), 0.0)
