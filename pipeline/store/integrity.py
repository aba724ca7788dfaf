"""Checking a store's finished chunks: present, and matching their checksums; clearing the ``done`` of bad ones.

Every per-replicate chunk carries a CRC32 of its bytes (:class:`~rmtsweep.store.layout.Variable`);
a chunk changed on disk — a flipped bit, a file overwritten in the middle — no longer decodes. And
every chunk a task writes is stored, even one of fill values only (:func:`~rmtsweep.store.writer.open_for_writing`),
so a ``done`` task whose chunk is absent was marked done without its data (or lost it since). Either
task is *corrupt*; repairing clears its ``done`` flags, so the next run recomputes exactly those tasks
(bit-identical to an uninterrupted run on the same machine, since seeds are per point and replicate).
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import zarr

from ..dims import has_d_axis, store_dims
from .frame_check import ABSENT, chunk_keys
from .io import open_group
from .location import StorePath, locate
from .writer import array_of, dims_of, null_arrays, per_replicate_arrays, read_array

__all__ = ["ABSENT", "Corrupt", "chunk_keys", "repair", "verify"]


@dataclass(frozen=True)
class Corrupt:
    """One task's chunk that does not read back: where it is, which variable, and why (``null``: a null task's)."""

    region: tuple[slice, ...]
    variable: str
    reason: str
    cell: str
    null: bool = False

    def __str__(self) -> str:
        if self.reason == ABSENT:
            return f"{self.cell}: marked done but its {self.variable} chunk is absent (done without data)"
        return f"{self.cell}: {self.variable} chunk is corrupt ({self.reason})"


def _span(values: np.ndarray) -> str:
    return f"{values[0]:g}" if len(values) == 1 else f"{values[0]:g}..{values[-1]:g}"


def verify(path: str | Path | StorePath, limit: int | None = None, storage_options: dict | None = None,
           read: bool = True) -> list[Corrupt]:
    """Every task with a ``done`` replicate whose chunk of some variable is absent or does not decode; and every
    null task with a ``null_done`` null replicate whose ``null_eigenvalue`` chunk is.

    One entry per task (its first bad variable), at most ``limit``. Reads every such chunk once, and
    lists each variable's chunks once (on object storage: one listing per variable, not a request per chunk).
    ``storage_options``: those of a store at a URL (``endpoint_url``, credentials, ...). ``read=False``: only
    whether the chunks are there (``done`` read whole, no data chunk read), a reader's look before it reads.
    """
    group = open_group(locate(path, storage_options))
    arrays = per_replicate_arrays(group)
    found = _verify(group, arrays["done"], arrays, limit, read, "replicates")
    null = null_arrays(group)
    if "null_done" in null and (limit is None or len(found) < limit):
        found += _verify(group, null["null_done"], null, None if limit is None else limit - len(found), read,
                         "null replicates")
    return found


def _verify(group: zarr.Group, done: zarr.Array, arrays: dict[str, zarr.Array], limit: int | None, read: bool,
            what: str) -> list[Corrupt]:
    """:func:`verify` over the chunks of ``done`` (``done`` or ``null_done``) and the ``arrays`` they flag."""
    dims = dims_of(done)
    named = store_dims(has_d_axis(dims)).task                       # ([d,] delta, gamma, T): in the task's name
    axes = {a: read_array(array_of(group, a)) for a in named}
    chunks = done.chunks
    starts = [range(0, n, c) for n, c in zip(done.shape, chunks, strict=True)]
    stored = {name: chunk_keys(array) for name, array in arrays.items()}
    found: list[Corrupt] = []
    whole = None if read else read_array(done)
    null = what != "replicates"
    for start in itertools.product(*starts):
        region = tuple(slice(s, min(s + c, n)) for s, c, n in zip(start, chunks, done.shape, strict=True))
        at = dict(zip(dims, region, strict=True))
        r = at[dims[-1]]
        cell = " ".join(f"{a}={_span(axes[a][at[a]])}" for a in named) + f" {what} {r.start}-{r.stop - 1}"
        try:
            flags = read_array(done, region) if whole is None else whole[region]
        except Exception as exc:  # noqa: BLE001 - any failure to decode is corruption
            found.append(Corrupt(region, done.basename, type(exc).__name__, cell, null))
            flags = None
        if flags is not None and not flags.any():
            continue
        for name, array in arrays.items():
            if name == done.basename:
                continue
            coords = tuple(s // c for s, c in zip(start, chunks, strict=True)) + (0,) * (array.ndim - len(chunks))
            if array.metadata.encode_chunk_key(coords) not in stored[name]:
                found.append(Corrupt(region, name, ABSENT, cell, null))
                break
            if not read:
                continue
            try:
                array[region]
            except Exception as exc:  # noqa: BLE001
                found.append(Corrupt(region, name, f"{type(exc).__name__}: {str(exc)[:80]}", cell, null))
                break
        if limit is not None and len(found) >= limit:
            break
    return found


def repair(path: str | Path | StorePath, corrupt: list[Corrupt]) -> int:
    """Clear ``done`` (``null_done`` for a null task) over every corrupt task (rewriting a corrupt ``done`` chunk
    whole); returns how many."""
    group = open_group(locate(path), mode="r+")
    regions = {(c.null, tuple((s.start, s.stop) for s in c.region)): c for c in corrupt}    # one per task
    for c in regions.values():
        array_of(group, "null_done" if c.null else "done")[c.region] = False
    return len(regions)


def corrupt_tasks(*args: Any, **kwargs: Any) -> list[Corrupt]:
    """Deprecated: :func:`verify`, under the name it has everywhere (``rmtsweep.verify``, ``rmtsweep verify``)."""
    warnings.warn("rmtsweep.store.corrupt_tasks is deprecated; use rmtsweep.verify", DeprecationWarning, stacklevel=2)
    return verify(*args, **kwargs)
