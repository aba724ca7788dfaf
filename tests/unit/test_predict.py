"""Theory arrays on a grid: which formulas a store carries follows its table centering."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from rmtsweep import theory
from rmtsweep.theory.on_grid import theory_dataset
from rmtsweep.spec import parse_sweep


def _close(a, b) -> bool:
    """Compare two labelled arrays after aligning their dims by name."""
    a, b = xr.broadcast(a, b)
    return bool(np.allclose(a.values, b.transpose(*a.dims).values, equal_nan=True))


def _sweep(sweep_data, centering):
    sweep_data.update(table_centering=centering, d=400, correlation={"model": "prefix", "L": 4})
    sweep_data["grid"].update(delta=[0.5, 1.0], gamma=[0.25, 0.5], snr=[0.0, 1.0, 3.0, 6.0], T=[16],
                              weights=["mean", "optimal", "harmonic"])
    return parse_sweep(sweep_data)


def test_class_centred_theory_is_the_papers(sweep_data):
    ds = theory_dataset(_sweep(sweep_data, "class"))
    for what in ("outlier", "overlap", "phase"):
        assert np.array_equal(ds[f"theory_{what}"].values, ds[f"paper_{what}"].values)
    rho = ds["theory_rho"]
    assert _close(rho.sel(weights="mean"), 1.75 * ds.snr)            # alpha/kappa = (16 + 12)/16
    assert _close(rho.sel(weights="optimal"), 4.0 * ds.snr)          # lambda_max(R) = L
    # the SNR thresholds map back to the rho thresholds
    ratio = ds["theory_alpha"] / ds["theory_kappa"]
    assert _close(ds["theory_snr_sample"] * ratio, ds["theory_rho_sample"])
    edge = ds["theory_edge"].sel(delta=0.5, gamma=0.5) / ds["theory_kappa"]
    assert np.allclose(edge, theory.edge(0.5, 0.5))
    # below the transition the outlier prediction is the edge, above it lies above the edge
    below = ds["theory_phase"] < 2
    assert _close(ds["theory_outlier"].where(below), ds["theory_edge"].where(below))
    assert bool((ds["theory_outlier"].where(~below) > ds["theory_edge"]).sum() > 0)


def test_uncentred_theory_has_both_outliers(sweep_data):
    ds = theory_dataset(_sweep(sweep_data, "none"))
    mean = ds.sel(weights="mean")
    assert _close(mean["theory_rho_mean"], 16 * ds.delta)            # rho_b = T delta for mean weights
    assert _close(ds["theory_outlier"], np.maximum(ds["theory_signal_outlier"], ds["theory_mean_outlier"]))
    # at SNR 0 the signal eigenvector cannot point at u; the paper predicts no outlier at all
    assert float(ds["theory_overlap"].sel(snr=0.0).max()) == 0.0
    assert np.all(ds["paper_phase"].sel(snr=0.0) == 0)
    top = float(ds["theory_outlier"].sel(snr=0.0, delta=0.5, gamma=0.5, T=16, weights="mean")
                / ds["theory_kappa"].sel(T=16, weights="mean"))
    assert top == pytest.approx(9.67, abs=0.01)
