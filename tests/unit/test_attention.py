"""Finite-d causal softmax attention: the fast path against its definition, limits, theory."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from rmtsweep.model import CellModel, draw_replicate, make_correlation, make_scheme, pooling_weights
from rmtsweep.model.attention import (Attention, attention_weights, limit_weights, literal_attention_weights,
                                      measure_attention, pool_attention)
from rmtsweep.model.attention_benchmark import benchmark_attention
from rmtsweep.model.replicate import measure
from rmtsweep.model.weights import Scheme, causal_weights
from rmtsweep.testing import assert_mc_close
from rmtsweep.theory import overlap, sample_outlier


def _draws(d: int, V: int, N: int, T: int, seed: int, L: int = 2, centering: str = "class"):
    model = CellModel(d=d, V=V, N=N, T=T, w=np.full(T, 1.0 / T), correlation=make_correlation("prefix", L=min(L, T)),
                      centering=centering, top_k=2)
    return model, draw_replicate(model, np.random.default_rng(seed))


@pytest.mark.parametrize("scale", ["d", "sqrt_d"])
@pytest.mark.parametrize("tau", [0.5, 3.0])
@pytest.mark.parametrize("centering", ["class", "none"])
def test_fast_path_matches_literal_loop(scale, tau, centering):
    model, dr = _draws(d=12, V=10, N=9, T=6, seed=3, centering=centering)   # small V: repeated tokens occur
    snr = np.array([0.0, 2.0, 9.0])
    fast = attention_weights(dr.Z, dr.u, dr.train[2], model.n_pos, snr, tau, scale)
    lit = literal_attention_weights(dr.Z, dr.u, dr.train[2], model.n_pos, snr, tau, scale)
    assert fast.shape == (3, 9, 6)
    assert np.abs(fast - lit).max() < 1e-10
    assert np.allclose(fast.sum(axis=2), 1.0, atol=1e-12) and np.all(fast > 0)
    assert not np.allclose(fast[0], fast[2])            # the weights depend on the SNR (scores contain mu)


@pytest.mark.parametrize("scale", ["d", "sqrt_d"])
def test_tau_zero_is_harmonic_exactly(scale):
    model, dr = _draws(d=10, V=12, N=7, T=5, seed=1)
    harmonic = pooling_weights(make_scheme("harmonic"), np.eye(5))
    args = (dr.Z, dr.u, dr.train[2], model.n_pos, np.array([0.0, 3.0]))
    W = attention_weights(*args, 0.0, scale)
    assert np.array_equal(W, np.broadcast_to(harmonic, W.shape))
    assert np.abs(literal_attention_weights(*args, 0.0, scale) - harmonic).max() < 1e-15
    # continuity: tau -> 0 through the general path
    assert np.abs(attention_weights(*args, 1e-9, scale) - harmonic).max() < 1e-8
    assert np.array_equal(Attention(tau=0, scale=scale).weights(np.eye(5)), harmonic)


@pytest.mark.parametrize("scale", ["d", "sqrt_d"])
def test_single_token_is_degenerate(scale):
    model, dr = _draws(d=10, V=12, N=7, T=1, seed=2, L=1)
    args = (dr.Z, dr.u, dr.train[2], model.n_pos, np.array([0.0, 5.0]), 2.0, scale)
    assert np.array_equal(attention_weights(*args), np.ones((2, 7, 1)))
    assert np.array_equal(literal_attention_weights(*args), np.ones((2, 7, 1)))
    assert np.array_equal(limit_weights(1, 2.0, scale), [1.0])
    res = measure_attention(dr, model.n_pos, np.array([0.0, 5.0]), 2, 2.0, scale)
    assert np.array_equal(res.kappa, [1.0, 1.0]) and np.array_equal(res.alpha, [1.0, 1.0])
    assert np.all(res.attention_distance == 0)


def test_pool_attention_is_the_literal_sum():
    model, dr = _draws(d=8, V=6, N=11, T=5, seed=4)
    xi, _, tokens = dr.train
    W = np.random.default_rng(0).random((11, 5))
    C0T, a = pool_attention(dr.Z, tokens, xi, W)
    lit = np.stack([sum(W[n, t] * dr.Z[:, tokens[n, t]] for t in range(5)) for n in range(11)])
    assert np.abs(C0T - lit).max() < 1e-12 and np.allclose(a, (W * xi).sum(axis=1))


@pytest.mark.parametrize("scale", ["d", "sqrt_d"])
def test_measure_attention_matches_explicit_statistic(scale):
    model, dr = _draws(d=16, V=20, N=30, T=4, seed=5)
    xi, _, tokens = dr.train
    snr, tau = np.array([0.0, 6.0]), 1.5
    res = measure_attention(dr, model.n_pos, snr, 2, tau, scale)
    W = literal_attention_weights(dr.Z, dr.u, tokens, model.n_pos, snr, tau, scale)
    sign = np.where(np.arange(model.V) < model.n_pos, 1.0, -1.0)
    for i, s in enumerate(snr):
        E = dr.Z + np.sqrt(s) * np.outer(dr.u, sign)
        C = np.einsum("nt,dnt->dn", W[i], E[:, tokens])           # c_n = sum_t w_{n,t} x_t
        vals, vecs = np.linalg.eigh(C @ C.T / model.N)
        assert np.allclose(res.eigenvalues[i], vals[::-1][:2], rtol=1e-10)
        assert np.allclose(res.overlap[i], (dr.u @ vecs[:, ::-1][:, :2]) ** 2, atol=1e-10)
        assert res.kappa[i] == pytest.approx(np.mean(np.sum(W[i] ** 2, axis=1)), rel=1e-12)
        assert res.alpha[i] == pytest.approx(np.mean(np.sum(W[i] * xi, axis=1) ** 2), rel=1e-12)
        dist = np.abs(W[i] - causal_weights(4, tau)).sum(axis=1).mean()
        assert res.attention_distance[i] == pytest.approx(dist, rel=1e-9)
    if scale == "d":
        assert np.array_equal(res.limit_distance, res.attention_distance)


def test_scheme_class():
    s = Attention(tau=1)
    assert isinstance(s, Scheme) and s.data_dependent and s.scheme == "attention" and s.scale == "d"
    assert s.label == "attention(tau=1)"
    assert Attention(tau=1, scale="sqrt_d").label == "attention(tau=1, scale=sqrt_d)"
    assert Attention(tau=2, name="att").label == "att"
    assert np.array_equal(s.weights(np.eye(8)), causal_weights(8, 1.0))
    assert np.array_equal(Attention(tau=1, scale="sqrt_d").weights(np.eye(8)), np.full(8, 1 / 8))
    for bad in ({"tau": -0.1}, {"tau": float("inf")}, {"tau": float("nan")}, {"tau": 1, "scale": "d2"},
                {"tau": 1, "extra": 3}):
        with pytest.raises(ValidationError):
            Attention(**bad)
    with pytest.raises(ValidationError):
        s.tau = 2.0                                                 # frozen
    with pytest.raises(ValueError, match="unknown attention scale"):
        limit_weights(4, 1.0, "d2")


def test_distance_to_causal_shrinks_with_d():
    """Scale d, tau = 1: the L1 distance falls roughly as d^-1/2 (docs/theory.md §6.3: 0.033 at d = 100)."""
    dist = {}
    for d in (50, 400):
        model, dr = _draws(d=d, V=2 * d, N=2 * d, T=16, seed=d, L=4)
        W = attention_weights(dr.Z, dr.u, dr.train[2], model.n_pos, np.array([4.0]), 1.0)
        per_seq = np.abs(W[0] - causal_weights(16, 1.0)).sum(axis=1)
        dist[d] = (per_seq.mean(), per_seq.std(ddof=1) / np.sqrt(per_seq.size))
    (m50, s50), (m400, s400) = dist[50], dist[400]
    assert m400 + 4 * s400 < m50 - 4 * s50
    # d^-1/2 predicts a ratio of 0.354 over 8x in d; the O(1/d) part (repeated tokens, O(T^2 / V)) lowers it
    assert 0.25 < m400 / m50 < 0.45


@pytest.mark.slow
def test_spectrum_at_d400_matches_causal_theory():
    """d = 400, delta = gamma = 0.5, T = 16, prefix(4), class-centred, scale d, tau = 1, snr = 4.

    Theory: §4 with rho = alpha snr / kappa from the causal(tau) limit weights; lambda_1 is divided by
    the realised kappa. Allowance: the measured finite-d bias at d = 400 (fixed weights ~0.5 % of
    lambda_1, attention's own -0.02 on lambda_1/kappa) is covered by 0.1 on lambda_1/kappa and
    0.005 on the alignment.
    """
    d, T, tau, snr = 400, 16, 1.0, np.array([4.0])
    corr = make_correlation("prefix", L=4)
    R, w = corr.matrix(T), causal_weights(T, tau)
    rho = (w @ R @ w) * snr[0] / (w @ w)
    lam, ov = [], []
    for r in range(10):
        model = CellModel(d=d, V=2 * d, N=2 * d, T=T, w=w, correlation=corr, centering="class", top_k=2)
        res = measure_attention(draw_replicate(model, np.random.default_rng([11, r])), model.n_pos, snr, 2, tau)
        lam.append(res.eigenvalues[0, 0] / res.kappa[0])
        ov.append(res.overlap[0, 0])
    assert_mc_close(np.array(lam), float(sample_outlier(rho, 0.5, 0.5)), allowance=0.1, what="lambda_1/kappa")
    assert_mc_close(np.array(ov), float(overlap(rho, 0.5, 0.5)), allowance=0.005, what="alignment")


@pytest.mark.slow
def test_sqrt_d_spectrum_is_mean_pooling():
    """Scale sqrt_d: the self-score ~ tau sqrt(d) wins, so the pooled vectors are mean pooling's.

    Copies of a token share its embedding, so even where attention splits over repeated tokens the
    pooled vector is unchanged; what remains is O(T exp(tau^2/2 - tau sqrt d)) ~ 1e-7 at d = 400, tau = 2.
    """
    d, T = 400, 16
    model, dr = _draws(d=d, V=2 * d, N=2 * d, T=T, seed=9, L=4)
    snr = np.array([4.0])
    res = measure_attention(dr, model.n_pos, snr, 2, 2.0, "sqrt_d")
    fixed = measure(model, dr, snr)                                  # model.w is mean pooling
    assert np.abs(res.eigenvalues / fixed.eigenvalues - 1).max() < 1e-5
    assert np.abs(res.overlap - fixed.overlap).max() < 1e-5
    assert res.attention_distance[0] > 0.3 and res.limit_distance[0] < 0.05


def test_benchmark_agrees():
    out = benchmark_attention(d=30, n_snr=3, repeat=1)
    assert out["max_abs_diff"] < 1e-8 and out["ratio"] > 0
