"""The registry of weights schemes: what one entry of a sweep file's ``grid.weights`` validates against.

Adding a scheme to rmtsweep is one class (a :class:`~rmtsweep.model.weights.Scheme` with its ``scheme``
tag) and its entry in :data:`SCHEMES`; a user adds one without editing rmtsweep through ``scheme: python``
(:mod:`rmtsweep.model.plugins`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Union

from pydantic import Field, TypeAdapter

from .attention import Attention
from .plugins import PythonScheme
from .weights import Causal, Custom, Harmonic, HarmonicPaper, Mean, Optimal, Scheme

__all__ = ["SCHEMES", "WeightsSpec", "make_scheme"]

SCHEMES: tuple[type[Scheme], ...] = (Mean, Optimal, Harmonic, HarmonicPaper, Causal, Custom, PythonScheme, Attention)
"""Every weights scheme, one class each."""

if TYPE_CHECKING:                       # a union built at run time is no type to mypy: it sees the base class
    WeightsSpec = Scheme
else:
    WeightsSpec = Annotated[Union[SCHEMES], Field(discriminator="scheme")]  # noqa: UP007 - `|` needs the members written out
"""What one entry of a sweep file's ``grid.weights`` validates against: one of :data:`SCHEMES`, by its tag."""

_ADAPTER: TypeAdapter[Scheme] = TypeAdapter(WeightsSpec)


def make_scheme(scheme: str, **params: Any) -> Scheme:
    """A weights scheme by name, validated: ``make_scheme("causal", tau=1.0)``."""
    return _ADAPTER.validate_python({"scheme": scheme, **params})
