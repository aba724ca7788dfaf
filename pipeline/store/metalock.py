"""The metadata lock: one writer at a time of the store's consolidated metadata (a run recording itself,
``compare --write`` adding its group), held for one read-merge-replace.

Apart from the store's lock (:mod:`rmtsweep.store.lock`), which says which run writes the data: this one is
short-lived and taken by any process that rewrites ``.zmetadata``, the holder of the store's lock included.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

from .backend import Location
from .location import locate

__all__ = ["METADATA_LOCK_NAME", "metadata_lock"]

METADATA_LOCK_NAME = ".rmtsweep-metadata.lock"


@contextlib.contextmanager
def metadata_lock(store: str | Path | Location, timeout: float = 30.0) -> Iterator[None]:
    """Exclusive right to rewrite the store's consolidated metadata, held for one read-merge-replace.

    A run (recording itself) and ``rmtsweep compare --write`` (adding its group) both rewrite
    ``.zmetadata``; taking this short-lived lock first means neither loses the other's entries. The lock is
    an object inside the store made by an exclusive create, holding a random id. One whose content has not
    changed for ``timeout`` seconds of this process's clock belongs to a process that died mid-write and is
    broken (removed if it still holds what was seen). While it changes hands a waiter waits on, however long
    the queue: the elements of a job array that start together each record their run under it, one after
    another. Waiters look again after a growing, jittered pause (up to about a second), so hundreds of them do
    not flood a shared file system's metadata server.
    """
    path = locate(store).child(METADATA_LOCK_NAME)
    mine = uuid.uuid4().hex.encode()
    seen, since, tries = None, time.monotonic(), 0
    while not path.create(mine):
        held = path.read()
        if held is None:
            continue
        if held != seen:
            seen, since = held, time.monotonic()
        elif time.monotonic() - since > timeout:
            path.remove_if(lambda raw: raw == seen)     # noqa: B023 - called at once, before seen changes
            continue
        tries += 1
        time.sleep(min(1.0, 0.02 * 1.5 ** tries) * random.uniform(0.5, 1.5))
    try:
        yield
    finally:
        path.remove_if(lambda raw: raw == mine)
