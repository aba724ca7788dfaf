"""Rerunning a store with a changed sweep file: extend what can be extended, refuse the rest.

Adding replicates or adding values on the ``d`` (when it is a grid axis), ``delta``, ``gamma``, ``T``
or ``weights`` axes extends the store: a new template (with the store's own batching) is written
beside it, every finished replicate is copied over by coordinate *value*, chunk by chunk, and the two
directories are swapped; only the new work is then computed. Object storage has no rename: there the
extended store is written under the prefix beside it, a marker object commits to it, and its objects are
copied over the store's (consolidated metadata last, as at creation); :func:`recover` finishes a copy that
was cut, or drops an extension that never reached its marker. A change of ``cells_per_task`` or
``replicates_per_task`` alone changes nothing: the store keeps the batching it was made with. Because each
replicate's random stream is keyed by its coordinate values, the copied results are exactly what a
fresh run of the larger sweep would compute.

Changing the SNR values also extends, but every cell is recomputed (and the run says so): a task
computes all SNR values of a cell from the same draws. A sweep that adds the first data-dependent
weights (attention) adds the variables ``kappa_snr``, ``alpha_snr`` and ``attention_distance``; for the
carried replicates of fixed weights they are filled exactly as a fresh run computes them (``kappa`` and
``alpha`` at every SNR, NaN), so an extended store equals a fresh run of the larger sweep. Changing a field that
fixes what the stored numbers mean (``d``, ``seed``, the correlation model, the table centering, ``top_k``, the
optional observables) or
dropping axis values is refused with the field, both values and the way out. So is turning a
top-level ``d`` into the axis ``grid.d`` or back: the streams of a top-level ``d`` are not keyed by
``d`` (:mod:`rmtsweep.run.grid`), so its results are not those of any ``d`` axis.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import cast

import numcodecs
import numpy as np
import zarr

from ..dims import D, has_d_axis, store_dims
from ..errors import StoreError
from ..spec import Sweep
from .backend import NEW_SUFFIX, OLD_SUFFIX, SWAP_SUFFIX, Location, beside
from .io import consolidate
from .layout import NULL_DONE_ATTRS
from .location import locate
from .writer import array_of, dims_of, null_arrays, open_for_writing, per_replicate_arrays, read_array

FIXED = ("d", "seed", "correlation", "table_centering", "top_k", "observables")


# variables a sweep can add to a store, and how a carried replicate of fixed weights gets them: from
# which stored variable, broadcast over the SNR axis (None: NaN, the fill value)
DERIVED = {"kappa_snr": "kappa", "alpha_snr": "alpha", "attention_distance": None}

__all__ = ["DERIVED", "FIXED", "NEW_SUFFIX", "OLD_SUFFIX", "SWAP_SUFFIX", "add_null_done", "beside", "copy_finished",
           "interrupted",
           "plan", "recompute_reason", "recover", "swap"]


NULL = ("null_eigenvalue", "null_done")    # computed by null tasks, carried over apart from the per-replicate arrays


def add_null_done(path: Location) -> bool:
    """Give a store whose ``null_eigenvalue`` has no ``null_done`` its flags; returns whether it had none.

    Such a store's first replicate block's task computed all its points' null replicates before its ``done`` was
    set, so a null replicate is done where its value is and the first replicate is done. Called under the lock.
    """
    group = zarr.open_group(path.zarr_store(read_only=False), mode="r+")
    if "null_eigenvalue" not in group or "null_done" in group:
        return False
    values, done = array_of(group, "null_eigenvalue"), array_of(group, "done")
    with zarr.config.set({"array.write_empty_chunks": True}):      # every chunk stored, as a run's (writer.py)
        flags = group.create_array("null_done", shape=values.shape, chunks=values.chunks, dtype="bool",
                                   fill_value=None, filters=[numcodecs.CRC32()],
                                   attributes={"_ARRAY_DIMENSIONS": list(dims_of(values)), **NULL_DONE_ATTRS})
        flags[...] = np.isfinite(read_array(values)) & read_array(done, (..., slice(0, 1)))
    consolidate(path)
    return True


def _labels(sweep: Sweep, axis: str) -> list:
    if axis == "weights":
        return sweep.weight_labels()
    return list(getattr(sweep.grid, axis))


def plan(stored: Sweep, new: Sweep, path: Path | Location) -> str:
    """``"same"``, ``"extend"`` or a :class:`StoreError` saying which field differs and what to do."""
    if stored.canonical(batching=False) == new.canonical(batching=False):
        return "same"          # at most the batching differs: the store keeps its own chunks
    way_out = "start a new store with --store NEW_PATH"
    _check_d(stored, new, path, way_out)
    for field in FIXED:
        if field == D:
            continue                                     # _check_d
        a, b = stored.canonical()[field], new.canonical()[field]
        if a != b:
            raise StoreError(f"{path}: this sweep changes `{field}` ({a!r} in the store, {b!r} in the file), "
                             f"which changes what the stored results mean; {way_out}")
    if stored.null_replicate_count and new.null_replicate_count not in (0, stored.null_replicate_count):
        raise StoreError(f"{path}: this sweep has null_replicates = {new.null_replicate_count} but the store "
                         f"scheduled {stored.null_replicate_count}; {way_out}")
    if new.replicates < stored.replicates:
        raise StoreError(f"{path}: this sweep has replicates = {new.replicates} but the store holds "
                         f"{stored.replicates}; a store only grows; {way_out}")
    old_w = {w.label: w for w in stored.grid.weights}
    for w in new.grid.weights:
        if w.label in old_w and old_w[w.label] != w:
            raise StoreError(f"{path}: weights {w.label!r} are defined differently from the store's; "
                             f"give them another `name` or {way_out}")
    for axis in stored.dims.axes:
        dropped = [v for v in _labels(stored, axis) if v not in _labels(new, axis)]
        if dropped:
            raise StoreError(f"{path}: grid.{axis} drops {dropped} held in the store; a store only grows "
                             f"(select what you need with xarray instead); {way_out}")
    return "extend"


def _check_d(stored: Sweep, new: Sweep, path: Path | Location, way_out: str) -> None:
    """Refuse a change of a top-level ``d``, and a change between a top-level ``d`` and ``grid.d``."""
    if not stored.d_axis and not new.d_axis and stored.d != new.d:
        raise StoreError(f"{path}: this sweep changes `d` ({stored.d!r} in the store, {new.d!r} in the file), which "
                         f"changes what the stored results mean (the streams of a top-level d are not keyed by d); "
                         f"{way_out} (with `grid.d: [{stored.d}, {new.d}]` to sweep d)")
    if not stored.d_axis and new.d_axis:
        raise StoreError(f"{path}: this sweep makes `d` a grid axis (grid.d = {list(new.d_values)}) but the store "
                         f"has the top-level d = {stored.d}, whose streams are not keyed by d; start a new store "
                         f"with `grid.d` and --store NEW_PATH")
    if stored.d_axis and not new.d_axis:
        raise StoreError(f"{path}: this sweep has the top-level d = {new.d} but the store's d is the grid axis "
                         f"grid.d = {list(stored.d_values)}, whose streams are keyed by d; keep `grid.d` (adding "
                         f"values extends the store), or {way_out}")


def recompute_reason(stored: Sweep, new: Sweep, path: Location, tpl) -> str | None:
    """Why extending the store at ``path`` to ``new`` recomputes every replicate, or ``None`` (carried over).

    ``tpl`` is the new store's :class:`~rmtsweep.store.layout.Template`.
    """
    if stored.grid.snr != new.grid.snr:
        return (f"grid.snr changes ({list(stored.grid.snr)} in the store, {list(new.grid.snr)} in the file) and a "
                f"task computes every SNR value of a cell from the same draws: every replicate is recomputed")
    old = set(per_replicate_arrays(zarr.open_group(path.zarr_store(), mode="r")))
    lacking = sorted(v.name for v in tpl.variables if v.name not in old and v.name not in DERIVED and v.name != "run"
                     and v.name not in NULL)
    if lacking:
        return (f"the sweep adds the variables {lacking}, which the stored replicates lack: every replicate is "
                "recomputed")
    return None


def interrupted(path: Location) -> bool:
    """Whether an extension of the store at ``path`` was killed half way (see :func:`recover`)."""
    return path.extension_cut()


def recover(path: Location) -> None:
    """Finish or undo an extension that was killed half way (called under the store's lock, first)."""
    path.recover_extension()


def _positions(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """For each value of ``new``, its position in ``old`` (-1 where absent)."""
    lookup = {v: i for i, v in enumerate(old.tolist())}
    return np.array([lookup.get(v, -1) for v in new.tolist()], dtype=np.int64)


def copy_finished(old_path: Location, new_path: Location, recompute_all: bool) -> int:
    """Copy every per-replicate array of ``old_path`` into ``new_path``, matching coordinate values.

    Streams chunk by chunk of the new store: memory holds one chunk of one variable at a time, and
    a chunk that holds nothing of the old store is not touched. Returns the number of replicates
    carried over as done.
    """
    if recompute_all:
        return 0
    old_path = locate(old_path)
    old, new = zarr.open_group(old_path.zarr_store(), mode="r"), open_for_writing(new_path)
    axes = store_dims(has_d_axis(dims_of(new["done"]))).replicate
    where = [_positions(read_array(array_of(old, a)), read_array(new[a])) for a in axes]
    chunks = new["done"].chunks
    starts = [range(0, len(w), c) for w, c in zip(where, chunks, strict=True)]
    names = [n for n in per_replicate_arrays(old) if n in new]
    derived = {n: src for n, src in DERIVED.items() if n in new and n not in old}
    carried = 0
    for start in itertools.product(*starts):
        region = tuple(slice(s, min(s + c, len(w))) for s, c, w in zip(start, chunks, where, strict=True))
        pos = [w[r] for w, r in zip(where, region, strict=True)]
        if any((p < 0).all() for p in pos):
            continue                                         # nothing of the old store in this chunk
        present = [np.flatnonzero(p >= 0) for p in pos]
        for name in names:
            src = _select(array_of(old, name), pos, present)
            block = read_array(new[name], region)
            block[np.ix_(*present)] = src
            new[name][region] = block
            if name == "done":
                carried += int(src.sum())
        for name, source in derived.items():                 # as a fresh run computes them for fixed weights
            block = read_array(new[name], region)
            sel = np.ix_(*present)
            if source is not None:
                value = _select(array_of(old, source), pos, present)
                block[sel] = value[..., None]
            new[name][region] = block
    _copy_null(old, new, where)
    return carried


def _copy_null(old: zarr.Group, new: dict[str, zarr.Array], where: list[np.ndarray]) -> None:
    """Carry the scheduled null replicates and their ``null_done`` over, by coordinate value (a new scheme's or
    point's are left to their null tasks)."""
    for name in sorted(set(null_arrays(old)) & set(new)):
        pos = where[:-1] + [np.arange(new[name].shape[-1])]
        present = [np.flatnonzero(p >= 0) for p in pos]
        if any(p.size == 0 for p in present):
            continue
        block = read_array(new[name])
        block[np.ix_(*present)] = _select(array_of(old, name), pos, present)
        new[name][...] = block


def _select(array: zarr.Array, pos: list[np.ndarray], present: list[np.ndarray]) -> np.ndarray:
    """The values of ``array`` at the positions ``p[i]`` along each axis (one orthogonal selection)."""
    return cast(np.ndarray, array.get_orthogonal_selection(tuple(p[i] for p, i in zip(pos, present, strict=True))))


def swap(path: Location, new_path: Location) -> None:
    """Replace the store at ``path`` by ``new_path`` (:meth:`Location.replace_by`; :func:`recover` handles a kill).

    On a file system, two renames. On object storage (no rename): a marker object commits to ``new_path``, the
    store's objects are replaced by copies of ``new_path``'s (its consolidated metadata first removed and last
    written back, so no reader takes it for whole meanwhile), then the marker and ``new_path`` are removed.
    """
    path.replace_by(new_path)
