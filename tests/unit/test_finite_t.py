"""Finite-T bulk law and outliers (rmtsweep.theory.finite_t) against closed forms, the cubic and simulation."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.model import CellModel, correlation_matrix, make_correlation, make_scheme, pooling_weights, simulate_replicate
from rmtsweep.theory import bulk, spikes
from rmtsweep.theory import finite_t as ft, token_counts

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


def test_realised_counts_tend_to_the_limit_law():
    """Well above the threshold the realised-count prediction tends to the limit formula as d grows
    (the limit law's Poisson pmf is computed independently of the count draws)."""
    rho, delta, gamma = np.array([6.0, 8.0]), 0.5, 0.5
    loc, ov = ft.outlier(rho, ft.poisson_law(delta, gamma), delta)
    gaps = []
    for d in (200, 3200):
        fs = token_counts.realised_count_spikes(rho, delta, gamma, d, draws=16, seed=1)
        gaps.append(max(np.abs(fs.lambda1 - loc).max(), np.abs(fs.overlap - ov).max()))
    assert gaps[1] < 0.02 and gaps[1] < gaps[0]


def test_realised_counts_against_simulation_d200():
    """T = 1, iid, mean weights, d = 200, delta = gamma = 0.5 (rho_c = 2.39): near the threshold the
    realised-count prediction of the top alignment is within 4 standard errors of simulation, where the
    limit formula is low by many (docs/theory.md §6.1)."""
    d, delta, gamma, T = 200, 0.5, 0.5, 1
    snr = np.array([2.9, 3.6, 4.8])                        # 1.2, 1.5, 2 rho_c (iid: rho = snr)
    corr = make_correlation("iid")
    w = pooling_weights(make_scheme("mean"), correlation_matrix(corr, T))
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1)
    rng = np.random.default_rng(2001)
    reps = [simulate_replicate(model, snr, rng) for _ in range(64)]
    ov = np.array([r.overlap[:, 0] for r in reps])
    lam = np.array([r.eigenvalues[:, 0] for r in reps])
    fs = token_counts.realised_count_spikes(snr, delta, gamma, d, draws=128, seed=5)
    limit = ft.outlier(snr, ft.poisson_law(delta, gamma), delta)[1]
    se = np.sqrt(ov.std(0, ddof=1) ** 2 / len(reps) + fs.overlap_se**2)
    assert np.all(np.abs(ov.mean(0) - fs.overlap) < 4 * se), (ov.mean(0), fs.overlap, se)
    assert (ov.mean(0) - limit)[0] > 6 * se[0]
    se_l = np.sqrt(lam.std(0, ddof=1) ** 2 / len(reps) + fs.lambda1_se**2)
    assert np.all(np.abs(lam.mean(0) - fs.lambda1) < 4 * se_l), (lam.mean(0), fs.lambda1, se_l)


def test_signal_law_mean_is_alpha_over_kappa():
    """nu_s (the signal direction's spectral measure w.r.t. D) has mean alpha/kappa, while nu keeps mean 1:
    prefix(4) optimal weights (alpha/kappa = 4), mean weights (1.75), and i.i.d. signs (1)."""
    for corr, scheme, T, target in ((make_correlation("prefix", L=4), "optimal", 16, 4.0),
                                    (make_correlation("prefix", L=4), "mean", 16, 1.75),
                                    (make_correlation("iid"), "mean", 2, 1.0)):
        R = correlation_matrix(corr, T)
        w = pooling_weights(make_scheme(scheme), R)
        assert float(w @ R @ w / (w @ w)) == pytest.approx(target)
        nu, nu_s = ft.sample_laws(w, 0.5, 0.5, corr, size=600, replicates=4, seed=2)
        assert nu.mean == pytest.approx(1.0, abs=0.03) and nu_s.weights.sum() == pytest.approx(1.0)
        # e^T D e = mean of (w.xi)^2 / kappa over N R = 2400 sequences: relative s.e. <= sqrt(2 / 2400)
        assert nu_s.mean == pytest.approx(target, rel=3 * np.sqrt(2 / 2400)), (scheme, nu_s.mean)


