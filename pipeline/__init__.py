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
    security              TLS credentials of the schedulers rmtsweep starts or joins
    jobwatch              the batch system's answer: a refused submission, a job gone before a worker joined
    clusters              SLURM / PBS through dask-jobqueue
    engine                where a run's work goes: LocalCluster, batch-system cluster or a scheduler
    cli                   the command line: the only module that knows all the others
    testing               shared assertion helpers and the literal reference path
"""

import signal as _signal
import sys as _sys


def _from_the_command_line() -> bool:
    """Is this process the ``rmtsweep`` command (its script, or ``python -m rmtsweep.cli``)?"""
    argv = _sys.orig_argv
    script = _sys.argv[0].replace("\\", "/").rpartition("/")[2]
    return script in ("rmtsweep", "rmtsweep.exe") or any(
        a == "-m" and argv[i + 1:i + 2] in (["rmtsweep.cli"], ["rmtsweep"]) for i, a in enumerate(argv))


# These imports take seconds. A Ctrl-C meanwhile waits for their end (a KeyboardInterrupt inside a compiled
# module's import can be lost or leave it half-built), then is raised. The command line has had no chance
# to catch anything yet, so there it ends the process quietly with the status a Ctrl-C gives (130) instead
# of a traceback; anywhere else (a notebook, a script) it stays a KeyboardInterrupt.
_mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGINT}) if hasattr(_signal, "pthread_sigmask") else None
try:
    try:
        from . import theory
        from .analysis import accessor as _accessor  # noqa: F401  (registers ds.rmt)
        from .analysis import compare, write_comparison
        from .errors import RmtsweepError, SelectionError, StoreError, SweepDefinitionError, TaskFailedError
        from .run import run_sweep
        from .run.runner import package_version as _package_version
        from .spec import Sweep, SweepFile, load_sweep, parse_sweep
        from .store import open_dataset as open_store
        from .theory.on_grid import theory_dataset
    finally:
        if _mask is not None:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, _mask)      # a Ctrl-C held meanwhile is raised here
except KeyboardInterrupt:
    if not _from_the_command_line():
        raise
    raise SystemExit(130) from None

__version__ = _package_version()

__all__ = [
    "__version__", "RmtsweepError", "SelectionError", "StoreError", "Sweep", "SweepDefinitionError", "SweepFile",
    "TaskFailedError", "compare", "load_sweep", "open_store", "parse_sweep", "run_sweep", "theory",
    "theory_dataset", "write_comparison",
]
