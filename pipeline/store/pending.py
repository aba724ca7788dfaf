"""A store's theory at its own size, written after its template: the ``theory_pending`` flag and the write.

A run makes a new store's template at once, with the theory that costs little (the limits), and computes
the theory at the store's size (:data:`rmtsweep.theory.on_grid.SIZED`) as tasks beside its first ones.
Until that is written the store's attribute ``theory_pending`` is true: ``status`` says so, and the
comparison refuses in one line rather than compare with a theory that is not there yet.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import xarray as xr

from .io import consolidate, open_group
from .layout import ZARR_FORMAT, checksum_encoding
from .location import locate, zarr_target
from .metalock import metadata_lock

__all__ = ["PENDING", "theory_pending", "write_theory"]

PENDING = "theory_pending"


def theory_pending(attrs: dict[str, Any]) -> bool:
    """Whether a store with these attributes still waits for its theory at its own size."""
    return bool(attrs.get(PENDING, False))


def write_theory(path: str | Path, theory: xr.Dataset) -> None:
    """Write the arrays of ``theory`` into the store at ``path`` (new ones added, existing ones replaced), then
    clear ``theory_pending`` and rewrite the consolidated metadata (readers see the store before or after)."""
    where = locate(path)
    arrays = theory.drop_vars(list(theory.coords))          # the store has the coordinates already
    with metadata_lock(where):
        # xarray writes the dataset's attributes as the store's: they are the store's own, less the flag
        group = open_group(where)
        arrays.attrs = {k: v for k, v in group.attrs.items() if k != PENDING}
        new = [str(name) for name in arrays.data_vars if str(name) not in group]     # an existing one keeps its codecs
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*not recognized as a component of a Zarr hierarchy")
            arrays.to_zarr(zarr_target(where, read_only=False), mode="a", zarr_format=ZARR_FORMAT,
                           consolidated=False, encoding=checksum_encoding(arrays, new), write_empty_chunks=True)
        consolidate(where)
