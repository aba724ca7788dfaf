"""Where a store lives: a path on a file system, or a URL of object storage (``s3://``, ``gs://``, any fsspec URL).

:func:`locate` parses what a user gave once, at the boundary, into a :class:`~rmtsweep.store.backend.Location`
of the backend its scheme is registered to (:data:`BACKENDS`): a path becomes a
:class:`~rmtsweep.store.backend.PosixLocation` (``O_EXCL`` locks, renames); any other URL becomes an
:class:`~rmtsweep.store.objectstore.FsspecLocation`, read through its fsspec filesystem (zarr's ``FsspecStore``;
xarray's ``storage_options``). ``file://`` URLs are paths. A URL is never taken as a path: ``pathlib`` would fold
``s3://bucket/x.zarr`` into the local directory ``s3:/bucket/x.zarr``, and a run would write there and report
success; nor is a URL with a slash too few or its colon lost (``s3:/bucket/x.zarr``, ``s3//bucket/x.zarr``),
which is refused in one line.

The rest of the package uses the :class:`~rmtsweep.store.backend.Location` protocol only. ``run``, ``submit`` (its
driver job), ``verify`` and the reading commands take a store at a URL (the store's lock is an object made with a
conditional write: :mod:`rmtsweep.store.lock`); job arrays and ``demo`` refuse one in one line (:func:`local_path`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreError, UserError
from .backend import Location, PosixLocation
from .objectstore import PACKAGES, FsspecLocation

__all__ = ["ANY_URL", "BACKENDS", "FsspecLocation", "Location", "PosixLocation", "Remote", "StorePath",
           "format_storage_options", "local_path", "locate", "parse_storage_options", "zarr_target"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# a URL with a slash too few or its colon lost (``s3:/b/x.zarr``, ``s3//b/x.zarr``), which pathlib would take for a
# local directory
_BROKEN_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)(:/?(?!/)|//)")

Remote = FsspecLocation
"""The former name of :class:`~rmtsweep.store.objectstore.FsspecLocation`."""

StorePath = Location
"""Where a store is (a :class:`Location`)."""


def zarr_target(path: str | Path | Location, read_only: bool = True) -> Any:
    """What zarr and xarray's ``to_zarr`` take for the store at ``path`` (:meth:`Location.zarr_store`)."""
    return locate(path).zarr_store(read_only=read_only)


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


BACKENDS: dict[str, type[Location]] = {"file": PosixLocation}
"""The backend of each URL scheme that is not fsspec's (a path with no scheme is a :class:`PosixLocation`)."""

ANY_URL: type[Location] = FsspecLocation
"""The backend of a URL whose scheme :data:`BACKENDS` does not name: fsspec's filesystem of that protocol."""


def _parse(path: str | Path | Location, storage_options: Mapping[str, Any] | None) -> tuple[Location, bool]:
    """The location ``path`` names, and whether it was given as a URL (then not checked yet)."""
    options = dict(storage_options or {})
    if isinstance(path, Location):
        return path.with_options(options), False
    if isinstance(path, str) and (m := _URL.match(path)):
        return BACKENDS.get(m[1].lower(), ANY_URL).from_url(path, options), True
    if isinstance(path, str) and (m := _BROKEN_URL.match(path)) and _is_protocol(m[1].lower()):
        scheme = m[1].lower()
        raise StoreError(f"{path}: not a URL (a store at {scheme}:// is written {scheme}://BUCKET/PATH, e.g. "
                         f"{scheme}://bucket/run.zarr); a local path that starts so is written ./{path}")
    return PosixLocation(path).with_options(options), False


def locate(path: str | Path | Location, storage_options: Mapping[str, Any] | None = None) -> Location:
    """Where a store is: the location of the backend registered to a URL's scheme (:data:`BACKENDS`, else
    :data:`ANY_URL`), a :class:`PosixLocation` for a path (``file://`` URLs too).

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
    location, url = _parse(path, storage_options)
    if url:
        location.check(str(path))
    return location


def _is_protocol(name: str) -> bool:
    """Whether ``name`` is a scheme of object storage (``file`` is not: ``file:/tmp/x`` is a path)."""
    if name == "file":
        return False
    if name in PACKAGES:
        return True
    import fsspec
    return name in fsspec.available_protocols()


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
    return _parse(path, None)[0].local()
