"""The fences of chunk writes (:mod:`rmtsweep.store.fence` says why): what each backend's
:meth:`~rmtsweep.store.backend.Location.fence` returns. Below the backends, which build them."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol, cast

from ..errors import RunError

__all__ = ["ConditionalFence", "Fence", "Fenced", "Objects", "StagingFence"]


class Fenced(RunError):
    """The writer no longer holds the store's lock: another run took the store over."""


class Objects(Protocol):
    """A store's prefix whose objects have versions (a :class:`~rmtsweep.store.backend.Location`)."""

    def child(self, name: str) -> Any:
        """The object ``name`` under it, with ``version()`` and ``write_if(data, version)``."""


class Fence:
    """How one writer's chunk writes are made conditional on its still holding the lock."""

    def prepare(self, keys: Iterable[str]) -> None:
        """Note the chunks at ``keys`` as they are now; called before the writer checks the lock."""

    def put(self, key: str, data: bytes) -> None:
        """Write the chunk at ``key``, or raise :class:`Fenced`."""
        raise NotImplementedError


class StagingFence(Fence):
    """A file system's fence: write into the holder's staging directory, then rename into the store."""

    def __init__(self, store: Path, staging: Path) -> None:
        self.store, self.staging = store, staging

    def put(self, key: str, data: bytes) -> None:
        tmp = self.staging / f"{uuid.uuid4().hex}.partial"
        try:
            fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileNotFoundError:
            raise Fenced(f"{self.store}: this writer's staging directory is gone: the store was taken over") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.rename(tmp, self.store / key)
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

    def __init__(self, store: Objects) -> None:
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
