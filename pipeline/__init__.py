"""rmtsweep: Monte Carlo parameter sweeps of attention-style pooling, held against random-matrix theory.

The public API::

    from rmtsweep import load_sweep, run_sweep, open_store, theory_dataset, compare

Each name is imported when first used, so the command line and short scripts do not wait for dask,
zarr and scipy. ``ds.rmt`` is on every xarray Dataset once ``rmtsweep`` is imported: it is registered
when xarray is imported (at once if it already is), so ``import rmtsweep`` does not import xarray.

Rooms, in the direction data flows (each imports only rooms before it; checked in CI)::

    errors, types, dims   the error hierarchy, every string option, the store's dimension names
    lazy                  the names a package imports on first use
    model/                the Monte Carlo side: correlations, weights schemes, one replicate (no dask, no files)
    overrides             KEY=VALUE overrides of a sweep file's data
    sweep_errors          one-line messages of a sweep file's validation errors
    spec                  sweep file -> frozen Sweep (validated against the model's classes)
    results               each per-replicate result variable, declared once
    theory/               exact large-dimension theory, and on a sweep's grid (pure numpy/xarray)
    config                the settings under ``rmtsweep`` in dask.config (shipped defaults: rmtsweep.yaml)
    store/                the zarr store: layout, writer, extension, lock, open and status
    run/                  grid (tasks, seeds), execution on dask, the runner (prepare, then execute)
    analysis/             comparison with theory, the live page, the paper's figures, export; maps/
    cluster/              where a run's work goes: LocalCluster, SLURM / PBS, a scheduler; TLS, job arrays
    testing               shared assertion helpers and the literal reference path
    cli                   the command line: the only module that knows all the others
"""

from __future__ import annotations

import sys as _sys
from importlib import abc as _abc
from importlib import metadata as _metadata
from importlib import util as _util
from typing import TYPE_CHECKING, Any

from .errors import (BatchSystemError, ClusterError, RmtsweepError, RunError, SelectionError, SettingsError,
                     StoreError, StoreWriteError, SweepDefinitionError, TaskFailedError, UserError)
from .lazy import lazy_names

try:
    __version__ = _metadata.version("rmtsweep")
except _metadata.PackageNotFoundError:          # a source tree that was never installed
    __version__ = "0+unknown"

# The public names imported on first use, name -> (module, attribute; None for the module itself): the one list of
# them. A name added here is in __all__; test_layers.py fails until the TYPE_CHECKING block below imports it too.
_LAZY: dict[str, tuple[str, str | None]] = {
    "theory": ("rmtsweep.theory", None),
    "compare": ("rmtsweep.analysis.compare", "compare"),
    "write_comparison": ("rmtsweep.analysis.compare", "write_comparison"),
    "run_sweep": ("rmtsweep.run", "run_sweep"),
    "Sweep": ("rmtsweep.spec", "Sweep"),
    "SweepFile": ("rmtsweep.spec", "SweepFile"),
    "load_sweep": ("rmtsweep.spec", "load_sweep"),
    "parse_sweep": ("rmtsweep.spec", "parse_sweep"),
    "open_store": ("rmtsweep.store", "open_store"),
    "theory_dataset": ("rmtsweep.theory.on_grid", "theory_dataset"),
    "plan": ("rmtsweep.run.plan", "plan"),
    "status": ("rmtsweep.store", "status"),
    "StoreStatus": ("rmtsweep.store", "StoreStatus"),
    "verify": ("rmtsweep.store", "verify"),
    "phase_diagram": ("rmtsweep.analysis.phase", "phase_diagram"),
    "plot": ("rmtsweep.analysis.maps.plot", "plot"),
    "export": ("rmtsweep.analysis.export", "export"),
}

# rmtsweep.config, reached as an attribute too, is documented with the settings rather than in the top-level API;
# the deprecated names stay reachable for one release (CHANGELOG.md), outside __all__
_UNLISTED: dict[str, tuple[str, str | None]] = {"config": ("rmtsweep.config", None),
                                                "plot_map": ("rmtsweep.analysis.maps.plot", "plot_map")}

if TYPE_CHECKING:                                   # the names of _LAZY for the type checker
    from . import theory
    from .analysis.compare import compare, write_comparison
    from .run import run_sweep
    from .spec import Sweep, SweepFile, load_sweep, parse_sweep
    from .store import open_store
    from .theory.on_grid import theory_dataset
    from .analysis.export import export
    from .analysis.phase import phase_diagram
    from .analysis.maps.plot import plot
    from .run.plan import plan
    from .store import verify
    from .store import StoreStatus, status


__getattr__, __dir__ = lazy_names(__name__, _LAZY | _UNLISTED, globals())


def _register_accessor() -> None:
    """``ds.rmt`` on every xarray Dataset; the analysis behind it is imported when it is first used."""
    import xarray as xr

    @xr.register_dataset_accessor("rmt")
    def rmt(ds: xr.Dataset) -> Any:
        from .analysis.accessor import RmtAccessor
        return RmtAccessor(ds)


class _OnXarrayImport(_abc.MetaPathFinder):
    """Registers ``ds.rmt`` as soon as xarray has been imported, so ``import rmtsweep`` need not import it.

    A Dataset exists only once xarray is imported, so every Dataset has ``ds.rmt`` whatever imports xarray
    and whenever; the command line and task workers, which never import xarray, start sooner.
    """

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "xarray":
            return None
        _sys.meta_path.remove(self)                 # the other finders find xarray; this one fires once
        spec = _util.find_spec("xarray")
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: Any) -> None:
            execute(module)
            _register_accessor()

        spec.loader.exec_module = exec_module       # type: ignore[method-assign]
        return spec


if "xarray" in _sys.modules:
    _register_accessor()
else:
    _sys.meta_path.insert(0, _OnXarrayImport())

__all__ = ["__version__", "BatchSystemError", "ClusterError", "RmtsweepError", "RunError", "SelectionError",
           "SettingsError", "StoreError", "StoreWriteError", "SweepDefinitionError", "TaskFailedError", "UserError",
           *_LAZY]
