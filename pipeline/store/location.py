"""Where a store lives: a path on a file system, or a URL of object storage (``s3://``, ``gs://``, any fsspec URL).

:func:`locate` parses what a user gave once, at the boundary, into a :class:`~rmtsweep.store.backend.Location`:
a path becomes a :class:`~rmtsweep.store.backend.PosixLocation` (``O_EXCL`` locks, renames); a URL becomes an
:class:`FsspecLocation`, read through its fsspec filesystem (zarr's ``FsspecStore``; xarray's
``storage_options``). ``file://`` URLs are paths. A URL is never taken as a path: ``pathlib`` would fold
``s3://bucket/x.zarr`` into the local directory ``s3:/bucket/x.zarr``, and a run would write there and report
success.

This module is the one place that knows fsspec: the rest of the package uses the
:class:`~rmtsweep.store.backend.Location` protocol only. ``run``, ``submit`` (its driver job), ``verify`` and the
reading commands take a store at a URL (the store's lock is an object made with a conditional write:
:mod:`rmtsweep.store.lock`); job arrays and ``demo`` refuse one in one line (:func:`local_path`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError, UserError
from .backend import Location, PosixLocation

__all__ = ["FsspecLocation", "Location", "PosixLocation", "Remote", "StorePath", "format_storage_options", "local_path", "locate", "parse_storage_options",
           "zarr_target"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")

# the packages that give fsspec its object-storage filesystems, by protocol (fsspec names them only in prose)
_PACKAGES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs",
             "abfss": "adlfs", "adl": "adlfs", "oci": "ocifs", "hf": "huggingface_hub", "webdav": "webdav4"}


@dataclass(frozen=True, repr=False)
class FsspecLocation(Location):
    """A store, or one object of it, at a URL of an fsspec filesystem, with the options it is made with.

    ``str(location)`` is the URL (as the user wrote it, without a trailing ``/``). ``options_json`` holds
    fsspec's ``storage_options`` (for S3: ``key``, ``secret``, ``endpoint_url``, ``anon``, ...) as sorted JSON,
    so that the type stays frozen and hashable (it travels with each task to the workers); credentials and
    endpoints also come from the filesystem's usual environment (``AWS_ENDPOINT_URL``, ``AWS_PROFILE``, ...),
    which is where secrets belong. Its ``repr`` leaves the options out.

    Exclusive creation is a conditional write (S3's ``If-None-Match``, GCS's and Azure's equivalents, through
    fsspec's ``"xb"`` mode); a replacement is one whole-object write.
    """

    url: str
    options_json: str = "{}"

    def __repr__(self) -> str:
        return f"FsspecLocation({self.url!r})"

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
        return FsspecLocation(self.key(name), self.options_json)

    def sibling(self, name: str) -> FsspecLocation:
        return FsspecLocation(f"{self.url.rsplit('/', 1)[0]}/{name}", self.options_json)

    def zarr_store(self, read_only: bool = True) -> Any:
        """A zarr ``FsspecStore`` on the store's prefix."""
        from zarr.storage import FsspecStore
        self.fs                                     # noqa: B018 - the one-line error when the package is missing
        return FsspecStore.from_url(self.url, storage_options=self.open_options, read_only=read_only)

    # --- single objects: what the lock and the store's markers need (each one request) ---------------------

    def read(self) -> bytes | None:
        try:
            return self.fs.cat_file(self.url)
        except FileNotFoundError:
            return None

    def exists(self) -> bool:
        return bool(self.fs.exists(self.url))

    def create(self, data: bytes, parents: bool = False) -> bool:
        try:
            with self.fs.open(self.url, "xb") as f:
                f.write(data)
        except FileExistsError:
            return False
        return True

    def write(self, data: bytes) -> None:
        self.fs.pipe_file(self.url, data)

    @property
    def conditional_writes(self) -> bool:      # type: ignore[override]
        """S3's ``If-Match`` and ``If-None-Match`` on a write, which s3fs passes to the service as they are."""
        return self.protocol in ("s3", "s3a")

    def version(self) -> str | None:
        self.fs.invalidate_cache(self.url)          # a listing cached earlier must not answer for the object
        try:
            info = self.fs.info(self.url)
        except FileNotFoundError:
            return None
        return str(info.get("ETag") or info.get("etag") or "") or None

    def write_if(self, data: bytes, version: str | None) -> bool:
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:
            self.fs.pipe_file(self.url, data, **condition)
        except OSError as exc:
            if _precondition_failed(exc):
                return False
            raise
        return True

    def remove(self, recursive: bool = False) -> None:
        try:
            self.fs.rm(self.url, recursive=recursive)
        except FileNotFoundError:
            pass

    def remove_if(self, judged: Callable[[bytes | None], bool]) -> bool:
        raw = self.read()
        if raw is None or not judged(raw):
            return False
        self.remove()
        return True

    def siblings(self, pattern: str) -> list[Location]:
        parent = self.url.rsplit("/", 1)[0]
        found = self.fs.glob(f"{parent}/{pattern}")
        return [FsspecLocation(f"{self.protocol}://{f.split('://', 1)[-1]}", self.options_json) for f in sorted(found)]

    def list(self) -> list[str]:
        fs = self.fs
        base = fs._strip_protocol(self.url).rstrip("/") + "/"
        return sorted(key[len(base):] for key in fs.find(self.url) if key.startswith(base))

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


Remote = FsspecLocation
"""The former name of :class:`FsspecLocation`."""

StorePath = Location
"""Where a store is (a :class:`Location`)."""


def _precondition_failed(exc: BaseException) -> bool:
    """Whether a write failed on its condition (HTTP 412), as s3fs reports it: ``FileExistsError`` for
    ``If-None-Match``, an ``OSError`` caused by the service's ``PreconditionFailed`` for ``If-Match``."""
    if isinstance(exc, FileExistsError):
        return True
    cause = exc.__cause__ or exc.__context__
    error = getattr(cause, "response", None) or {}
    return isinstance(error, dict) and error.get("Error", {}).get("Code") in ("PreconditionFailed", "412")


def zarr_target(path: str | Path | Location, read_only: bool = True) -> Any:
    """What zarr and xarray's ``to_zarr`` take for the store at ``path`` (:meth:`Location.zarr_store`)."""
    return locate(path).zarr_store(read_only=read_only)


def _package_error(protocol: str, url: str) -> StoreError:
    package = _PACKAGES.get(protocol)
    if package:
        return StoreError(f"{url}: stores at {protocol}:// are read through the package {package}, which is not "
                          f"installed: pip install {package}")
    return StoreError(f"{url}: no filesystem is known for {protocol}:// (fsspec has none registered; a package "
                      f"such as s3fs, gcsfs or adlfs adds its scheme)")


# Options rmtsweep gives a filesystem unless the store's own options say otherwise. s3fs reads an object by asking
# its size first (a HEAD) when it may split large reads (max_concurrency > 1, its default): one request more for
# every chunk, lock and marker read, and for an absent one a listing too. A store's objects are small (chunks of
# kilobytes to a few megabytes), so one GET each: a 32-task sweep run into a bucket made 535 requests instead of 700.
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
        raise _package_error(protocol, f"{protocol}://...") from None
    try:
        return cls(**_fresh(json.loads(options_json), protocol))
    except TypeError as exc:
        raise UserError(f"--storage-option: {protocol}:// does not take these options ({exc})") from None


def parse_storage_options(items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` items as fsspec ``storage_options``: a dotted key nests (``client_kwargs.region_name=x``),
    a value is read as JSON when it parses (``anon=true``, ``retries=2``) and kept as text otherwise.

    Examples
    --------
    >>> parse_storage_options(["anon=true", "endpoint_url=http://127.0.0.1:9000", "config_kwargs.connect_timeout=5"])
    {'anon': True, 'endpoint_url': 'http://127.0.0.1:9000', 'config_kwargs': {'connect_timeout': 5}}
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip() or any(not part for part in key.split(".")):
            raise UserError(f"--storage-option {item!r}: expected KEY=VALUE, e.g. endpoint_url=http://127.0.0.1:9000")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        *parents, leaf = key.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UserError(f"--storage-option {item!r}: {part} was given a value and options below it")
        node[leaf] = value
    return out


def format_storage_options(options: Mapping[str, Any]) -> tuple[str, ...]:
    """``options`` as the ``KEY=VALUE`` items :func:`parse_storage_options` reads back (nested keys dotted,
    values as JSON unless plain text), e.g. for the command of a job that opens the same store.

    Examples
    --------
    >>> items = format_storage_options({"anon": True, "endpoint_url": "http://127.0.0.1:9000",
    ...                                 "config_kwargs": {"connect_timeout": 5}})
    >>> items
    ('anon=true', 'endpoint_url=http://127.0.0.1:9000', 'config_kwargs.connect_timeout=5')
    >>> parse_storage_options(items) == {"anon": True, "endpoint_url": "http://127.0.0.1:9000",
    ...                                  "config_kwargs": {"connect_timeout": 5}}
    True
    """
    out: list[str] = []
    for key, value in options.items():
        if isinstance(value, Mapping) and value:
            out += [f"{key}.{item}" for item in format_storage_options(value)]
            continue
        text = value if isinstance(value, str) else json.dumps(value)
        if isinstance(value, str):
            try:
                json.loads(value)                      # text that would parse as JSON ("true", "5") stays text
                text = json.dumps(value)
            except ValueError:
                pass
        out.append(f"{key}={text}")
    return tuple(out)


def locate(path: str | Path | Location, storage_options: Mapping[str, Any] | None = None) -> Location:
    """Where a store is: a :class:`PosixLocation` for a path (``file://`` URLs too), an :class:`FsspecLocation`
    for a URL.

    Raises
    ------
    StoreError
        A URL whose scheme has no installed filesystem (one line naming the package to install).
    UserError
        ``storage_options`` given for a path on a file system.

    Examples
    --------
    >>> locate("store/demo.zarr")
    PosixLocation('store/demo.zarr')
    >>> locate("file:///tmp/run.zarr")
    PosixLocation('/tmp/run.zarr')
    """
    if isinstance(path, FsspecLocation):
        if storage_options:
            return FsspecLocation(path.url, json.dumps({**path.storage_options, **storage_options}, sort_keys=True))
        return path
    if isinstance(path, str) and (m := _URL.match(path)):
        protocol = m[1].lower()
        if protocol == "file":
            path = path[len("file://"):]
        else:
            remote = FsspecLocation(path.rstrip("/"), json.dumps(dict(storage_options or {}), sort_keys=True))
            if "/" not in remote.url.split("://", 1)[1]:
                raise StoreError(f"{path}: a store is a prefix inside a bucket, e.g. {remote.url}/run.zarr (its lock "
                                 f"object goes beside it)")
            import fsspec
            try:
                fsspec.get_filesystem_class(protocol)
            except (ImportError, ValueError):
                raise _package_error(protocol, remote.url) from None
            return remote
    if storage_options:
        raise UserError(f"{path}: --storage-option is for stores at a URL (s3://..., gs://...), not on a file system")
    return path if isinstance(path, PosixLocation) else PosixLocation(path)


def local_path(path: str | Path | Location) -> PosixLocation:
    """``path`` as a :class:`~pathlib.Path`, or :class:`~rmtsweep.errors.StoreError` for object storage.

    What the commands that need a file system use: job arrays (``submit --array``, ``work``: their elements
    share a store through its share locks and journal) and ``demo`` (its maps go beside the store).

    Examples
    --------
    >>> local_path("store/demo.zarr")
    PosixLocation('store/demo.zarr')
    >>> try:
    ...     local_path("s3://bucket/run.zarr")
    ... except StoreError as exc:
    ...     print(str(exc)[:73])
    s3://bucket/run.zarr: this command needs a store on a file system; object
    """
    if isinstance(path, FsspecLocation):
        url, protocol = path.url, path.protocol
    elif isinstance(path, str) and (m := _URL.match(path)) and m[1].lower() != "file":
        url, protocol = path, m[1]
    else:
        return locate(path)              # type: ignore[return-value]
    raise StoreError(f"{url}: this command needs a store on a file system; object storage ({protocol}://) is for "
                     f"`rmtsweep run` and the reading commands (job arrays on it are not supported yet)")
