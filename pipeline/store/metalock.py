"""The metadata lock: one writer at a time of the store's consolidated metadata (a run recording itself,
``compare --write`` adding its group), held for one read-merge-replace.

Apart from the store's lock (:mod:`rmtsweep.store.lock`), which says which run writes the data: this one is
short-lived and taken by any process that rewrites ``.zmetadata``, the holder of the store's lock included.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
import uuid
from pathlib import Path
from typing import Iterator

from .location import Remote

__all__ = ["METADATA_LOCK_NAME", "metadata_lock"]

METADATA_LOCK_NAME = ".rmtsweep-metadata.lock"


@contextlib.contextmanager
def metadata_lock(store: Path, timeout: float = 30.0) -> Iterator[None]:
    """Exclusive right to rewrite the store's consolidated metadata, held for one read-merge-replace.

    A run (recording itself) and ``rmtsweep compare --write`` (adding its group) both rewrite
    ``.zmetadata``; taking this short-lived lock first means neither loses the other's entries. A
    lock that has not changed for ``timeout`` seconds of this process's clock belongs to a process that
    died mid-write and is broken. While it changes hands a waiter waits on: the elements of a job array
    that start together each record their run under it, one after another (a fixed one-minute deadline
    failed an element of 100 that had waited behind the others, in ``benchmarks/array_elements.py`` with
    the elements as threads of one process, where every join was slowed by their shared zarr I/O loop).
    Waiters look again after a growing, jittered pause (up to about a second), so hundreds of them do not
    flood a shared file system's metadata server.
    """
    if isinstance(store, Remote):
        with _remote_metadata_lock(store.child(METADATA_LOCK_NAME), timeout):
            yield
        return
    path = Path(store) / METADATA_LOCK_NAME
    seen, since, tries = None, time.monotonic(), 0
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            try:
                stamp = path.stat().st_ino, path.stat().st_mtime_ns
            except FileNotFoundError:
                continue
            if stamp != seen:
                seen, since = stamp, time.monotonic()
            elif time.monotonic() - since > timeout:
                path.unlink(missing_ok=True)
                continue
            tries += 1
            time.sleep(min(1.0, 0.02 * 1.5 ** tries) * random.uniform(0.5, 1.5))
    os.close(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _remote_metadata_lock(path: Remote, timeout: float) -> Iterator[None]:
    """:func:`metadata_lock` on object storage: an object created with a conditional write, holding a random id;
    one whose content has not changed for ``timeout`` seconds is broken (deleted if it is still that one)."""
    mine = uuid.uuid4().hex.encode()
    seen, since, tries = None, time.monotonic(), 0
    while not path.create(mine):
        held = path.read()
        if held is None:
            continue
        if held != seen:
            seen, since = held, time.monotonic()
        elif time.monotonic() - since > timeout:
            if path.read() == seen:
                path.remove()
            continue
        tries += 1
        time.sleep(min(1.0, 0.02 * 1.5 ** tries) * random.uniform(0.5, 1.5))
    try:
        yield
    finally:
        if path.read() == mine:
            path.remove()
