"""The store's layout: its format marker, variables, attributes, provenance and template.

Dims ``delta, gamma, T, weights, replicate, snr, k`` (:mod:`rmtsweep.dims`; ``bin`` with the
spectrum observable). Per-replicate variables are chunked so that one chunk is one task's block;
the theory arrays of :mod:`rmtsweep.theory.on_grid` are written with the template; provenance lives
in the dataset attrs.
"""

from __future__ import annotations

import datetime
import json

import dask.array as da
import numpy as np
import xarray as xr

from ..dims import REPLICATE_DIMS, SNR_DIMS
from ..spec import Sweep, SweepFile
from ..theory.on_grid import grid_coords

__all__ = [
    "FORMAT", "OPTIONAL", "PER_REPLICATE", "PER_SNR", "RESULT_VARS", "ZARR_FORMAT", "now", "provenance",
    "template", "variable_attrs",
]

FORMAT = "rmtsweep-store-1"
# Zarr format 2 with consolidated metadata: readable by every zarr and xarray version, a plain
# ``xr.open_zarr(path)`` opens it without warnings, and string coordinates have a specified encoding
# (zarr format 3 has none yet for fixed-length strings). Metadata only changes when the template is
# written, so the consolidated copy stays true while chunks are filled in.
ZARR_FORMAT = 2
PER_REPLICATE = ("alpha", "kappa", "done")
PER_SNR = ("eigenvalues", "overlap")
OPTIONAL = ("run", "spectrum", "accuracy")   # `run` is absent from stores made before it existed
RESULT_VARS = ("eigenvalues", "overlap", "alpha", "kappa", "done", "spectrum", "accuracy")
"""Variables that hold results (compared by :func:`rmtsweep.testing.assert_stores_equal`)."""


def variable_attrs() -> dict[str, dict[str, str]]:
    """Long names and units of the per-replicate variables."""
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


def template(sweep: Sweep, theory: xr.Dataset, provenance: dict, replicate_chunk: int) -> xr.Dataset:
    """The full dataset with lazy (unwritten) data variables and computed theory arrays.

    Each per-replicate variable is chunked one task per chunk: one ``(delta, gamma, T)`` point,
    every scheme, ``replicate_chunk`` replicates.
    """
    coords = grid_coords(sweep)
    coords["replicate"] = np.arange(sweep.replicates)
    coords["k"] = np.arange(1, sweep.top_k + 1)
    n_weights = len(coords["weights"])
    rep_shape = (len(coords["delta"]), len(coords["gamma"]), len(coords["T"]), n_weights, sweep.replicates)
    rep_chunks = (1, 1, 1, n_weights, replicate_chunk)                     # one task = one chunk
    snr_shape = rep_shape + (len(coords["snr"]), sweep.top_k)
    snr_chunks = rep_chunks + snr_shape[-2:]
    attrs = variable_attrs()
    data = {}
    for name in PER_SNR:
        data[name] = (SNR_DIMS + ("k",), da.full(snr_shape, np.nan, chunks=snr_chunks), attrs[name])
    for name in ("alpha", "kappa"):
        data[name] = (REPLICATE_DIMS, da.full(rep_shape, np.nan, chunks=rep_chunks), attrs[name])
    data["done"] = (REPLICATE_DIMS, da.zeros(rep_shape, dtype=bool, chunks=rep_chunks), attrs["done"])
    data["run"] = (REPLICATE_DIMS, da.full(rep_shape, -1, dtype=np.int16, chunks=rep_chunks), attrs["run"])
    if sweep.observables.ridge:
        data["accuracy"] = (SNR_DIMS, da.full(snr_shape[:-1], np.nan, chunks=snr_chunks[:-1]), attrs["accuracy"])
    if sweep.observables.spectrum:
        edges = sweep.observables.spectrum.edges()
        coords["bin"] = 0.5 * (edges[1:] + edges[:-1])
        shape = snr_shape[:-1] + (edges.size - 1,)
        data["spectrum"] = (SNR_DIMS + ("bin",), da.full(shape, np.nan, chunks=snr_chunks[:-1] + (edges.size - 1,)),
                            attrs["spectrum"])
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
        "correlation": s.correlation.label(),
        "table_centering": s.table_centering,
        "rmtsweep_version": version,
        "git_revision": git_revision or "unknown",
        "created": now(),
        "runs": [],
    }


def now() -> str:
    """UTC time stamp for provenance."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
