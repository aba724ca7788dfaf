"""The zarr store: a template written once, then one chunk per finished task, then its ``done`` flag.

Layout (dims ``delta, gamma, T, weights, replicate, snr, k``):

- per replicate, chunked one task per chunk: ``eigenvalues``, ``overlap`` (``... replicate, snr, k``),
  ``alpha``, ``kappa``, ``done`` (``... replicate``); optionally ``accuracy`` (``... replicate, snr``)
  and ``spectrum`` (``... replicate, snr, bin``);
- the theory arrays of :mod:`pipeline.predict`, written with the template;
- provenance in the dataset attrs.

Only the driver process writes (workers return arrays), data first and ``done`` last, so a reader
never sees a ``done`` cell without its data, and the store is readable while a sweep runs. Unwritten
chunks read back as the fill value (NaN, and ``False`` for ``done``).
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import dask.array as da
import numpy as np
import xarray as xr
import zarr

from .errors import StoreError
from .grid import replicate_blocks, task_shape
from .predict import grid_coords
from .spec import Sweep, SweepFile, parse_sweep

FORMAT = "rmtsweep-store-1"
# Zarr format 2 with consolidated metadata: readable by every zarr and xarray version, a plain
# ``xr.open_zarr(path)`` opens it without warnings, and string coordinates have a specified encoding
# (zarr format 3 has none yet for fixed-length strings). Metadata only changes when the template is
# written, so the consolidated copy stays true while chunks are filled in.
ZARR_FORMAT = 2
PER_REPLICATE = ("alpha", "kappa", "done")
PER_SNR = ("eigenvalues", "overlap")
OPTIONAL = ("run", "spectrum", "accuracy")   # `run` is absent from stores made before it existed
CELL_DIMS = ("delta", "gamma", "T", "weights")


def _attrs() -> dict[str, dict[str, str]]:
    return {
        "eigenvalues": {"long_name": "top-k eigenvalues of S = (1/N) sum_n c_n c_n^T, descending",
                        "units": "same units as the eigenvalues of S (absolute)"},
        "overlap": {"long_name": "alignment |u_hat_i^T u|^2 of the i-th top eigenvector with the signal",
                    "units": "1"},
        "alpha": {"long_name": "realised signal strength (1/N) sum_n (w^T xi_n)^2", "units": "1"},
        "kappa": {"long_name": "noise level kappa = ||w||^2", "units": "1"},
        "done": {"long_name": "replicate computed and written (set after its data)", "units": "1"},
        "run": {"long_name": "index in attrs['runs'] of the run that computed this replicate (-1: none)",
                "units": "1"},
        "spectrum": {"long_name": "eigenvalue density of S/kappa on fixed bins (all d eigenvalues)",
                     "units": "1/(kappa units)"},
        "accuracy": {"long_name": "ridge test accuracy of the sequence label from the pooled vector",
                     "units": "1"},
    }


def template(sweep_file: SweepFile, theory: xr.Dataset, provenance: dict) -> xr.Dataset:
    """The full dataset with lazy (unwritten) data variables and computed theory arrays."""
    sweep = sweep_file.sweep
    coords = grid_coords(sweep)
    coords["replicate"] = np.arange(sweep.replicates)
    coords["k"] = np.arange(1, sweep.top_k + 1)
    n_weights = len(coords["weights"])
    rc = sweep.replicate_chunk
    rep_shape = task_shape(sweep) + (n_weights, sweep.replicates)
    rep_chunks = (1, 1, 1, n_weights, rc)                     # one task = one chunk
    snr_shape = rep_shape + (len(coords["snr"]), sweep.top_k)
    snr_chunks = rep_chunks + snr_shape[-2:]
    attrs = _attrs()
    data = {}
    for name in PER_SNR:
        data[name] = (CELL_DIMS + ("replicate", "snr", "k"),
                      da.full(snr_shape, np.nan, chunks=snr_chunks), attrs[name])
    for name in ("alpha", "kappa"):
        data[name] = (CELL_DIMS + ("replicate",), da.full(rep_shape, np.nan, chunks=rep_chunks), attrs[name])
    data["done"] = (CELL_DIMS + ("replicate",), da.zeros(rep_shape, dtype=bool, chunks=rep_chunks), attrs["done"])
    data["run"] = (CELL_DIMS + ("replicate",), da.full(rep_shape, -1, dtype=np.int16, chunks=rep_chunks), attrs["run"])
    if sweep.observables.ridge:
        data["accuracy"] = (CELL_DIMS + ("replicate", "snr"), da.full(snr_shape[:-1], np.nan, chunks=snr_chunks[:-1]),
                            attrs["accuracy"])
    if sweep.observables.spectrum:
        edges = sweep.observables.spectrum.edges()
        coords["bin"] = 0.5 * (edges[1:] + edges[:-1])
        shape = snr_shape[:-1] + (edges.size - 1,)
        data["spectrum"] = (CELL_DIMS + ("replicate", "snr", "bin"),
                            da.full(shape, np.nan, chunks=snr_chunks[:-1] + (edges.size - 1,)), attrs["spectrum"])
    ds = xr.Dataset(data, coords=coords)
    if "bin" in ds.coords:
        ds["bin"].attrs = {"long_name": "bin centre of eigenvalue / kappa", "units": "kappa",
                           "bin_width": float(edges[1] - edges[0])}
    ds = ds.merge(theory)
    ds["replicate"].attrs = {"long_name": "Monte Carlo replicate", "units": "1"}
    ds["k"].attrs = {"long_name": "rank of the eigenpair (1 = largest)", "units": "1"}
    ds["delta"].attrs = {"long_name": "delta = d / V", "units": "1"}
    ds["gamma"].attrs = {"long_name": "gamma = d / N", "units": "1"}
    ds["snr"].attrs = {"long_name": "signal-to-noise ratio ||mu||^2", "units": "1"}
    ds["T"].attrs = {"long_name": "sequence length", "units": "tokens"}
    ds["weights"].attrs = {"long_name": "pooling-weight scheme", "units": "1"}
    ds.attrs.update(provenance)
    return ds


def provenance(sweep_file: SweepFile, version: str, git_revision: str | None) -> dict:
    """Dataset attrs recording what produced the store (JSON-able values only)."""
    s = sweep_file.sweep
    return {
        "rmtsweep_format": FORMAT,
        "title": f"rmtsweep: {s.name}",
        "sweep_name": s.name,
        "sweep_hash": s.digest(),
        "sweep_file": sweep_file.path,
        "sweep_text": sweep_file.text,
        "sweep_canonical": json.dumps(s.canonical(), sort_keys=True),
        "seed": s.seed,
        "seeding": "SeedSequence(seed, spawn_key=(bits(delta), bits(gamma), T, replicate))",
        "d": s.d,
        "correlation": s.correlation_model().label(),
        "table_centering": s.table_centering,
        "rmtsweep_version": version,
        "git_revision": git_revision or "unknown",
        "created": now(),
        "runs": [],
    }


def now() -> str:
    """UTC time stamp for provenance."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def is_store(path: Path) -> bool:
    """Whether ``path`` holds an rmtsweep store."""
    try:
        return zarr.open_group(str(path), mode="r").attrs.get("rmtsweep_format") == FORMAT
    except Exception:  # noqa: BLE001 - any failure to open means "not a store"
        return False


