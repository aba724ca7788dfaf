"""The backend of object storage: a :class:`~rmtsweep.store.backend.Location` at a URL of an fsspec filesystem
(``s3://``, ``gs://``, ``az://``, ...), and the one place that knows fsspec.

A failure of the storage service becomes one line naming the store
(:func:`~rmtsweep.store.storage_errors.storage_error`). Both the location's own calls and zarr's reads and
writes through :meth:`FsspecLocation.zarr_store` are translated.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ..errors import StoreError, UserError
from .backend import NEW_SUFFIX, SWAP_SUFFIX, Location, PosixLocation, beside
from .fencing import ConditionalFence, Fence
from .storage_errors import OUTAGE, first_line, storage_error

__all__ = ["PACKAGES", "FsspecLocation", "package_error", "storage_error"]


def _translated(method: Callable) -> Callable:
    """``method`` of :class:`FsspecLocation`, its storage service's failures raised as :func:`storage_error`'s."""
    @functools.wraps(method)
    def wrapped(self: FsspecLocation, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            error = storage_error(exc, self.store_url or self.url)
            if error is None or error is exc:
                raise
            raise error from exc
    return wrapped


# the packages that give fsspec its object-storage filesystems, by protocol (fsspec names them only in prose)
PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
             "abfss": "adlfs", "adl": "adlfs", "oci": "ocifs", "hf": "huggingface_hub", "webdav": "webdav4"}


@dataclass(frozen=True, repr=False)
class FsspecLocation(Location):
    """A store, or one object of it, at a URL of an fsspec filesystem, with the options it is made with.

    ``str(location)`` is the URL (as the user wrote it, without a trailing ``/``). ``options_json`` holds
    fsspec's ``storage_options`` (for S3: ``key``, ``secret``, ``endpoint_url``, ``anon``, ...) as sorted JSON,
    so that the type stays frozen and hashable (it travels with each task to the workers); credentials and
    endpoints also come from the filesystem's usual environment (``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ...),
    which is where secrets belong. Its ``repr`` leaves the options out.

    Exclusive creation is a conditional write (fsspec's ``"xb"`` mode: S3's ``If-None-Match``, GCS's and Azure's
    equivalents); a replacement is one whole-object write; :meth:`write_if` is S3's ``If-Match``.
    """

    url: str
    options_json: str = "{}"
    store_url: str = field(default="", compare=False)
    """The URL of the store this object belongs to (its own when empty): what failures name."""

    def __repr__(self) -> str:
        return f"FsspecLocation({self.url!r})"

    @classmethod
    def from_url(cls, url: str, storage_options: Mapping[str, Any]) -> FsspecLocation:
        return cls(url.rstrip("/"), json.dumps(dict(storage_options), sort_keys=True))

    def check(self, given: str) -> None:
        """Refuse a URL with no path inside its bucket, or whose scheme has no installed filesystem."""
        if "/" not in self.url.split("://", 1)[1]:
            raise StoreError(f"{given}: a store is a prefix inside a bucket, e.g. {self.url}/run.zarr (its lock "
                             f"object goes beside it)")
        import fsspec
        try:
            fsspec.get_filesystem_class(self.protocol)
        except (ImportError, ValueError):
            raise package_error(self.protocol, self.url) from None

    def with_options(self, storage_options: Mapping[str, Any]) -> FsspecLocation:
        if not storage_options:
            return self
        return FsspecLocation(self.url, json.dumps({**self.storage_options, **storage_options}, sort_keys=True),
                              self.store_url)

    def local(self) -> NoReturn:
        raise StoreError(f"{self.url}: this command needs a store on a file system; object storage "
                         f"({self.protocol}://) is for `rmtsweep run` and the reading commands (job arrays on it are "
                         f"not supported yet)")

    def __str__(self) -> str:
        return self.url

    @property
    def protocol(self) -> str:
        """The URL's scheme (``s3``)."""
        return self.url.split("://", 1)[0].lower()

    @property
    def name(self) -> str:
        """The store's last path component (``run.zarr``)."""
        return self.url.rstrip("/").rsplit("/", 1)[-1]

    @property
    def address(self) -> str:
        return self.url

    @property
    def storage_options(self) -> dict[str, Any]:
        """The filesystem's options as a dict (what ``xr.open_zarr(url, storage_options=...)`` takes)."""
        return json.loads(self.options_json)

    @property
    def open_options(self) -> dict[str, Any]:
        """:attr:`storage_options` and what rmtsweep adds unless they say otherwise (listings read afresh; on S3,
        one request per object read): what its filesystem, zarr and xarray are given."""
        return _fresh(self.storage_options, self.protocol)

    @property
    def fs(self) -> Any:
        """The fsspec filesystem of the URL (made once per protocol and options)."""
        return _filesystem(self.protocol, self.options_json)

    def key(self, *parts: str) -> str:
        """The full URL of an object inside the store (``key(".zattrs")``)."""
        return "/".join((self.url, *parts))

    def child(self, name: str) -> FsspecLocation:
        return FsspecLocation(self.key(name), self.options_json, self.store_url or self.url)

    def sibling(self, name: str) -> FsspecLocation:
        return FsspecLocation(f"{self.url.rsplit('/', 1)[0]}/{name}", self.options_json, self.store_url or self.url)

    def zarr_store(self, read_only: bool = True) -> Any:
        """A zarr ``FsspecStore`` on the store's prefix, whose failures are one line (:func:`storage_error`)."""
        self.fs                                     # noqa: B018 - the one-line error when the package is missing
        return _store_class().from_url(self.url, storage_options=self.open_options, read_only=read_only)

    # --- single objects: what the lock and the store's markers need (each one request) ---------------------

    @_translated
    def read(self) -> bytes | None:
        try:
            return self.fs.cat_file(self.url)
        except FileNotFoundError:
            return None

    @_translated
    def exists(self) -> bool:
        return bool(self.fs.exists(self.url))

    @_translated
    def create(self, data: bytes, parents: bool = False) -> bool:
        try:
            with self.fs.open(self.url, "xb") as f:
                f.write(data)
        except FileExistsError:
            return False
        return True

    @_translated
    def write(self, data: bytes) -> None:
        self.fs.pipe_file(self.url, data)

    conditional_writes = property(lambda self: self.protocol in ("s3", "s3a"))   # S3's If-Match, passed on by s3fs

    @_translated
    def version(self) -> str | None:
        self.fs.invalidate_cache(self.url)          # a listing cached earlier must not answer for the object
        try:
            info = self.fs.info(self.url)
        except FileNotFoundError:
            return None
        return str(info.get("ETag") or info.get("etag") or "") or None

    @_translated
    def write_if(self, data: bytes, version: str | None) -> bool:
        from fsspec.asyn import sync
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:            # the filesystem's own coroutine, as zarr's writes call it
            sync(self.fs.loop, self.fs._pipe_file, self.url, data, **condition)
        except OSError as exc:
            if _precondition_failed(exc):
                return False
            raise
        return True

    @_translated
    def remove(self, recursive: bool = False) -> None:
        try:
            self.fs.rm(glob.escape(self.url), recursive=recursive)    # fsspec expands a path's wildcards
        except FileNotFoundError:
            pass

    @_translated
    def remove_if(self, judged: Callable[[bytes | None], bool]) -> bool:
        raw = self.read()
        if raw is None or not judged(raw):
            return False
        self.remove()
        return True

    @_translated
    def siblings(self, prefix: str, pattern: str = "*") -> list[Location]:
        parent = self.url.rsplit("/", 1)[0]
        found = self.fs.glob(f"{glob.escape(parent)}/{glob.escape(prefix)}{pattern}")
        return [FsspecLocation(f"{self.protocol}://{f.split('://', 1)[-1]}", self.options_json,
                               self.store_url or self.url) for f in sorted(found)]

    @_translated
    def list(self) -> list[str]:
        fs = self.fs
        base = fs._strip_protocol(self.url).rstrip("/") + "/"
        return sorted(key[len(base):] for key in fs.find(self.url) if key.startswith(base))

    @_translated
    def copy_in(self, source: Location, keys: Sequence[str]) -> None:
        keys = list(keys)
        if not keys:
            return
        fs = self.fs
        if isinstance(source, FsspecLocation) and source.protocol == self.protocol \
                and source.options_json == self.options_json:
            fs.copy([source.key(k) for k in keys], [self.key(k) for k in keys])     # within the service
        elif source.renames:
            fs.put([source.child(k).address for k in keys], [self.key(k) for k in keys])   # concurrent uploads
        else:
            for k in keys:
                data = source.child(k).read()
                if data is None:
                    raise FileNotFoundError(source.child(k).address)
                fs.pipe_file(self.key(k), data)

    # --- how a store is written: in place, its consolidated metadata last ----------------------------------

    contended_writes = True

    def write_tree(self, write: Callable[[Location], None]) -> None:
        """Written to a local temporary directory and uploaded in one batch of concurrent requests (written here
        object by object, each array's metadata a round trip, a template took seconds on a local server)."""
        with tempfile.TemporaryDirectory(prefix="rmtsweep-template-") as tmp:
            local = PosixLocation(Path(tmp) / self.name)
            write(local)
            _copy_tree(local, self)

    def create_tree(self, write: Callable[[Location], None], made: Callable[[Location], bool]) -> None:
        """No rename: written in place, so a prefix without its consolidated metadata is a cut creation."""
        try:
            self.write_tree(write)
        except Exception as exc:  # noqa: BLE001 - the storage service's words, in one line
            raise StoreError(f"{self}: cannot create the store ({first_line(exc)})") from None

    def creation_cut(self) -> bool:
        return self.child(".zattrs").exists() and not self.child(".zmetadata").exists()

    def replace_by(self, new: Location) -> None:
        """A marker object (:data:`SWAP_SUFFIX`) commits to ``new``; the store's objects are replaced by copies of
        ``new``'s (its consolidated metadata first removed and last written back, so no reader takes it for whole
        meanwhile); then the marker and ``new`` are removed."""
        marker = beside(self, SWAP_SUFFIX)
        marker.write(new.address.encode())
        _copy_over(new, self)
        marker.remove()
        new.remove(recursive=True)

    def extension_cut(self) -> bool:
        return any(beside(self, s).exists() for s in (SWAP_SUFFIX, NEW_SUFFIX))

    def recover_extension(self) -> None:
        """Past the marker, copy again; before it, drop the extension."""
        marker, new = beside(self, SWAP_SUFFIX), beside(self, NEW_SUFFIX)
        if marker.exists():
            if new.child(".zmetadata").exists():        # committed: the copy over the store is finished
                _copy_over(new, self)
            marker.remove()
        if new.exists():
            new.remove(recursive=True)

    # --- fences: conditional writes where the service has them ---------------------------------------------

    def fence(self, lock: Location, token: str) -> Fence | None:
        return ConditionalFence(self) if self.conditional_writes else None

    def open_fence(self, token: str) -> None:
        """Nothing to ready: a take-over's own writes change the versions an earlier holder saw."""

    def fence_out(self, token: str) -> None:
        """Nothing to do: see :meth:`open_fence`."""

    # --- beside the store on this machine: nothing ---------------------------------------------------------

    def open_lines(self) -> None:
        return None

    def job_address(self) -> str:
        return self.url

    def local_directory(self) -> Path:
        return Path.cwd()


