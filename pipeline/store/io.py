"""Opening, creating and reading a store: is it one, what does it hold, how far is it."""

from __future__ import annotations

import json
from dataclasses import dataclass
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

import numcodecs
import numpy as np
import xarray as xr
import zarr

from ..dims import has_d_axis
from ..errors import RmtsweepError, StoreError
from ..spec import Sweep, parse_sweep
from .backend import Location
from .layout import FORMAT, ZARR_FORMAT, Template, checksum_encoding
from .location import locate
from .frame_check import frame_damage
from .metadata import beyond_repair, consolidated_problem, metadata_damage, root_attrs_lost
from .metalock import metadata_lock
from .storage_errors import first_line as _first_line
from .writer import array_of, dims_of, read_array

__all__ = ["CUT_SHORT", "FRAME_REPAIR", "blocking_of", "chunk_done", "consolidate", "create", "is_store",
           "store_problem", "open_store", "open_group", "open_zarr", "array_run", "edit_consolidated", "half_created",
           "read_object", "record_run", "status", "StoreStatus", "stored_sweep", "tasks_done", "upload",
           "write_template"]


CUT_SHORT = "its creation or extension was cut before the end"
"""How :func:`store_problem` starts for a store on object storage whose metadata is not whole yet."""


def open_group(path: str | Path | Location, mode: Literal["r", "r+", "a", "w", "w-"] = "r") -> zarr.Group:
    """The store's root zarr group, on a file system or at a URL."""
    return zarr.open_group(locate(path).zarr_store(read_only=mode == "r"), mode=mode)


def _object_store_problem(path: Location) -> str | None:
    """:func:`store_problem` on object storage: one small read of ``.zattrs`` (and a listing when it is absent)."""
    try:
        raw = path.child(".zattrs").read()
        if raw is None:
            try:
                return f"not an rmtsweep store (no '{FORMAT}' marker)" if path.exists() else "does not exist"
            except FileNotFoundError:
                return "does not exist"
            except RmtsweepError:
                raise                     # the backend's one line: credentials, bucket, options, outage
            except Exception as exc:  # noqa: BLE001 - the storage service's words, in one line
                return f"cannot read it ({_first_line(exc)})"
        attrs = json.loads(raw)
    except RmtsweepError:
        raise
    except PermissionError as exc:
        return f"cannot read it (access denied: {_first_line(exc)})"
    except ValueError as exc:
        return _damaged(path, f".zattrs is truncated or corrupt: {_first_line(exc)}")
    except Exception as exc:  # noqa: BLE001 - an unreachable endpoint, missing credentials, ...
        return f"cannot read it ({_first_line(exc)})"
    if not (isinstance(attrs, dict) and attrs.get("rmtsweep_format") == FORMAT):
        return _unmarked(path)
    try:
        problem = consolidated_problem(path)
    except RmtsweepError:
        raise
    except Exception as exc:  # noqa: BLE001
        return f"cannot read it ({_first_line(exc)})"
    if problem is not None and problem.endswith("is missing"):
        return f"{CUT_SHORT} (no consolidated metadata); rerun the same command to finish it"
    return None if problem is None else _damaged(path, problem)


def _damaged(path: Location, problem: str) -> str:
    """The one line for damaged metadata: what is damaged and the fix that works."""
    try:
        if lost := root_attrs_lost(path):
            return lost
        if left := beyond_repair(path):
            return f"cannot read its metadata: {left}"
    except RmtsweepError:
        raise
    except Exception:  # noqa: BLE001 - a store that cannot be listed: the damage is all there is to say
        pass
    return f"cannot read its metadata ({problem}); `rmtsweep verify {path} --repair` rebuilds it from its other copy"


def _unmarked(path: Location) -> str:
    """Why a store without a whole, marked root ``.zattrs`` is not readable: its marker is only in the consolidated
    copy (repairable), it lost both copies, or it is no rmtsweep store."""
    if lost := root_attrs_lost(path):
        return lost
    if damage := metadata_damage(path):
        return _damaged(path, str(damage[0]))
    return f"not an rmtsweep store (no '{FORMAT}' marker)"


