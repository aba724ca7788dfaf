"""What the store code needs of where a store lives: the :class:`Location` protocol, and its POSIX backend.

A :class:`Location` names one store, or one object beside or inside it (its lock, a marker, a metadata file),
and does the few things the package asks of storage: read an object whole, create one only if it is absent
(the lock's *take*), replace one whole (its *heartbeat*; readers see the old bytes or the new), remove one,
remove one only if it still holds what was judged (the lock's *take-over*), list what is under a prefix or
beside an object, and hand zarr and xarray what they open. Each backend also owns how a store is written
there: its creation, extension and recovery, and the fences of its writers. Every other module of the package
goes through these methods and never asks which backend it has; that is decided once, by
:func:`rmtsweep.store.location.locate`.

Two backends implement it: :class:`PosixLocation` (a path on a file system; it *is* a
:class:`~pathlib.Path`, so that the code that needs a file system, such as the run journal and job arrays, uses
it as one) and, in :mod:`rmtsweep.store.objectstore`, the backend of object storage (``s3://``, ``gs://`` and
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
from typing import Any, TextIO

from ..errors import StoreError, UserError
from .fencing import Fence, StagingFence

__all__ = ["NEW_SUFFIX", "OLD_SUFFIX", "STAGING", "SWAP_SUFFIX", "Location", "PosixLocation", "beside", "staging_dir"]

OLD_SUFFIX, NEW_SUFFIX = ".rmtsweep-old", ".rmtsweep-new"
"""Beside a store being extended: the store set aside (file systems), and the extended store being written."""
SWAP_SUFFIX = ".rmtsweep-swap"
"""Beside a store on object storage: the marker that commits an extension (:meth:`Location.replace_by`)."""
STAGING = ".writer-"
"""Beside a lock file: a holder's staging directory is the lock's name, this, and its fencing token."""


def beside(path: Location, suffix: str) -> Location:
    """The directory (or prefix) beside the store whose name is the store's with ``suffix``."""
    return path.sibling(path.name + suffix)


def staging_dir(lock: Location, token: str) -> Location:
    """The staging directory of the holder with fencing ``token`` of the lock file ``lock``."""
    return lock.sibling(f"{lock.name}{STAGING}{token}")


