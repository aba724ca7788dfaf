"""The theory cache: the results of the pooling matrix's seeded draws, kept in a folder shared by every store.

A store's theory at its own size draws the realised pooling matrix of each (point, weights) pair and takes its
spectrum (:func:`rmtsweep.theory.pooling.cached_draws`). These results are deterministic given what the entry's
key holds, so a second store with the same pair reads them instead. The folder is the setting
``rmtsweep.theory.cache`` (:func:`folder`); the cache never changes a result.

An entry is one file ``<key>.draws``: a header (:data:`MAGIC`, the key, the sha256 of the payload) and the
payload, an uncompressed ``.npz`` of float64 arrays. A writer writes a temporary file in the same folder and
renames it into place, so a reader sees a whole entry or none. An entry that is unreadable, damaged or not
the one its name says is ignored (computed again and rewritten).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .. import config

__all__ = ["MAGIC", "SUFFIX", "FolderCache", "folder", "theory_cache"]

MAGIC = b"rmtsweep theory cache 1\n"
"""The first bytes of every entry (the version of the entry's layout, not of the numerics)."""

SUFFIX = ".draws"
_ENTRY = re.compile(r"[0-9a-f]{64}" + re.escape(SUFFIX))
_TEMPORARY = re.compile(r"\.[0-9a-f]{64}-.*\.tmp")


def _encode(key: str, arrays: dict[str, NDArray[np.float64]]) -> bytes:
    buffer = io.BytesIO()
    named: dict[str, Any] = {name: np.asarray(value, np.float64) for name, value in arrays.items()}
    np.savez(buffer, **named)
    payload = buffer.getvalue()
    return MAGIC + key.encode("ascii") + hashlib.sha256(payload).digest() + payload


def _decode(key: str, data: bytes) -> dict[str, NDArray[np.float64]] | None:
    """The arrays of an entry's bytes, or None when they are not a whole entry of ``key``."""
    head = MAGIC + key.encode("ascii")
    start = len(head) + 32
    if len(data) < start or data[:len(head)] != head or hashlib.sha256(data[start:]).digest() != data[len(head):start]:
        return None
    try:
        with np.load(io.BytesIO(data[start:]), allow_pickle=False) as z:
            arrays = {name: z[name] for name in z.files}
    except Exception:  # noqa: BLE001 - a payload that passes its checksum but is no npz: foreign, so ignored
        return None
    return arrays if all(a.dtype == np.float64 for a in arrays.values()) else None


@dataclass(frozen=True)
class FolderCache:
    """A :class:`rmtsweep.theory.pooling.DrawCache` in a folder (created on the first write).

    Attributes
    ----------
    path : pathlib.Path
        The folder, absolute.
    """

    path: Path

    def entry(self, key: str) -> Path:
        """The file of ``key``'s entry."""
        return self.path / f"{key}{SUFFIX}"

    def load(self, key: str) -> dict[str, NDArray[np.float64]] | None:
        """The arrays of ``key``'s entry; None when it is absent, unreadable, damaged or another key's."""
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            return None
        try:
            data = self.entry(key).read_bytes()
        except OSError:
            return None
        return _decode(key, data)

    def save(self, key: str, arrays: dict[str, NDArray[np.float64]]) -> None:
        """Write ``key``'s entry whole, replacing any (a folder that cannot be written: nothing is kept)."""
        tmp = None
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{key}-", suffix=".tmp", dir=self.path)
            with os.fdopen(fd, "wb") as f:
                f.write(_encode(key, arrays))
            os.replace(tmp, self.entry(key))
            tmp = None
        except OSError:
            pass                            # a cache that cannot write only costs the computation next time
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass

    def files(self) -> list[Path]:
        """The entries and the temporary files of interrupted writers (none when the folder is missing)."""
        try:
            names = sorted(os.listdir(self.path))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return [self.path / n for n in names if _ENTRY.fullmatch(n) or _TEMPORARY.fullmatch(n)]

    def usage(self) -> tuple[int, int]:
        """``(entries, bytes)`` of the folder's entries."""
        sizes = []
        for p in self.files():
            if _ENTRY.fullmatch(p.name):
                try:
                    sizes.append(p.stat().st_size)
                except FileNotFoundError:
                    pass
        return len(sizes), sum(sizes)

    def clear(self) -> int:
        """Remove every entry (and temporary file); the number of entries removed."""
        removed = 0
        for p in self.files():
            try:
                p.unlink()
            except FileNotFoundError:
                continue
            removed += bool(_ENTRY.fullmatch(p.name))
        return removed


def folder() -> Path | None:
    """The folder of the setting ``rmtsweep.theory.cache``, absolute; None when it is ``none``.

    ``default`` is ``$XDG_CACHE_HOME/rmtsweep/theory`` (when that variable holds an absolute path), else
    ``~/.cache/rmtsweep/theory``; any other value is a folder (``~`` expanded, relative to the working folder).
    """
    value = str(config.get("theory.cache"))
    if value.lower() == "none":
        return None
    if value == "default":
        base = os.environ.get("XDG_CACHE_HOME", "")
        root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
        return (root / "rmtsweep" / "theory").absolute()
    return Path(value).expanduser().absolute()


def theory_cache() -> FolderCache | None:
    """The cache of the setting ``rmtsweep.theory.cache`` (:func:`folder`); None when it is off."""
    path = folder()
    return None if path is None else FolderCache(path)
