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
