"""Reading a store: Monte Carlo against theory, maps, the paper's figures, export.

The functions ``compare`` and ``export`` live in the modules of those names
(:func:`rmtsweep.analysis.compare.compare`, :func:`rmtsweep.analysis.export.export`) and at the top
level (``rmtsweep.compare``, ``rmtsweep.export``); the package does not rebind the module names.
"""

from .compare import FALSE_ALARM, GROUP, MARGIN_FACTOR, open_source, summary, transition_snr, write_comparison
from .export import read_tidy
from .phase import phase_diagram
from .stats import mean_sem

__all__ = ["FALSE_ALARM", "GROUP", "MARGIN_FACTOR", "mean_sem", "open_source", "phase_diagram", "read_tidy", "summary",
           "transition_snr", "write_comparison"]
