"""The null law of the top eigenvalue: Tracy-Widom quantiles, the realised-count null at T = 1, its level."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.model.correlation import IID
from rmtsweep.model.replicate import CellModel, draw_replicate, measure
from rmtsweep.theory import finite_d
from rmtsweep.theory.bulk import edge
from rmtsweep.theory.finite_t import edge_point
from rmtsweep.theory.null_law import (_second_derivative, count_null, count_null_draw, mixture_cdf, mixture_quantile,
                                      tw_threshold)
from rmtsweep.theory.token_law import empirical_law

# percentiles of TW_1 (Johnstone 2001, Ann. Stat. 29, Table 1): P(TW_1 <= q) = p
JOHNSTONE = {0.90: 0.4501, 0.95: 0.9793, 0.99: 2.0234}


@pytest.mark.parametrize("p", sorted(JOHNSTONE))
def test_tw_threshold_is_the_edge_plus_the_scaled_tracy_widom_quantile(p):
    delta, gamma, d = 0.5, 0.25, 300
    expected = edge(delta, gamma) + finite_d.tw_scale(delta, gamma, d) * JOHNSTONE[p]
    assert float(tw_threshold(1 - p, delta, gamma, d)) == pytest.approx(float(expected), abs=1e-4)


@pytest.mark.parametrize("delta", [0.25, 0.5, 1.0, 2.0])
def test_the_edge_scale_of_a_one_atom_law_is_johnstones(delta):
    """For nu = delta_1 the law is Marchenko-Pastur of ratio delta: its scale from l''(G_e) is Johnstone's."""
    nu = empirical_law(np.ones(7))
    g_edge, top = edge_point(nu, delta)
    assert top == pytest.approx((1 + np.sqrt(delta)) ** 2, rel=1e-9)
    d = 400
    ours = (np.sqrt(2.0 / _second_derivative(g_edge, nu, delta)) * d) ** (-2.0 / 3.0)
    johnstone = (1 + np.sqrt(delta)) ** (4 / 3) * delta ** (-1 / 6) * (d / delta) ** (-2 / 3)
    assert ours == pytest.approx(johnstone, rel=1e-9)


def test_the_mixture_quantile_inverts_its_cdf():
    cn = count_null(0.5, 0.5, 200, draws=16, seed=3)
    for p in (0.5, 0.9, 0.95, 0.99):
        assert float(mixture_cdf(mixture_quantile(p, cn.location, cn.scale), cn.location, cn.scale)) == pytest.approx(p, abs=1e-8)
    assert (cn.scale[np.isfinite(cn.location)] > 0).all()


def test_a_token_far_above_the_bulk_is_a_spike_at_its_rank_one_location():
    """One token drawn 40 times over an otherwise uniform table: the others form a one-atom bulk (a
    Marchenko-Pastur law, edge (1 + sqrt(delta))^2 times the atom), and the token is a spike at
    l(G) = 1/G + p/(1 - delta p G) over that atom p, at its pole G = 1/(delta p_token), written out here."""
    V, N, d = 400, 400, 200
    delta = d / V
    counts = np.ones(V, int)
    counts[0] = 40
    loc, scale = count_null_draw(counts, V, N, delta, d)
    p = V * counts / N
    G = 1.0 / (delta * p[0])
    rest = p[1:].mean()                                     # the other atoms: all equal
    by_hand = 1.0 / G + rest / (1 - delta * rest * G)
    assert np.isfinite(loc[1]) and np.isnan(loc[2:]).all()
    assert loc[0] == pytest.approx((1 + np.sqrt(delta)) ** 2 * rest, rel=1e-3)
    assert loc[1] == pytest.approx(by_hand, rel=1e-12)
    assert scale[1] == pytest.approx(np.sqrt(2 * abs(-1 / G**2 + delta * rest**2 / (1 - delta * rest * G) ** 2) / d),
                                     rel=1e-12)


