"""Where a store may live: a path on a file system (local, or shared with the workers).

A URL (``s3://bucket/run.zarr``, ``gs://...``, ``file://...``) is refused in one line rather than taken as
a path: ``pathlib`` would fold ``s3://bucket/x.zarr`` into the local directory ``s3:/bucket/x.zarr``, and a
run would then write there and report success.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import StoreError

__all__ = ["local_path"]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def local_path(path: str | Path) -> Path:
    """``path`` as a :class:`~pathlib.Path`, or :class:`~rmtsweep.errors.StoreError` if it is a URL.

    Examples
    --------
    >>> local_path("store/demo.zarr")
    PosixPath('store/demo.zarr')
    >>> try:
    ...     local_path("s3://bucket/run.zarr")
    ... except StoreError as exc:
    ...     print(str(exc)[:69])
    s3://bucket/run.zarr: stores live on a file system (a local or shared
    """
    if isinstance(path, str) and (m := _URL.match(path)):
        raise StoreError(f"{path}: stores live on a file system (a local or shared path); object storage "
                         f"({m[1]}://) is not supported yet: copy the store between the bucket and a file system")
    return Path(path)
