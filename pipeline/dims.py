"""The names of the store's dimensions, in one place (store, theory, comparison, maps, export).

A *cell* is one point of :data:`CELL_DIMS`; every per-replicate variable adds ``replicate`` and,
where it depends on the SNR, ``snr`` (and ``k`` for eigenpairs, ``bin`` for the spectrum).
"""

from __future__ import annotations

__all__ = ["AXES", "CELL_DIMS", "REPLICATE_DIMS", "SNR_DIMS", "TASK_DIMS", "TIDY_ORDER"]

TASK_DIMS = ("delta", "gamma", "T")
"""Axes a task batches over (every weights scheme of a point shares its draws)."""

CELL_DIMS = TASK_DIMS + ("weights",)
"""Axes of one grid cell (without the SNR, which every task computes whole)."""

AXES = ("delta", "gamma", "snr", "T", "weights")
"""The swept axes of a sweep file's ``grid``, in the order they are written there."""

REPLICATE_DIMS = CELL_DIMS + ("replicate",)
"""Dims of a per-replicate scalar (``alpha``, ``kappa``, ``done``, ``run``)."""

SNR_DIMS = REPLICATE_DIMS + ("snr",)
"""Dims of a per-replicate, per-SNR variable (``accuracy``; ``eigenvalues`` adds ``k``)."""

TIDY_ORDER = ("delta", "gamma", "T", "weights", "replicate", "snr", "k", "bin")
"""Column order of tidy tables (CSV export)."""
