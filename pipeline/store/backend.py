"""What the store code needs of where a store lives: the :class:`Location` protocol, and its POSIX backend.

A :class:`Location` names one store, or one object beside or inside it (its lock, a marker, a metadata file),
and does the few things the package asks of storage: read an object whole, create one only if it is absent
(the lock's *take*), replace one whole (its *heartbeat*; readers see the old bytes or the new), remove one,
remove one only if it still holds what was judged (the lock's *take-over*), list what is under a prefix or
beside an object, and hand zarr and xarray what they open. Every other module of the package goes through
these methods; which backend a location has is decided once, by :func:`rmtsweep.store.location.locate`.

Two backends implement it: :class:`PosixLocation` (a path on a file system; it *is* a
:class:`~pathlib.Path`, so that the code that needs a file system, such as the run journal and job arrays, uses
it as one) and, in :mod:`rmtsweep.store.location`, the backend of object storage (``s3://``, ``gs://`` and
the other URLs it knows). The tests hold every backend to the same promises
(``tests/unit/test_storage_backends.py``).
"""

from __future__ import annotations

import glob
import os
import shutil
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PosixPath
from typing import Any, cast

from ..errors import UserError

__all__ = ["Location", "PosixLocation", "posix"]


class Location(ABC):
    """Where a store, or one object of it, lives; ``str(location)`` is its path or URL, for messages.

    Attributes
    ----------
    renames
        Whether whole directories rename atomically and files take appends (a POSIX file system). Then a store
        is created and extended by renaming directories into place, runs keep a journal and job arrays share
        the store. Without (object storage) a store is written in place, its consolidated metadata last.
    """

    renames: bool = False
    conditional_writes: bool = False
    """Whether :meth:`write_if` replaces an object only if it still has the version seen (S3's ``If-Match``)."""

    # --- made from what a user gave (:func:`rmtsweep.store.location.locate`) ----------------------------------

    @classmethod
    @abstractmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any]) -> Location:
        """The location at ``url``, a URL whose scheme is registered to this backend; nothing is checked yet."""

    def check(self, given: str) -> None:  # noqa: B027 - a backend that takes every URL keeps it
        """Refuse, in one line quoting ``given`` (what the user wrote), a URL that cannot be a store's (by default
        every one can)."""

    def with_options(self, storage_options: Mapping[str, Any]) -> Location:
        """The location with ``storage_options`` added to its own.

        Raises
        ------
        UserError
            Options given to a backend that takes none.
        """
        if storage_options:
            raise UserError(f"{self}: --storage-option is for stores at a URL (s3://..., gs://...), not on a file "
                            f"system")
        return self

    def local(self) -> PosixLocation:
        """The location as a path on a file system: what job arrays and ``demo`` need.

        Raises
        ------
        StoreError
            A location that is not on a file system.
        """
        raise NotImplementedError(f"{self}: this storage is not a file system")

    # --- names ---------------------------------------------------------------------------------------------

    @property
    @abstractmethod
    def name(self) -> str:
        """The last component (``run.zarr``)."""

    @property
    def stem(self) -> str:
        """:attr:`name` without its suffix (``run``)."""
        return Path(self.name).stem

    @abstractmethod
    def child(self, name: str) -> Location:
        """The object ``name`` (a key, ``/`` allowed) inside this prefix or directory."""

    @abstractmethod
    def sibling(self, name: str) -> Location:
        """The object ``name`` beside this one."""

    # --- what zarr and xarray open ---------------------------------------------------------------------------

    @property
    @abstractmethod
    def address(self) -> str:
        """The path or URL as text: what ``xr.open_zarr`` takes, with :attr:`open_options`."""

    @property
    def storage_options(self) -> dict[str, Any]:
        """The options the user gave for the storage (credentials, endpoint); empty on a file system."""
        return {}

    @property
    def open_options(self) -> dict[str, Any]:
        """:attr:`storage_options` with the package's defaults: what xarray's ``storage_options`` is given."""
        return {}

    @abstractmethod
    def zarr_store(self, read_only: bool = True) -> Any:
        """What ``zarr.open_group`` and ``Dataset.to_zarr`` take for this store."""

    # --- single objects ------------------------------------------------------------------------------------

    @abstractmethod
    def read(self) -> bytes | None:
        """The object's bytes, or ``None`` when it is absent."""

    @abstractmethod
    def exists(self) -> bool:
        """Whether the object, or a directory or prefix with objects under it, is there."""

    @abstractmethod
    def create(self, data: bytes, parents: bool = False) -> bool:
        """Write the object only if it is absent, as one step no other writer can interleave with: ``False``
        when it was there already. ``parents``: make the directories it goes in first (on a file system)."""

    @abstractmethod
    def write(self, data: bytes) -> None:
        """Write or replace the object whole: a reader sees the old bytes or the new, never a part (on a file
        system, the directories it goes in are made as needed)."""

    def version(self) -> str | None:
        """An opaque tag of the object's current bytes (an ETag), or ``None`` when it is absent."""
        raise NotImplementedError(f"{self}: this storage has no object versions")

    def write_if(self, data: bytes, version: str | None) -> bool:
        """Replace the object only if its :meth:`version` is still ``version`` (``None``: only if absent), as
        one step; ``False`` when it was not. Only where :attr:`conditional_writes` is true."""
        raise NotImplementedError(f"{self}: this storage has no conditional writes")

    @abstractmethod
    def remove(self, recursive: bool = False) -> None:
        """Delete the object (``recursive``: everything under this prefix or directory); absent is no error."""

    @abstractmethod
    def remove_if(self, judged: Callable[[bytes | None], bool]) -> bool:
        """Delete the object if ``judged(its bytes)`` holds, and never an object another writer put there after
        it was read; ``True`` when it was deleted.

        On a file system the object is renamed aside, judged, and linked back if it is not the one judged (a
        link never overwrites). Object storage has no rename: it is read, judged and deleted, so a writer that
        replaced it in between loses it, which the store's lock notices at its next heartbeat.
        """

    @abstractmethod
    def siblings(self, prefix: str, pattern: str = "*") -> list[Location]:
        """The objects beside this one whose names are ``prefix`` then text matching ``pattern`` (fnmatch syntax).

        ``prefix`` is taken literally: a store's name holds ``?``, ``*`` or ``[`` as characters, never as wildcards.
        """

    @abstractmethod
    def list(self) -> list[str]:
        """The keys of every object under this prefix or directory, relative to it, sorted (none: empty)."""

    @abstractmethod
    def copy_in(self, source: Location, keys: Sequence[str]) -> None:
        """Copy the objects ``keys`` under ``source`` to the same keys under this prefix, in one batch."""