def _copy_tree(src: Location, dst: Location) -> None:
    """Copy the store at ``src`` to ``dst`` (whose prefix holds nothing of it), ``.zmetadata`` last."""
    body = [n for n in src.list() if n != ".zmetadata"]
    dst.copy_in(src, body)
    dst.copy_in(src, [".zmetadata"])


def _copy_over(src: Location, dst: Location) -> None:
    """Replace every object under ``dst`` by a copy of ``src``'s, its consolidated metadata written last."""
    dst.child(".zmetadata").remove()                # from here on, readers see a store being made
    dst.remove(recursive=True)
    _copy_tree(src, dst)


def _precondition_failed(exc: BaseException) -> bool:
    """Whether a write failed on its condition (HTTP 412): s3fs raises ``FileExistsError``, or an ``OSError``."""
    if isinstance(exc, FileExistsError):
        return True
    cause = exc.__cause__ or exc.__context__
    error = getattr(cause, "response", None) or {}
    return isinstance(error, dict) and error.get("Error", {}).get("Code") in ("PreconditionFailed", "412")


def package_error(protocol: str, url: str) -> StoreError:
    """The one-line error for a URL whose scheme has no filesystem installed (naming the package to install)."""
    package = PACKAGES.get(protocol)
    if package:
        return StoreError(f"{url}: stores at {protocol}:// are read through the package {package}, which is not "
                          f"installed: pip install {package}")
    return StoreError(f"{url}: no filesystem is known for {protocol}:// (fsspec has none registered; a package "
                      f"such as s3fs, gcsfs or adlfs adds its scheme)")


