"""Fenced chunk writes: a writer that lost the store's lock writes no chunk, whatever the timing.

A writer checks the lock before it writes a task (:func:`rmtsweep.store.lock.holds`). A process stopped
between that check and its write (a frozen node, a suspended job) would still write after another run took
the store over. So the write itself is conditional, in the way each backend allows:

- **On a file system** every holder of a lock has a staging directory beside it, made when it takes the
  lock: ``demo.zarr.lock.writer-TOKEN``. A chunk is written there and renamed into the store. Whoever
  takes a stale lock over renames the old holder's staging directory away first. The old holder's renames
  then find no source, so nothing it writes afterwards reaches the store.
- **On object storage** with conditional writes (S3), a chunk is replaced only if it is still what the
  writer saw before it checked the lock (``If-Match`` on its version, ``If-None-Match`` for a chunk not
  there yet). A take-over's own writes change what the old holder saw, so the old holder's writes fail.
  Where a filesystem has no conditional writes, the check before each task is the only fence.

A writer that finds itself fenced raises :class:`Fenced` and writes nothing more. Each backend picks its fence
(:meth:`~rmtsweep.store.backend.Location.fence`); this module holds the fences and the functions the lock calls.
"""

from __future__ import annotations

import asyncio

from zarr.abc.store import Store
from zarr.core.buffer import Buffer
from zarr.storage import WrapperStore

from .backend import STAGING, Location, staging_dir
from .fencing import ConditionalFence, Fence, Fenced, StagingFence

__all__ = ["STAGING", "ConditionalFence", "Fence", "Fenced", "FencedStore", "StagingFence", "close_staging",
           "fence_out", "make_fence", "open_staging", "staging_dir"]

_METADATA = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")


def open_staging(lock: Location, token: str) -> None:
    """Ready the fence of the holder with ``token``, right after it took ``lock`` (:meth:`Location.open_fence`)."""
    lock.open_fence(token)


def fence_out(lock: Location, token: str | None) -> None:
    """Stop every later chunk write of the holder with ``token`` of ``lock`` (:meth:`Location.fence_out`)."""
    if token:
        lock.fence_out(token)


def close_staging(lock: Location, token: str) -> None:
    """Remove the holder's own fence as it releases ``lock``."""
    fence_out(lock, token)


def make_fence(store: Location, lock: Location, token: str) -> Fence | None:
    """The fence of the holder with ``token`` of ``lock`` writing into ``store``; None where there is none."""
    return store.fence(lock, token)


class FencedStore(WrapperStore[Store]):
    """A zarr store whose chunk writes go through a :class:`Fence`; metadata writes go straight through."""

    def __init__(self, store: Store, fence: Fence) -> None:
        super().__init__(store)
        self.fence = fence

    async def set(self, key: str, value: Buffer) -> None:
        if key.endswith(_METADATA):
            await self._store.set(key, value)
            return
        await asyncio.to_thread(self.fence.put, key, value.to_bytes())

    def _with_store(self, store: Store) -> FencedStore:
        return type(self)(store, self.fence)

