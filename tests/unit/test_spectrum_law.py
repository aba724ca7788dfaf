"""The predicted spectrum on the store's bins: the finite-T law where it is exact, the cubic elsewhere."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from scipy.integrate import quad

from rmtsweep import parse_sweep, theory_dataset
from rmtsweep.theory import bulk, finite_t
from tests.helpers import BASE

SWEEP = {**copy.deepcopy(BASE), "correlation": {"model": "decay", "r": 0.3},
         "grid": {"delta": [0.5, 2.0], "gamma": [0.5], "snr": [0.0, 2.0], "T": [1, 4],
                  "weights": ["mean", "optimal"]},
         "observables": {"spectrum": {"bins": 40, "max": 8.0}}}


@pytest.fixture(scope="module")
def ds():
    return theory_dataset(parse_sweep(SWEEP))


def test_the_cubic_histogram_is_the_integral_of_the_density_over_each_bin_plus_the_atom(ds):
    edges = np.linspace(0.0, 8.0, 41)
    for delta in (0.5, 2.0):
        got = ds["paper_spectrum"].sel(delta=delta, gamma=0.5).values
        for i in (0, 3, 17, 25):                        # the bin at 0 (atom when delta > 1), the bulk, the edge
            a, b = edges[i], edges[i + 1]
            mass = quad(lambda x: float(bulk.density(x, delta, 0.5)), max(a, 1e-12), b, limit=200)[0]
            mass += float(bulk.atom(delta, 0.5)) if a == 0 else 0.0
            assert got[i] * (b - a) == pytest.approx(mass, abs=3e-4), (delta, i)   # 16-node rule across an edge
        assert got.sum() * 0.2 == pytest.approx(1.0, abs=2e-3)             # all the mass lies below 8


def test_single_token_cells_use_the_exact_poisson_law_and_the_others_the_cubic(ds):
    law = ds["theory_spectrum_law"]
    assert law.sel(T=1).values.tolist() == [1, 1]            # every scheme pools one token at T = 1
    assert law.sel(T=4).values.tolist() == [0, 0]            # mean and optimal spread over 4 positions
    for delta in (0.5, 2.0):
        ft = finite_t.histogram(np.linspace(0, 8, 41), finite_t.poisson_law(delta, 0.5), delta)
        assert np.allclose(ds["theory_spectrum"].sel(delta=delta, gamma=0.5, T=1, weights="mean"), ft)
        assert np.array_equal(ds["theory_spectrum"].sel(delta=delta, gamma=0.5, T=4, weights="optimal"),
                              ds["paper_spectrum"].sel(delta=delta, gamma=0.5))
    t1 = ds["theory_spectrum"].sel(delta=0.5, gamma=0.5, T=1, weights="mean")
    assert not np.allclose(t1, ds["paper_spectrum"].sel(delta=0.5, gamma=0.5), atol=0.02)   # they do differ


def test_no_spectrum_observable_means_no_predicted_spectrum():
    data = {k: v for k, v in SWEEP.items() if k != "observables"}
    assert "theory_spectrum" not in theory_dataset(parse_sweep(data))
