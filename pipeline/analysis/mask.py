"""The one rule every reader of a store follows: a per-replicate value is shown only where ``done`` is set.

A store can hold data chunks whose ``done`` flags are false: a task killed between its data write and
its done flag (a resume recomputes it and never trusts those values), or a corrupt task whose flags
``rmtsweep verify --repair`` cleared. Export, the comparison, the phase diagram, the maps, the
figures and ``ds.rmt`` all go through :func:`only_done`, which makes those values missing (NaN; in a
table or file -1 for ``run``, its fill value), so no reader shows what was not computed.
:func:`not_done` counts those replicates, and :func:`not_done_note` says so in the one line the CLI
prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

if TYPE_CHECKING:
    from ..store import Location

__all__ = ["NotDone", "mask_not_done", "not_done", "not_done_note", "only_done", "per_replicate"]

DONE = "done"
REPLICATE = "replicate"


def only_done(x: xr.DataArray, done: xr.DataArray, keep_dtype: bool = False) -> xr.DataArray:
    """``x`` where ``done`` is set, missing elsewhere: the rule (lazy, attrs kept).

    Missing is NaN (what means and counts skip). With ``keep_dtype``, what a table or file shows, an
    integer variable that declares a fill value keeps its type and gets that value instead (``run``:
    -1, read through :func:`rmtsweep.open_store`, which keeps ``_FillValue`` as an attribute).

    Examples
    --------
    >>> x = xr.DataArray([1.0, 2.0, 3.0], dims="replicate")
    >>> only_done(x, xr.DataArray([True, False, True], dims="replicate")).values
    array([ 1., nan,  3.])
    """
    fill = x.attrs.get("_FillValue", x.encoding.get("_FillValue")) if keep_dtype and x.dtype.kind in "iu" else None
    return x.where(done) if fill is None else x.where(done, np.asarray(fill, x.dtype))


def per_replicate(ds: xr.Dataset) -> list[str]:
    """The variables :func:`mask_not_done` masks: those along ``replicate``, but ``done`` itself."""
    return [str(v) for v in ds.data_vars if REPLICATE in ds[v].dims and v != DONE]


def mask_not_done(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with :func:`only_done` applied to every per-replicate variable (lazy; ``done`` is kept).

    A dataset without ``done`` (a comparison group) is returned as it is.
    """
    if DONE not in ds.data_vars:
        return ds
    return ds.assign({v: only_done(ds[v], ds[DONE], keep_dtype=True) for v in per_replicate(ds)})


@dataclass(frozen=True)
class NotDone:
    """How many replicates (points of ``done``) are not done, of how many."""

    count: int
    total: int

    def __bool__(self) -> bool:
        return self.count > 0


def not_done(done: xr.DataArray | xr.Dataset) -> NotDone:
    """Count the replicates whose ``done`` is false (reads ``done``, which is small)."""
    if isinstance(done, xr.Dataset):
        if DONE not in done.data_vars:
            return NotDone(0, 0)
        done = done[DONE]
    flags = np.asarray(done.values, bool)
    return NotDone(int(flags.size - flags.sum()), int(flags.size))


def not_done_note(source: str | Path | Location | xr.Dataset, nd: NotDone, consequence: str) -> str:
    """The line a reader's ``notes`` get when replicates are not done, e.g.
    ``store/x.zarr: 12 of 48 replicates not done (interrupted run); their values are left empty``."""
    name = source.attrs.get("sweep_name", "store") if isinstance(source, xr.Dataset) else str(source)
    return f"{name}: {nd.count} of {nd.total} replicates not done (interrupted run); {consequence}"