def create(path: Path, ds: xr.Dataset) -> None:
    """Write the template (coords, attrs, theory arrays; data chunks come later).

    The template is written into a temporary sibling directory and renamed into place, so a store
    at ``path`` is never a half-written template.
    """
    parent = path.absolute().parent
    if not parent.is_dir():
        raise StoreError(f"{path}: cannot create the store: {parent} is not a directory")
    tmp = parent / f".{path.name}.creating-{os.getpid()}"
    try:
        write_template(tmp, ds)
        tmp.rename(path)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if path.exists() and is_store(path):
            return                      # another run created it first; the lock decides who writes
        raise StoreError(f"{path}: cannot create the store ({exc.strerror or exc})") from None


def write_template(path: Path, ds: xr.Dataset) -> None:
    """Write a template dataset at ``path`` as it is (metadata and theory now, data chunks later)."""
    ds.to_zarr(str(path), mode="w", compute=False, zarr_format=ZARR_FORMAT, consolidated=True)


def record_run(path: Path, info: dict) -> int:
    """Append a run's provenance to ``attrs['runs']`` and return its index."""
    group = zarr.open_group(str(path), mode="r+")
    runs = list(group.attrs.get("runs", []))
    runs.append({"run": len(runs), **info})
    group.attrs["runs"] = runs
    with warnings.catch_warnings():   # the run's lock and journal files are not zarr nodes, by design
        warnings.filterwarnings("ignore", message=".*not recognized as a component of a Zarr hierarchy")
        zarr.consolidate_metadata(str(path))
    return len(runs) - 1