def _null_lambda1(d: int, delta: float, gamma: float, reps: int, seed: int) -> tuple[np.ndarray, list]:
    """``lambda_1`` of ``reps`` simulated null replicates at T = 1 (the model's own code), and their token counts."""
    V, N = round(d / delta), round(d / gamma)
    model = CellModel(d=d, V=V, N=N, T=1, w=np.ones(1), correlation=IID(), centering="class", top_k=1)
    rng = np.random.default_rng(seed)
    lam, counts = np.empty(reps), []
    for r in range(reps):
        draws = draw_replicate(model, rng)
        lam[r] = measure(model, draws, np.zeros(1)).eigenvalues[0, 0]
        counts.append(np.bincount(draws.train[2].ravel(), minlength=V))
    return lam, counts


@pytest.mark.slow
def test_one_token_detection_holds_its_false_alarm_level():
    """Simulated null replicates at T = 1 (d = 200, three (delta, gamma)) exceed the 0.9 quantile of the
    realised-count null 10 % of the time, within 3 binomial s.e. per point and pooled. The cubic's
    Tracy-Widom threshold, which ignores the counts, fails this (29-50 % measured)."""
    d, reps, alpha = 200, 240, 0.1
    hits, cubic = [], []
    for i, (delta, gamma) in enumerate([(0.5, 0.5), (1.0, 0.5), (0.25, 1.0)]):
        lam, _ = _null_lambda1(d, delta, gamma, reps, seed=17 + i)
        cn = count_null(delta, gamma, d)
        hits.append(np.mean(lam > mixture_quantile(1 - alpha, cn.location, cn.scale)))
        cubic.append(np.mean(lam > float(tw_threshold(alpha, delta, gamma, d))))
    se = np.sqrt(alpha * (1 - alpha) / reps)
    assert all(abs(h - alpha) <= 3 * se for h in hits), hits
    assert abs(np.mean(hits) - alpha) <= 3 * se / np.sqrt(3), hits
    assert all(abs(c - alpha) > 3 * se for c in cubic), cubic


def test_the_pooled_null_tends_to_the_cubics_tracy_widom_law_when_many_tokens_are_pooled():
    """Mean weights over T = 64 positions: the realised pooling matrix's law is close to Marchenko-Pastur
    (the cubic's), so its null's 0.95 quantile is the cubic's Tracy-Widom threshold within a fraction of
    the Tracy-Widom scale; over T = 2 it is not (few tokens per sequence: the null top lies higher)."""
    from rmtsweep.model.correlation import IID
    from rmtsweep.theory.null_law import pooled_null

    d, delta, gamma = 200, 0.5, 0.5
    cubic, sigma = float(tw_threshold(0.05, delta, gamma, d)), float(finite_d.tw_scale(delta, gamma, d))
    many = pooled_null(np.full(64, 1 / 64), IID(), delta, gamma, d)
    few = pooled_null(np.full(2, 0.5), IID(), delta, gamma, d)
    assert abs(mixture_quantile(0.95, many.location, many.scale) - cubic) < 0.5 * sigma
    assert mixture_quantile(0.95, few.location, few.scale) - cubic > 0.3 * sigma
    assert np.isnan(many.location[:, 1:]).all()             # a tie-free spectrum: one piece, no spikes


@pytest.mark.slow
def test_pooled_detection_holds_its_false_alarm_level_where_the_cubics_does_not():
    """Weights 2^-t (normalised) with Markov signs (r = 0.8), d = 200, over T = 2 and 4 positions: simulated
    null replicates (the model's own code) exceed the 0.9 quantile of the realised pooling null at most
    10 % of the time (plus 3 binomial s.e.) in every cell, and not far less (over the cells, at least a
    third of the level: the null is conservative here, 0.04-0.10 measured over three seeds); the cubic's
    Tracy-Widom threshold is exceeded more than 10 % of the time in every cell, and far more pooled
    (0.18-0.32 per cell measured over three seeds)."""
    from rmtsweep.model.correlation import make_correlation
    from rmtsweep.model.replicate import simulate_replicate
    from rmtsweep.theory.null_law import pooled_null

    d, reps, alpha = 200, 240, 0.1
    corr = make_correlation("markov", r=0.8)
    hits, cubic = [], []
    for i, (T, delta, gamma) in enumerate([(2, 0.5, 0.5), (2, 0.25, 1.0), (4, 0.25, 1.0)]):
        w = 0.5 ** np.arange(T)
        w /= w.sum()
        V, N = round(d / delta), round(d / gamma)
        model = CellModel(d=d, V=V, N=N, T=T, w=w, correlation=corr, centering="class", top_k=1)
        rng = np.random.default_rng(41 + i)
        lam = np.array([simulate_replicate(model, np.zeros(1), rng).eigenvalues[0, 0] for _ in range(reps)]) / (w @ w)
        null = pooled_null(w, corr, delta, gamma, d)
        hits.append(np.mean(lam > mixture_quantile(1 - alpha, null.location, null.scale)))
        cubic.append(np.mean(lam > float(tw_threshold(alpha, delta, gamma, d))))
    se = np.sqrt(alpha * (1 - alpha) / reps)
    assert all(h <= alpha + 3 * se for h in hits), hits
    assert np.mean(hits) >= alpha / 3, hits
    assert all(c > alpha for c in cubic) and np.mean(cubic) - alpha > 3 * se / np.sqrt(3), cubic


