"""Exact large-dimension theory for ``S / kappa`` (THEORY.md §3-5): pure numpy, vectorised.

- :mod:`pipeline.theory.bulk`: the bulk law ``MP_delta ⊠ MP_gamma`` (edge, atom, density, moments,
  Stieltjes transform).
- :mod:`pipeline.theory.spikes`: thresholds, outlier locations and alignments, and the corrections for an
  uncentred table.
"""

from __future__ import annotations

from pipeline.theory.bulk import atom, density, edge, moments, stieltjes, stieltjes_derivative
from pipeline.theory.spikes import (
    outlier_from_stieltjes,
    overlap,
    phase,
    population_outlier,
    population_overlap,
    population_threshold,
    sample_outlier,
    sample_threshold,
    snr_threshold,
    uncentred,
)

__all__ = [
    "atom",
    "density",
    "edge",
    "moments",
    "outlier_from_stieltjes",
    "overlap",
    "phase",
    "population_outlier",
    "population_overlap",
    "population_threshold",
    "sample_outlier",
    "sample_threshold",
    "snr_threshold",
    "stieltjes",
    "stieltjes_derivative",
    "uncentred",
]
