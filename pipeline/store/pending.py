"""A store's theory at its own size, written after its template: the ``theory_pending`` flag and the write.

A run makes a new store's template at once, with the theory that costs little (the limits), and computes
the theory at the store's size (:data:`rmtsweep.theory.on_grid.SIZED`) as tasks beside its first ones.
Until that is written the store's attribute ``theory_pending`` is true: ``status`` says so. Every reader
whose output holds anything derived from the theory refuses in one line (:func:`require_theory`); a reader
of the Monte Carlo alone computes from what is written and says so (:data:`PENDING_MARK`, :func:`pending_note`).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import xarray as xr

from ..errors import StoreError
from .io import consolidate, open_group
from .layout import ZARR_FORMAT, checksum_encoding
from .location import locate, zarr_target
from .metalock import metadata_lock

__all__ = ["PENDING", "PENDING_MARK", "pending_note", "require_theory", "theory_pending", "write_theory"]

PENDING = "theory_pending"
PENDING_MARK = "pending: the store's theory at its size is not written yet; this is the Monte Carlo alone"
"""The ``theory`` attribute of what a reader computed from a theory-pending store's Monte Carlo alone."""
_NOT_YET = "its theory at the store's size is not written yet"


def theory_pending(attrs: dict[str, Any]) -> bool:
    """Whether a store with these attributes still waits for its theory at its own size."""
    return bool(attrs.get(PENDING, False))


def require_theory(attrs: dict[str, Any], store: object, doing: str) -> None:
    """Raise :class:`~rmtsweep.errors.StoreError` if the store with these attributes still waits for its theory.

    Parameters
    ----------
    attrs
        The store's attributes.
    store
        What names the store in the message (its path or URL).
    doing
        What the reader does, said as the user's next step, e.g. ``"compare"``.

    Examples
    --------
    >>> require_theory({}, "run.zarr", "compare")                # its theory is written: nothing to say
    >>> require_theory({PENDING: True}, "run.zarr", "compare")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rmtsweep.errors.StoreError: run.zarr: its theory at the store's size is not written yet: ... once it is written
    """
    if theory_pending(attrs):
        raise StoreError(f"{store}: {_NOT_YET}: the run computes it beside its first tasks (a run stopped before "
                         f"then leaves it to the next `rmtsweep run`); {doing} once it is written")


def pending_note(store: object, what: str) -> str:
    """The line a reader prints when it computed ``what`` from a theory-pending store's Monte Carlo alone."""
    return f"{store}: {_NOT_YET}: {what} from the Monte Carlo alone, with no theory (the next `rmtsweep run` writes it)"


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