def test_a_long_computation_of_the_pooled_nulls_is_announced_once(monkeypatch):
    """A store whose detection nulls take seconds says so before computing them (one line naming the sweep and
    the number of cells); a small one says nothing."""
    from rmtsweep.spec import parse_sweep
    from rmtsweep.theory import finite_size
    from rmtsweep.theory.on_grid import theory_dataset

    data = {"name": "nulls", "d": 20, "replicates": 2, "seed": 1, "correlation": {"model": "iid"},
            "table_centering": "class",
            "grid": {"delta": [0.5], "gamma": [0.5, 1.0], "snr": [0.0], "T": [1, 4], "weights": ["mean"]}}
    lines: list[str] = []
    theory_dataset(parse_sweep(data), notes=lines.append)
    assert lines == []                                              # about 10 ms of work: nothing to say
    monkeypatch.setattr(finite_size, "POOLED_SAY", 0.0)
    ds = theory_dataset(parse_sweep(data), notes=lines.append)
    assert len(lines) == 1 and lines[0].startswith("nulls: computing the detection nulls and finite-size spikes of "
                                                   "2 (point, weights scheme) pairs over T >= 2 positions"), lines
    assert int(ds["pooled_null_location"].isel(pool_draw=0, null_candidate=0).notnull().sum()) == 2   # T = 4 only


def test_the_finite_size_centring_is_johnstones_for_a_white_population():
    """For ``D = I`` (every p = 1) the corrected edge and scale are Johnstone's mu_np / n and sigma_np / n with
    n - 1/2 and p - 1/2 (the real case), and the store's nulls use them by default."""
    from rmtsweep.theory.null_law import half_corrected_edge, population_null_draw
    from rmtsweep.theory.token_law import empirical_law

    d, V = 150, 300
    top, sigma = half_corrected_edge(empirical_law(np.ones(V)), d / V, d)
    n, p = V - 0.5, d - 0.5
    assert top == pytest.approx((np.sqrt(n) + np.sqrt(p)) ** 2 / V, rel=1e-6)
    assert sigma == pytest.approx((np.sqrt(n) + np.sqrt(p)) * (1 / np.sqrt(n) + 1 / np.sqrt(p)) ** (1 / 3) / V,
                                  rel=1e-6)
    loc, scale = population_null_draw(np.ones(V), d / V, d, half=True)
    assert (loc[0], scale[0]) == pytest.approx((top, sigma))
    assert population_null_draw(np.ones(V), d / V, d)[0][0] > top            # as it was: higher
    cn, raw = count_null(0.5, 0.5, 100, draws=4), count_null(0.5, 0.5, 100, draws=4, half=False)
    assert np.all(cn.location[:, 0] < raw.location[:, 0])