def test_signal_law_outlier_against_simulation_prefix():
    """Correlated signs (prefix(4), optimal weights, T_eff = 4, d = 400) well above the threshold: the
    outlier over (nu, nu_s) at the raw snr is within 4 s.e. of simulated lambda_1/kappa and alignment."""
    d, delta, gamma, T = 400, 0.5, 0.5, 16
    corr = make_correlation("prefix", L=4)
    R = correlation_matrix(corr, T)
    w = pooling_weights(make_scheme("optimal"), R)
    snr = np.array([1.0, 1.5])
    model = CellModel(d=d, V=800, N=800, T=T, w=w, correlation=corr, centering="class", top_k=1)
    rng = np.random.default_rng(77)
    reps = [simulate_replicate(model, snr, rng) for _ in range(24)]
    lam = np.array([r.eigenvalues[:, 0] for r in reps]) / (w @ w)
    ov = np.array([r.overlap[:, 0] for r in reps])
    nu, nu_s = ft.sample_laws(w, delta, gamma, corr)
    loc, align = ft.outlier(snr, nu, delta, signal=nu_s)
    se = lambda x: x.std(0, ddof=1) / np.sqrt(len(reps))              # noqa: E731
    assert np.all(abs(lam.mean(0) - loc) < 4 * se(lam) + 0.01), (lam.mean(0), loc)   # + the law's sampling error
    assert np.all(abs(ov.mean(0) - align) < 4 * se(ov) + 0.01), (ov.mean(0), align)


def test_null_top_against_simulation_d200():
    """T = 1, no signal, d = 200: the mean top eigenvalue over realised counts (null_top) is within 3 s.e.
    of simulation at delta = 0.5 and 1 (gamma = 0.5), where the top of the full support is several s.e. high."""
    d, gamma, T = 200, 0.5, 1
    corr = make_correlation("iid")
    w = pooling_weights(make_scheme("mean"), correlation_matrix(corr, T))
    for delta in (0.5, 1.0):
        V, N = round(d / delta), round(d / gamma)
        model = CellModel(d=d, V=V, N=N, T=T, w=w, correlation=corr, centering="class", top_k=1)
        rng = np.random.default_rng(int(100 * delta))
        sim = np.array([simulate_replicate(model, np.array([0.0]), rng).eigenvalues[0, 0] for _ in range(48)])
        fs = token_counts.realised_count_spikes(np.array([0.0]), delta, gamma, d, draws=64, seed=3)
        se = np.sqrt(sim.var(ddof=1) / sim.size + fs.lambda1_se[0] ** 2)
        assert abs(sim.mean() - fs.top) < 3 * se, (delta, sim.mean(), fs.top, se)
        rng = np.random.default_rng(9)
        support = np.mean([ft.edge(ft.empirical_law(V * np.bincount(rng.integers(V, size=N), minlength=V) / N),
                                   delta, tail=0.5 / d) for _ in range(64)])
        assert support - sim.mean() > 2 * se, (delta, support, sim.mean(), se)


def _scalar_gaps(nu, delta: float, tail: float, grid: int = 48) -> list[tuple]:
    """The gap search written with one scalar bisection per sign change of ``l'`` (as a reader would)."""
    points = np.unique(nu.points[nu.points > 0])[::-1]
    cum = np.concatenate([[0.0], np.cumsum([nu.weights[nu.points == q].sum() for q in points])]) / delta
    poles = np.concatenate([[0.0], 1.0 / (delta * points), [np.inf]])
    n = min(int(np.searchsorted(cum, tail, side="right")), len(points))
    t = (1 - np.cos(np.pi * np.arange(1, grid) / grid)) / 2

    def dl(G: float) -> float:
        return -1.0 / G**2 + delta * float(np.sum(nu.weights * nu.points**2 / (1 - delta * nu.points * G) ** 2))

    def cross(u: float, v: float) -> float:
        su = np.sign(dl(u))
        for _ in range(200):
            mid = 0.5 * (u + v)
            if not min(u, v) < mid < max(u, v):
                break
            u, v = (mid, v) if np.sign(dl(mid)) == su else (u, mid)
        return 0.5 * (u + v)

    out = []
    for k in range(n):
        G = poles[k] + (poles[k + 1] - poles[k]) * t
        neg = np.flatnonzero([dl(g) < 0 for g in G])
        if neg.size == 0:
            continue
        g_edge = cross(G[neg.max()], G[neg.max() + 1] if neg.max() + 1 < t.size else poles[k + 1])
        g_lo = cross(G[neg.min()], G[neg.min() - 1] if neg.min() > 0 else poles[k]) if k > 0 else 0.0
        l_edge = 1.0 / g_edge + float(np.sum(nu.weights * nu.points / (1 - delta * nu.points * g_edge)))
        out.append((g_lo, poles[k + 1], g_edge, l_edge, cum[k]))
    return out


def _pooled_law(T: int, corr, d: int):
    from rmtsweep.theory.null_law import pooled_model, pooled_seed, pooling_eigenvalues

    w = np.full(T, 1.0 / T)
    return ft.empirical_law(pooling_eigenvalues(pooled_model(w, corr, 0.5, 0.5, d), pooled_seed(w, 0.5, 0.5, d)))