def store_problem(path: str | Path | Location) -> str | None:
    """Why ``path`` is not a readable rmtsweep store (``None`` when it is one), in a few words.

    Tells "does not exist" and "not an rmtsweep store" (no zarr group, or no format marker) from
    "cannot read it" (permission denied, truncated or corrupt metadata), and says which.
    """
    path = locate(path)
    if not path.renames:
        return _object_store_problem(path)
    path = path.local()
    meta = path / ".zattrs"
    if not path.exists():
        return "does not exist"
    try:
        if path.is_dir() and meta.exists():
            attrs = json.loads(meta.read_text())
            if not isinstance(attrs, dict) or attrs.get("rmtsweep_format") != FORMAT:
                return _unmarked(path)
            problem = consolidated_problem(path)
            return None if problem is None else _damaged(path, problem)
        if path.is_dir() and (path / ".zmetadata").exists():
            return _unmarked(path)                 # the root's .zattrs missing, its copy maybe whole
        zarr.open_group(str(path), mode="r")
    except PermissionError as exc:
        return f"cannot read it ({exc.strerror})"
    except (FileNotFoundError, zarr.errors.GroupNotFoundError, zarr.errors.NodeTypeValidationError):
        return f"not an rmtsweep store (no '{FORMAT}' marker)"
    except json.JSONDecodeError as exc:
        return _damaged(path, f"{meta.name} is truncated or corrupt: {exc.msg}")
    except OSError as exc:
        return f"cannot read it ({exc.strerror or exc})"
    except Exception:  # noqa: BLE001 - zarr found no group here
        return f"not an rmtsweep store (no '{FORMAT}' marker)"
    return f"not an rmtsweep store (no '{FORMAT}' marker)"


def is_store(path: str | Path | Location) -> bool:
    """Whether ``path`` holds a readable rmtsweep store."""
    return store_problem(path) is None


def open_store(path: str | Path | Location, storage_options: dict | None = None) -> xr.Dataset:
    """Open a store with xarray (lazy, dask-chunked as stored; works while a sweep is still writing).

    ``path`` is a path or a URL of object storage (``s3://bucket/run.zarr``), with the options of its
    storage (``storage_options``) for the latter (credentials and endpoint also come from the environment).

    Opened with ``mask_and_scale=False``, so ``run`` reads -1 where no run computed a replicate (a
    plain ``xr.open_zarr`` turns zarr fill values into NaN and ``run`` into floats); every float
    variable already uses NaN for "not computed".
    """
    path = locate(path, storage_options)
    problem = store_problem(path)
    if problem:
        raise StoreError(f"{path}: {problem}")
    try:
        return open_zarr(path, mask_and_scale=False)
    except RmtsweepError:
        raise
    except Exception:
        # xarray reads the coordinates as it opens: a damaged one, named in one line with its repair
        damage, _ = frame_damage(path)
        if not damage:
            raise
        raise StoreError(f"{path}: {damage[0]}; {FRAME_REPAIR.format(path=path)}") from None


FRAME_REPAIR = "`rmtsweep verify {path} --repair` rewrites it from the store's sweep"
"""The fix for a damaged chunk of a coordinate or theory array (:mod:`rmtsweep.store.frame_repair`)."""


def open_dataset(*args: Any, **kwargs: Any) -> xr.Dataset:
    """Deprecated: :func:`open_store`, under the name it has everywhere (``rmtsweep.open_store``)."""
    warnings.warn("rmtsweep.store.open_dataset is deprecated; use rmtsweep.open_store", DeprecationWarning,
                  stacklevel=2)
    return open_store(*args, **kwargs)


def open_zarr(path: str | Path | Location, **kwargs) -> xr.Dataset:
    """``xr.open_zarr`` of the store at a path or a URL (its storage options passed on); ``kwargs`` as xarray's."""
    path = locate(path)
    return xr.open_zarr(path.address, storage_options=path.open_options or None, **kwargs)


def stored_sweep(path: str | Path | Location, attrs: dict) -> Sweep:
    """The sweep a store was created from (re-validated from its canonical form)."""
    return parse_sweep(json.loads(attrs["sweep_canonical"]), f"{path} (stored sweep)", stored=True)


def write_template(path: Location, tpl: Template) -> None:
    """Write a template at ``path``: the frame through xarray, empty data arrays through zarr, then the
    consolidated metadata (so a plain ``xr.open_zarr`` reads it; on object storage, its presence is what
    says the template is whole). No chunk of data is written.

    The backend picks where zarr writes it (:meth:`Location.write_tree`): on object storage, a local temporary
    directory uploaded in one batch of concurrent requests, its consolidated metadata last.
    """
    locate(path).write_tree(lambda target: _write_template_here(target, tpl))


