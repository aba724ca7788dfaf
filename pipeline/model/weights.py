"""Pooling weights ``w`` and their scalars ``kappa = ||w||^2``, ``alpha = w^T R w``.

One small frozen class per scheme; the registry :data:`rmtsweep.model.schemes.SCHEMES` is what a
sweep file's ``grid.weights`` validates against, so adding a scheme is one class plus its entry
there and its tests (finite-d ``attention`` lives in :mod:`rmtsweep.model.attention`). Normalisation: the theory is
scale-invariant in ``w``;
eigenvalues are stored in absolute units, so the normalisation shows up only through ``kappa``.

- ``mean``: ``w_t = 1/T`` (sums to 1).
- ``optimal``: the top eigenvector of ``R`` with unit norm, sign fixed so its sum is positive. Where
  the top eigenvalue is degenerate (``iid``, ``prefix(L=1)``: ``R = I``) the choice is the
  normalised projection of the uniform vector on the top eigenspace, so the result is deterministic.
- ``harmonic``: uniform causal attention followed by mean pooling, ``w_t = (H_T - H_{t-1}) / T``
  (sums to 1). The paper's summary writes ``w_t ∝ H_{T-1} - H_{t-1}``, which gives the last token
  weight 0: that variant is ``harmonic_paper`` (normalised to sum 1, needs ``T >= 2``).
- ``causal(tau)``: the large-d limit of causal softmax attention with scores ``(tau/d) x_t^T x_s``:
  ``a_tt = e^tau / (e^tau + t - 1)``, ``a_ts = 1 / (e^tau + t - 1)`` for ``s < t``, mean pooled
  (sums to 1). ``tau = 0`` is ``harmonic``.
- ``custom``: a user-given vector (or one per ``T``: ``{4: [...], 16: [...]}``), used as given.
- ``python``: a user's function ``f(R, **params)`` (:mod:`rmtsweep.model.plugins`).
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, field_validator

__all__ = [
    "Causal", "Custom", "Harmonic", "HarmonicPaper", "Mean", "Optimal", "Scheme", "Tau", "alpha", "causal_weights",
    "effective_length", "harmonic_numbers", "kappa", "optimal_weights", "pooling_weights",
]


def _finite_tau(v: float) -> float:
    if not math.isfinite(v):
        raise ValueError("tau must be finite")
    return v


Tau = Annotated[float, AfterValidator(_finite_tau)]
"""A score scale ``tau``: any finite float (the attention schemes)."""


class Scheme(BaseModel):
    """Base class of the weights schemes: one value of the ``weights`` axis.

    Subclasses set ``scheme`` (the tag of the sweep file) and implement :meth:`weights`; ``name``
    replaces the coordinate label.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    scheme: str
    name: str | None = None
    data_dependent: ClassVar[bool] = False
    """Whether the weights depend on the replicate's embeddings (none of the fixed schemes do)."""

    @property
    def label(self) -> str:
        """The ``weights`` coordinate, e.g. ``mean`` or ``causal(tau=1)``."""
        return self.name or self._default_label()

    def _default_label(self) -> str:
        return self.scheme

    def weights(self, R: np.ndarray) -> np.ndarray:
        """The weight vector for the correlation ``R`` (its size gives ``T``)."""
        raise NotImplementedError

    def problems(self, Ts: tuple[int, ...], where: str) -> list[str]:
        """Inconsistencies with the sweep's sequence lengths; ``where`` names the field."""
        return []


class Mean(Scheme):
    """``w_t = 1/T``."""

    scheme: Literal["mean"] = "mean"

    def weights(self, R: np.ndarray) -> np.ndarray:
        return np.full(R.shape[0], 1.0 / R.shape[0])


class Optimal(Scheme):
    """The top eigenvector of ``R`` (maximises ``alpha / kappa``)."""

    scheme: Literal["optimal"] = "optimal"

    def weights(self, R: np.ndarray) -> np.ndarray:
        return optimal_weights(R)


