"""The zarr store: layout and template, the writer, extension (migration), opening and status.

A store holds one sweep: coordinates, theory arrays and provenance written once, then one chunk per
finished task and its ``done`` flags. Knows nothing of eigenvalues or dask.
"""

from .handle import JOURNAL_NAME, PreparedRun, Store
from .io import (blocking_of, chunk_done, consolidate, create, is_store, open_dataset, record_run, status,
                 store_problem, stored_sweep, write_template)
from .layout import FORMAT, RESULT_VARS, ZARR_FORMAT, Template, Variable, now, provenance, template
from .lock import StoreLock, lock_file, metadata_lock
from .verify import Corrupt, corrupt_tasks, repair
from .writer import Writer

__all__ = [
    "Corrupt", "FORMAT", "JOURNAL_NAME", "RESULT_VARS", "ZARR_FORMAT", "PreparedRun", "Store", "StoreLock",
    "Template", "Variable", "Writer", "blocking_of", "chunk_done", "consolidate", "corrupt_tasks", "create", "is_store", "lock_file", "metadata_lock", "now",
    "open_dataset", "provenance", "record_run", "repair", "status", "store_problem", "stored_sweep", "template", "write_template",
]
