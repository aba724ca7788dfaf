"""The Monte Carlo side: correlation models, pooling weights, one replicate. No dask, no files."""

from .correlation import Correlation, correlation_matrix, draw_signs
from .replicate import CellModel, ReplicateResult, simulate_replicate
from .weights import WeightScheme, alpha, effective_length, kappa, pooling_weights

__all__ = [
    "CellModel", "Correlation", "ReplicateResult", "WeightScheme", "alpha", "correlation_matrix",
    "draw_signs", "effective_length", "kappa", "pooling_weights", "simulate_replicate",
]
