"""Assertion helpers for Monte Carlo checks, shared by the test suite and by users."""

from __future__ import annotations

import numpy as np


def mean_and_se(samples: np.ndarray) -> tuple[float, float]:
    """Sample mean and its standard error (ddof = 1)."""
    x = np.asarray(samples, dtype=float).ravel()
    return float(x.mean()), float(x.std(ddof=1) / np.sqrt(x.size))


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


RESULT_VARS = ("eigenvalues", "overlap", "alpha", "kappa", "done", "spectrum", "accuracy")


def assert_stores_equal(a, b) -> None:
    """Assert two stores (paths or datasets) hold bit-for-bit the same results.

    Compares every result variable present (``eigenvalues``, ``overlap``, ``alpha``, ``kappa``,
    ``done`` and the optional ones) and the coordinates; provenance (``run``, attrs) may differ.
    """
    import xarray as xr

    da_, db = (x if isinstance(x, xr.Dataset) else xr.open_zarr(x) for x in (a, b))
    for name in RESULT_VARS:
        if name not in da_ and name not in db:
            continue
        if name not in da_ or name not in db:
            raise AssertionError(f"{name} is in only one of the stores")
        xa, xb = da_[name], db[name]
        if xa.dims != xb.dims or any(not np.array_equal(xa[d].values, xb[d].values) for d in xa.dims):
            raise AssertionError(f"{name}: dims or coordinates differ: {dict(xa.sizes)} vs {dict(xb.sizes)}")
        va, vb = xa.values, xb.values
        if not np.array_equal(va, vb, equal_nan=va.dtype.kind == "f"):
            bad = int(np.sum(~((va == vb) | (np.isnan(va) & np.isnan(vb)) if va.dtype.kind == "f" else va == vb)))
            raise AssertionError(f"{name}: {bad} of {va.size} values differ")