# Options rmtsweep gives a filesystem unless the store's own options say otherwise. s3fs asks an object's size
# (a HEAD) before reading it when it may split reads (max_concurrency > 1): a store's objects are small, one GET each.
_DEFAULTS: dict[str, dict[str, Any]] = {"s3": {"max_concurrency": 1}, "s3a": {"max_concurrency": 1}}


def _fresh(options: dict[str, Any], protocol: str = "") -> dict[str, Any]:
    """``options`` with fsspec's listings cache off (unless asked for): a lock or a marker is read as it is now;
    and the protocol's defaults above."""
    return {"use_listings_cache": False, **_DEFAULTS.get(protocol, {}), **options}


@functools.lru_cache(maxsize=16)
def _filesystem(protocol: str, options_json: str) -> Any:
    import fsspec
    try:
        cls = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError):
        raise package_error(protocol, f"{protocol}://...") from None
    _quiet_lost_requests()
    try:
        return cls(**_fresh(json.loads(options_json), protocol))
    except TypeError as exc:
        raise UserError(f"--storage-option: {protocol}:// does not take these options ({exc})") from None




@functools.cache
def _store_class() -> type[Any]:
    """Zarr's ``FsspecStore`` with every call's storage failures raised as :func:`storage_error`'s (made on first
    use, so that importing this module does not import zarr); its deletions take keys literally (fsspec's ``_rm``
    expands wildcards: ``b*.zarr`` would delete the keys of ``bx.zarr`` beside it)."""
    from zarr.storage import FsspecStore

    def deletion(recursive: bool) -> Callable:
        async def method(self: Any, key: str) -> None:
            self._check_writable()
            with contextlib.suppress(FileNotFoundError, *self.allowed_exceptions):
                await self.fs._rm(glob.escape(f"{self.path.rstrip('/')}/{key}".rstrip("/")), recursive=recursive)
        return method

    async def clear(self: Any) -> None:
        with contextlib.suppress(FileNotFoundError):
            for path in set(await self.fs._find(self.path, withdirs=True)) - {self.path}:
                await self.fs._rm(glob.escape(path), recursive=True)

    literal = {"delete": deletion(False), "delete_dir": deletion(True), "clear": clear}

    def url_of(store: Any) -> str:
        protocol = store.fs.protocol
        return f"{protocol[0] if isinstance(protocol, tuple) else protocol}://{store.path}"

    def translate(exc: Exception, store: Any) -> BaseException:
        error = storage_error(exc, url_of(store))
        return exc if error is None else error

    def fail(exc: Exception, store: Any) -> NoReturn:
        error = translate(exc, store)
        if error is exc:
            raise exc
        raise error from exc

    def call(name: str) -> Callable:
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await literal.get(name, getattr(FsspecStore, name))(self, *args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - fail() raises it again, or its one line
                fail(exc, self)
        method.__name__ = name
        return method

    def listing(name: str) -> Callable:
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                async for key in getattr(FsspecStore, name)(self, *args, **kwargs):
                    yield key
            except Exception as exc:  # noqa: BLE001 - fail() raises it again, or its one line
                fail(exc, self)
        method.__name__ = name
        return method

    calls = ("get", "set", "exists", "delete", "get_partial_values", "getsize", "delete_dir", "clear")
    body: dict[str, Any] = {name: call(name) for name in calls if hasattr(FsspecStore, name)}
    body.update({name: listing(name) for name in ("list", "list_prefix", "list_dir")})
    _quiet_lost_requests()
    body["__module__"] = __name__
    body["__qualname__"] = "TranslatingStore"
    return type("TranslatingStore", (FsspecStore,), body)


@functools.cache
def _quiet_lost_requests() -> None:
    """Keep asyncio from printing a traceback for a request of fsspec's or zarr's event loop that the storage cut
    (a connection reset as the endpoint goes away): the call that made it fails too, and says so in one line."""
    import asyncio

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        exc = context.get("exception")
        if isinstance(exc, ConnectionError) or type(exc).__name__ in OUTAGE:
            return
        loop.default_exception_handler(context)

    import importlib
    loops = []
    for module, getter in (("fsspec.asyn", "get_loop"), ("zarr.core.sync", "_get_loop")):
        try:
            loops.append(getattr(importlib.import_module(module), getter)())
        except Exception:  # noqa: BLE001 - the loops are the libraries' internals: without one, asyncio's default
            pass
    for loop in loops:
        loop.call_soon_threadsafe(loop.set_exception_handler, handler)


def __getattr__(name: str) -> Any:
    # ``TranslatingStore`` is made on first use; pickle finds it here by name in a process that has not made it yet
    if name == "TranslatingStore":
        return _store_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
