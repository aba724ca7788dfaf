"""Finite-T bulk law and outliers (rmtsweep.theory.finite_t) against closed forms, the cubic and simulation."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.model import CellModel, correlation_matrix, make_correlation, make_scheme, pooling_weights, simulate_replicate
from rmtsweep.theory import bulk, spikes
from rmtsweep.theory import finite_t as ft

CELLS = [(0.5, 0.5), (1.0, 0.25), (0.25, 1.0)]


def _nodes(top: float = 14.0, piece: float = 0.04, n: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """The tests' own quadrature on (0, top]: uniform pieces plus geometric pieces towards 0."""
    s, w = np.polynomial.legendre.leggauss(n)
    a = np.concatenate([piece * 0.5 ** np.arange(1, 40), np.arange(piece, top, piece)])
    b = np.concatenate([piece * 0.5 ** np.arange(0, 39), np.arange(piece, top, piece) + piece])
    x = (a + b)[:, None] / 2 + (b - a)[:, None] / 2 * s
    return x.ravel(), ((b - a)[:, None] / 2 * w).ravel()


def _cdf_on(edges: np.ndarray, hist: np.ndarray) -> np.ndarray:
    return np.cumsum(hist * np.diff(edges))


def _ks(edges: np.ndarray, h1: np.ndarray, h2: np.ndarray) -> float:
    return float(np.abs(_cdf_on(edges, h1) - _cdf_on(edges, h2)).max())


def _cubic_hist(edges: np.ndarray, delta: float, gamma: float, n: int = 16) -> np.ndarray:
    """Histogram of MP_delta ⊠ MP_gamma from rmtsweep.theory.density (independent of finite_t)."""
    s, w = np.polynomial.legendre.leggauss(n)
    a, b = edges[:-1], edges[1:]
    x = (a + b)[:, None] / 2 + (b - a)[:, None] / 2 * s
    mass = (bulk.density(x, delta, gamma) * w).sum(axis=1) * (b - a) / 2
    mass[0] += float(bulk.atom(delta, gamma))
    return mass / (b - a)


@pytest.mark.parametrize("delta,gamma", CELLS)
def test_poisson_law(delta, gamma):
    nu = ft.poisson_law(delta, gamma)
    assert nu.weights.sum() == pytest.approx(1.0, abs=1e-14)
    assert nu.mean == pytest.approx(1.0, abs=1e-12)
    assert nu.moment(2) == pytest.approx(1.0 + gamma / delta, abs=1e-12)
    assert ft.token_law(np.array([0.0, 2.0, 0.0]), delta, gamma).method == "poisson"  # one-hot weights
    assert ft.atom(nu, delta) == pytest.approx(max(0.0, 1 - (1 - np.exp(-delta / gamma)) / delta))


@pytest.mark.parametrize("delta,gamma", CELLS)
def test_T1_law_mass_mean_and_moments(delta, gamma):
    """Atom + ∫ density = 1, mean 1, second moment 1 + delta + gamma, and the 4th moment of the
    non-crossing-partition formula, which differs from the cubic's by delta gamma^2."""
    nu = ft.poisson_law(delta, gamma)
    x, w = _nodes()
    f = ft.density(x, nu, delta)
    assert not np.any(np.isnan(f))
    a = ft.atom(nu, delta)
    mom = [a * (k == 0) + float((f * x**k) @ w) for k in range(5)]
    assert mom[0] == pytest.approx(1.0, abs=3e-4)  # quadrature of the many sqrt edges
    assert mom[1] == pytest.approx(1.0, abs=1e-3)
    assert mom[2] == pytest.approx(1.0 + delta + gamma, abs=3e-3)
    p2, p3, p4 = nu.moment(2), nu.moment(3), nu.moment(4)
    m4 = delta**3 * p4 + 4 * delta**2 * p3 + 2 * delta**2 * p2**2 + 6 * delta * p2 + 1
    assert mom[4] == pytest.approx(m4, rel=3e-3)


def test_poisson_bulk_against_direct_random_matrix():
    """(1/V) Z diag(counts V/N) Z^T at d = 1000 built here with numpy (T = 1, no simulator)."""
    delta, gamma, d = 0.5, 0.5, 1000
    V, N = round(d / delta), round(d / gamma)
    rng = np.random.default_rng(2024)
    edges = np.linspace(0, 8, 161)
    hist = np.zeros(edges.size - 1)
    for _ in range(3):
        counts = np.bincount(rng.integers(V, size=N), minlength=V)
        Z = rng.standard_normal((d, V))
        ev = np.linalg.eigvalsh((Z * (counts * V / N)) @ Z.T / V)
        hist += np.histogram(ev, edges)[0] / (3 * d * np.diff(edges))
    law = ft.histogram(edges, ft.poisson_law(delta, gamma), delta)
    # ESD fluctuations at d = 1000: per-replicate KS ~ 0.003-0.005 (Poisson counts), averaged over 3
    assert _ks(edges, hist, law) < 0.005
    assert _ks(edges, hist, _cubic_hist(edges, delta, gamma)) > 0.02


