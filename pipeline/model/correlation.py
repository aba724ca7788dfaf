"""Positional sign correlation models: the matrix ``R`` and exact draws of the signs.

Every model here is exactly realisable: :func:`draw_signs` produces sign vectors whose
population correlation is exactly :func:`correlation_matrix` (``docs/theory.md``, the model); a
``python`` model's own sampler is checked against its ``R`` when the sweep file is read.

- ``label(q)``: a label ``y = ±1``; position ``t`` copies it with probability ``q_t``, else takes a
  fresh fair sign. ``R = q q^T + diag(1 - q^2)``. ``prefix(L)``, ``iid``, ``full`` and ``decay(r)``
  are label models with ``q = 1[t <= L]``, ``0``, ``1`` and ``r^(t-1)``.
- ``markov(r)``: a stationary sign chain that keeps its sign with probability ``(1 + r)/2``;
  ``R_ts = r^|t-s|``.

- ``python``: your own ``R``, ``{model: python, function: "pkg.mod:R", params: {...}}`` with
  ``R(T, **params)`` the ``T x T`` sign correlation (symmetric, unit diagonal, positive semidefinite),
  or the name of an entry point of the group ``rmtsweep.correlations``. Its signs are drawn exactly by
  the arcsine law (the signs of a Gaussian vector with correlation ``sin(pi R / 2)``, which must be
  positive semidefinite), or by your ``sampler: "pkg.mod:draw"``, ``draw(T, N, rng, **params)``,
  whose draws are checked against ``R`` when the file is read (:class:`PythonCorrelation`).

Each model is one small frozen class; the sweep file validates against :data:`CorrelationSpec`
(the union of :data:`CORRELATIONS`, told apart by ``model``), so a parsed sweep holds these objects directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from ..errors import SweepDefinitionError
from .plugins import Param as PluginParam
from .plugins import load_function

__all__ = [
    "CORRELATIONS", "CORRELATION_GROUP", "Correlation", "CorrelationSpec", "Decay", "Full", "IID", "Label", "Markov",
    "Prefix", "PythonCorrelation", "correlation_matrix", "draw_signs", "make_correlation",
]

_STRICT = ConfigDict(extra="forbid", frozen=True)
CORRELATION_GROUP = "rmtsweep.correlations"
"""The entry point group of correlation functions and samplers (``function: name`` without a colon)."""
PSD_TOL = 1e-10         # the smallest eigenvalue a positive semidefinite R may have, for rounding
CHECK_DRAWS = 20_000    # sign vectors a sampler draws when the file is read, to check their correlation
CHECK_SE = 6.0          # how many standard errors (at most 1/sqrt(CHECK_DRAWS) each) that check allows
Probability = Annotated[float, Field(ge=0.0, le=1.0)]


class Correlation(BaseModel):
    """Base class of the correlation models (a label model unless it overrides :meth:`matrix`)."""

    model_config = _STRICT
    model: str
    label_model: ClassVar[bool] = True
    """Whether the signs copy a label with probabilities :meth:`copy_probabilities` (the theory's closed forms)."""

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
    label_model: ClassVar[bool] = False
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


class PythonCorrelation(Correlation):
    """A user's correlation model: ``R`` from a function ``f(T, **params)``, signs from a sign law (module docstring).

    Without ``sampler`` the signs are those of a Gaussian vector with correlation ``sin(pi R / 2)``, whose
    signs have correlation exactly ``R`` (the arcsine law), so ``sin(pi R / 2)`` must be positive semidefinite;
    the label is the first sign, as for ``markov``. With ``sampler``, ``g(T, N, rng, **params)`` draws them.
    Both are checked for every ``T`` of the sweep when the file is read.
    """

    model: Literal["python"] = "python"
    label_model: ClassVar[bool] = False
    function: str = Field(description="a function f(T, **params) returning the T x T sign correlation R: "
                                      "'package.module:name', or an entry point of the group rmtsweep.correlations")
    params: dict[str, PluginParam] = Field(default={}, description="keyword arguments of the function and the sampler")
    sampler: str | None = Field(default=None, description="optional: a function g(T, N, rng, **params) returning N "
                                "sign vectors (N x T, entries +-1), or (signs, labels); default: the signs of a "
                                "Gaussian vector with correlation sin(pi R / 2), whose signs have correlation R")

    @field_validator("function", "sampler")
    @classmethod
    def _loads(cls, v: str | None) -> str | None:
        if v is not None:
            load_function(v, CORRELATION_GROUP, "correlation function")
        return v

    def label(self) -> str:
        args = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(self.params.items()))
        name = self.function.rpartition(":")[2]
        return f"{name}({args})" if args else name

    def matrix(self, T: int) -> np.ndarray:
        R = np.array(load_function(self.function, CORRELATION_GROUP, "correlation function")(T, **self.params),
                     dtype=float)
        if R.shape != (T, T) or not np.all(np.isfinite(R)):
            raise SweepDefinitionError(f"{self.function} returned {_shape(R)} for T = {T}; it must return a finite "
                                       f"{T} x {T} matrix")
        return R

    def _gaussian_factor(self, T: int) -> np.ndarray:
        """``F`` with ``F F^T = sin(pi R / 2)``: the Gaussian vector ``F g`` has signs of correlation ``R``."""
        values, vectors = np.linalg.eigh(np.sin(np.pi * self.matrix(T) / 2.0))
        return vectors * np.sqrt(np.clip(values, 0.0, None))

    def draw(self, T: int, N: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        if self.sampler is None:
            g = rng.standard_normal((N, T)) @ self._gaussian_factor(T).T
            xi = np.where(g >= 0.0, 1, -1).astype(np.int8)
            return xi, xi[:, 0].copy()
        out = load_function(self.sampler, CORRELATION_GROUP, "sampler")(T, N, rng, **self.params)
        xi, y = out if isinstance(out, tuple) else (out, None)
        xi = np.asarray(xi)
        if xi.shape != (N, T) or not np.all(np.abs(xi) == 1):
            raise SweepDefinitionError(f"{self.sampler} returned {_shape(xi)} for T = {T}, N = {N}; it must return "
                                       f"{N} x {T} signs (+1 or -1)")
        xi = xi.astype(np.int8)
        y = xi[:, 0].copy() if y is None else np.asarray(y).astype(np.int8).reshape(N)
        return xi, y

    def problems(self, Ts: tuple[int, ...]) -> list[str]:
        for T in Ts:
            for field, check in (("function", self._matrix_problem), ("sampler", self._sampler_problem)):
                name = getattr(self, field)
                try:
                    problem = check(T)
                except Exception as exc:  # noqa: BLE001 - whatever the user's function raises, in one line
                    problem = str(exc) if isinstance(exc, ValueError) else \
                        f"{name} failed for T = {T}: {type(exc).__name__}: {exc}"
                if problem:
                    return [f"correlation.{field}: {problem}"]
        return []

    def _matrix_problem(self, T: int) -> str | None:
        """What is wrong with ``R`` at ``T`` (``None``: nothing): it must be a correlation matrix."""
        R, where = self.matrix(T), f"{self.function} at T = {T}"
        if not np.allclose(R, R.T, rtol=0.0, atol=1e-12):
            return f"{where} is not symmetric"
        if not np.allclose(np.diag(R), 1.0, rtol=0.0, atol=1e-12):
            return f"{where} does not have a unit diagonal (got {np.diag(R).tolist()})"
        if (smallest := np.linalg.eigvalsh(R)[0]) < -PSD_TOL:
            return f"{where} is not positive semidefinite (smallest eigenvalue {smallest:.3g})"
        return None

    def _sampler_problem(self, T: int) -> str | None:
        """What is wrong with the sign law at ``T`` (``None``: nothing): it must draw signs of correlation ``R``."""
        R = self.matrix(T)
        if self.sampler is None:
            if (smallest := np.linalg.eigvalsh(np.sin(np.pi * R / 2.0))[0]) < -PSD_TOL:
                return (f"no Gaussian signs have the R of {self.function} at T = {T} (sin(pi R / 2) has the "
                        f"eigenvalue {smallest:.3g}); give a `sampler` that draws signs with it")
            return None
        xi, _ = self.draw(T, CHECK_DRAWS, np.random.default_rng(0))
        gap = np.abs(xi.T.astype(float) @ xi / CHECK_DRAWS - R).max()
        if gap > CHECK_SE / np.sqrt(CHECK_DRAWS):
            return (f"the correlation of {CHECK_DRAWS} sign vectors of {self.sampler} at T = {T} is {gap:.3f} away "
                    f"from R (more than {CHECK_SE:g} standard errors)")
        return None


def _shape(a: np.ndarray) -> str:
    return f"an array of shape {a.shape}" if np.all(np.isfinite(a.astype(float, copy=False))) else \
        f"an array of shape {a.shape} with non-finite values"


CORRELATIONS: tuple[type[Correlation], ...] = (Prefix, IID, Full, Decay, Label, Markov, PythonCorrelation)
"""The registry: every correlation model, one class each."""

if TYPE_CHECKING:                       # a union built at run time is no type to mypy: it sees the base class
    CorrelationSpec = Correlation
else:
    CorrelationSpec = Annotated[Union[CORRELATIONS], Field(discriminator="model")]  # noqa: UP007 - `|` needs the members written out
"""What a sweep file's ``correlation`` validates against: one of :data:`CORRELATIONS`, by its tag."""

_ADAPTER: TypeAdapter[Correlation] = TypeAdapter(CorrelationSpec)


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
