"""rmtsweep: Monte Carlo parameter sweeps of attention-style pooling, held against random-matrix theory.

The public API::

    from pipeline import load_sweep, run_sweep, open_store, theory_dataset, compare
"""

from .compare import compare, write_comparison
from .errors import RmtsweepError, SelectionError, StoreError, SweepDefinitionError, TaskFailedError
from .predict import theory_dataset
from .runner import run_sweep
from .spec import Sweep, SweepFile, load_sweep, parse_sweep
from .store import open_dataset as open_store

__all__ = [
    "RmtsweepError", "SelectionError", "StoreError", "Sweep", "SweepDefinitionError", "SweepFile",
    "TaskFailedError", "compare", "load_sweep", "open_store", "parse_sweep", "run_sweep", "theory_dataset",
    "write_comparison",
]
