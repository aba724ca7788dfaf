"""Writes finished tasks into their chunks: the data (by whoever computed it), then ``done`` (the driver).

Each task owns one chunk of every per-replicate variable, so two writers never touch one chunk.
The data of a task is written first — by the worker that computed it, or by the driver — and its
``done`` flags only afterwards, by the driver, once the data write has returned: a reader never
sees a ``done`` replicate without its data, and the store is readable while a sweep runs.
Unwritten chunks read back as the fill value (NaN, ``False`` for ``done``, -1 for ``run``); a written
chunk is always stored, even when every value in it is the fill value (``write_empty_chunks``), so
an absent chunk file always means "never written" (:func:`rmtsweep.store.verify`).
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

import numpy as np
import zarr
from zarr.storage import LocalStore

from .. import config
from ..dims import has_d_axis, store_dims
from .fence import Fence, FencedStore
from .location import StorePath, locate, zarr_target

__all__ = ["Writer", "array_of", "dims_of", "open_for_writing", "null_arrays", "per_replicate_arrays",
           "read_array", "selection_shape"]



def array_of(group: zarr.Group, name: str) -> zarr.Array:
    """The array ``name`` of a store's root ``group``: its variables and coordinates are arrays, never groups."""
    return cast(zarr.Array, group[name])


def dims_of(array: zarr.Array) -> tuple[str, ...]:
    """The dimension names of one of a store's arrays: its ``_ARRAY_DIMENSIONS``, a list of names."""
    return tuple(cast("list[str]", array.attrs["_ARRAY_DIMENSIONS"]))


def read_array(array: zarr.Array, selection: Any = ...) -> np.ndarray:
    """``array[selection]`` (all of it by default), which zarr types as any buffer's: numpy, read on the CPU."""
    return cast(np.ndarray, array[selection])


def per_replicate_arrays(group: zarr.Group) -> dict[str, zarr.Array]:
    """The group's per-replicate variables (dims starting ``[d,] delta, gamma, T, weights, replicate``)."""
    out = {}
    for name, arr in group.arrays():
        dims = tuple(cast("list[str]", arr.attrs.get("_ARRAY_DIMENSIONS", ())))
        lead = store_dims(has_d_axis(dims)).replicate
        if dims[:len(lead)] == lead:
            out[name] = arr
    return out


def null_arrays(group: zarr.Group) -> dict[str, zarr.Array]:
    """The group's scheduled null replicates (dims ``[d,] delta, gamma, T, weights, null_replicate``)."""
    out = {}
    for name, arr in group.arrays():
        dims = tuple(cast("list[str]", arr.attrs.get("_ARRAY_DIMENSIONS", ())))
        if len(dims) > 1 and dims[-1] == "null_replicate":           # not the coordinate itself
            out[name] = arr
    return out


def open_for_writing(path: str | StorePath) -> dict[str, zarr.Array]:
    """The store's arrays by name, opened so that every chunk written is stored, also one of fill values only.

    zarr 3 skips such chunks by default (``array.write_empty_chunks``); here a chunk's presence is
    the record that its task wrote it. An array takes the setting when it is opened, so use these
    array objects (``group[name]`` would open the array again with zarr's default).
    """
    with zarr.config.set({"array.write_empty_chunks": True}):
        return dict(zarr.open_group(zarr_target(locate(path), read_only=False), mode="r+").arrays())


