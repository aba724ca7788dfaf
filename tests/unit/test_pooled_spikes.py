"""The signal outlier over the realised pooling matrix (T >= 2): its quadrature, its formula given A, its cells."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.model.correlation import IID, Decay, Markov
from rmtsweep.model.replicate import CellModel, simulate_replicate
from rmtsweep.model.topk import spectrum_top_k
from rmtsweep.theory import spikes
from rmtsweep.theory.null_law import POOLED_TAIL, gram, gram_eigenvalues, pooled_model, pooled_null, pooling_matrix
from rmtsweep.theory.pooled_spikes import _draw_prediction, gauss_quadrature, pooled_spikes


def test_the_lanczos_quadrature_is_the_spectral_measure_of_the_start_vector():
    """Against a full eigendecomposition: polynomials up to degree 2k - 1 exactly, and the resolvent the
    outlier equation needs (a pole just above the spectrum) to 1e-8."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((300, 200))
    M, v = X @ X.T / 200, rng.standard_normal(300)
    lam, Q = np.linalg.eigh(M)
    mass = (Q.T @ v) ** 2 / (v @ v)
    nodes, weights = gauss_quadrature(lambda x: M @ x, v, 24)
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    for k in (1, 5, 20, 47):
        assert weights @ nodes**k == pytest.approx(mass @ lam**k, rel=1e-8)
    pole = lam[-1] * 1.02
    assert weights @ (1 / (pole - nodes)) == pytest.approx(mass @ (1 / (pole - lam)), rel=1e-8)


GEO = 2.0 ** -np.arange(4) / (2 - 2.0 ** -3)


@pytest.mark.slow
@pytest.mark.parametrize("w, corr, delta, gamma, mult", [(GEO[:2] / GEO[:2].sum(), Markov(r=0.8), 0.25, 1.0, 2.0),
                                                        (np.full(4, 0.25), IID(), 1.0, 0.25, 1.4),
                                                        (np.full(2, 0.5), Decay(r=0.5), 0.5, 0.5, 3.0),
                                                        (np.full(3, 1 / 3), Decay(r=0.3), 1.0, 0.5, 2.0)])
def test_given_the_pooling_matrix_the_outlier_and_its_alignment_are_the_derived_ones(w, corr, delta, gamma, mult):
    """One pooling matrix A held fixed, 600 fresh tables Z and directions u: the mean top eigenvalue and alignment
    of S = C C^T / N, C = Z A^T + sqrt(snr) u a^T, are the formula's given A (within 3 standard errors plus 0.1 %:
    its deterministic equivalent is exact as d grows). Two tokens a sequence (mean weights, T = 2) need no extra
    term: the noise given A is exactly Gaussian, and the formula takes A and a as realised (docs/theory.md §6.5)."""
    d, reps = 160, 600
    kappa = float(w @ w)
    model = pooled_model(w, corr, delta, gamma, d)
    rng = np.random.default_rng([w.size, d, 7])
    A, a = pooling_matrix(model, rng)
    K = gram(A)
    scale = model.V / (model.N * kappa)
    nodes, weights = gauss_quadrature(lambda x: scale * (A @ (A.T @ x)), a, 48)
    alpha_hat = float(a @ a) / model.N
    snr = np.array([float(spikes.sample_threshold(delta, gamma)) * mult * kappa / alpha_hat])
    lam, ov, *_ = _draw_prediction(snr, gram_eigenvalues(K, model), nodes, weights, alpha_hat, 0.0, kappa, delta, d,
                                   min(0.5, POOLED_TAIL / d))
    sims = []
    for _ in range(reps):
        Z = rng.standard_normal((model.V, d))
        u = rng.standard_normal(d)
        e, o = spectrum_top_k(A @ Z, a, u / np.linalg.norm(u), snr, 1)
        sims.append((e[0, 0] / kappa, o[0, 0]))
    sims = np.array(sims)
    mean, se = sims.mean(0), sims.std(0, ddof=1) / np.sqrt(reps)
    assert abs(mean[0] - lam[0]) <= 3 * se[0] + 0.001 * lam[0]
    assert abs(mean[1] - ov[0]) <= 3 * se[1] + 0.001


def test_the_spikes_come_from_the_pooled_nulls_draws():
    """Same seed, same draws: the null candidates are pooled_null's, and snr = 0 predicts the null's mean and
    the alignment of a direction independent of u."""
    w, corr = np.full(3, 1 / 3), IID()
    ps = pooled_spikes([0.0, 4.0], w, corr, 0.5, 0.5, 100)
    pn = pooled_null(w, corr, 0.5, 0.5, 100)
    assert np.array_equal(ps.location, pn.location, equal_nan=True)
    assert np.array_equal(ps.scale, pn.scale, equal_nan=True)
    assert ps.lambda1[0] < np.nanmean(pn.location[:, 0])                # TW_1's mean is -1.21
    assert ps.overlap[0] == pytest.approx(1 / 100, rel=1e-12)       # u independent of S: E |v^T u|^2 = 1/d
    assert ps.overlap[1] > 0.5


def _simulate(d: int, T: int, delta: float, gamma: float, w: np.ndarray, corr, snr: np.ndarray, reps: int, seed: int):
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1)
    rng = np.random.default_rng(seed)
    runs = [simulate_replicate(model, snr, rng) for _ in range(reps)]
    lam = np.array([r.eigenvalues[:, 0] for r in runs]) / float(w @ w)
    return lam.mean(0), lam.std(0, ddof=1) / np.sqrt(reps)


@pytest.mark.slow
@pytest.mark.parametrize("w, corr, delta, gamma, mult", [(np.full(4, 0.25), IID(), 1.0, 0.25, 0.0),
                                                        (GEO[:2] / GEO[:2].sum(), Markov(r=0.8), 0.25, 1.0, 1.2)])
def test_the_store_size_prediction_holds_where_the_cubic_misses(w, corr, delta, gamma, mult):
    """d = 400, 64 seeded replicates of the whole model: the mean lambda_1 is within 3.5 standard errors of
    pooled_spikes (the replicates' and the prediction's) and more than 3.5 from the cubic's limit value. Without
    signal (mean weights, T = 4) the cubic's edge ignores the Tracy-Widom shift; just above the threshold (weights
    2^-t, strongly correlated signs) its outlier ignores how few tokens carry the weight (docs/theory.md §6.5)."""
    d, reps = 400, 64
    kappa, alpha = float(w @ w), float(w @ corr.matrix(w.size) @ w)
    rho_c = float(spikes.sample_threshold(delta, gamma))
    snr = np.array([rho_c * mult * kappa / alpha])
    ours = pooled_spikes(snr, w, corr, delta, gamma, d)
    mean, se = _simulate(d, w.size, delta, gamma, w, corr, snr, reps, seed=41)
    cubic = spikes.sample_outlier(alpha * snr / kappa, delta, gamma)        # the bulk's edge without signal
    assert abs(mean[0] - ours.lambda1[0]) <= 3.5 * np.hypot(se[0], ours.lambda1_se[0])
    assert abs(mean[0] - cubic[0]) > 3.5 * se[0]