class Harmonic(Scheme):
    """Uniform causal attention, mean pooled: ``w_t = (H_T - H_{t-1}) / T``."""

    scheme: Literal["harmonic"] = "harmonic"

    def weights(self, R: np.ndarray) -> np.ndarray:
        T = R.shape[0]
        H = harmonic_numbers(T)
        return (H[T] - H[:T]) / T


class HarmonicPaper(Scheme):
    """The paper summary's indexing ``w_t ∝ H_{T-1} - H_{t-1}`` (last weight 0), summing to 1."""

    scheme: Literal["harmonic_paper"] = "harmonic_paper"

    def weights(self, R: np.ndarray) -> np.ndarray:
        T = R.shape[0]
        H = harmonic_numbers(T)
        w = H[T - 1] - H[:T]
        return w / w.sum()

    def problems(self, Ts: tuple[int, ...], where: str) -> list[str]:
        if min(Ts) < 2:
            return [f"{where}: harmonic_paper needs T >= 2 (its only weight is 0 at T = 1)"]
        return []


class Causal(Scheme):
    """Large-d causal softmax attention with score scale ``tau / d``, mean pooled."""

    scheme: Literal["causal"] = "causal"
    tau: Tau

    def _default_label(self) -> str:
        return f"causal(tau={self.tau:g})"

    def weights(self, R: np.ndarray) -> np.ndarray:
        return causal_weights(R.shape[0], float(self.tau))


class Custom(Scheme):
    """A user-given vector, used as given (not normalised): one list for a single ``T``, or a mapping
    ``{T: list}`` with one list per sequence length of the sweep."""

    scheme: Literal["custom"] = "custom"
    values: tuple[float, ...] | dict[int, tuple[float, ...]]

    @field_validator("values")
    @classmethod
    def _usable(cls, v: tuple[float, ...] | dict[int, tuple[float, ...]]) -> tuple[float, ...] | dict:
        for T, vector in (v.items() if isinstance(v, dict) else [(None, v)]):
            at = "" if T is None else f" (T = {T})"
            if not all(math.isfinite(x) for x in vector):
                raise ValueError(f"custom weights must be finite{at}")
            if not any(vector):
                raise ValueError(f"custom weights are all zero{at}")
        return v

    def weights(self, R: np.ndarray) -> np.ndarray:
        T = R.shape[0]
        return np.asarray(self.values[T] if isinstance(self.values, dict) else self.values, dtype=float)

    def problems(self, Ts: tuple[int, ...], where: str) -> list[str]:
        if isinstance(self.values, dict):
            missing = [T for T in Ts if T not in self.values]
            if missing:
                return [f"{where}.values: no weights for T = {missing} (give one list per T of grid.T)"]
            return [f"{where}.values[{T}]: {len(self.values[T])} values for T = {T}" for T in Ts
                    if len(self.values[T]) != T]
        if any(len(self.values) != T for T in Ts):
            return [f"{where}.values: {len(self.values)} values but grid.T has {list(Ts)} (for several T give a "
                    "mapping T: [values])"]
        return []


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


def pooling_weights(scheme: Scheme, R: np.ndarray) -> np.ndarray:
    """The weight vector of ``scheme`` for the correlation ``R`` (its size gives ``T``).

    Examples
    --------
    >>> pooling_weights(Harmonic(), np.eye(3)).round(4)
    array([0.6111, 0.2778, 0.1111])
    """
    return scheme.weights(R)


def kappa(w: np.ndarray) -> float:
    """Noise level ``kappa = ||w||^2``."""
    return float(w @ w)


def alpha(w: np.ndarray, R: np.ndarray) -> float:
    """Signal strength after pooling ``alpha = w^T R w``."""
    return float(w @ R @ w)


def effective_length(w: np.ndarray) -> float:
    """``T_eff = kappa^2 / sum_t w_t^4`` (the cubic bulk law needs ``T_eff ≳ 4``, docs/theory.md)."""
    return float((w @ w) ** 2 / np.sum(w**4))
