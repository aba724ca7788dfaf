"""The same data get the same theory: T = 1 under any scheme, and no Monte Carlo at comparison time."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import xarray as xr

from rmtsweep import compare
from tests.helpers import build_store

# At T = 1 every scheme pools the one token with weight 1: mean and attention see the same matrices.
ONE_TOKEN = {"name": "t1-attention", "d": 40, "replicates": 4, "replicates_per_task": 4, "seed": 3,
             "correlation": {"model": "iid"}, "table_centering": "class", "top_k": 2,
             "grid": {"delta": [0.5], "gamma": [1.0], "snr": [0.0, 1.0, 2.0, 3.0, 4.0, 6.0], "T": [1, 4, 16],
                      "weights": ["mean", {"scheme": "attention", "tau": 1.0, "scale": "sqrt_d"}]}}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return build_store(tmp_path_factory.mktemp("one-source") / "t1.zarr", ONE_TOKEN)


def test_one_position_gets_one_theory_whatever_the_scheme(store):
    ds = xr.open_zarr(store).sel(T=1)
    np.testing.assert_allclose(ds["eigenvalues"].isel(weights=0), ds["eigenvalues"].isel(weights=1), rtol=1e-12)
    assert ds["theory_law"].values.tolist() == [1, 1]
    for name in ("theory_edge", "theory_snr_sample", "theory_phase", "theory_outlier", "theory_overlap"):
        assert np.array_equal(ds[name].isel(weights=0), ds[name].isel(weights=1)), name
    cmp = compare(store).sel(T=1)
    for name in ("detection_rate", "transition_snr_empirical", "transition_snr_theory", "theory_phase"):
        assert np.array_equal(cmp[name].isel(weights=0), cmp[name].isel(weights=1), equal_nan=True), name


def test_compare_runs_no_monte_carlo(store, monkeypatch):
    """The finite-size spikes come with the store's theory: comparing draws no token counts and no pooling
    matrix; they exist at T = 1 and at fixed weights over T >= 2, not for attention over T >= 2."""
    def refuse(*args, **kwargs):
        raise AssertionError("compare ran the finite-size Monte Carlo")
    for module in [m for name, m in sys.modules.items() if name.startswith("rmtsweep")]:
        for name in ("realised_count_spikes", "pooled_spikes", "pooled_null"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, refuse)
    cmp = compare(store)
    stored = xr.open_zarr(store)
    for name in ("finite_size_lambda1", "finite_size_overlap_se"):
        assert np.array_equal(cmp[name], stored[name].transpose(*cmp[name].dims), equal_nan=True), name
    assert cmp["finite_size_overlap"].sel(T=1).notnull().all()
    at4 = cmp["finite_size_overlap"].sel(T=4)
    assert at4.sel(weights="mean").notnull().all() and at4.isel(weights=1).isnull().all()      # attention: none


def test_one_token_cells_detect_above_the_realised_count_null(store):
    """At T = 1 the threshold is the 0.95 quantile of the realised-count null at the store's size (kept with
    its theory), not the cubic's; at T = 4 that of the realised pooling null for fixed weights: both recomputed
    here from the theory module at the store's d, delta, gamma."""
    from rmtsweep.theory.finite_size import DRAWS
    from rmtsweep.theory.null_law import count_null, mixture_quantile, tw_threshold

    ds = xr.open_zarr(store)
    cmp = compare(store)
    assert cmp.attrs["detection_uncalibrated_cells"] == 0
    d, delta, gamma = ONE_TOKEN["d"], 0.5, 1.0
    null = count_null(delta, gamma, d, draws=DRAWS)
    expected = mixture_quantile(0.95, null.location, null.scale)          # kappa = 1 at T = 1
    got = cmp["detection_threshold"].sel(T=1).squeeze()
    assert np.allclose(got, expected, rtol=1e-9)
    cubic = float(tw_threshold(0.05, delta, gamma, d))
    assert abs(expected - cubic) > 0.1                                   # a different test from the cubic's
    # T = 4: mean weights get the null over the realised pooling matrix; attention (D not independent of
    # the table) has no null law (below)
    from rmtsweep.model.correlation import IID
    from rmtsweep.theory.null_law import pooled_null
    pooled = pooled_null(np.full(4, 0.25), IID(), delta, gamma, d)
    kappa = float(ds["theory_kappa"].sel(T=4, weights="mean"))
    at_t4 = cmp["detection_threshold"].sel(T=4).squeeze()
    assert float(at_t4.sel(weights="mean")) == pytest.approx(
        kappa * mixture_quantile(0.95, pooled.location, pooled.scale), rel=1e-9)
    # attention over T >= 2 has no null law at the store's size: never the cubic's threshold, but the order
    # statistic of the null replicates the run scheduled (detection_null 3)
    attention = at_t4.isel(weights=1)
    assert int(cmp["detection_null"].sel(T=4).isel(weights=1).squeeze()) == 3
    assert not float(attention) == pytest.approx(float(ds["theory_kappa"].sel(T=4).isel(weights=1)) * cubic,
                                                 rel=1e-9)