@pytest.mark.parametrize("delta,gamma", CELLS)
def test_reduces_to_cubic_and_spikes_for_mp(delta, gamma):
    """nu = MP_{gamma/delta} (quadrature, 400 atoms: errors 1e-9) gives back bulk.py and spikes.py."""
    nu = ft.mp_law(gamma / delta, n=400)
    x = np.linspace(0.05, 7.0, 15)
    assert np.allclose(ft.density(x, nu, delta), bulk.density(x, delta, gamma), atol=1e-6)
    assert ft.atom(nu, delta) == pytest.approx(float(bulk.atom(delta, gamma)), abs=1e-12)
    assert ft.edge(nu, delta) == pytest.approx(float(bulk.edge(delta, gamma)), rel=1e-6)
    assert ft.threshold(nu, delta) == pytest.approx(float(spikes.sample_threshold(delta, gamma)), rel=1e-6)
    rho = np.array([1.0, 2.0, 2.5, 3.0, 5.0, 10.0])
    loc, ov = ft.outlier(rho, nu, delta)
    assert np.allclose(loc, spikes.sample_outlier(rho, delta, gamma), rtol=1e-6)
    assert np.allclose(ov, spikes.overlap(rho, delta, gamma), atol=1e-6)


def test_stieltjes_rejects_real_axis_and_matches_mp_closed_form():
    with pytest.raises(ValueError):
        ft.stieltjes(np.array([1.0 + 0j]), ft.poisson_law(0.5, 0.5), 0.5)
    z = np.array([0.3 + 0.01j, 2.0 + 1e-8j, 5.0 + 0.5j])
    m = ft.stieltjes(z, ft.DiscreteLaw(np.array([1.0]), np.array([1.0])), 0.5)  # nu = delta_1: MP_0.5
    c = 0.5
    r = np.sqrt((z - 1 - c) ** 2 - 4 * c + 0j)
    ref = np.where(((1 - c - z + r) / (2 * c * z)).imag > 0, (1 - c - z + r) / (2 * c * z), (1 - c - z - r) / (2 * c * z))
    assert np.allclose(m, ref, rtol=1e-9)


def test_sampler_converges_to_exact_poisson_at_T1():
    """The large-V sampler, forced on T = 1, against the exact law: within 4 of its own standard errors."""
    delta, gamma = 0.5, 0.5
    nu = ft.sample_token_law(np.ones(1), delta, gamma, size=1000, replicates=8, seed=3)
    exact = ft.poisson_law(delta, gamma)
    grid = exact.points + 1e-9
    cdf = np.array([nu.weights[nu.points <= g].sum() for g in grid])
    assert nu.stderr > 0
    assert np.abs(cdf - np.cumsum(exact.weights)).max() < 4 * nu.stderr + 2e-3


def test_sampled_law_T2_moments_and_size_convergence():
    """T = 2: mean 1, E p^2 = 1 + gamma/delta; the bulk from two sizes and seeds agrees within errors."""
    delta, gamma = 0.5, 0.5
    w = np.full(2, 0.5)
    small = ft.sample_token_law(w, delta, gamma, size=400, replicates=8, seed=1, resolution=1e-2)
    large = ft.sample_token_law(w, delta, gamma, size=1200, replicates=4, seed=2, resolution=1e-2)
    for nu in (small, large):
        assert nu.mean == pytest.approx(1.0, abs=0.02)
        assert nu.moment(2) == pytest.approx(1.0 + gamma / delta, rel=0.04)
    edges = np.linspace(0, 8, 41)
    h_small, h_large = (ft.histogram(edges, nu, delta, nodes=8) for nu in (small, large))
    # bulk CDFs differ by less than 4 combined Kolmogorov s.e. plus the O(1/V) bias (1/400)
    assert _ks(edges, h_small, h_large) < 4 * np.hypot(small.stderr, large.stderr) + 1 / 400
    # and T = 2 is already much closer to the cubic than T = 1, but not equal to it
    cubic = _cubic_hist(edges, delta, gamma)
    t1 = ft.histogram(edges, ft.poisson_law(delta, gamma), delta, nodes=8)
    assert _ks(edges, h_large, cubic) < 0.6 * _ks(edges, t1, cubic)


def test_finite_T_law_approaches_cubic():
    """Mean weights, delta = gamma = 0.5: KS distance to the cubic falls with T (stated tolerance at T = 16:
    0.004 from T = 4 on, about 1.5 sampling s.e. of nu (stderr 0.003 at size 500 x 4) plus the quadrature)."""
    delta, gamma = 0.5, 0.5
    edges = np.linspace(0, 10, 101)
    cubic = _cubic_hist(edges, delta, gamma)
    dist = []
    for T in (1, 2, 4, 16):
        nu = ft.token_law(np.full(T, 1.0 / T), delta, gamma, size=500, replicates=4, seed=T, resolution=1e-2)
        dist.append(_ks(edges, ft.histogram(edges, nu, delta, nodes=8), cubic))
    assert dist[0] > 0.02 and dist[0] > dist[1] > max(dist[2:])  # measured 0.028, 0.010, 0.0023, 0.0021
    assert max(dist[2:]) < 0.004


def test_T1_histogram_against_simulation_d400():
    """Replicate-averaged simulated histogram of S/kappa (T = 1, iid, mean weights, d = 400): KS to the
    finite-T law <= 0.008, to the cubic >= 0.015 (measured 0.003 vs 0.028 with 30 replicates)."""
    d, delta, gamma, T = 400, 0.5, 0.5, 1
    corr = make_correlation("iid")
    w = pooling_weights(make_scheme("mean"), correlation_matrix(corr, T))
    edges = np.linspace(0, 10, 101)
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1, spectrum_edges=edges)
    rng = np.random.default_rng(4000)
    sim = np.mean([simulate_replicate(model, np.array([0.0]), rng).spectrum[0] for _ in range(12)], axis=0)
    law = ft.histogram(edges, ft.token_law(w, delta, gamma), delta)
    assert _cdf_on(edges, law)[-1] == pytest.approx(1.0, abs=2e-4)
    assert _ks(edges, sim, law) <= 0.008
    assert _ks(edges, sim, _cubic_hist(edges, delta, gamma)) >= 0.015
