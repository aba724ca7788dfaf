"""Positional sign correlation models: the matrix ``R`` and exact draws of the signs.

Every model here is exactly realisable: :func:`draw_signs` produces sign vectors whose
population correlation is exactly :func:`correlation_matrix` (THEORY.md §1, item 2).

- ``label(q)``: a label ``y = ±1``; position ``t`` copies it with probability ``q_t``, else takes a
  fresh fair sign. ``R = q q^T + diag(1 - q^2)``. ``prefix(L)``, ``iid``, ``full`` and ``decay(r)``
  are label models with ``q = 1[t <= L]``, ``0``, ``1`` and ``r^(t-1)``.
- ``markov(r)``: a stationary sign chain that keeps its sign with probability ``(1 + r)/2``;
  ``R_ts = r^|t-s|``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

CorrelationKind = Literal["label", "markov"]


@dataclass(frozen=True)
class Correlation:
    """A positional sign-correlation model, parsed and validated (see :mod:`pipeline.spec`).

    Parameters
    ----------
    model
        One of ``prefix, iid, full, decay, label, markov`` (the name the user wrote).
    L
        Prefix length for ``prefix``.
    r
        Decay rate for ``decay`` (``q_t = r^(t-1)``) or the lag-one correlation for ``markov``.
    q
        Copy probabilities for ``label``: one value per position, or a single value for all.
    """

    model: str
    L: int | None = None
    r: float | None = None
    q: tuple[float, ...] | None = None

    @property
    def kind(self) -> CorrelationKind:
        """``"markov"`` for the sign chain, ``"label"`` for every label-copy model."""
        return "markov" if self.model == "markov" else "label"

    def copy_probabilities(self, T: int) -> np.ndarray:
        """Probability ``q_t`` that position ``t`` copies the label (label models only)."""
        t = np.arange(T)
        if self.model == "prefix":
            return (t < self.L).astype(float)
        if self.model == "iid":
            return np.zeros(T)
        if self.model == "full":
            return np.ones(T)
        if self.model == "decay":
            return float(self.r) ** t
        if self.model == "label":
            q = np.asarray(self.q, dtype=float).reshape(-1)
            return np.full(T, q[0]) if q.size == 1 else q.copy()
        raise ValueError(f"correlation model {self.model!r} has no copy probabilities")

    def label(self) -> str:
        """Short human-readable name, e.g. ``prefix(L=4)``."""
        params = {"L": self.L, "r": self.r, "q": self.q}
        inner = ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)
        return f"{self.model}({inner})" if inner else self.model


def correlation_matrix(corr: Correlation, T: int) -> np.ndarray:
    """Population correlation ``R = E[xi xi^T]`` (T x T, unit diagonal).

    Examples
    --------
    >>> correlation_matrix(Correlation("prefix", L=2), 3)
    array([[1., 1., 0.],
           [1., 1., 0.],
           [0., 0., 1.]])
    """
    if corr.kind == "markov":
        lag = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
        return float(corr.r) ** lag
    q = corr.copy_probabilities(T)
    R = np.outer(q, q)
    np.fill_diagonal(R, 1.0)
    return R


def draw_signs(corr: Correlation, T: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``N`` sign vectors of length ``T`` with correlation ``R``.

    Returns
    -------
    xi : ndarray of int8, shape (N, T)
        The signs.
    y : ndarray of int8, shape (N,)
        The sequence label: the copied label for label models, the first sign for ``markov``.
    """
    if corr.kind == "markov":
        first = rng.choice(np.array([-1, 1], dtype=np.int8), size=(N, 1))
        keep = rng.random((N, T - 1)) < (1.0 + float(corr.r)) / 2.0
        steps = np.where(keep, 1, -1).astype(np.int8)
        xi = first * np.cumprod(np.concatenate([np.ones((N, 1), np.int8), steps], axis=1), axis=1)
        return xi.astype(np.int8), xi[:, 0].copy()
    q = corr.copy_probabilities(T)
    y = rng.choice(np.array([-1, 1], dtype=np.int8), size=N)
    copy = rng.random((N, T)) < q
    fresh = rng.choice(np.array([-1, 1], dtype=np.int8), size=(N, T))
    xi = np.where(copy, y[:, None], fresh).astype(np.int8)
    return xi, y
