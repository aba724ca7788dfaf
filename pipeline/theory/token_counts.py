"""Finite size at ``T = 1``: the spikes over the realised token counts (docs/theory.md §6.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .finite_t import edge, outlier
from .token_law import empirical_law

__all__ = ["RealisedCounts", "realised_count_spikes"]

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
        Mean alignment of the top eigenvector with ``u`` (0 in a draw whose signal outlier sits below
        the top of the spectrum: the top eigenvector is then a repeated token's), and its error.
    top, top_sd : float
        Mean and spread over draws of the top of the spectrum without signal.
    draws : int
    """

    lambda1: Float
    lambda1_se: Float
    overlap: Float
    overlap_se: Float
    top: float
    top_sd: float
    draws: int


def _seed_words(*values: float) -> list[int]:
    return [int(np.float64(v).view(np.uint64)) for v in values]


def realised_count_spikes(rho: ArrayLike, delta: float, gamma: float, d: int, *, draws: int = 32,
                          seed: int = 0) -> RealisedCounts:
    """``lambda_1`` and the top alignment at size ``d`` and ``T = 1``, over the realised token counts.

    At ``T = 1`` (or any one-hot weights) ``D = (V/N) diag(counts)``: the only randomness that does not
    average out at finite size is the vector of token counts, multinomial(N, uniform over V) whatever
    the sign correlation. Given the counts, the deterministic equivalent of ``S/kappa`` is the bulk law
    over their empirical law (:func:`empirical_law`), in which every token is an atom of mass ``1/d``:
    a token seen ``k`` times is a separate component holding one eigenvalue. This draws ``draws``
    count vectors (seeded by ``seed`` and the values of ``delta``, ``gamma``, ``d``) and in each takes
    the top of the spectrum (:func:`edge` with ``tail = 1/(2d)``) and the signal outlier above it
    (:func:`outlier`, same tail). The limit law (:func:`poisson_law`) is the ``d -> inf`` limit of this;
    at ``d = 400`` its pieces above the main bulk are mostly empty, which is why the limit formula's
    alignment is too low near the threshold (docs/theory.md §6.1).

    Derived for the signal outlier; the top of the spectrum is the top of its support, which for a
    component holding one eigenvalue lies above that eigenvalue (biased high, measured in §6.1).
    """
    rho = np.atleast_1d(np.asarray(rho, float))
    V, N = round(d / delta), round(d / gamma)
    rng = np.random.default_rng(np.random.SeedSequence([seed, *_seed_words(delta, gamma), int(d)]))
    tail = 0.5 / d
    lam, ov, tops = np.empty((draws, rho.size)), np.empty((draws, rho.size)), np.empty(draws)
    for i in range(draws):
        counts = np.bincount(rng.integers(V, size=N), minlength=V)
        nu = empirical_law(V * counts / N)
        tops[i] = edge(nu, delta, tail=tail)
        loc, align = outlier(rho, nu, delta, tail=tail)
        above = loc > tops[i] * (1 + 1e-12)
        lam[i], ov[i] = np.where(above, loc, tops[i]), np.where(above, align, 0.0)
    se = (lambda x: x.std(axis=0, ddof=1) / np.sqrt(draws)) if draws > 1 else (lambda x: np.full(rho.size, np.nan))
    return RealisedCounts(lam.mean(0), se(lam), ov.mean(0), se(ov), float(tops.mean()),
                          float(tops.std(ddof=1)) if draws > 1 else np.nan, draws)
