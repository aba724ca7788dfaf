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

A writer that finds itself fenced raises :class:`Fenced` and writes nothing more.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import uuid
from collections.abc import Iterable
from typing import cast

from zarr.abc.store import Store
from zarr.core.buffer import Buffer
from zarr.storage import WrapperStore

from ..errors import RunError
from .backend import Location, PosixLocation, posix

__all__ = ["STAGING", "ConditionalFence", "Fence", "Fenced", "FencedStore", "StagingFence", "close_staging",
           "fence_out", "make_fence", "open_staging", "staging_dir"]

STAGING = ".writer-"
_METADATA = (".zarray", ".zattrs", ".zgroup", ".zmetadata", "zarr.json")


class Fenced(RunError):
    """The writer no longer holds the store's lock: another run took the store over."""


def staging_dir(lock: Location, token: str) -> Location:
    """The staging directory of the holder with fencing ``token`` of the lock file ``lock``."""
    return lock.sibling(f"{lock.name}{STAGING}{token}")


def open_staging(lock: Location, token: str) -> None:
    """Make the holder's staging directory, right after it took ``lock`` (file systems only).

    The leftovers of earlier holders of the same lock are fenced out first: their writers may still run.
    """
    if not lock.renames:
        return
    for other in lock.siblings(f"{lock.name}{STAGING}"):
        if other.name != staging_dir(lock, token).name and ".fenced-" not in other.name:
            _retire(posix(other))
    os.mkdir(posix(staging_dir(lock, token)), 0o755)


def fence_out(lock: Location, token: str | None) -> None:
    """Stop every later chunk write of the holder with ``token`` of ``lock``: its staging directory goes away."""
    if lock.renames and token:
        _retire(posix(staging_dir(lock, token)))


def close_staging(lock: Location, token: str) -> None:
    """Remove the holder's own staging directory as it releases ``lock``."""
    fence_out(lock, token)


def _retire(directory: PosixLocation) -> None:
    """Rename ``directory`` aside (one atomic step: its writers' renames fail from then on), then delete it."""
    aside = directory.sibling(f"{directory.name}.fenced-{uuid.uuid4().hex[:12]}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


class Fence:
    """How one writer's chunk writes are made conditional on its still holding the lock."""

    def prepare(self, keys: Iterable[str]) -> None:
        """Note the chunks at ``keys`` as they are now; called before the writer checks the lock."""

    def put(self, key: str, data: bytes) -> None:
        """Write the chunk at ``key``, or raise :class:`Fenced`."""
        raise NotImplementedError


class StagingFence(Fence):
    """A file system's fence: write into the holder's staging directory, then rename into the store."""

    def __init__(self, store: PosixLocation, staging: PosixLocation) -> None:
        self.store, self.staging = store, staging

    def put(self, key: str, data: bytes) -> None:
        tmp = self.staging.child(f"{uuid.uuid4().hex}.partial")
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileNotFoundError:
            raise Fenced(f"{self.store}: this writer's staging directory is gone: the store was taken over") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.rename(tmp, self.store.child(key))
        except FileNotFoundError:
            if os.path.exists(tmp):                         # the store is gone, not this writer's staging
                raise
            raise Fenced(f"{self.store}: the store was taken over while this writer wrote {key}") from None
        finally:
            with contextlib.suppress(FileNotFoundError):    # renamed into place already
                os.unlink(tmp)


class ConditionalFence(Fence):
    """Object storage's fence: replace a chunk only if it is still what :meth:`prepare` saw."""

    _ABSENT = object()

    def __init__(self, store: Location) -> None:
        self.store = store
        self.seen: dict[str, str | None] = {}

    def prepare(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.seen[key] = self.store.child(key).version()

    def put(self, key: str, data: bytes) -> None:
        version = self.seen.pop(key, self._ABSENT)
        if version is self._ABSENT:
            raise RuntimeError(f"{self.store}: chunk {key} written without being prepared")
        if not self.store.child(key).write_if(data, cast("str | None", version)):   # not _ABSENT: what prepare saw
            raise Fenced(f"{self.store}: chunk {key} changed since this writer checked the lock: the store was "
                         "taken over")


def make_fence(store: Location, lock: Location, token: str) -> Fence | None:
    """The fence of the holder with ``token`` of ``lock`` writing into ``store``; None where there is none."""
    if store.renames:
        return StagingFence(posix(store), posix(staging_dir(lock, token)))
    if store.conditional_writes:
        return ConditionalFence(store)
    return None


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