def _write_template_here(path: Location, tpl: Template) -> None:
    """:func:`write_template` at ``path`` itself."""
    # every chunk of the frame stored (one of fill values only too), so an absent one is a lost one
    tpl.frame.to_zarr(path.zarr_store(read_only=False), mode="w", zarr_format=ZARR_FORMAT, consolidated=False,
                      encoding=checksum_encoding(tpl.frame), write_empty_chunks=True)
    group = open_group(path, mode="r+")
    for v in tpl.variables:
        group.create_array(v.name, shape=v.shape, chunks=v.chunks, dtype=v.dtype, fill_value=v.fill_value,
                           filters=[numcodecs.CRC32()] if v.checksum else None,
                           attributes={"_ARRAY_DIMENSIONS": list(v.dims), **v.attrs})
    consolidate(path)


def upload(local: Location, path: Location) -> None:
    """Copy the store at ``local`` to ``path`` (whose prefix holds nothing of it), ``.zmetadata`` last."""
    body = [n for n in local.list() if n != ".zmetadata"]
    path.copy_in(local, body)
    path.copy_in(local, [".zmetadata"])


def consolidate(path: Location) -> None:
    """Rewrite the consolidated metadata (the run's lock and journal files are not zarr nodes, by design)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not recognized as a component of a Zarr hierarchy")
        zarr.consolidate_metadata(locate(path).zarr_store(read_only=False))


def create(path: Location, tpl: Template) -> None:
    """Write the template (coords, attrs, theory arrays; data chunks come later).

    The backend makes it so that no reader takes a part for the whole (:meth:`Location.create_tree`). On a file
    system it is written into a temporary sibling directory and renamed into place, so a store at ``path`` is
    never a half-written template. Object storage has no rename: the template is written in place and its
    consolidated metadata last, so a prefix without it is a creation that was cut (:func:`half_created`), which
    :meth:`rmtsweep.store.Store.prepare` removes and writes again.

    Raises
    ------
    StoreError
        The store cannot be created; a store another run created first is no error.
    """
    locate(path).create_tree(lambda target: write_template(target, tpl), is_store)


def half_created(path: Location) -> bool:
    """A store whose template was cut before its consolidated metadata (see :func:`create`)."""
    return path.creation_cut()


def record_run(path: Location, info: dict) -> int:
    """Append a run's provenance to ``attrs['runs']`` and return its index.

    An array job's (``info["array"] = N``, :func:`rmtsweep.run.ready_store`) is N runs, one per share
    (``"share": [i, N]``), recorded together; the index returned is the first.
    """
    n = info.get("array")
    entries = [info] if n is None else [{**info, "share": [i, n]} for i in range(n)]
    with metadata_lock(path):
        group = open_group(path, mode="r+")
        runs = list(cast("list[dict]", group.attrs.get("runs", [])))
        first = len(runs)
        runs += [{"run": first + k, **entry} for k, entry in enumerate(entries)]
        group.attrs["runs"] = runs
        _reconsolidate_root_attrs(path)
    return first


def _reconsolidate_root_attrs(path: Location) -> None:
    """Copy the root's ``.zattrs`` (as zarr wrote it) into ``.zmetadata``: what :func:`consolidate` would change
    when only the root's attributes changed, in one read of each and one write (it reads every node's metadata:
    a round trip each on object storage). Called under the metadata lock."""
    attrs = read_object(path, ".zattrs")
    if attrs is None or not edit_consolidated(path, lambda meta: meta.update({".zattrs": json.loads(attrs)})):
        consolidate(path)


def read_object(path: str | Path | Location, name: str) -> bytes | None:
    """The bytes of the file (or object) ``name`` inside the store, or ``None`` when it is absent."""
    return locate(path).child(name).read()


def edit_consolidated(path: str | Path | Location, edit: Callable[[dict], None]) -> bool:
    """Apply ``edit`` to the entries of the store's ``.zmetadata`` and replace it whole (readers see the old or
    the new; on disk through a rename). ``False`` when there is none. Call it under the metadata lock."""
    raw = read_object(path, ".zmetadata")
    if raw is None:
        return False
    merged = json.loads(raw)
    edit(merged["metadata"])
    locate(path).child(".zmetadata").write(json.dumps(merged, indent=4, sort_keys=True).encode())
    return True


def array_run(runs: list[dict], share: tuple[int, int]) -> int | None:
    """The index of the run recorded for ``share`` when its array was submitted (the latest such), or ``None``."""
    for run in reversed(runs):
        if run.get("array") == share[1] and tuple(run.get("share", ())) == tuple(share):
            return int(run["run"])
    return None


def blocking_of(path: str | Path | Location) -> tuple[int, ...]:
    """The store's task size along ``(delta, gamma, T, replicate)``: the chunks of ``done`` (1 along ``d``); then,
    in a store with scheduled null replicates, the null tasks' along ``null_replicate``."""
    group = open_group(locate(path))
    done = array_of(group, "done")
    chunks = dict(zip(dims_of(done), done.chunks, strict=True))
    null = (array_of(group, "null_eigenvalue").chunks[-1],) if "null_eigenvalue" in group else ()
    return chunks["delta"], chunks["gamma"], chunks["T"], chunks["replicate"], *null


