"""The names of the store's dimensions, in one place (store, theory, comparison, maps, export).

The words are those of docs/glossary.md: a *point* is one value of :data:`TASK_DIMS`, a *cell* one of
:data:`CELL_DIMS` and ``snr``. Every per-replicate variable adds ``replicate`` to :data:`CELL_DIMS` and,
where it depends on the SNR, ``snr`` (and ``k`` for eigenpairs, ``bin`` for the spectrum).

A sweep whose ``d`` is a grid axis (``grid.d``) puts :data:`D` first, before ``delta``, in every one
of these tuples; one with a top-level ``d`` has no ``d`` dimension at all (``attrs["d"]``). Which of
the two a sweep or store has is decided here, by :func:`store_dims`, and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Hashable, Iterable

__all__ = ["ALL_AXES", "AXES", "CELL_DIMS", "D", "NULL_DIMS", "REPLICATE_DIMS", "SNR_DIMS", "StoreDims", "TASK_DIMS",
           "TIDY_ORDER", "has_d_axis", "store_dims"]

D = "d"
"""The embedding dimension's axis (present only when the sweep gives ``grid.d``)."""

TASK_DIMS = ("delta", "gamma", "T")
"""Axes of a point, which a task batches over (every weights scheme of a point shares its draws)."""

CELL_DIMS = TASK_DIMS + ("weights",)
"""Axes of a cell but the SNR (every task computes the whole SNR axis, so arrays keep it last)."""

AXES = ("delta", "gamma", "snr", "T", "weights")
"""The swept axes of a sweep file's ``grid``, in the order they are written there (``d`` aside)."""

ALL_AXES = (D,) + AXES
"""Every axis a grid may have (``d`` only when it is a grid axis)."""

REPLICATE_DIMS = CELL_DIMS + ("replicate",)
"""Dims of a per-replicate scalar (``alpha``, ``kappa``, ``done``, ``run``)."""

SNR_DIMS = REPLICATE_DIMS + ("snr",)
"""Dims of a per-replicate, per-SNR variable (``accuracy``; ``eigenvalues`` adds ``k``)."""

NULL_DIMS = ("count_draw", "pool_draw", "null_candidate", "null_replicate")
"""Dims of the detection nulls the store keeps (draws of the token counts or of the pooling matrix, candidates,
the null replicates a run schedules)."""

TIDY_ORDER = (D, "delta", "gamma", "T", "weights", "replicate", "snr", "k", "bin", *NULL_DIMS)
"""Column order of tidy tables (CSV export); ``d`` only where it is an axis."""


@dataclass(frozen=True)
class StoreDims:
    """The dimensions of one sweep's store: those above, with ``d`` first when it is a grid axis."""

    d_axis: bool

    @property
    def lead(self) -> tuple[str, ...]:
        """``("d",)`` or ``()``: what goes before ``delta``."""
        return (D,) if self.d_axis else ()

    @property
    def task(self) -> tuple[str, ...]:
        """Axes of a point (a task holds one ``d`` value and a block of these)."""
        return self.lead + TASK_DIMS

    @property
    def cell(self) -> tuple[str, ...]:
        """Axes of a cell but ``snr`` (the comparison's leading dims)."""
        return self.lead + CELL_DIMS

    @property
    def replicate(self) -> tuple[str, ...]:
        """Dims of a per-replicate scalar."""
        return self.lead + REPLICATE_DIMS

    @property
    def snr(self) -> tuple[str, ...]:
        """Dims of a per-replicate, per-SNR variable."""
        return self.lead + SNR_DIMS

    @property
    def axes(self) -> tuple[str, ...]:
        """The swept axes."""
        return self.lead + AXES


def store_dims(d_axis: bool) -> StoreDims:
    """The dims of a store whose ``d`` is a grid axis (``True``) or a single top-level value (``False``).

    Examples
    --------
    >>> store_dims(True).replicate
    ('d', 'delta', 'gamma', 'T', 'weights', 'replicate')
    >>> store_dims(False).replicate
    ('delta', 'gamma', 'T', 'weights', 'replicate')
    """
    return StoreDims(bool(d_axis))


def has_d_axis(dims: Iterable[Hashable]) -> bool:
    """Whether dimension names (of a dataset, or an array's ``_ARRAY_DIMENSIONS``) include the ``d`` axis."""
    return D in tuple(dims)
