"""Checking a store's coordinates and theory arrays: every chunk present, and matching its checksum.

A store's frame (:func:`rmtsweep.store.layout.frame`) is written whole when the store is made, each chunk
with a CRC32 of its bytes and every chunk stored (:func:`rmtsweep.store.io.write_template`), so a chunk
that is absent or fails its checksum is damage. Stores made before the frame carried checksums have
arrays without one: those are named as not checked, never as damaged.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import ceil
from pathlib import Path

import zarr
from zarr.core.sync import sync

from .backend import Location
from .location import StorePath, locate
from .writer import dims_of, null_arrays, per_replicate_arrays

__all__ = ["ABSENT", "FrameDamage", "checksummed", "chunk_keys", "frame_damage"]

ABSENT = "absent"


@dataclass(frozen=True)
class FrameDamage:
    """One chunk of a coordinate or theory array that is absent or does not read back."""

    name: str
    key: str
    reason: str
    coordinate: bool

    def __str__(self) -> str:
        what = "coordinate" if self.coordinate else "theory array"
        state = "is absent" if self.reason == ABSENT else f"is corrupt ({self.reason})"
        return f"{what} {self.name}: chunk {self.name}/{self.key} {state}"


def chunk_keys(array: zarr.Array) -> set[str]:
    """The keys (relative to the array) of every chunk stored for ``array``: one listing of its prefix."""
    prefix = f"{array.path}/" if array.path else ""

    async def listing() -> list[str]:
        return [key async for key in array.store.list_prefix(prefix)]

    return {key[len(prefix):] for key in sync(listing())}


def checksummed(array: zarr.Array) -> bool:
    """Whether each chunk of ``array`` carries a CRC32 of its bytes (a numcodecs filter)."""
    return any(getattr(f, "codec_id", None) == "crc32" for f in getattr(array.metadata, "filters", None) or ())


def frame_damage(path: str | Path | StorePath | Location,
                 storage_options: dict | None = None) -> tuple[list[FrameDamage], list[str]]:
    """Every absent or corrupt chunk of the store's coordinates and theory arrays, and the names of those
    arrays that carry no checksum (not checked: an absent chunk of theirs may be one of fill values only).

    One listing per array and one read per chunk: the frame is small (no replicate axis).
    """
    group = zarr.open_group(locate(path, storage_options).zarr_store(read_only=True), mode="r")
    data = set(per_replicate_arrays(group)) | set(null_arrays(group))
    found: list[FrameDamage] = []
    unchecked: list[str] = []
    for name, array in sorted(group.arrays()):
        if name in data:
            continue
        if not checksummed(array):
            unchecked.append(name)
            continue
        coordinate = dims_of(array) == (name,)
        stored = chunk_keys(array)
        grid = [range(ceil(n / c)) for n, c in zip(array.shape, array.chunks, strict=True)]
        for coords in itertools.product(*grid):
            key = array.metadata.encode_chunk_key(coords)
            if key not in stored:
                found.append(FrameDamage(name, key, ABSENT, coordinate))
                continue
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, array.chunks, strict=True))
            try:
                array[region]
            except Exception as exc:  # noqa: BLE001 - any failure to decode is corruption
                why = "its checksum does not match" if "checksum" in str(exc) else f"{type(exc).__name__}: {exc}"
                found.append(FrameDamage(name, key, why[:100], coordinate))
    return found, unchecked