def chunk_done(done: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    """Whether every element of each chunk of ``done`` is set: one flag per chunk (one task)."""
    out = done
    for axis, size in enumerate(chunks):
        starts = np.arange(0, done.shape[axis], size)
        out = np.logical_and.reduceat(out, starts, axis=axis) if done.shape[axis] else out
    return out


def tasks_done(path: str | Path | Location, storage_options: dict | None = None) -> tuple[int, int]:
    """``(tasks done, tasks in all)`` of a store, from ``done`` (and ``null_done``): what a run says when it ends.

    :func:`status` also opens the dataset and reads ``run``: on object storage, a request more per task.
    """
    group = open_group(locate(path, storage_options))
    done = array_of(group, "done")
    return _with_null(group, _task_counts(read_array(done), done.chunks))


def _task_counts(done: np.ndarray, chunks: tuple[int, ...]) -> tuple[int, int]:
    """``(tasks done, tasks in all)`` of a ``done`` array with these chunks (a task is done when its chunk is)."""
    per_task = chunk_done(done, chunks)
    return int(per_task.sum()), int(per_task.size)


def _with_null(group: zarr.Group, counts: tuple[int, int]) -> tuple[int, int]:
    """``counts`` with the store's null tasks: a chunk of ``null_done`` that holds a null replicate to compute (a
    scheme without a law over ``T >= 2``) is one, done when every such null replicate in it is."""
    if "null_done" not in group:
        return counts
    flags = array_of(group, "null_done")
    sweep = parse_sweep(json.loads(cast(str, group.attrs["sweep_canonical"])), stored=True)
    many_T = read_array(array_of(group, "T")) >= 2
    schemes = np.isin(np.arange(flags.shape[-2]), sweep.null_schemes)
    need = np.broadcast_to((many_T[:, None] & schemes[None, :])[..., None], flags.shape)
    some = ~chunk_done(~need, flags.chunks)                                 # the chunks of a null task
    finished = chunk_done(read_array(flags) | ~need, flags.chunks)
    return counts[0] + int((finished & some).sum()), counts[1] + int(some.sum())


@dataclass(frozen=True)
class StoreStatus:
    """How much of a store is done and what made it: what :func:`status` returns.

    ``replicates_by_run`` maps a run's index in ``attrs["runs"]`` to the done replicates it computed;
    ``d_axis`` holds the ``d`` values of a store with ``d`` as a grid axis, else ``None``.
    """

    tasks_done: int
    tasks_total: int
    replicates_done: int
    replicates_total: int
    replicates_by_run: dict[int, int]
    attrs: dict[str, Any]
    d_axis: list[int] | None

    @property
    def complete(self) -> bool:
        """Whether every task is done."""
        return self.tasks_done == self.tasks_total

    def to_json(self) -> str:
        """The counts, the ``d`` axis and the store's provenance, as JSON."""
        return json.dumps({**{k: v for k, v in self.__dict__.items() if k != "replicates_by_run"},
                           "replicates_by_run": {str(k): v for k, v in self.replicates_by_run.items()},
                           "complete": self.complete}, indent=1, default=str)


def status(path: str | Path | Location, storage_options: dict | None = None) -> StoreStatus:
    """How much of the store at ``path`` is done: tasks (chunks of ``done``, and null tasks), replicates, replicates
    per run, its attributes and its ``d`` axis (:class:`StoreStatus`)."""
    path = locate(path, storage_options)
    open_store(path)                                  # raises StoreError if it is not a store
    group = open_group(path)
    done_array = array_of(group, "done")
    done = read_array(done_array)
    attrs = dict(group.attrs)
    tasks, total = _with_null(group, _task_counts(done, done_array.chunks))
    runs, counts = np.unique(read_array(array_of(group, "run"))[done] if "run" in group else [], return_counts=True)
    return StoreStatus(tasks, total, int(done.sum()), int(done.size),
                       dict(zip(runs.tolist(), counts.tolist(), strict=True)), attrs,
                       read_array(array_of(group, "d")).tolist() if has_d_axis(dims_of(done_array)) else None)
