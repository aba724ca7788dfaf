"""Where the analysis reads from: a store, or its ``comparison`` group, opened lazily (:func:`open_source`).

Every analysis module opens its input here; the comparison group is refused once the store's ``done``
mask has changed since it was written (:func:`done_digest`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import xarray as xr
import zarr

from ..errors import SelectionError
from ..store import Location, locate, open_dataset, open_zarr

__all__ = ["GROUP", "done_digest", "open_source", "with_options"]

GROUP = "comparison"
"""The store group :func:`rmtsweep.analysis.compare.write_comparison` writes."""


def with_options(source: str | Path | Location | xr.Dataset,
                 storage_options: dict | None) -> str | Path | Location | xr.Dataset:
    """``source`` located with the ``storage_options`` of its filesystem when they are given; else as it is."""
    if storage_options is None or isinstance(source, xr.Dataset):
        return source
    return locate(source, storage_options)


def open_source(source: str | Path | Location | xr.Dataset, group: str | None = None) -> xr.Dataset:
    """A store (``group=None``) or one of its groups (e.g. ``"comparison"``), opened lazily."""
    if isinstance(source, xr.Dataset):
        return source
    location = locate(source)
    ds = open_dataset(location)
    if group is None:
        return ds
    try:
        sub = open_zarr(location, group=group)
    except (FileNotFoundError, KeyError, zarr.errors.GroupNotFoundError):
        raise SelectionError(f"{location}: no group {group!r} (valid: none, or 'comparison' after "
                             f"`rmtsweep compare {location}`)") from None
    if group == GROUP and "done_digest" in sub.attrs and sub.attrs["done_digest"] != done_digest(ds["done"].values):
        now = int(ds["done"].sum())
        raise SelectionError(f"{location}: the comparison group was computed from {sub.attrs['done_replicates']} of "
                             f"{sub.attrs['done_total']} replicates done and the store now has {now}: rerun "
                             f"`rmtsweep compare {location}`")
    return sub


def done_digest(done: np.ndarray) -> str:
    """A short fingerprint of the ``done`` mask: a comparison records the one it was computed from."""
    return hashlib.sha256(np.packbits(np.asarray(done, bool)).tobytes()).hexdigest()[:16]
