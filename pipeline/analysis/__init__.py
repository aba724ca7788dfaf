"""Reading a store: Monte Carlo against theory, maps, the paper's figures, export."""

from .compare import GROUP, MARGIN_FACTOR, compare, open_source, summary, transition_snr, write_comparison
from .export import export, read_tidy
from .phase import phase_diagram
from .stats import mean_sem

__all__ = ["GROUP", "MARGIN_FACTOR", "compare", "export", "mean_sem", "open_source", "phase_diagram", "read_tidy", "summary",
           "transition_snr", "write_comparison"]