@pytest.mark.slow
def test_the_matched_wishart_centres_the_top_eigenvalue_of_a_structured_population():
    """``D``'s eigenvalues spread like a Marchenko-Pastur law (ratio 1/2, as a pooling matrix's do), d = 150: the
    simulated ``lambda_1`` of ``(1/n) sum_j p_j z_j z_j^T``, in units of the store's centring and scale, has the
    mean of TW_1 within 3 s.e. (+0.7 s.e. measured); ``n - 1/2`` over all the tokens leaves it more than 3 s.e.
    low (-5 s.e.: the test at level 0.05 is conservative)."""
    from rmtsweep.theory.null_law import half_corrected_edge, null_parts, population_null_draw

    d, n, reps, tw_mean = 150, 150, 3000, -1.2065335745820
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2 * n, n))
    p = np.linalg.eigvalsh(X.T @ X / (2 * n))
    lam = np.empty(reps)
    for r in range(reps):
        Z = rng.standard_normal((n, d)) * np.sqrt(p / n)[:, None]
        lam[r] = np.linalg.eigvalsh(Z.T @ Z)[-1]
    loc, scale = population_null_draw(p, d / n, d, half=True)
    s = (lam - loc[0]) / scale[0]
    se = s.std() / np.sqrt(reps)
    assert abs(s.mean() - tw_mean) <= 3 * se, (s.mean(), se)
    top, sigma = half_corrected_edge(null_parts(p, d / n, d)[0], d / n, d)
    assert ((lam - top) / sigma).mean() < tw_mean - 3 * se


@pytest.mark.parametrize("delta, gamma", [(0.5, 0.25), (0.25, 1.0)])
def test_the_sparse_pooling_draw_is_the_dense_class_centred_matrix(delta, gamma):
    """From one seed, pooling_draw makes the generator calls of the dense pooling_matrix, and its Gram matrix (N
    <= V and N > V) and operator are those of pooling_matrix's dense centred matrix, by numpy."""
    from rmtsweep.model.correlation import Markov
    from rmtsweep.theory.null_law import pooled_model, pooled_seed, pooling_matrix
    from rmtsweep.theory.pooling import pooling_draw

    w = np.array([0.5, 0.3, 0.2, 0.0])
    model = pooled_model(w, Markov(r=0.8), delta, gamma, 60)
    dense_rng, sparse_rng = pooled_seed(w, delta, gamma, 60), pooled_seed(w, delta, gamma, 60)
    A, a = pooling_matrix(model, dense_rng)
    draw = pooling_draw(model, sparse_rng)
    assert dense_rng.random() == sparse_rng.random()                 # the same draws, in the same order
    assert np.array_equal(draw.a, a)
    K = A @ A.T if model.N <= model.V else A.T @ A
    assert draw.gram().shape == (min(model.N, model.V),) * 2
    assert np.allclose(draw.gram(), K, rtol=0, atol=1e-13)
    v = np.random.default_rng(5).standard_normal(model.N)
    assert np.allclose(draw.matvec(v), A @ (A.T @ v), rtol=0, atol=1e-12)
    assert np.allclose(draw.centred(), A, rtol=0, atol=1e-15)


def _dense_pooled(w: np.ndarray, corr, delta: float, gamma: float, d: int, snr: np.ndarray):
    """The pooled null and lambda_1 as numpy computes them densely in double precision, every draw's whole
    spectrum: ``(location, scale, lambda1)`` of the seeded draws."""
    from rmtsweep.theory.null_law import POOLED_DRAWS, POOLED_TAIL, pooled_model, pooled_seed, pooling_matrix
    from rmtsweep.theory.pooled_spikes import LANCZOS_STEPS, _draw_prediction, gauss_quadrature

    model, rng = pooled_model(w, corr, delta, gamma, d), pooled_seed(w, delta, gamma, d)
    kappa, alpha = float(w @ w), float(w @ corr.matrix(w.size) @ w)
    scale_d = model.V / (model.N * kappa)
    loc, scale, lam = [], [], []
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(POOLED_DRAWS):
            A, a = pooling_matrix(model, rng)
            ev = np.linalg.eigvalsh(A @ A.T if model.N <= model.V else A.T @ A)
            p = np.concatenate([np.clip(ev, 0, None) * scale_d, np.zeros(model.V - ev.size)])
            nodes, weights = gauss_quadrature(lambda v: scale_d * (A @ (A.T @ v)), a, LANCZOS_STEPS)
            lam1, _, lo, sc = _draw_prediction(snr, p, nodes, weights, alpha, float(np.var(a**2)) / model.N, kappa,
                                               delta, d, min(0.5, POOLED_TAIL / d))
            loc.append(lo)
            scale.append(sc)
            lam.append(lam1)
    return np.array(loc), np.array(scale), np.mean(lam, axis=0)


