"""Positional sign correlation models: the matrix ``R`` and exact draws of the signs.

Every model here is exactly realisable: :func:`draw_signs` produces sign vectors whose
population correlation is exactly :func:`correlation_matrix` (``docs/theory.md``, the model).

- ``label(q)``: a label ``y = ±1``; position ``t`` copies it with probability ``q_t``, else takes a
  fresh fair sign. ``R = q q^T + diag(1 - q^2)``. ``prefix(L)``, ``iid``, ``full`` and ``decay(r)``
  are label models with ``q = 1[t <= L]``, ``0``, ``1`` and ``r^(t-1)``.
- ``markov(r)``: a stationary sign chain that keeps its sign with probability ``(1 + r)/2``;
  ``R_ts = r^|t-s|``.

Each model is one small frozen class; the sweep file validates against :data:`CorrelationSpec`
(the union of them, told apart by ``model``), so a parsed sweep holds these objects directly.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

__all__ = [
    "CORRELATIONS", "Correlation", "CorrelationSpec", "Decay", "Full", "IID", "Label", "Markov", "Prefix",
    "correlation_matrix", "draw_signs", "make_correlation",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class Correlation(BaseModel):
    """Base class of the correlation models (a label model unless it overrides :meth:`matrix`)."""

    model_config = _STRICT
    model: str

    def copy_probabilities(self, T: int) -> np.ndarray:
        """Probability ``q_t`` that position ``t`` copies the label."""
        raise NotImplementedError

    def matrix(self, T: int) -> np.ndarray:
        """Population correlation ``R = q q^T + diag(1 - q^2)`` (T x T, unit diagonal)."""
        q = self.copy_probabilities(T)
        R = np.outer(q, q)
        np.fill_diagonal(R, 1.0)
        return R

    def draw(self, T: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``N`` sign vectors (int8, N x T) and their labels (int8, N): the label-copy draw."""
        q = self.copy_probabilities(T)
        y = rng.choice(np.array([-1, 1], dtype=np.int8), size=N)
        copy = rng.random((N, T)) < q
        fresh = rng.choice(np.array([-1, 1], dtype=np.int8), size=(N, T))
        return np.where(copy, y[:, None], fresh).astype(np.int8), y

    def problems(self, Ts: tuple[int, ...]) -> list[str]:
        """Inconsistencies with the sweep's sequence lengths (empty when there are none)."""
        return []

    def label(self) -> str:
        """Short human-readable name, e.g. ``prefix(L=4)``."""
        params = self.model_dump(exclude={"model"})
        inner = ", ".join(f"{k}={tuple(v) if isinstance(v, list) else v}" for k, v in params.items())
        return f"{self.model}({inner})" if inner else self.model


class Prefix(Correlation):
    """The first ``L`` positions copy the label, the rest are fresh signs."""

    model: Literal["prefix"] = "prefix"
    L: Annotated[int, Field(ge=1)]

    def copy_probabilities(self, T: int) -> np.ndarray:
        return (np.arange(T) < self.L).astype(float)

    def problems(self, Ts: tuple[int, ...]) -> list[str]:
        return [f"correlation.L: prefix length {self.L} exceeds T = {min(Ts)} on grid.T"] if self.L > min(Ts) else []


class IID(Correlation):
    """Independent fair signs: ``R = I``."""

    model: Literal["iid"] = "iid"

    def copy_probabilities(self, T: int) -> np.ndarray:
        return np.zeros(T)


class Full(Correlation):
    """Every position copies the label: ``R = 1 1^T``."""

    model: Literal["full"] = "full"

    def copy_probabilities(self, T: int) -> np.ndarray:
        return np.ones(T)


class Decay(Correlation):
    """Position ``t`` copies the label with probability ``r^(t-1)``."""

    model: Literal["decay"] = "decay"
    r: Probability

    def copy_probabilities(self, T: int) -> np.ndarray:
        return float(self.r) ** np.arange(T)


class Label(Correlation):
    """Copy probabilities given per position (or one value for all)."""

    model: Literal["label"] = "label"
    q: tuple[Probability, ...]

    @field_validator("q", mode="before")
    @classmethod
    def _scalar(cls, v: Any) -> Any:
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    def copy_probabilities(self, T: int) -> np.ndarray:
        q = np.asarray(self.q, dtype=float).reshape(-1)
        return np.full(T, q[0]) if q.size == 1 else q.copy()

    def problems(self, Ts: tuple[int, ...]) -> list[str]:
        if len(self.q) != 1 and any(len(self.q) != T for T in Ts):
            return [f"correlation.q: {len(self.q)} values but grid.T has {list(Ts)}"]
        return []


class Markov(Correlation):
    """A stationary sign chain with lag-one correlation ``r``: ``R_ts = r^|t-s|``."""

    model: Literal["markov"] = "markov"
    r: Annotated[float, Field(ge=-1.0, le=1.0)]

    def matrix(self, T: int) -> np.ndarray:
        lag = np.abs(np.subtract.outer(np.arange(T), np.arange(T)))
        return float(self.r) ** lag

    def draw(self, T: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The chain; the label is the first sign."""
        first = rng.choice(np.array([-1, 1], dtype=np.int8), size=(N, 1))
        keep = rng.random((N, T - 1)) < (1.0 + float(self.r)) / 2.0
        steps = np.where(keep, 1, -1).astype(np.int8)
        xi = first * np.cumprod(np.concatenate([np.ones((N, 1), np.int8), steps], axis=1), axis=1)
        return xi.astype(np.int8), xi[:, 0].copy()


CORRELATIONS: tuple[type[Correlation], ...] = (Prefix, IID, Full, Decay, Label, Markov)
"""The registry: every correlation model, one class each."""

CorrelationSpec = Annotated[Union[Prefix, IID, Full, Decay, Label, Markov], Field(discriminator="model")]
"""What a sweep file's ``correlation`` validates against."""

_ADAPTER = TypeAdapter(CorrelationSpec)


def make_correlation(model: str, **params: Any) -> Correlation:
    """A correlation model by name, validated: ``make_correlation("prefix", L=4)``."""
    return _ADAPTER.validate_python({"model": model, **params})


def correlation_matrix(corr: Correlation, T: int) -> np.ndarray:
    """Population correlation ``R = E[xi xi^T]`` (T x T, unit diagonal).

    Examples
    --------
    >>> correlation_matrix(Prefix(L=2), 3)
    array([[1., 1., 0.],
           [1., 1., 0.],
           [0., 0., 1.]])
    """
    return corr.matrix(T)


def draw_signs(corr: Correlation, T: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``N`` sign vectors of length ``T`` with correlation ``R``.

    Returns
    -------
    xi : ndarray of int8, shape (N, T)
        The signs.
    y : ndarray of int8, shape (N,)
        The sequence label: the copied label for label models, the first sign for ``markov``.
    """
    return corr.draw(T, N, rng)
