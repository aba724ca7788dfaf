"""The store's layout: its format marker, variables, attributes, provenance and template.

Dims ``delta, gamma, T, weights, replicate, snr, k`` (:mod:`rmtsweep.dims`; ``bin`` with the
spectrum observable), with ``d`` first when the sweep makes ``d`` a grid axis (``grid.d``; one chunk
per ``d`` value); with a top-level ``d`` there is no ``d`` dimension and ``attrs["d"]`` holds it.
Per-replicate variables are chunked so that one chunk is one task's block of points and replicates
(every scheme, SNR value and ``k``); the theory arrays of :mod:`rmtsweep.theory.on_grid` are written
with the template; provenance lives in the dataset attrs.

The template costs the same for any grid size: the frame (coordinates, theory, attrs) is written
through xarray, and the per-replicate arrays are created empty through zarr with their fill values,
so no chunk is touched until a task fills it.
"""

from __future__ import annotations

import datetime
import json
from dataclasses import dataclass
from typing import Any, Final

import numcodecs
import numpy as np
import xarray as xr

from ..dims import D
from ..results import RESULTS, present
from ..spec import Sweep, SweepFile
from ..theory.grid import grid_coords

__all__ = [
    "FORMAT", "GROUPS", "RESULT_VARS", "THEORY_PREFIXES", "ZARR_FORMAT",
    "Template", "Variable", "checksum_encoding", "data_variables", "declared_arrays", "frame", "now", "provenance",
    "template", "variable_attrs",
]

FORMAT = "rmtsweep-store-1"
# Zarr format 2 with consolidated metadata: readable by every zarr and xarray version, a plain
# ``xr.open_zarr(path)`` opens it without warnings, and string coordinates have a specified encoding
# (zarr format 3 has none yet for fixed-length strings). Metadata only changes when the template is
# written, so the consolidated copy stays true while chunks are filled in.
ZARR_FORMAT: Final = 2
NULL_ATTRS = {"long_name": "largest eigenvalue at snr = 0 of a scheduled null replicate, for the cells without a law "
                           "at the store's size (NaN elsewhere or not computed yet)",
              "units": "same units as the eigenvalues of S (absolute)"}
"""``null_eigenvalue``: over ``null_replicate`` in place of ``replicate``, so no entry of the per-replicate table."""
NULL_DONE_ATTRS = {"long_name": "scheduled null replicate computed and written (set after its data)", "units": "1"}
RESULT_VARS = (*(r.name for r in RESULTS.values() if r.compared), "null_eigenvalue", "null_done")
"""Variables that hold results (compared by :func:`rmtsweep.testing.assert_stores_equal`)."""
THEORY_PREFIXES = ("theory_", "paper_", "finite_size_", "pooled_null_")
"""How the names of the theory arrays (:mod:`rmtsweep.theory.on_grid`) start."""
GROUPS = ("comparison",)
"""The groups commands write into a store (``rmtsweep compare --write``)."""


def variable_attrs() -> dict[str, dict[str, str]]:
    """Long names and units of the per-replicate variables (:data:`rmtsweep.results.RESULTS`) and the null's."""
    return {**{name: r.attrs for name, r in RESULTS.items()}, "null_eigenvalue": NULL_ATTRS,
            "null_done": NULL_DONE_ATTRS}


@dataclass(frozen=True)
class Variable:
    """A per-replicate variable of the store: dims, shape, chunks, dtype, fill value and attrs."""

    name: str
    dims: tuple[str, ...]
    shape: tuple[int, ...]
    chunks: tuple[int, ...]
    dtype: str
    fill_value: Any
    attrs: dict[str, Any]
    checksum: bool = True
    """Each chunk carries a CRC32 of its bytes (numcodecs), so a chunk changed on disk fails to read."""


def data_variables(sweep: Sweep, blocking: tuple[int, ...]) -> list[Variable]:
    """The per-replicate variables of ``sweep``'s store, chunked one task per chunk.

    ``blocking`` is the task's size along ``(delta, gamma, T, replicate)``, then, for a sweep with scheduled null
    replicates, along ``null_replicate`` (default: all of them); a chunk spans every
    weights scheme, every SNR value, ``k`` and ``bin``, and one ``d`` value when ``d`` is an axis.
    Fill values are what unwritten chunks read back as: NaN, ``False`` for ``done`` (zarr's null fill
    reads as zeros) and -1 for ``run``. A sweep with scheduled null replicates (:attr:`Sweep.null_replicate_count`)
    adds ``null_eigenvalue`` and its ``null_done`` flags over ``null_replicate`` in place of ``replicate``, one
    chunk per null task (a block of points and of null replicates).
    """
    g = sweep.grid
    lead = (len(sweep.d_values),) if sweep.d_axis else ()
    rep_shape = lead + (len(g.delta), len(g.gamma), len(g.T), len(g.weights), sweep.replicates)
    cd, cg, cT, cr = blocking[:4]
    rep_chunks = (1,) * len(lead) + (cd, cg, cT, len(g.weights), cr)
    out = []
    for r in present(sweep):
        trail = r.trailing_shape(sweep)
        out.append(Variable(r.name, sweep.dims.replicate + r.trailing, rep_shape + trail, rep_chunks + trail, r.dtype,
                            r.fill, r.attrs))
    if m := sweep.null_replicate_count:
        dims, shape = sweep.dims.replicate[:-1] + ("null_replicate",), rep_shape[:-1] + (m,)
        chunks = rep_chunks[:-1] + (min(blocking[4], m) if len(blocking) > 4 else m,)
        out.append(Variable("null_eigenvalue", dims, shape, chunks, "float64", np.nan, NULL_ATTRS))
        out.append(Variable("null_done", dims, shape, chunks, "bool", None, NULL_DONE_ATTRS))
    return out


