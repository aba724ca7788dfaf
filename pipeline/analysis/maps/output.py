"""Where a map's files go: ``--out`` (a directory or a file), ``--format`` and ``--clim`` parsed once.

A user mistake (a regular file in the way of the directory, an unknown format) raises
:class:`~rmtsweep.errors.SelectionError` (the CLI: one line, exit 2); an error of the operating
system (no permission, a read-only filesystem) stays an ``OSError`` (one line, exit 1).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from ...errors import SelectionError

__all__ = ["DEFAULT_FORMATS", "FORMATS", "MapFormat", "check_directory", "make_directory", "output_target",
           "parse_clim", "parse_formats"]

MapFormat = Literal["html", "png", "svg", "pdf"]
FORMATS: tuple[MapFormat, ...] = ("html", "png", "svg", "pdf")
DEFAULT_FORMATS: tuple[MapFormat, ...] = ("html", "png")


def check_directory(directory: Path, given: Path) -> Path:
    """``directory`` unless a regular file stands in its way (a user mistake: SelectionError); nothing is created."""
    for p in (directory, *directory.parents):
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == given else f"is under {p}, which is a file"
                raise SelectionError(f"--out {given}: {what}, not a directory (give a directory, or a file "
                                     f"name ending in {', '.join('.' + f for f in FORMATS)})")
            break
    return directory


def make_directory(directory: Path, given: Path | None = None) -> Path:
    """``directory`` checked (:func:`check_directory`) and made like ``mkdir -p``; it must be writable.

    An error of the operating system (permission, read-only filesystem) propagates as ``OSError``.
    """
    check_directory(directory, directory if given is None else given)
    directory.mkdir(parents=True, exist_ok=True)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(directory))
    return directory


def parse_formats(formats: str | Iterable[str] | None) -> tuple[MapFormat, ...] | None:
    """``"png,svg"`` or ``["png", "svg,pdf"]`` as a tuple of formats (None stays None: the default)."""
    if formats is None:
        return None
    items = [formats] if isinstance(formats, str) else list(formats)
    out: list[MapFormat] = []
    for item in (part.strip().lower() for text in items for part in str(text).split(",")):
        if item not in FORMATS:
            raise SelectionError(f"--format {item!r}: not a map format (valid: {', '.join(FORMATS)})")
        if item not in out:
            out.append(item)
    return tuple(out) or None


def parse_clim(text: str | Iterable[float] | None) -> tuple[float, float] | None:
    """``"LO,HI"`` (the CLI's ``--clim``) or a pair as two floats; None stays None."""
    if text is None:
        return None
    try:
        lo, hi = (float(v) for v in (text.split(",") if isinstance(text, str) else text))
    except (TypeError, ValueError):
        raise SelectionError(f"--clim {text!r}: expected LO,HI, e.g. --clim 0,1") from None
    return lo, hi


def output_target(out: str | Path, stem: str, formats: Iterable[str] | str | None = None
                  ) -> tuple[Path, str, tuple[MapFormat, ...]]:
    """Where a map goes: ``(directory, stem, formats)`` from ``--out`` (a directory, or a file) and ``--format``.

    A file name ending in a format's suffix (``fig.pdf``) names the file: its stem replaces ``stem``
    and its suffix is the format unless ``formats`` are given (which must then include it). Nothing
    is created yet (:func:`make_directory` does it when the map is written).
    """
    given = Path(out)
    wanted = parse_formats(formats)
    suffix = given.suffix.lower().lstrip(".")
    directory = given
    if suffix in FORMATS and not given.is_dir():
        if wanted is not None and suffix not in wanted:
            raise SelectionError(f"--out {given}: names a .{suffix} file, but --format asks for {', '.join(wanted)}")
        directory, stem, wanted = given.parent, given.stem, wanted or (suffix,)
    return check_directory(directory, given), stem, wanted or DEFAULT_FORMATS
