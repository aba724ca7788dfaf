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
from ..store import Location, locate, open_store, open_zarr

__all__ = ["FLAGS", "GROUP", "done_digest", "monte_carlo", "open_source", "store_name", "with_options"]

GROUP = "comparison"
"""The store group :func:`rmtsweep.analysis.compare.write_comparison` writes."""
FLAGS = ("done", "run")
"""The per-replicate variables that say which replicates were computed, and by which run."""


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
    ds = open_store(location)
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


def monte_carlo(ds: xr.Dataset) -> list[str]:
    """The store's Monte Carlo variables: those per replicate (less :data:`FLAGS`); every other one is theory."""
    return [str(v) for v in ds.data_vars if "replicate" in ds[v].dims and v not in FLAGS]


def store_name(source: str | Path | Location | xr.Dataset) -> str:
    """What names ``source`` in a message: its path or URL; for an opened store, the path it was opened from."""
    if isinstance(source, xr.Dataset):
        return str(source.encoding.get("source") or f"the store of sweep {source.attrs.get('sweep_name', '?')}")
    return str(source)


def done_digest(done: np.ndarray) -> str:
    """A short fingerprint of the ``done`` mask: a comparison records the one it was computed from."""
    return hashlib.sha256(np.packbits(np.asarray(done, bool)).tobytes()).hexdigest()[:16]
