"""The simulator: correlation models, weights, and one replicate against its literal definition."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from rmtsweep.model import (CellModel, alpha, correlation_matrix, draw_signs, effective_length, kappa,
                            make_correlation, make_scheme, pooling_weights, simulate_replicate)
from rmtsweep.model.replicate import draw_sequences, draw_table_noise, pool, simulate_schemes
from rmtsweep.model.spectral import rank2_top_k
from rmtsweep.model.topk import spectrum_top_k
from rmtsweep.testing import pooled_matrix

CORRELATIONS = [
    make_correlation("prefix", L=3), make_correlation("iid"), make_correlation("full"), make_correlation("decay", r=0.7),
    make_correlation("label", q=(0.9, 0.5, 0.0, 0.3, 1.0, 0.2)), make_correlation("label", q=(0.4,)),
    make_correlation("markov", r=0.6), make_correlation("markov", r=-0.5),
]


@pytest.mark.parametrize("corr", CORRELATIONS, ids=lambda c: c.label())
def test_empirical_sign_correlation_matches_R(corr):
    T, N = 6, 40_000
    xi, y = draw_signs(corr, T, N, np.random.default_rng(11))
    R = correlation_matrix(corr, T)
    emp = xi.T.astype(float) @ xi / N
    # each entry is a mean of N products in {-1, +1}: standard error <= 1/sqrt(N)
    assert np.abs(emp - R).max() < 5 / np.sqrt(N)
    assert np.allclose(np.diag(R), 1.0) and np.allclose(R, R.T)
    assert set(np.unique(xi)) <= {-1, 1} and y.shape == (N,)


def test_prefix_R_structure():
    R = correlation_matrix(make_correlation("prefix", L=2), 4)
    assert np.array_equal(R, np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]]))


def test_label_model_copies_label():
    xi, y = draw_signs(make_correlation("full"), 5, 100, np.random.default_rng(0))
    assert np.array_equal(xi, np.repeat(y[:, None], 5, axis=1))


def test_harmonic_weights():
    T = 16
    w = pooling_weights(make_scheme("harmonic"), np.eye(T))
    H = np.concatenate([[0], np.cumsum(1 / np.arange(1, T + 1))])
    assert np.allclose(w, (H[T] - H[:T]) / T)
    assert w.sum() == pytest.approx(1.0) and np.all(np.diff(w) < 0) and w[-1] == pytest.approx(1 / T**2)
    # uniform causal attention then mean pooling, computed literally
    A = np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]
    assert np.allclose(w, A.mean(axis=0))


def test_harmonic_paper_variant_drops_last_token():
    w = pooling_weights(make_scheme("harmonic_paper"), np.eye(8))
    assert w[-1] == 0 and w.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("tau", [0.0, 0.7, 3.0])
def test_causal_weights_are_mean_pooled_attention(tau):
    T = 10
    w = pooling_weights(make_scheme("causal", tau=tau), np.eye(T))
    t = np.arange(1, T + 1)
    A = np.tril(np.ones((T, T))) / (np.exp(tau) + t - 1)[:, None]
    A[np.diag_indices(T)] = np.exp(tau) / (np.exp(tau) + t - 1)
    assert np.allclose(A.sum(axis=1), 1.0)
    assert np.allclose(w, A.mean(axis=0))
    if tau == 0:
        assert np.allclose(w, pooling_weights(make_scheme("harmonic"), np.eye(T)))


def test_optimal_weights_maximise_alpha_over_kappa():
    T = 12
    R = correlation_matrix(make_correlation("prefix", L=4), T)
    w = pooling_weights(make_scheme("optimal"), R)
    assert np.allclose(w[:4], 0.5) and np.allclose(w[4:], 0)          # all mass on the prefix
    assert alpha(w, R) / kappa(w) == pytest.approx(np.linalg.eigvalsh(R)[-1])
    rng = np.random.default_rng(3)
    for _ in range(50):
        v = rng.standard_normal(T)
        assert alpha(v, R) / kappa(v) <= alpha(w, R) / kappa(w) + 1e-12
    ranking = [alpha(pooling_weights(make_scheme(s), R), R) / kappa(pooling_weights(make_scheme(s), R))
               for s in ("optimal", "harmonic", "mean")]
    assert ranking[0] > ranking[1] > ranking[2]


def test_optimal_weights_degenerate_R_is_uniform():
    w = pooling_weights(make_scheme("optimal"), np.eye(5))
    assert np.allclose(w, 1 / np.sqrt(5))


def test_effective_length():
    assert effective_length(np.full(16, 1 / 16)) == pytest.approx(16)
    assert effective_length(np.array([1.0, 0, 0])) == pytest.approx(1)


def _model(d=40, V=60, N=50, T=6, centering="class", scheme="harmonic", corr=make_correlation("prefix", L=2), k=3):
    w = pooling_weights(make_scheme(scheme), correlation_matrix(corr, T))
    return CellModel(d=d, V=V, N=N, T=T, w=w, correlation=corr, centering=centering, top_k=k)


@pytest.mark.parametrize("centering", ["class", "none"])
@pytest.mark.parametrize("sizes", [(40, 60, 50), (60, 30, 25)], ids=["feature-space", "sample-space"])
def test_replicate_equals_literal_definition(centering, sizes):
    """Top-k of the rank-2-updated Gram == full eigh of S built from the literal table, per SNR."""
    d, V, N = sizes
    m = _model(d=d, V=V, N=N, centering=centering)
    snr = np.array([0.0, 0.8, 5.0])
    res = simulate_replicate(m, snr, np.random.default_rng(42))
    assert res.eigenvalues.shape == res.overlap.shape == (3, 3)
    for i, s in enumerate(snr):
        C, u = pooled_matrix(m, s, np.random.default_rng(42))
        vals, vecs = np.linalg.eigh(C @ C.T / N)
        assert np.allclose(res.eigenvalues[i], vals[::-1][:3], rtol=1e-10)
        assert np.allclose(res.overlap[i], (u @ vecs[:, ::-1][:, :3]) ** 2, atol=1e-10)
    assert np.all(np.diff(res.eigenvalues, axis=1) <= 0)
    assert np.all((res.overlap >= 0) & (res.overlap <= 1 + 1e-12))


def _harmonic_exact(T: int) -> list[Fraction]:
    """``w_s = (1/T) sum_{t >= s} 1/t`` in exact rational arithmetic."""
    return [sum((Fraction(1, t) for t in range(s, T + 1)), Fraction(0)) / T for s in range(1, T + 1)]


def _closed_forms(case: str, T: int) -> tuple[object, object, float, float]:
    """``(scheme, correlation, kappa, alpha)`` of a case, with ``kappa`` and ``alpha`` computed by hand.

    mean: ``kappa = 1/T``; optimal: unit norm; harmonic: exact fractions. ``alpha``: prefix(L) treats the
    copied block as one sign, ``(sum_{t<=L} w_t)^2 + sum_{t>L} w_t^2``; markov(r) with mean weights sums
    the geometric series ``(T + 2 sum_k (T - k) r^k) / T^2``; iid gives ``kappa``; full gives ``(sum w)^2``.
    """
    if case == "harmonic-prefix":
        w = _harmonic_exact(T)
        return (make_scheme("harmonic"), make_correlation("prefix", L=2), float(sum(x * x for x in w)),
                float((w[0] + w[1]) ** 2 + sum(x * x for x in w[2:])))
    r = 0.6
    return {
        "mean-prefix": (make_scheme("mean"), make_correlation("prefix", L=2), 1 / T, (2**2 + T - 2) / T**2),
        "optimal-prefix": (make_scheme("optimal"), make_correlation("prefix", L=2), 1.0, 2.0),
        "mean-markov": (make_scheme("mean"), make_correlation("markov", r=r), 1 / T,
                        (T + 2 * r * (T * (1 - r) - (1 - r**T)) / (1 - r) ** 2) / T**2),
        "mean-iid": (make_scheme("mean"), make_correlation("iid"), 1 / T, 1 / T),
        "optimal-full": (make_scheme("optimal"), make_correlation("full"), 1.0, float(T)),
    }[case]


@pytest.mark.parametrize("case", ["mean-prefix", "optimal-prefix", "harmonic-prefix", "mean-markov", "mean-iid",
                                  "optimal-full"])
def test_realised_kappa_and_alpha_match_closed_forms(case):
    T = 6
    scheme, corr, kappa_hand, alpha_hand = _closed_forms(case, T)
    w = pooling_weights(scheme, correlation_matrix(corr, T))
    m = CellModel(d=10, V=20, N=4000, T=T, w=w, correlation=corr, centering="class", top_k=1)
    res = simulate_replicate(m, np.array([1.0]), np.random.default_rng(1))
    assert res.kappa == pytest.approx(kappa_hand, rel=1e-12)
    assert alpha(w, correlation_matrix(corr, T)) == pytest.approx(alpha_hand, rel=1e-12)
    # realised alpha = mean of (w^T xi)^2 over N samples, each in [0, (sum|w|)^2]: its SD is at most
    # (sum|w|)^2 / 2 (Popoviciu), so the SE is at most (sum|w|)^2 / (2 sqrt(N))
    se_bound = np.abs(w).sum() ** 2 / (2 * np.sqrt(m.N))
    assert abs(res.alpha - alpha_hand) <= 4 * se_bound


def test_class_centering_makes_class_means_zero():
    m = _model(centering="class")
    Z = draw_table_noise(m, np.random.default_rng(0))
    assert np.allclose(Z[:, : m.n_pos].mean(axis=1), 0) and np.allclose(Z[:, m.n_pos:].mean(axis=1), 0)
    Z = draw_table_noise(_model(centering="none"), np.random.default_rng(0))
    assert not np.allclose(Z[:, : m.n_pos].mean(axis=1), 0)


def test_same_generator_same_result():
    m = _model()
    a = simulate_replicate(m, np.array([0.0, 2.0]), np.random.default_rng(5))
    b = simulate_replicate(m, np.array([0.0, 2.0]), np.random.default_rng(5))
    assert np.array_equal(a.eigenvalues, b.eigenvalues) and np.array_equal(a.overlap, b.overlap)


def test_optional_observables_leave_the_others_unchanged():
    base = _model(d=30, V=60, N=90, T=6, corr=make_correlation("prefix", L=3), scheme="optimal")
    snr = np.array([0.0, 20.0])
    plain = simulate_replicate(base, snr, np.random.default_rng(9))
    edges = np.linspace(0, 8, 41)
    full = simulate_replicate(CellModel(**{**base.__dict__, "spectrum_edges": edges, "ridge_penalty": 0.1,
                                           "test_samples": 4000}), snr, np.random.default_rng(9))
    assert np.array_equal(plain.eigenvalues, full.eigenvalues) and plain.spectrum is None
    # the histogram holds every one of the d eigenvalues below the last edge
    widths = np.diff(edges)
    assert full.spectrum.shape == (2, 40)
    assert (full.spectrum[0] * widths).sum() == pytest.approx(1.0)
    # chance level without signal, near-perfect with a strong one (4000 test samples: SE <= 0.008)
    assert abs(full.accuracy[0] - 0.5) < 0.04
    assert full.accuracy[1] > 0.9


# -- the rank-2 (many SNR values) path of spectrum_top_k ------------------------------------------

MANY_SNR = np.concatenate([[0.0, 1e-10, 1e-4], np.linspace(0.05, 12.0, 14), [60.0, 1e3]])


def _literal(m, snr, seed):
    """Top-k eigenvalues and overlaps of S built from the literal table, per SNR."""
    vals, ovs = [], []
    for s in snr:
        C, u = pooled_matrix(m, s, np.random.default_rng(seed))
        lam, vecs = np.linalg.eigh(C @ C.T / m.N)
        vals.append(lam[::-1][: m.top_k])
        ovs.append((u @ vecs[:, ::-1][:, : m.top_k]) ** 2)
    return np.array(vals), np.array(ovs)


@pytest.mark.parametrize("centering", ["class", "none"])
@pytest.mark.parametrize("sizes", [(40, 60, 50), (60, 30, 25), (30, 15, 90)],
                         ids=["feature-space", "sample-space", "rank-deficient-table"])
def test_many_snr_values_equal_literal_definition(centering, sizes):
    """With many SNR values the replicate takes the eigh + rank-2 path; it must match the literal S."""
    d, V, N = sizes
    m = _model(d=d, V=V, N=N, centering=centering, k=4)
    res = simulate_replicate(m, MANY_SNR, np.random.default_rng(7))
    vals, ovs = _literal(m, MANY_SNR, 7)
    assert np.allclose(res.eigenvalues, vals, rtol=1e-9, atol=0)
    assert np.allclose(res.overlap, ovs, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("method", ["direct", "rank2"])
@pytest.mark.parametrize("sizes", [(30, 12, 40), (30, 60, 12)], ids=["k=V", "k=N"])
def test_k_up_to_min_d_N_V(method, sizes):
    """k = min(d, N, V): every nonzero eigenvalue of S, by both solvers."""
    d, V, N = sizes
    m = _model(d=d, V=V, N=N, centering="none", k=min(d, N, V))
    rng = np.random.default_rng(3)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    Z = draw_table_noise(m, rng)
    C0T, a, _ = pool(m, Z, draw_sequences(m, N, rng))
    snr = np.linspace(0.0, 9.0, 10)
    vals, ov = spectrum_top_k(C0T, a, u, snr, m.top_k, method=method)
    for i, s in enumerate(snr):
        C = (C0T + np.sqrt(s) * np.outer(a, u)).T
        lam, vecs = np.linalg.eigh(C @ C.T / N)
        assert np.allclose(vals[i], lam[::-1][: m.top_k], rtol=1e-8, atol=1e-10 * lam[-1])
        assert np.allclose(ov[i], (u @ vecs[:, ::-1][:, : m.top_k]) ** 2, rtol=1e-6, atol=1e-10)


def test_rank2_exact_ties_are_flagged_and_recomputed():
    """K0 = I: the update moves two eigenvalues and leaves an exact (n-2)-fold tie at 1."""
    n, N = 12, 48
    rng = np.random.default_rng(0)
    C0T = np.linalg.qr(rng.standard_normal((N, n)))[0] * np.sqrt(N)       # C0T^T C0T / N = I
    a = rng.choice([-1.0, 1.0], N) * 0.5
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    snr = np.linspace(0.0, 5.0, 8)
    K0 = C0T.T @ C0T / N
    lam, Q = np.linalg.eigh(K0)
    _, _, _, ok = rank2_top_k(lam, Q, u, C0T.T @ a / N, float(a @ a) / N, np.sqrt(snr), 4)
    assert not ok[1:].any()                                   # the tie at 1 is not certified
    vals, ov = spectrum_top_k(C0T, a, u, snr, 4, method="rank2")
    for i, s in enumerate(snr):
        C = (C0T + np.sqrt(s) * np.outer(a, u)).T
        lam_s = np.linalg.eigvalsh(C @ C.T / N)[::-1][:4]
        assert np.allclose(vals[i], lam_s, rtol=1e-10)
    # eigenvectors inside the tie are orthogonal to span{u, h}: overlap 0 whatever the basis
    assert np.allclose(ov[1:, 2:], 0.0, atol=1e-12)


def test_rank2_near_ties_match_direct():
    """A noise Gram with clusters of eigenvalues 1e-13 apart: results still match a direct solve."""
    n, N = 20, 80
    rng = np.random.default_rng(5)
    spectrum = np.array([5.0, 5.0 + 1e-13, 5.0 - 1e-13, 3.0, 3.0 + 1e-12] + list(np.linspace(0.5, 2.0, n - 5)))
    Qn = np.linalg.qr(rng.standard_normal((n, n)))[0]
    Qs = np.linalg.qr(rng.standard_normal((N, n)))[0]
    C0T = np.sqrt(N) * Qs @ np.diag(np.sqrt(spectrum)) @ Qn.T            # K0 = Qn diag(spectrum) Qn^T
    a = rng.choice([-1.0, 1.0], N) * 0.4
    u = rng.standard_normal(n)
    u /= np.linalg.norm(u)
    snr = np.linspace(0.0, 6.0, 12)
    fast = spectrum_top_k(C0T, a, u, snr, 3, method="rank2")
    slow = spectrum_top_k(C0T, a, u, snr, 3, method="direct")
    assert np.allclose(fast[0], slow[0], rtol=1e-10)
    gap_ok = np.diff(-slow[0], axis=1).min(axis=1) > 1e-6             # overlaps are defined only off ties
    assert np.allclose(fast[1][gap_ok], slow[1][gap_ok], rtol=1e-6, atol=1e-12)


def test_schemes_from_one_draw_equal_separate_replicates():
    """All weight schemes of a cell measured from one draw == each simulated on its own stream."""
    corr = make_correlation("prefix", L=2)
    R = correlation_matrix(corr, 6)
    models = [CellModel(d=20, V=40, N=30, T=6, w=pooling_weights(make_scheme(s), R), correlation=corr,
                        centering="none", top_k=2, ridge_penalty=0.1, test_samples=50)
              for s in ("mean", "optimal", "harmonic")]
    snr = np.array([0.0, 3.0])
    together = simulate_schemes(models, snr, np.random.default_rng(8))
    for model, res in zip(models, together):
        alone = simulate_replicate(model, snr, np.random.default_rng(8))
        assert np.array_equal(res.eigenvalues, alone.eigenvalues)
        assert np.array_equal(res.overlap, alone.overlap) and np.array_equal(res.accuracy, alone.accuracy)
        assert res.alpha == alone.alpha and res.kappa == alone.kappa