def open_dataset(path: str | Path) -> xr.Dataset:
    """Open a store with xarray (lazy; works while a sweep is still writing)."""
    path = Path(path)
    if not is_store(path):
        raise StoreError(f"{path}: not an rmtsweep store (no '{FORMAT}' marker)")
    return xr.open_zarr(str(path))


@dataclass
class Writer:
    """Writes finished tasks into their chunks of an existing store (the driver's only job)."""

    path: Path
    run: int = -1

    def __post_init__(self) -> None:
        group = zarr.open_group(str(self.path), mode="r+")
        names = PER_SNR + PER_REPLICATE + tuple(n for n in OPTIONAL if n in group)
        self.arrays = {name: group[name] for name in names}
        self.chunk = self.arrays["done"].chunks[-1]

    def write(self, index: tuple[int, int, int], weights: tuple[int, ...], replicates: tuple[int, int],
              values: dict[str, np.ndarray]) -> None:
        """Write one task's block: every data variable first, then ``done``.

        ``values`` hold the task's schemes (positions ``weights``) along their first axis. A task with
        every scheme fills its chunk in one write per variable; one with some (a store extended with
        new schemes) updates those schemes inside the chunk.
        """
        r0, r1 = replicates
        n_w, n = self.arrays["done"].shape[-2:]
        if r0 % self.chunk or (r1 % self.chunk and r1 != n):
            raise ValueError(f"replicates {r0}:{r1} are not aligned to the store's chunk of {self.chunk}")
        # (position on the weights axis, row of `values`): the whole chunk at once, or scheme by scheme
        parts = [(slice(None), None)] if tuple(weights) == tuple(range(n_w)) else \
            [(w, row) for row, w in enumerate(weights)]
        for name, array in self.arrays.items():
            if name == "done":
                continue
            for w, row in parts:
                region = tuple(index) + (w, slice(r0, r1))
                array[region] = self.run if name == "run" else (values[name] if row is None else values[name][row])
        for w, _ in parts:
            self.arrays["done"][tuple(index) + (w, slice(r0, r1))] = True

    def done_tasks(self, blocks: list[tuple[int, int]]) -> np.ndarray:
        """Done mask per task (see :func:`task_mask`)."""
        return task_mask(self.arrays["done"][...], blocks)


def task_mask(done: np.ndarray, blocks: list[tuple[int, int]]) -> np.ndarray:
    """Done mask per scheme and replicate block, shape ``task_shape + (n_weights, n_blocks)``.

    ``done`` has dims ``(delta, gamma, T, weights, replicate)``; a block is done when all its
    replicates are.
    """
    return np.stack([done[..., a:b].all(axis=-1) for a, b in blocks], axis=-1)


def stored_sweep(path: str | Path, attrs: dict) -> Sweep:
    """The sweep a store was created from (re-validated from its canonical form)."""
    return parse_sweep(json.loads(attrs["sweep_canonical"]), f"{path} (stored sweep)")


def status(path: str | Path) -> dict:
    """Counts of done tasks and replicates, replicates per run, and the store's provenance attrs."""
    ds = open_dataset(path)
    done = ds["done"].values
    attrs = dict(ds.attrs)
    per_task = task_mask(done, replicate_blocks(stored_sweep(path, attrs))).all(axis=-2)
    runs, counts = np.unique(ds["run"].values[done] if "run" in ds else [], return_counts=True)
    return {"tasks_done": int(per_task.sum()), "tasks_total": int(per_task.size),
            "replicates_done": int(done.sum()), "replicates_total": int(done.size),
            "replicates_by_run": dict(zip(runs.tolist(), counts.tolist())), "attrs": attrs}