class Location(ABC):
    """Where a store, or one object of it, lives; ``str(location)`` is its path or URL, for messages.

    Attributes
    ----------
    renames
        Whether whole directories rename atomically and files take appends (a POSIX file system): what the
        backends' own methods rely on, not a question for their callers.
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

    def update(self, change: Callable[[bytes | None], bytes]) -> bool:
        """Replace the object with ``change(its bytes)`` (``None``: absent); ``change`` raises to write nothing.

        With :attr:`conditional_writes`, only if the object is still the one read: ``False`` when another writer
        replaced or removed it in between, however long this one was stopped there. Elsewhere the bytes are
        written as they are; a file system's writers are fenced by their staging directories instead.
        """
        if not self.conditional_writes:
            self.write(change(self.read()))
            return True
        version = self.version()
        data = change(self.read())
        try:
            return self.write_if(data, version)
        except FileNotFoundError:                   # removed since it was read
            return False

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

    # --- how a store is written (:mod:`rmtsweep.store.io`, :mod:`rmtsweep.store.migrate`) ---------------------

    contended_writes: bool = False
    """Whether many writes from the driver at once slow the workers' chunk writes (they share one storage
    service's requests): the driver then writes in bulk only once the tasks are done."""

    @abstractmethod
    def write_tree(self, write: Callable[[Location], None]) -> None:
        """Write a store's objects here by calling ``write(target)``, its consolidated metadata last (``target``
        is a location zarr writes quickly: this one, or a local directory uploaded here)."""

    @abstractmethod
    def create_tree(self, write: Callable[[Location], None], made: Callable[[Location], bool]) -> None:
        """Create the store here by ``write(target)`` (:meth:`write_tree`) so that no reader takes a part of it
        for the whole: whole or absent on a file system, or a prefix that :meth:`creation_cut` tells.

        ``made(self)`` says whether a store another writer made first is here: then this one is no error.

        Raises
        ------
        StoreError
            The store cannot be created (one line with the storage's reason).
        """

    @abstractmethod
    def creation_cut(self) -> bool:
        """Whether a :meth:`create_tree` of the store here was cut before its end (its prefix is to be removed)."""

    @abstractmethod
    def replace_by(self, new: Location) -> None:
        """Replace the store here by the store at ``new`` (beside it, :data:`NEW_SUFFIX`), which goes away; a
        kill part way leaves what :meth:`extension_cut` tells and :meth:`recover_extension` finishes or undoes."""

    @abstractmethod
    def extension_cut(self) -> bool:
        """Whether an extension of the store here (its writing beside, or :meth:`replace_by`) was killed part way."""

    @abstractmethod
    def recover_extension(self) -> None:
        """Finish or undo an extension of the store here that was killed part way (nothing when there is none)."""

    # --- fences: a writer that lost the store's lock writes no chunk (:mod:`rmtsweep.store.fence`) -------------

    @abstractmethod
    def fence(self, lock: Location, token: str) -> Fence | None:
        """How the holder with ``token`` of ``lock`` writes chunks into the store here, fenced; ``None`` where the
        check of the lock before each task is the only fence."""

    @abstractmethod
    def open_fence(self, token: str) -> None:
        """Ready the fence of the holder with ``token`` of the lock here, right after it took the lock, and fence
        out earlier holders whose writers may still run."""

    @abstractmethod
    def fence_out(self, token: str) -> None:
        """Stop every later chunk write of the holder with ``token`` of the lock here."""

    # --- beside the store on this machine (:mod:`rmtsweep.store.handle`, the CLI) -----------------------------

    @abstractmethod
    def open_lines(self) -> TextIO | None:
        """The object opened for appending lines, line-buffered; ``None`` where the storage takes no appends."""

    @abstractmethod
    def job_address(self) -> str:
        """What a batch job on another node is given for the store: an absolute path, or the URL."""

    @abstractmethod
    def local_directory(self) -> Path:
        """Where files that go with the store are written on this machine (a job's script): beside the store on
        a file system, else the current directory."""


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

    # --- how a store is written: directories renamed into place --------------------------------------------

    def write_tree(self, write: Callable[[Location], None]) -> None:
        write(self)

    def create_tree(self, write: Callable[[Location], None], made: Callable[[Location], bool]) -> None:
        """Written in a temporary directory beside it and renamed into place: never half a store."""
        parent = self.absolute().parent
        if not parent.is_dir():
            raise StoreError(f"{self}: cannot create the store: {parent} is not a directory")
        tmp = parent / f".{self.name}.creating-{os.getpid()}"
        try:
            write(tmp)
            tmp.rename(self)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            if self.exists() and made(self):
                return                      # another run created it first; the lock decides who writes
            raise StoreError(f"{self}: cannot create the store ({exc.strerror or exc})") from None
        except BaseException:               # Ctrl-C or SIGTERM while it is written: no half template left beside it
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def creation_cut(self) -> bool:
        return False

    def replace_by(self, new: Location) -> None:
        """Two renames: the store aside (:data:`OLD_SUFFIX`), ``new`` into its place; then the old one goes."""
        old = self.sibling(self.name + OLD_SUFFIX)
        self.rename(old)
        new.local().rename(self)
        shutil.rmtree(old)

    def extension_cut(self) -> bool:
        return any(self.sibling(self.name + s).exists() for s in (OLD_SUFFIX, NEW_SUFFIX))

    def recover_extension(self) -> None:
        old, new = self.sibling(self.name + OLD_SUFFIX), self.sibling(self.name + NEW_SUFFIX)
        if old.exists():
            if self.exists():
                shutil.rmtree(old)          # the swap completed; only the clean-up was lost
            else:
                old.rename(self)            # killed between the two renames: put the original back
        if new.exists():
            shutil.rmtree(new)

    # --- fences: each holder writes through its own staging directory --------------------------------------

    def fence(self, lock: Location, token: str) -> Fence:
        return StagingFence(self, staging_dir(lock, token).local())

    def open_fence(self, token: str) -> None:
        """Make the holder's staging directory, after retiring the leftovers of earlier holders of the lock."""
        own = staging_dir(self, token)
        for other in self.siblings(f"{self.name}{STAGING}"):
            if other.name != own.name and ".fenced-" not in other.name:
                _retire(other.local())
        os.mkdir(own.local(), 0o755)

    def fence_out(self, token: str) -> None:
        """The holder's staging directory goes away: its writers' renames find no source from then on."""
        if token:
            _retire(staging_dir(self, token).local())

    # --- beside the store on this machine -------------------------------------------------------------------

    def open_lines(self) -> TextIO:
        return open(self, "a", buffering=1)

    def job_address(self) -> str:
        return str(self.resolve())

    def local_directory(self) -> Path:
        return Path(self.absolute().parent)


def _retire(directory: PosixLocation) -> None:
    """Rename ``directory`` aside (one atomic step: its writers' renames fail from then on), then delete it."""
    aside = directory.sibling(f"{directory.name}.fenced-{uuid.uuid4().hex[:12]}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _missing_ok(function: Any, path: str, exc_info: Any) -> None:
    """``shutil.rmtree``'s error handler: a file that went away meanwhile is no error."""
    if not issubclass(exc_info[0], FileNotFoundError):
        raise exc_info[1]
