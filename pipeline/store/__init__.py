"""The zarr store: layout and template, the writer, extension (migration), opening and status.

A store holds one sweep: coordinates, theory arrays and provenance written once, then one chunk per
finished task and its ``done`` flags. Knows nothing of eigenvalues or dask.

Each name is imported on first use, so that a worker importing one module of the package (its task code)
does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

# The public names, name -> the module of this package that defines it: the one list of them. A name added here is
# in __all__; test_layers.py fails until the TYPE_CHECKING block below imports it too.
_LAZY: dict[str, str] = {
    "JOURNAL_NAME": "handle",
    "journal_file": "handle",
    "PreparedRun": "handle",
    "Store": "handle",
    "blocking_of": "io",
    "chunk_done": "io",
    "consolidate": "io",
    "create": "io",
    "is_store": "io",
    "open_store": "io",
    "open_group": "io",
    "open_zarr": "io",
    "record_run": "io",
    "status": "io",
    "StoreStatus": "io",
    "store_problem": "io",
    "stored_sweep": "io",
    "tasks_done": "io",
    "write_template": "io",
    "FORMAT": "layout",
    "RESULT_VARS": "layout",
    "ZARR_FORMAT": "layout",
    "Template": "layout",
    "Variable": "layout",
    "now": "layout",
    "provenance": "layout",
    "template": "layout",
    "Location": "backend",
    "PosixLocation": "backend",
    "local_path": "location",
    "locate": "location",
    "StoreLock": "lock",
    "lock_file": "lock",
    "metadata_lock": "metalock",
    "FrameDamage": "frame_check",
    "frame_damage": "frame_check",
    "rewrite_frame": "frame_repair",
    "metadata_damage": "metadata",
    "restore_metadata": "metadata",
    "Corrupt": "integrity",
    "repair": "integrity",
    "verify": "integrity",
    "Writer": "writer",
}

if TYPE_CHECKING:                                   # the names of _LAZY for the type checker
    from .handle import JOURNAL_NAME, PreparedRun, Store, journal_file
    from .io import (blocking_of, chunk_done, consolidate, create, is_store, open_group, open_store, open_zarr,
                     record_run, status, StoreStatus, store_problem, stored_sweep, tasks_done, write_template)
    from .layout import FORMAT, RESULT_VARS, ZARR_FORMAT, Template, Variable, now, provenance, template
    from .backend import Location, PosixLocation
    from .location import local_path, locate
    from .lock import StoreLock, lock_file
    from .frame_check import FrameDamage, frame_damage
    from .frame_repair import rewrite_frame
    from .metadata import metadata_damage, restore_metadata
    from .metalock import metadata_lock
    from .integrity import Corrupt, repair, verify
    from .writer import Writer

__all__ = [*_LAZY]


# The old names, reachable for one release outside __all__ (CHANGELOG.md); each warns when called.
_DEPRECATED: dict[str, str] = {"corrupt_tasks": "integrity", "open_dataset": "io"}

__getattr__, __dir__ = lazy_names(
    __name__, {name: (f".{module}", name) for name, module in (_LAZY | _DEPRECATED).items()}, globals())
