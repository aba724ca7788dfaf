"""The zarr store: layout and template, the writer, extension (migration), opening and status.

A store holds one sweep: coordinates, theory arrays and provenance written once, then one chunk per
finished task and its ``done`` flags. Knows nothing of eigenvalues or dask.
"""

from .handle import JOURNAL_NAME, PreparedRun, Store
from .io import chunk_done, create, is_store, open_dataset, record_run, status, stored_sweep, write_template
from .layout import FORMAT, RESULT_VARS, ZARR_FORMAT, now, provenance, template
from .lock import LOCK_NAME, StoreLock
from .writer import Writer, task_mask

__all__ = [
    "FORMAT", "JOURNAL_NAME", "LOCK_NAME", "RESULT_VARS", "ZARR_FORMAT", "PreparedRun", "Store", "StoreLock",
    "Writer", "chunk_done", "create", "is_store", "now", "open_dataset", "provenance", "record_run", "status",
    "stored_sweep", "task_mask", "template", "write_template",
]