def checksum_encoding(ds: xr.Dataset, names: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """The zarr encoding that gives each chunk of the arrays ``names`` of ``ds`` (default: all) a CRC32 of its bytes.

    A string array's checksum follows its UTF-8 codec, which zarr needs first. A chunk changed on disk then
    fails to read, as a per-replicate chunk does (:class:`Variable`).
    """
    out = {}
    for name in ds.variables if names is None else names:
        strings = ds[name].dtype.kind in "OUT"
        out[str(name)] = {"filters": [numcodecs.VLenUTF8()] * strings + [numcodecs.CRC32()]}
    return out


def declared_arrays(sweep: Sweep) -> tuple[set[str], set[str]]:
    """The arrays a store of ``sweep`` holds besides its theory arrays (:data:`THEORY_PREFIXES`): all of them, and
    those every such store has, whatever version made it (its coordinates and the variables of every sweep)."""
    names = {v.name for v in data_variables(sweep, (1, 1, 1, 1))}
    coords = {str(name) for name in frame(sweep, xr.Dataset(), {}).coords}
    # a store made before null replicates were scheduled has no null_replicate coordinate
    required = {name for name, r in RESULTS.items() if r.required}
    return names | coords, (coords - {"null_replicate"}) | (names & required)


def frame(sweep: Sweep, theory: xr.Dataset, provenance: dict) -> xr.Dataset:
    """Everything of the store but its per-replicate variables: coordinates, theory arrays, provenance.

    The theory arrays do not depend on ``d`` (large-dimension limits): with a ``d`` axis they have
    no ``d`` dimension and broadcast against the per-replicate variables.
    """
    coords = ({D: np.asarray(sweep.d_values, np.int64)} if sweep.d_axis else {}) | grid_coords(sweep)
    coords["replicate"] = np.arange(sweep.replicates)
    coords["k"] = np.arange(1, sweep.top_k + 1)
    if sweep.null_replicate_count:
        coords["null_replicate"] = np.arange(sweep.null_replicate_count)
    if sweep.observables.spectrum:
        edges = sweep.observables.spectrum.edges()
        coords["bin"] = 0.5 * (edges[1:] + edges[:-1])
    ds = xr.Dataset(coords=coords).merge(theory)
    if "bin" in ds.coords:
        ds["bin"].attrs = {"long_name": "bin centre of eigenvalue / kappa", "units": "kappa",
                           "bin_width": float(edges[1] - edges[0])}
    if sweep.d_axis:
        ds[D].attrs = {"long_name": "embedding dimension d", "units": "1"}
    ds["replicate"].attrs = {"long_name": "Monte Carlo replicate", "units": "1"}
    if "null_replicate" in ds.coords:
        ds["null_replicate"].attrs = {"long_name": "scheduled null replicate (snr = 0)", "units": "1"}
    ds["k"].attrs = {"long_name": "rank of the eigenpair (1 = largest)", "units": "1"}
    ds["delta"].attrs = {"long_name": "delta = d / V", "units": "1"}
    ds["gamma"].attrs = {"long_name": "gamma = d / N", "units": "1"}
    ds["snr"].attrs = {"long_name": "signal-to-noise ratio ||mu||^2", "units": "1"}
    ds["T"].attrs = {"long_name": "sequence length", "units": "tokens"}
    ds["weights"].attrs = {"long_name": "pooling-weight scheme", "units": "1"}
    ds.attrs.update(provenance)
    return ds


@dataclass(frozen=True)
class Template:
    """A store before any task ran: its frame (written by xarray) and its empty per-replicate variables."""

    frame: xr.Dataset
    variables: list[Variable]


def template(sweep: Sweep, theory: xr.Dataset, provenance: dict, blocking: tuple[int, ...]) -> Template:
    """The store's template: no per-chunk work, whatever the size of the grid."""
    return Template(frame(sweep, theory, provenance), data_variables(sweep, blocking))


def provenance(sweep_file: SweepFile, version: str, git_revision: str | None) -> dict:
    """Dataset attrs recording what produced the store (JSON-able values only).

    ``d`` is an attribute only for a top-level ``d``; a grid axis ``d`` is a coordinate.
    """
    s = sweep_file.sweep
    seeding = ("SeedSequence(seed, spawn_key=(d, bits(delta), bits(gamma), T, replicate))" if s.d_axis else
               "SeedSequence(seed, spawn_key=(bits(delta), bits(gamma), T, replicate))")
    out = {
        "rmtsweep_format": FORMAT,
        "title": f"rmtsweep: {s.name}",
        "sweep_name": s.name,
        "sweep_hash": s.digest(),
        "sweep_file": sweep_file.path,
        "sweep_text": sweep_file.text,
        "sweep_overrides": list(sweep_file.overrides),        # KEY=VALUE given on the command line, in order
        "sweep_canonical": json.dumps(s.canonical(), sort_keys=True),
        "seed": s.seed,
        "seeding": seeding,
        "d": s.d,
        "correlation": s.correlation.label(),
        "table_centering": s.table_centering,
        "rmtsweep_version": version,
        "git_revision": git_revision or "unknown",
        "created": now(),
        "runs": [],
    }
    if s.d_axis:
        out.pop("d")
    if s.null_replicate_count:
        out["null_replicates"] = s.null_replicate_count
        out["null_seeding"] = seeding.replace("replicate))", "null_replicate, NULL_STREAM)) with NULL_STREAM = "
                                              "0x6E756C6C")
    return out


def now() -> str:
    """UTC time stamp for provenance."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
