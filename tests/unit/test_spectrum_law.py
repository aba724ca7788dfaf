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
         "grid": {"delta": [0.5, 2.0], "gamma": [0.5], "snr": [0.0, 2.0], "T": [1, 4, 16],
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


def test_single_token_cells_use_the_exact_law_short_ones_a_sampled_law_long_ones_the_cubic(ds):
    law = ds["theory_spectrum_law"]
    assert law.sel(T=1).values.tolist() == [1, 1]            # every scheme pools one token at T = 1: exact
    assert law.sel(T=4).values.tolist() == [2, 2]            # T_eff 4 and 2.3: sampled token-count law
    assert law.sel(T=16).values.tolist() == [0, 2]           # mean has T_eff = 16: the cubic; optimal 2.3
    for delta in (0.5, 2.0):
        exact = finite_t.histogram(np.linspace(0, 8, 41), finite_t.poisson_law(delta, 0.5), delta)
        assert np.allclose(ds["theory_spectrum"].sel(delta=delta, gamma=0.5, T=1, weights="mean"), exact, atol=1e-3)
        assert np.array_equal(ds["theory_spectrum"].sel(delta=delta, gamma=0.5, T=16, weights="mean"),
                              ds["paper_spectrum"].sel(delta=delta, gamma=0.5))
    t1 = ds["theory_spectrum"].sel(delta=0.5, gamma=0.5, T=1, weights="mean")
    assert not np.allclose(t1, ds["paper_spectrum"].sel(delta=0.5, gamma=0.5), atol=0.02)   # they do differ


@pytest.mark.slow
def test_the_sampled_law_is_close_to_a_larger_sample(ds):
    """The store's sampled law (V = 1000, 4 samples) against V = 1500 x 4 samples: Kolmogorov <= 0.003.

    (Measured: 0.0010-0.0014 against 1500 x 4 at two seeds, 0.0014-0.0018 against 2500 x 6, which takes 2.5 times
    as long: the store's own sample sets the distance.)"""
    w = np.full(4, 0.25)                                      # mean weights at T = 4
    big = finite_t.histogram(np.linspace(0, 8, 41), finite_t.sample_token_law(w, 0.5, 0.5, size=1500, replicates=4,
                                                                               seed=99), 0.5)
    got = ds["theory_spectrum"].sel(delta=0.5, gamma=0.5, T=4, weights="mean").values
    assert np.abs(np.cumsum(got - big) * 0.2).max() < 0.003


def test_no_spectrum_observable_means_no_predicted_spectrum():
    data = {k: v for k, v in SWEEP.items() if k != "observables"}
    assert "theory_spectrum" not in theory_dataset(parse_sweep(data))


def test_one_position_cells_take_edge_outlier_phase_and_threshold_from_the_exact_law(ds):
    from rmtsweep.theory import spikes
    assert ds["theory_law"].sel(T=1).values.tolist() == [1, 1]
    assert ds["theory_law"].sel(T=4).values.tolist() == [0, 0]
    for delta in (0.5, 2.0):
        nu = finite_t.poisson_law(delta, 0.5)
        at = {"delta": delta, "gamma": 0.5, "T": 1, "weights": "mean"}
        k = float(ds["theory_kappa"].sel(T=1, weights="mean"))
        assert float(ds["theory_edge"].sel(at)) == pytest.approx(k * finite_t.edge(nu, delta))
        rho = ds["theory_rho"].sel(T=1, weights="mean").values
        loc, ov = finite_t.outlier(rho, nu, delta)
        assert np.allclose(ds["theory_outlier"].sel(at), k * loc) and np.allclose(ds["theory_overlap"].sel(at), ov)
        assert float(ds["theory_snr_sample"].sel(at)) == pytest.approx(
            finite_t.threshold(nu, delta) * k / float(ds["theory_alpha"].sel(T=1, weights="mean")))
        # T = 4 keeps the cubic, and paper_* is the cubic everywhere
        cubic = {"delta": delta, "gamma": 0.5, "T": 4, "weights": "mean"}
        kc = float(ds["theory_kappa"].sel(T=4, weights="mean"))
        assert float(ds["theory_edge"].sel(cubic)) == pytest.approx(kc * float(bulk.edge(delta, 0.5)))
        assert np.allclose(ds["paper_outlier"].sel(at),
                           k * spikes.sample_outlier(rho, delta, 0.5))


def test_a_grid_too_large_for_the_finite_t_budget_keeps_the_cubic_and_says_so():
    from rmtsweep.theory.spectrum import spectrum_arrays
    data = {**SWEEP, "grid": {**SWEEP["grid"], "delta": list(np.linspace(0.5, 2.0, 12)),
                              "gamma": list(np.linspace(0.5, 2.0, 12)), "T": [2, 3]},
            "observables": {"spectrum": {"bins": 200, "max": 8.0}}}
    ds = spectrum_arrays(parse_sweep(data))               # 2 schemes x 2 T x 144 points x 200 bins >> budget
    assert (ds["theory_spectrum_law"] == 0).all()
    assert "exceed the budget of 25 s" in ds["theory_spectrum_law"].attrs["description"]
    assert np.array_equal(ds["theory_spectrum"].isel(T=0, weights=0), ds["paper_spectrum"])


def test_many_sampled_laws_count_against_the_budget_even_with_few_bins():
    """The budget weighs each sampled token-count law (about a quarter of a second), not only the bins: 8 weight
    profiles at 36 ratios with 4 bins are 288 sampled laws, estimated at 98 s (counted by their bins alone, 1,152
    of a former budget of 6,400), and keep the cubic, saying so."""
    from rmtsweep.theory.spectrum import spectrum_arrays
    data = {**SWEEP, "correlation": {"model": "markov", "r": 0.5},
            "grid": {**SWEEP["grid"], "delta": list(np.linspace(0.25, 4.0, 12)), "gamma": [0.5, 1.0, 2.0],
                     "T": [2, 3, 4], "weights": ["mean", "optimal", "harmonic"]},
            "observables": {"spectrum": {"bins": 4, "max": 8.0}}}
    law = spectrum_arrays(parse_sweep(data))["theory_spectrum_law"]
    assert (law == 0).all()
    assert "exceed the budget of 25 s" in law.attrs["description"]


def test_pairs_sharing_delta_over_gamma_share_one_sample_and_equal_their_own(monkeypatch):
    """The sampled token-count law depends on delta/gamma only: a template samples it once per ratio, and each
    (delta, gamma) cell equals the law sampled for that cell alone (same seed and size; a small size here)."""
    from rmtsweep.theory import spectrum
    sweep = parse_sweep({**copy.deepcopy(BASE), "grid": {"delta": [0.5, 1.0], "gamma": [0.25, 0.5], "snr": [0.0],
                                                        "T": [2], "weights": ["mean"]},
                         "observables": {"spectrum": {"bins": 20, "max": 8.0}}})
    small = {**spectrum.SAMPLE, "size": 200, "replicates": 2}
    real, calls = finite_t.sample_token_law, []
    monkeypatch.setattr(spectrum, "_MEMO", {})                # nothing computed earlier in this process
    monkeypatch.setattr(spectrum, "SAMPLE", small)
    monkeypatch.setattr(finite_t, "sample_token_law", lambda *a, **k: calls.append(a[1] / a[2]) or real(*a, **k))
    got = spectrum.spectrum_arrays(sweep)["theory_spectrum"]
    assert sorted(calls) == [1.0, 2.0, 4.0]                 # four cells, three ratios (0.5/0.25 = 1.0/0.5)
    for delta, gamma in ((0.5, 0.25), (1.0, 0.5)):
        own = finite_t.histogram(np.linspace(0.0, 8.0, 21), real(np.full(2, 0.5), delta, gamma, **small), delta, nodes=8)
        assert np.array_equal(got.sel(delta=delta, gamma=gamma, T=2, weights="mean").values, own)


def test_a_template_made_again_in_one_process_reuses_its_finite_t_spectrum(monkeypatch):
    """The second template of the same sweep (a batching change, an extension) takes the finite-T histograms from
    the process's memo: no law sampled, no Stieltjes solve, the same values; a caller's edits do not reach the memo."""
    from rmtsweep.theory import spectrum
    sweep = parse_sweep({**copy.deepcopy(BASE), "correlation": {"model": "iid"},
                         "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0], "T": [1, 2], "weights": ["mean"]},
                         "observables": {"spectrum": {"bins": 10, "max": 8.0}}})
    monkeypatch.setattr(spectrum, "_MEMO", {})
    monkeypatch.setattr(spectrum, "SAMPLE", {**spectrum.SAMPLE, "size": 200, "replicates": 2})
    first = spectrum.spectrum_arrays(sweep)["theory_spectrum"].values.copy()
    assert len(spectrum._MEMO) == 3                           # T = 1 exact, T = 2 sampled: two histograms, one law
    def never(*args, **kwargs):
        raise AssertionError("computed again")
    monkeypatch.setattr(finite_t, "sample_token_law", never)
    monkeypatch.setattr(finite_t, "histogram", never)
    again = spectrum.spectrum_arrays(sweep)["theory_spectrum"]
    assert np.array_equal(again.values, first)
    again.values[...] = -1.0
    assert np.array_equal(spectrum.spectrum_arrays(sweep)["theory_spectrum"].values, first)


def test_a_long_finite_t_spectrum_law_is_announced_once_per_process(monkeypatch):
    """Sampled token-count laws take about a second each when a store is made: past SPECTRUM_SAY seconds one line
    names the sweep and counts the laws and histograms still to compute; computed once in a process, they are
    not announced again (a store made twice, or extended)."""
    from rmtsweep.theory import spectrum
    monkeypatch.setattr(spectrum, "_MEMO", {})
    monkeypatch.setattr(spectrum, "SAMPLE", {**spectrum.SAMPLE, "size": 100, "replicates": 1})   # a small sample
    sweep = parse_sweep({**copy.deepcopy(BASE), "name": "spec", "correlation": {"model": "iid"},
                         "grid": {"delta": [0.5, 1.0], "gamma": [0.5], "snr": [0.0], "T": [1, 2],
                                  "weights": ["mean", "harmonic"]},
                         "observables": {"spectrum": {"bins": 10, "max": 8.0}}})
    lines: list[str] = []
    spectrum.spectrum_arrays(sweep, lines.append)
    assert lines == []                                   # under a second for this sample: nothing to say
    monkeypatch.setattr(spectrum, "_MEMO", {})
    monkeypatch.setattr(spectrum, "SPECTRUM_SAY", 0.0)
    got = spectrum.spectrum_arrays(sweep, lines.append)
    # T = 2: two weight profiles (mean's equal weights, harmonic's unequal ones) x two delta/gamma ratios sampled; and
    # histograms of those 4 laws and of the exact law of T = 1 at both (delta, gamma)
    assert len(lines) == 1 and lines[0].startswith(
        "spec: computing the finite-T spectrum law (4 sampled token-count laws, 6 histograms; about "), lines
    assert got["theory_spectrum_law"].sel(T=2).values.tolist() == [2, 2]
    spectrum.spectrum_arrays(sweep, lines.append)
    assert len(lines) == 1                               # cached in this process: nothing left to announce
