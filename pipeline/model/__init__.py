"""The Monte Carlo side: correlation models, pooling weights, one replicate. No dask, no files."""

from .correlation import (CORRELATIONS, IID, Correlation, CorrelationSpec, Decay, Full, Label, Markov, Prefix,
                          PythonCorrelation, correlation_matrix, draw_signs, make_correlation)
from .replicate import CellModel, Draws, ReplicateResult, draw_replicate, simulate_replicate, simulate_schemes
from .topk import spectrum_top_k
from .attention import Attention
from .plugins import PythonScheme
from .schemes import SCHEMES, WeightsSpec, make_scheme
from .weights import (Causal, Custom, Harmonic, HarmonicPaper, Mean, Optimal, Scheme, alpha, effective_length, kappa,
                      pooling_weights)

__all__ = [
    "CORRELATIONS", "IID", "SCHEMES", "Attention", "Causal", "CellModel", "Correlation", "CorrelationSpec", "Custom",
    "Decay",
    "Draws", "Full", "Harmonic", "HarmonicPaper", "Label", "Markov", "Mean", "Optimal", "Prefix", "PythonScheme",
    "PythonCorrelation", "ReplicateResult",
    "Scheme", "WeightsSpec", "alpha", "correlation_matrix", "draw_replicate", "draw_signs", "effective_length",
    "kappa", "make_correlation", "make_scheme", "pooling_weights", "simulate_replicate", "simulate_schemes",
    "spectrum_top_k",
]
