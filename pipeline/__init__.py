"""rmtsweep: Monte Carlo parameter sweeps of attention-style pooling, held against random-matrix theory.

The public API::

    from rmtsweep import load_sweep, run_sweep, open_store, theory_dataset, compare

Rooms, in the direction data flows (each imports only rooms before it; checked in CI)::

    errors, types, dims   the error hierarchy, every string option, the store's dimension names
    model/                the Monte Carlo side: correlations, weights schemes, one replicate (no dask, no files)
    spec                  sweep file -> frozen Sweep (validated against the model's classes)
    theory/               exact large-dimension theory, and on a sweep's grid (pure numpy/xarray)
    store/                the zarr store: layout, writer, extension, lock, open and status
    run/                  grid (tasks, seeds), execution on dask, the runner (prepare, then execute)
    analysis/             comparison with theory, maps, the paper's figures, export
    clusters              SLURM / PBS through dask-jobqueue
    cli                   the command line: the only module that knows all the others
    testing               shared assertion helpers and the literal reference path
"""

from . import theory
from .analysis import accessor as _accessor  # noqa: F401  (registers ds.rmt)
from .analysis import compare, write_comparison
from .errors import RmtsweepError, SelectionError, StoreError, SweepDefinitionError, TaskFailedError
from .run import run_sweep
from .spec import Sweep, SweepFile, load_sweep, parse_sweep
from .store import open_dataset as open_store
from .theory.on_grid import theory_dataset

__all__ = [
    "RmtsweepError", "SelectionError", "StoreError", "Sweep", "SweepDefinitionError", "SweepFile",
    "TaskFailedError", "compare", "load_sweep", "open_store", "parse_sweep", "run_sweep", "theory",
    "theory_dataset", "write_comparison",
]
