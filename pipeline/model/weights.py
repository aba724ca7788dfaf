"""Pooling weights ``w`` (THEORY.md §2) and their scalars ``kappa = ||w||^2``, ``alpha = w^T R w``.

Schemes and their normalisation (the theory is scale-invariant in ``w``; eigenvalues are stored in
absolute units, so the normalisation shows up only through ``kappa``):

- ``mean``: ``w_t = 1/T`` (sums to 1).
- ``optimal``: the top eigenvector of ``R`` with unit norm, sign fixed so its sum is positive
  (Theorem 5). Where the top eigenvalue is degenerate (``iid``, ``prefix(L=1)``: ``R = I``) the
  choice is the normalised projection of the uniform vector on the top eigenspace, so the result is
  deterministic.
- ``harmonic``: uniform causal attention followed by mean pooling,
  ``w_t = (H_T - H_{t-1}) / T`` (sums to 1). This is our derivation; the paper summary writes
  ``w_t ∝ H_{T-1} - H_{t-1}``, which gives the last token weight 0: that variant is
  ``harmonic_paper`` (normalised to sum 1, needs ``T >= 2``).
- ``causal(tau)``: the large-d limit of causal softmax attention with scores ``(tau/d) x_t^T x_s``:
  ``a_tt = e^tau / (e^tau + t - 1)``, ``a_ts = 1 / (e^tau + t - 1)`` for ``s < t``, mean pooled
  (sums to 1). ``tau = 0`` is ``harmonic``.
- ``custom``: a user-given vector, used as given.

Data-dependent weights (finite-d softmax ``attention``) are not fixed vectors; a scheme reports this
through :attr:`WeightScheme.data_dependent` and the replicate code is where they will plug in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

SchemeName = Literal["mean", "optimal", "harmonic", "harmonic_paper", "causal", "custom"]


@dataclass(frozen=True)
class WeightScheme:
    """A pooling-weight scheme, one value of the ``weights`` axis.

    Parameters
    ----------
    scheme
        The scheme's name.
    tau
        Score scale for ``causal``.
    values
        The vector for ``custom``.
    name
        The label used as the ``weights`` coordinate (defaults to a canonical label).
    """

    scheme: SchemeName
    tau: float | None = None
    values: tuple[float, ...] | None = None
    name: str | None = None

    @property
    def label(self) -> str:
        """The coordinate label, e.g. ``mean`` or ``causal(tau=1)``."""
        if self.name:
            return self.name
        if self.scheme == "causal":
            return f"causal(tau={self.tau:g})"
        return self.scheme

    @property
    def data_dependent(self) -> bool:
        """Whether the weights depend on the replicate's embeddings (none of the fixed schemes do)."""
        return False


def harmonic_numbers(n: int) -> np.ndarray:
    """``H_0 .. H_n`` with ``H_0 = 0``."""
    return np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])


def optimal_weights(R: np.ndarray) -> np.ndarray:
    """Top eigenvector of ``R`` (unit norm, positive sum; deterministic under degeneracy)."""
    evals, evecs = np.linalg.eigh(R)
    top = evals[-1]
    tol = 1e-10 * max(1.0, abs(top))
    basis = evecs[:, evals >= top - tol]
    if basis.shape[1] > 1:
        w = basis @ (basis.T @ np.ones(R.shape[0]))
        if np.linalg.norm(w) < 1e-12:  # uniform vector orthogonal to the eigenspace
            w = basis[:, 0]
    else:
        w = basis[:, 0]
    w = w / np.linalg.norm(w)
    return -w if w.sum() < 0 else w


def causal_weights(T: int, tau: float) -> np.ndarray:
    """Large-d causal softmax attention weights, mean pooled (sums to 1)."""
    t = np.arange(1, T + 1)
    denom = np.exp(tau) + t - 1.0            # row t's normaliser
    inv = 1.0 / denom
    # sum over t > s of 1/denom_t  ==  suffix sums of inv, shifted by one
    later = np.concatenate([np.cumsum(inv[::-1])[::-1][1:], [0.0]])
    return (np.exp(tau) * inv + later) / T


def pooling_weights(scheme: WeightScheme, R: np.ndarray) -> np.ndarray:
    """The weight vector of ``scheme`` for the correlation ``R`` (its size gives ``T``).

    Examples
    --------
    >>> pooling_weights(WeightScheme("harmonic"), np.eye(3)).round(4)
    array([0.6111, 0.2778, 0.1111])
    """
    T = R.shape[0]
    if scheme.scheme == "mean":
        return np.full(T, 1.0 / T)
    if scheme.scheme == "optimal":
        return optimal_weights(R)
    if scheme.scheme == "harmonic":
        H = harmonic_numbers(T)
        return (H[T] - H[:T]) / T
    if scheme.scheme == "harmonic_paper":
        H = harmonic_numbers(T)
        w = H[T - 1] - H[:T]
        return w / w.sum()
    if scheme.scheme == "causal":
        return causal_weights(T, float(scheme.tau))
    if scheme.scheme == "custom":
        return np.asarray(scheme.values, dtype=float)
    raise ValueError(f"unknown weights scheme {scheme.scheme!r}")


def kappa(w: np.ndarray) -> float:
    """Noise level ``kappa = ||w||^2``."""
    return float(w @ w)


def alpha(w: np.ndarray, R: np.ndarray) -> float:
    """Signal strength after pooling ``alpha = w^T R w``."""
    return float(w @ R @ w)


def effective_length(w: np.ndarray) -> float:
    """``T_eff = kappa^2 / sum_t w_t^4`` (THEORY.md §5: the cubic bulk law needs T_eff ≳ 4)."""
    return float((w @ w) ** 2 / np.sum(w**4))