@pytest.mark.parametrize("case", ["pooled-top", "pooled-half", "many-gaps", "counts", "repeated-atoms"])
def test_the_gap_search_is_one_scalar_bisection_per_sign_change(case):
    """Every gap, its edge and its turning point as scalar bisections give them, within 1e-12 relative: over the top
    of a pooled law (one gap), down to its median, the Poisson law (13 gaps), realised token counts, and a law whose
    atoms repeat."""
    rng = np.random.default_rng(8)
    nu, delta, tail = {
        "pooled-top": lambda: (_pooled_law(16, make_correlation("decay", r=0.6), 300), 0.5, 16 / 300),
        "pooled-half": lambda: (_pooled_law(3, make_correlation("iid"), 150), 0.5, 0.5),
        "many-gaps": lambda: (ft.poisson_law(0.5, 0.5), 0.5, 0.5),
        "counts": lambda: (ft.empirical_law(2.0 * np.bincount(rng.integers(400, size=200), minlength=400)), 0.5, 0.5),
        "repeated-atoms": lambda: (ft.DiscreteLaw(np.repeat(rng.exponential(size=60), 3), np.full(180, 1 / 180)),
                                   1.0, 0.5),
    }[case]()
    ours, scalar = np.array(ft._gaps(nu, delta, tail), float), np.array(_scalar_gaps(nu, delta, tail), float)
    assert ours.shape == scalar.shape and ours.shape[0] >= 1
    assert np.allclose(ours, scalar, rtol=1e-12, atol=0)
    if case == "many-gaps":
        assert ours.shape[0] > 5


@pytest.mark.parametrize("seed", range(6))
def test_an_interval_left_out_of_the_gap_search_has_no_dip_of_l_prime_on_its_grid(seed):
    """The intervals the gap search skips (their two bounding atoms alone keep ``l' > 0``) have ``l' >= 0`` at
    every grid point when summed over all atoms, on laws with clustered, spread and repeated atoms; and the
    bound skips most of a dense bulk, or it would save nothing."""
    rng = np.random.default_rng(seed)
    V = 300
    points = {0: lambda: rng.exponential(size=V), 1: lambda: np.repeat(rng.gamma(2.0, size=V // 3), 3),
              2: lambda: np.concatenate([rng.uniform(0.5, 1.5, V - 5), 4.0 + rng.exponential(size=5)]),
              3: lambda: 2.0 * np.bincount(rng.integers(V, size=V // 2), minlength=V),
              4: lambda: rng.lognormal(0.0, 1.5, V), 5: lambda: np.append(rng.uniform(0.9, 1.1, V - 1), 0.0)}[seed]()
    nu, delta = ft.empirical_law(points), float(rng.choice([0.25, 1.0, 4.0]))
    wpos, which = np.unique(nu.points[nu.points > 0], return_inverse=True)
    mass = np.bincount(which, weights=nu.weights[nu.points > 0])[::-1]
    wpos = wpos[::-1]
    poles = np.concatenate([[0.0], 1.0 / (delta * wpos)])
    t = (1 - np.cos(np.pi * np.arange(1, 48) / 48)) / 2
    G = poles[:-1, None] + np.diff(poles)[:, None] * t
    may = ft._may_dip(G, wpos, mass, delta)
    skipped = np.flatnonzero(~may)
    assert may[0] and skipped.size > 0.5 * G.shape[0], (skipped.size, G.shape[0])
    full = np.array([[-1.0 / g**2 + delta * np.sum(nu.weights * nu.points**2 / (1 - delta * nu.points * g) ** 2)
                      for g in G[k]] for k in skipped])
    assert (full >= 0).all()


def test_the_sign_changes_of_many_brackets_are_found_at_once():
    """Each bracket's root of l' where its own scalar bisection finds it: the edges and turning points of the
    Poisson law's gaps, each bracketed within 1e-9 relative (they lie within 1e-7 of its atoms' poles), in one
    call."""
    nu, delta = ft.poisson_law(0.5, 0.5), 0.5
    gaps = [g for g in _scalar_gaps(nu, delta, 0.5) if g[0] > 0]
    roots = np.array([[g[2] for g in gaps], [g[0] for g in gaps]]).ravel()
    assert roots.size >= 8
    found = ft._sign_changes(np.stack([roots * (1 - 1e-9), roots * (1 + 1e-9)], axis=1), nu, delta)
    assert found == pytest.approx(roots, rel=1e-13)
    assert ft._sign_changes(np.empty((0, 2)), nu, delta).shape == (0,)