def _random_pooled_points(n: int, seed: int) -> list[tuple]:
    """``n`` seeded (scheme, correlation, T, delta, gamma, d) points of the pooled null at small d, by turns
    each fixed scheme that :data:`SHIPPED_LIKE` has not."""
    from rmtsweep.model.correlation import make_correlation
    from rmtsweep.model.schemes import make_scheme

    rng = np.random.default_rng(seed)
    corrs = [make_correlation("decay", r=0.6), make_correlation("iid"), make_correlation("markov", r=0.8),
             make_correlation("prefix", L=4)]
    points = []
    for k in range(n):
        T = int(rng.integers(2, 17))
        scheme = [make_scheme("harmonic_paper"), make_scheme("causal", tau=2.0), make_scheme("causal", tau=-1.0),
                  make_scheme("custom", values=tuple(rng.random(T)))][k % 4]
        points.append((scheme, corrs[int(rng.integers(len(corrs)))], T, float(rng.choice([0.25, 0.5, 1.0, 2.0])),
                       float(rng.choice([0.25, 0.5, 1.0, 2.0])), int(rng.integers(100, 161))))
    return points


def _pooled_point(scheme: str, corr: str, T: int, delta: float, gamma: float, d: int, **params) -> tuple:
    from rmtsweep.model.correlation import make_correlation
    from rmtsweep.model.schemes import make_scheme

    params = params or {"decay": {"r": 0.3}, "markov": {"r": 0.8}, "prefix": {"L": 4}}.get(corr, {})
    return make_scheme(scheme), make_correlation(corr, **params), T, delta, gamma, d


SHIPPED_LIKE = [_pooled_point("harmonic", "decay", 2, 0.5, 1.0, 300),       # paper-finite-t's cells
                _pooled_point("optimal", "decay", 4, 1.0, 0.5, 300)]
SPIKED = [_pooled_point("harmonic_paper", "iid", 2, 2.0, 1.0, 200),          # spike candidates in 4 draws
          _pooled_point("harmonic_paper", "decay", 3, 2.0, 1.0, 200)]        # and in 2
LARGE = [_pooled_point("mean", "prefix", 16, 0.25, 0.25, 400),              # theory-check's largest point
         _pooled_point("mean", "decay", 16, 0.5, 0.5, 1000, r=0.6)]         # the point of issue 55


@pytest.mark.parametrize("point", [*SHIPPED_LIKE, *SPIKED, *_random_pooled_points(4, 55),
                                   *[pytest.param(p, marks=pytest.mark.slow) for p in LARGE]],
                         ids=lambda p: f"{p[0].label}-{type(p[1]).__name__}-T{p[2]}-{p[3]}-{p[4]}-d{p[5]}")
def test_the_pooled_null_is_the_dense_double_precision_one_within_a_hundredth_of_its_scale(point):
    """The sparse draws and single-precision eigenvalues against numpy's dense double-precision spectrum of every
    draw: each detection threshold (levels 0.1, 0.05, 0.01) and lambda_1 within 0.01 of the null's Tracy-Widom
    scale, and the same spike candidates in every draw."""
    from rmtsweep.theory.pooled_spikes import pooled_spikes

    scheme, corr, T, delta, gamma, d = point
    w = scheme.weights(corr.matrix(T))
    snr = np.array([0.0, 2.0, 6.0])
    loc, scale, lam = _dense_pooled(w, corr, delta, gamma, d, snr)
    ours = pooled_spikes(snr, w, corr, delta, gamma, d)
    sigma = float(scale[:, 0].mean())
    assert np.array_equal(np.isnan(ours.location), np.isnan(loc))
    assert np.isfinite(loc[:, 1:]).any() == (point in SPIKED)
    for alpha in (0.1, 0.05, 0.01):
        assert abs(mixture_quantile(1 - alpha, ours.location, ours.scale)
                   - mixture_quantile(1 - alpha, loc, scale)) <= 0.01 * sigma
    assert np.abs(ours.lambda1 - lam).max() <= 0.01 * sigma
