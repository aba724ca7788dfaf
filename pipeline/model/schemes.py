"""The registry of weights schemes: what one entry of a sweep file's ``grid.weights`` validates against.

Adding a scheme to rmtsweep is one class (a :class:`~rmtsweep.model.weights.Scheme` with its ``scheme``
tag) and its line here; a user adds one without editing rmtsweep through ``scheme: python``
(:mod:`rmtsweep.model.plugins`).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, TypeAdapter

from .attention import Attention
from .plugins import PythonScheme
from .weights import Causal, Custom, Harmonic, HarmonicPaper, Mean, Optimal, Scheme

__all__ = ["SCHEMES", "WeightsSpec", "make_scheme"]

SCHEMES: tuple[type[Scheme], ...] = (Mean, Optimal, Harmonic, HarmonicPaper, Causal, Custom, PythonScheme, Attention)
"""Every weights scheme, one class each."""

WeightsSpec = Annotated[Mean | Optimal | Harmonic | HarmonicPaper | Causal | Custom | PythonScheme | Attention,
                        Field(discriminator="scheme")]
"""What one entry of a sweep file's ``grid.weights`` validates against."""

_ADAPTER: TypeAdapter[Scheme] = TypeAdapter(WeightsSpec)


def make_scheme(scheme: str, **params: Any) -> Scheme:
    """A weights scheme by name, validated: ``make_scheme("causal", tau=1.0)``."""
    return _ADAPTER.validate_python({"scheme": scheme, **params})
