"""rmtsweep: Monte Carlo parameter sweeps of attention-style pooling, held against random-matrix theory.

The public API::

    from rmtsweep import load_sweep, run_sweep, open_store, theory_dataset, compare

Each name is imported when first used (``import rmtsweep`` itself takes only xarray, to register
``ds.rmt``), so the command line and short scripts do not wait for dask, zarr and scipy.

Rooms, in the direction data flows (each imports only rooms before it; checked in CI)::

    errors, types, dims   the error hierarchy, every string option, the store's dimension names
    lazy                  the names a package imports on first use
    model/                the Monte Carlo side: correlations, weights schemes, one replicate (no dask, no files)
    spec                  sweep file -> frozen Sweep (validated against the model's classes)
    theory/               exact large-dimension theory, and on a sweep's grid (pure numpy/xarray)
    config                the settings under ``rmtsweep`` in dask.config (shipped defaults: rmtsweep.yaml)
    store/                the zarr store: layout, writer, extension, lock, open and status
    run/                  grid (tasks, seeds), execution on dask, the runner (prepare, then execute)
    analysis/             comparison with theory, maps, the paper's figures, export
    security              TLS credentials of the schedulers rmtsweep starts or joins
    jobwatch              the batch system's answer: a refused submission, a job gone before a worker joined
    clusters              SLURM / PBS through dask-jobqueue
    engine                where a run's work goes: LocalCluster, batch-system cluster or a scheduler
    cli                   the command line: the only module that knows all the others
    testing               shared assertion helpers and the literal reference path
"""

from __future__ import annotations

import os as _os
import sys as _sys
from importlib import metadata as _metadata
from typing import TYPE_CHECKING, Any

from .errors import (BatchSystemError, ClusterError, RmtsweepError, RunError, SelectionError, StoreError, StoreWriteError,
                     SweepDefinitionError, TaskFailedError, UserError)
from .lazy import lazy_names

try:
    __version__ = _metadata.version("rmtsweep")
except _metadata.PackageNotFoundError:          # a source tree that was never installed
    __version__ = "0+unknown"

# name -> (module, attribute; None for the module itself), imported on first use
_LAZY: dict[str, tuple[str, str | None]] = {
    "theory": ("rmtsweep.theory", None),
    "config": ("rmtsweep.config", None),
    "compare": ("rmtsweep.analysis.compare", "compare"),
    "write_comparison": ("rmtsweep.analysis.compare", "write_comparison"),
    "run_sweep": ("rmtsweep.run", "run_sweep"),
    "Sweep": ("rmtsweep.spec", "Sweep"),
    "SweepFile": ("rmtsweep.spec", "SweepFile"),
    "load_sweep": ("rmtsweep.spec", "load_sweep"),
    "parse_sweep": ("rmtsweep.spec", "parse_sweep"),
    "open_store": ("rmtsweep.store", "open_dataset"),
    "theory_dataset": ("rmtsweep.theory.on_grid", "theory_dataset"),
    "plan": ("rmtsweep.run.plan", "plan"),
    "status": ("rmtsweep.store", "status"),
    "verify": ("rmtsweep.store", "corrupt_tasks"),
    "phase_diagram": ("rmtsweep.analysis.phase", "phase_diagram"),
    "plot_map": ("rmtsweep.analysis.plots", "plot_map"),
    "export": ("rmtsweep.analysis.export", "export"),
}

if TYPE_CHECKING:
    from . import theory
    from .analysis.compare import compare, write_comparison
    from .run import run_sweep
    from .spec import Sweep, SweepFile, load_sweep, parse_sweep
    from .store import open_dataset as open_store
    from .theory.on_grid import theory_dataset
    from .analysis.export import export
    from .analysis.phase import phase_diagram
    from .analysis.plots import plot_map
    from .run.plan import plan
    from .store import corrupt_tasks as verify
    from .store import status


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())


def _from_the_command_line() -> bool:
    """Is this process the ``rmtsweep`` command (its script, or ``python -m rmtsweep.cli``)?"""
    argv = _sys.orig_argv
    script = _sys.argv[0].replace("\\", "/").rpartition("/")[2]
    return script in ("rmtsweep", "rmtsweep.exe") or any(
        a == "-m" and argv[i + 1:i + 2] in (["rmtsweep.cli"], ["rmtsweep"]) for i, a in enumerate(argv))


def _register_accessor() -> None:
    """``ds.rmt`` on every xarray Dataset; the analysis behind it is imported when it is first used."""
    import xarray as xr

    @xr.register_dataset_accessor("rmt")
    def rmt(ds: xr.Dataset) -> Any:
        from .analysis.accessor import RmtAccessor
        return RmtAccessor(ds)


# The command never reads ds.rmt, and answers sooner without xarray; nor do the worker processes of the LocalClusters
# rmtsweep starts, marked by the environment of rmtsweep.run.work.WORKER_ENV (they run tasks only, and start sooner).
if not _from_the_command_line() and not _os.environ.get("RMTSWEEP_TASK_WORKER"):
    _register_accessor()

__all__ = [
    "__version__", "BatchSystemError", "ClusterError", "RmtsweepError", "RunError", "SelectionError", "StoreError",
    "StoreWriteError", "Sweep", "SweepDefinitionError", "SweepFile", "TaskFailedError", "UserError", "compare",
    "export", "load_sweep", "open_store", "parse_sweep", "phase_diagram", "plan", "plot_map", "run_sweep", "status",
    "theory", "theory_dataset", "verify", "write_comparison",
]