class PosixLocation(PosixPath, Location):
    """A path on a file system: a :class:`~pathlib.Path` with the :class:`Location` protocol.

    Exclusive creation is ``O_CREAT | O_EXCL`` (atomic on local file systems and NFS); a replacement is a
    new file renamed over the old.

    Examples
    --------
    >>> loc = PosixLocation("store/demo.zarr")
    >>> loc.sibling("demo.zarr.lock"), loc.child(".zattrs").address
    (PosixLocation('store/demo.zarr.lock'), 'store/demo.zarr/.zattrs')
    """

    renames = True

    @classmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any]) -> PosixLocation:
        """The path of a ``file://`` URL."""
        location = cls(url.split("://", 1)[1])
        location.with_options(storage_options)                  # refuses options
        return location

    def local(self) -> PosixLocation:
        return self

    def child(self, name: str) -> PosixLocation:
        return self / name

    def sibling(self, name: str) -> PosixLocation:
        return self.with_name(name)

    @property
    def address(self) -> str:
        return str(self)

    def zarr_store(self, read_only: bool = True) -> str:
        # zarr opens a path given as text as its own LocalStore
        return str(self)

    def read(self) -> bytes | None:
        try:
            return self.read_bytes()
        except FileNotFoundError:
            return None

    def create(self, data: bytes, parents: bool = False) -> bool:
        if parents:
            self.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(self, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True

    def write(self, data: bytes) -> None:
        tmp = self.with_name(f".{self.name}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            try:
                tmp.write_bytes(data)
            except FileNotFoundError:           # as on object storage, a key needs no directory made first
                self.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(data)
            os.replace(tmp, self)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def remove(self, recursive: bool = False) -> None:
        if recursive and self.is_dir():
            shutil.rmtree(self, ignore_errors=False, onerror=_missing_ok)
            return
        self.unlink(missing_ok=True)

    def remove_if(self, judged: Callable[[bytes | None], bool]) -> bool:
        aside = self.with_name(f"{self.name}.stale-{uuid.uuid4().hex[:12]}")
        try:
            os.rename(self, aside)
        except FileNotFoundError:
            return False
        try:
            removed = judged(aside.read())
            if not removed:
                try:
                    os.link(aside, self)            # put back what another writer made meanwhile; never overwrite
                except FileExistsError:
                    pass
            return removed
        finally:
            aside.unlink(missing_ok=True)

    def siblings(self, prefix: str, pattern: str = "*") -> list[Location]:
        return [*sorted(self.absolute().parent.glob(glob.escape(prefix) + pattern))]

    def list(self) -> list[str]:
        if not self.is_dir():
            return []
        return sorted(str(p.relative_to(self)) for p in self.rglob("*") if p.is_file())

    def copy_in(self, source: Location, keys: Sequence[str]) -> None:
        for key in keys:
            data = source.child(key).read()
            if data is None:
                raise FileNotFoundError(f"{source.child(key)}")
            target = self / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)


def posix(location: Location) -> PosixLocation:
    """``location``, which :attr:`~Location.renames`, as the path on a file system it is.

    What the code that has checked :attr:`~Location.renames` (or :attr:`Location.renames` of the store it is
    beside) passes to ``os``, ``shutil`` and :class:`~pathlib.Path`'s methods: :class:`PosixLocation` is the one
    backend that renames. Nothing is checked at run time; a location of object storage passed here by mistake
    fails as it did without this call, on the first file-system method.
    """
    return cast(PosixLocation, location)


def _missing_ok(function: Any, path: str, exc_info: Any) -> None:
    """``shutil.rmtree``'s error handler: a file that went away meanwhile is no error."""
    if not issubclass(exc_info[0], FileNotFoundError):
        raise exc_info[1]