def selection_shape(region: tuple[slice | int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The shape of ``array[region]`` for an array of ``shape``, without reading it (an integer drops its axis).

    >>> selection_shape((0, slice(2, 4), slice(6, 9)), (2, 5, 7))
    (2, 1)
    """
    # region may index fewer axes than shape has: the rest are whole
    return (tuple(len(range(*r.indices(n))) for r, n in zip(region, shape, strict=False) if isinstance(r, slice))
            + shape[len(region):])


class Writer:
    """The per-replicate arrays of an existing store, opened once, written chunk by chunk."""

    def __init__(self, path: str | StorePath, fence: Fence | None = None) -> None:
        self.path = locate(path)
        self.fence = fence
        target = zarr_target(self.path, read_only=False)
        if fence is not None:
            target = FencedStore(LocalStore(target) if isinstance(target, str) else target, fence)
        with zarr.config.set({"array.write_empty_chunks": True}):
            group = zarr.open_group(target, mode="r+")
            self.arrays = per_replicate_arrays(group)
            self.null = null_arrays(group)
        self.done = self.arrays["done"]
        self._pool: ThreadPoolExecutor | None = None

    def chunk_keys(self, region: tuple[slice | int, ...], names: Iterable[str] | None = None) -> list[str]:
        """The keys of the chunks ``region`` (one task's) covers, in the arrays ``names`` (default: all).

        A null task's region (along ``null_replicate`` in place of ``replicate``) names chunks of the null arrays.
        """
        keys = []
        for name in self.arrays if names is None else names:
            array = self.arrays.get(name) or self.null[name]
            coords = tuple((r.start or 0) // c if isinstance(r, slice) else r // c
                           for r, c in zip(region, array.chunks, strict=False))
            coords += (0,) * (array.ndim - len(coords))
            keys.append(f"{array.path}/{array.metadata.encode_chunk_key(coords)}")
        return keys

    def data_names(self, null: bool = False) -> list[str]:
        """The arrays a task's data write touches: every per-replicate one but ``done``; with ``null`` (a null
        task) every null array but ``null_done``."""
        return [name for name in (self.null if null else self.arrays) if name not in ("done", "null_done")]

    def prepare(self, regions: Iterable[tuple[slice | int, ...]], names: Iterable[str] | None = None) -> None:
        """Note the chunks of ``regions`` as they are, before the caller checks the lock (see :mod:`.fence`)."""
        if self.fence is not None:
            self.fence.prepare(key for region in regions for key in self.chunk_keys(region, names))

    def write_block(self, region: tuple[slice | int, ...], values: dict[str, np.ndarray], todo: np.ndarray | None,
                    run: int, null: bool = False) -> None:
        """Write one task's data (not ``done``) into its chunk; ``run`` marks the replicates it computed.

        ``region`` is :attr:`rmtsweep.run.grid.Task.region` (an integer first with a ``d`` axis: the
        task's one ``d`` value). ``todo`` (``(delta, gamma, T, weights, replicate)`` of the chunk, or
        ``None`` for all) says which entries ``values`` holds; the others keep what the chunk already has.
        With ``null`` (a null task) the chunk is one of the null arrays, its last axis ``null_replicate``.
        """
        arrays = {name: self.null[name] for name in self.data_names(True)} if null else self.arrays
        for name, array in arrays.items():
            if name == "done":
                continue
            new = (np.full(selection_shape(region, self.done.shape), run, np.int16) if name == "run"
                   else values.get(name))
            if new is None:
                continue
            if todo is not None:
                old = read_array(array, region)
                mask = todo.reshape(todo.shape + (1,) * (old.ndim - todo.ndim))
                new = np.where(mask, new, old)
            array[region] = new

    def mark_done(self, region: tuple[slice | int, ...], null: np.ndarray | None = None) -> None:
        """Set ``done`` for the whole chunk (after its data is written); for a null task, ``null_done`` where
        ``null`` (its chunk's shape) says it computed a null replicate, so the flags do not depend on the blocking."""
        if null is None:
            self.done[region] = True
            return
        array = self.null["null_done"]
        array[region] = read_array(array, region) | null

    def mark_done_many(self, regions: list[tuple[slice | int, ...]],
                       null: list[np.ndarray | None] | None = None) -> None:
        """Set ``done`` for several chunks at once (``null_done`` where ``null`` gives a null task's flags, as
        :meth:`mark_done`): their writes overlap (a small thread pool), so a driver that finishes many tasks at a
        time pays about one write's latency, not one per task."""
        kinds = null or [None] * len(regions)
        if len(regions) <= 1:
            for region, kind in zip(regions, kinds, strict=True):
                self.mark_done(region, kind)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=int(config.get("store.done-writers")),
                                            thread_name_prefix="rmtsweep-done")
        list(self._pool.map(self.mark_done, regions, kinds))   # re-raises the first write error

    def close(self) -> None:
        """Stop the writer's threads (if any)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def done_mask(self) -> np.ndarray:
        """The whole ``done`` array (one read per chunk)."""
        return read_array(self.done)

    def null_done_mask(self) -> np.ndarray | None:
        """The whole ``null_done`` array (one read per chunk), or None in a store without one."""
        return read_array(self.null["null_done"]) if "null_done" in self.null else None

    def null_done_in(self, region: tuple[slice | int, ...]) -> np.ndarray:
        """``null_done`` over ``region`` (one read per chunk it covers)."""
        return read_array(self.null["null_done"], region)

    def done_in(self, region: tuple[slice | int, ...]) -> np.ndarray:
        """``done`` over ``region`` (one read per chunk it covers)."""
        return read_array(self.done, region)
