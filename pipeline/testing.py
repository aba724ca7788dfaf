"""Assertion helpers for Monte Carlo checks and the literal reference path, shared by tests and users.

- :func:`assert_mc_close`: a Monte Carlo mean against an expected value, tolerance from the standard
  error (:func:`rmtsweep.analysis.mean_sem`);
- :func:`assert_stores_equal`: two stores hold bit-for-bit the same results;
- :func:`pooled_matrix`: the pooled matrix built literally (full table, gather, sum), the reference
  the fast path and the benchmarks are checked against.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .analysis.stats import mean_sem
from .model import CellModel, draw_replicate
from .store import RESULT_VARS

__all__ = ["assert_mc_close", "assert_stores_equal", "mean_and_se", "pooled_matrix"]


def mean_and_se(samples: np.ndarray) -> tuple[float, float]:
    """Sample mean and its standard error (ddof = 1) of a flat sample."""
    m, s = mean_sem(xr.DataArray(np.asarray(samples, dtype=float).ravel(), dims="replicate"))
    return float(m), float(s)


def assert_mc_close(samples: np.ndarray, expected: float, allowance: float = 0.0, n_se: float = 4.0,
                    what: str = "value") -> None:
    """Assert ``|mean(samples) - expected| <= n_se * SE + allowance``.

    ``allowance`` is the stated finite-size bias the comparison tolerates on top of the Monte Carlo
    error; say where it comes from at the call site.

    Examples
    --------
    >>> assert_mc_close(np.random.default_rng(0).normal(1.0, 0.1, 400), 1.0)
    """
    mean, se = mean_and_se(samples)
    tol = n_se * se + allowance
    if not abs(mean - expected) <= tol:
        raise AssertionError(f"{what}: Monte Carlo {mean:.5g} ± {se:.2g} (SE, n={np.size(samples)}) vs "
                             f"expected {expected:.5g}; |diff| {abs(mean - expected):.3g} > "
                             f"{n_se:g} SE + allowance {allowance:g} = {tol:.3g}")


def assert_stores_equal(a, b, same_runs: bool = False) -> None:
    """Assert two stores (paths or datasets) hold bit-for-bit the same results.

    Compares every result variable present (``eigenvalues``, ``overlap``, ``alpha``, ``kappa``,
    ``done`` and the optional ones), the coordinates, and which replicates a run computed
    (``run >= 0``: -1 marks a replicate no run wrote). With ``same_runs`` the run numbers themselves
    must agree too; without it they may differ, as between a resumed store and an uninterrupted one.
    Attrs (provenance) are not compared.
    """
    # numpy, not dask: a store read whole, chunk by chunk on the (maybe distributed) default scheduler, is slow
    da_, db = (x if isinstance(x, xr.Dataset) else xr.open_zarr(x, chunks=None) for x in (a, b))
    for name in RESULT_VARS:
        if name not in da_ and name not in db:
            continue
        if name not in da_ or name not in db:
            raise AssertionError(f"{name} is in only one of the stores")
        _assert_same(name, da_[name], db[name])
    if ("run" in da_) != ("run" in db):
        raise AssertionError("run is in only one of the stores")
    if "run" in da_:
        ra, rb = da_["run"], db["run"]
        _assert_same("run", ra if same_runs else ra >= 0, rb if same_runs else rb >= 0)


def _assert_same(name: str, xa: xr.DataArray, xb: xr.DataArray) -> None:
    if xa.dims != xb.dims or any(not np.array_equal(xa[d].values, xb[d].values) for d in xa.dims):
        raise AssertionError(f"{name}: dims or coordinates differ: {dict(xa.sizes)} vs {dict(xb.sizes)}")
    va, vb = xa.values, xb.values
    if not np.array_equal(va, vb, equal_nan=va.dtype.kind == "f"):
        bad = int(np.sum(~((va == vb) | (np.isnan(va) & np.isnan(vb)) if va.dtype.kind == "f" else va == vb)))
        raise AssertionError(f"{name}: {bad} of {va.size} values differ")


def pooled_matrix(model: CellModel, snr: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The literal pooled matrix ``C`` (d x N) and ``u`` for one SNR, from the same draws.

    A reference path for tests and benchmarks: it builds the full table ``E = s mu^T + Z`` and
    gathers ``sum_t w_t E[:, v_{n,t}]``, drawing in the same order as :func:`simulate_replicate`.
    """
    draws = draw_replicate(model, rng)
    u, Z, (_, _, tokens) = draws.u, draws.Z, draws.train
    s = np.where(np.arange(model.V) < model.n_pos, 1.0, -1.0)
    E = np.sqrt(snr) * np.outer(u, s) + Z
    C = sum(model.w[t] * E[:, tokens[:, t]] for t in range(model.T))
    return C, u
