"""Finite-d theory (rmtsweep.theory.finite_d): Tracy-Widom edge scale, outlier spread, detection probability."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.model import (CellModel, correlation_matrix, draw_signs, make_correlation, make_scheme,
                            pooling_weights, simulate_replicate)
from rmtsweep.theory import bulk, spikes
from rmtsweep.theory.finite_d import (TW1_MEAN, TW1_SD, detection_probability, edge_density_coefficient,
                                      null_top_eigenvalue, outlier_sd, pooled_sign_excess_kurtosis, tw1_cdf,
                                      tw_scale)

CASES = [(0.5, 0.5), (1.0, 0.25), (0.25, 1.0), (2.0, 3.0), (0.05, 0.7)]


def johnstone(c, d):
    """Johnstone (2001): sigma = (1 + sqrt c)^(4/3) c^(-1/6) n^(-2/3) for p = d variables, n = d / c samples."""
    return (1 + np.sqrt(c)) ** (4 / 3) * c ** (-1 / 6) * (d / c) ** (-2 / 3)


def test_tw1_cdf_is_the_goe_tracy_widom_law():
    """The law itself is tested against published values in test_tracy_widom.py; here its use as F_1."""
    x = np.linspace(-9.0, 7.0, 3201)
    F = tw1_cdf(x)
    assert np.all(np.diff(F) >= 0) and F[0] < 1e-12 and F[-1] > 1 - 1e-6
    mean = x[-1] - np.sum(F[1:] + F[:-1]) / 2 * (x[1] - x[0])          # E X = x_max - ∫ F
    second = x[-1] ** 2 - np.sum((x * F)[1:] + (x * F)[:-1]) * (x[1] - x[0])   # E X^2 = x_max^2 - 2 ∫ x F
    assert mean == pytest.approx(TW1_MEAN, abs=2e-3)
    assert np.sqrt(second - mean**2) == pytest.approx(TW1_SD, abs=2e-3)
    assert float(tw1_cdf(-1.2685)) == pytest.approx(0.5, abs=2e-3)     # median of TW_1 (Bornemann 2010)
    out = tw1_cdf(np.array([-np.inf, np.inf, np.nan]))
    assert out[0] < 1e-30 and out[1] > 1 - 1e-12 and np.isnan(out[2])
    assert tw1_cdf(np.zeros((2, 3))).shape == (2, 3) and tw1_cdf(0.0).shape == ()


@pytest.mark.parametrize("delta, gamma", CASES)
def test_edge_coefficient_is_the_square_root_coefficient_of_the_density(delta, gamma):
    lam = float(bulk.edge(delta, gamma))
    c = float(edge_density_coefficient(delta, gamma))
    eps = np.array([1e-5, 1e-7])
    ratio = bulk.density(lam - eps, delta, gamma) / (c / np.pi * np.sqrt(eps))
    assert np.allclose(ratio, 1.0, atol=1e-3)


@pytest.mark.parametrize("c", [0.1, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("d", [50, 400, 10_000])
def test_tw_scale_reduces_to_johnstone(c, d):
    # delta -> 0: MP_gamma, Johnstone's scale with c = gamma; gamma -> 0 by the symmetry of the law
    for tiny in (0.0, 1e-9):
        assert float(tw_scale(tiny, c, d)) == pytest.approx(johnstone(c, d), rel=1e-6)
        assert float(tw_scale(c, tiny, d)) == pytest.approx(johnstone(c, d), rel=1e-6)
    # and continuously as delta -> 0
    err = [abs(float(tw_scale(x, c, d)) / johnstone(c, d) - 1) for x in (1e-3, 1e-4, 1e-5)]
    assert err[0] > err[1] > err[2] and err[2] < 1e-3


def test_tw_scale_symmetry_scaling_and_broadcast():
    delta = np.array([0.25, 0.5, 1.0, 2.0])[:, None]
    gamma = np.array([0.3, 0.5, 1.5])[None, :]
    s = tw_scale(delta, gamma, 200)
    assert s.shape == (4, 3) and np.all(s > 0)
    assert np.allclose(s, tw_scale(gamma.T, delta.T, 200).T)           # symmetric in (delta, gamma)
    assert np.allclose(tw_scale(delta, gamma, 1600) / s, 8.0 ** (-2 / 3))
    m, sd = null_top_eigenvalue(0.5, 0.5, 100)
    assert float(m) == pytest.approx(float(bulk.edge(0.5, 0.5)) + TW1_MEAN * float(tw_scale(0.5, 0.5, 100)))
    assert float(sd) == pytest.approx(TW1_SD * float(tw_scale(0.5, 0.5, 100)))


@pytest.mark.parametrize("gamma", [0.2, 0.5, 1.0])
def test_outlier_sd_reduces_to_paul(gamma):
    """delta = 0: Paul (2007), n Var(lambda_1) = 2 l^2 (1 - gamma/(l - 1)^2), l = 1 + rho, n = d / gamma."""
    rho = np.array([1.2, 2.0, 5.0]) * np.sqrt(gamma) + 0.1
    d = 300
    ell = 1 + rho
    paul = np.sqrt(2 * ell**2 * (1 - gamma / (ell - 1) ** 2) * gamma / d)
    assert np.allclose(outlier_sd(rho, 0.0, gamma, d), paul, rtol=1e-10)
    assert np.isnan(outlier_sd(0.9 * np.sqrt(gamma), 0.0, gamma, d))


@pytest.mark.parametrize("delta, gamma", CASES)
def test_outlier_and_edge_scales_meet_in_the_critical_window(delta, gamma):
    """Near rho_c the outlier exits the edge by w^2 sigma_d and its variance is 4 w sigma_d^2: the GOE
    rank-one spike's universal window. The two scales are derived independently; this checks both."""
    rc = float(spikes.sample_threshold(delta, gamma))
    d = 1e6
    s = float(tw_scale(delta, gamma, d))
    rho = rc + np.array([1e-4, 1e-5])
    w = np.sqrt((spikes.sample_outlier(rho, delta, gamma) - bulk.edge(delta, gamma)) / s)
    assert np.allclose(outlier_sd(rho, delta, gamma, d) ** 2 / (4 * w * s**2), 1.0, atol=2e-3)


def test_pooled_sign_excess_kurtosis():
    T = 16
    assert pooled_sign_excess_kurtosis(np.full(T, 1 / T), np.zeros(T)) == pytest.approx(-2 / T)
    prefix = make_correlation("prefix", L=4)
    R, q = correlation_matrix(prefix, T), prefix.copy_probabilities(T)
    assert pooled_sign_excess_kurtosis(pooling_weights(make_scheme("optimal"), R), q) == pytest.approx(-2.0)
    for corr in (prefix, make_correlation("decay", r=0.7), make_correlation("label", q=(0.9, 0.2, 0.0, 0.5, 1.0, 0.3))):
        w = pooling_weights(make_scheme("harmonic"), correlation_matrix(corr, 6))
        xi, _ = draw_signs(corr, 6, 400_000, np.random.default_rng(4))
        b = xi @ w
        emp = np.mean(b**4) / np.mean(b**2) ** 2 - 3
        assert pooled_sign_excess_kurtosis(w, corr.copy_probabilities(6)) == pytest.approx(emp, abs=0.02)


@pytest.mark.parametrize("margin", [0.0, 1.0, 2.0])
@pytest.mark.parametrize("kurt", [0.0, -2.0])
def test_detection_probability_is_a_monotone_probability(margin, kurt):
    rho = np.linspace(0.0, 12.0, 2401)[:, None, None]
    delta = np.array([0.25, 0.5, 1.0, 2.0])[None, :, None]
    gamma = np.array([0.25, 0.5, 1.0])[None, None, :]
    for d in (50, 100, 400, 5000):
        p = detection_probability(rho, delta, gamma, d, margin, kurt)
        assert p.shape == (2401, 4, 3)
        assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
        assert np.all(np.diff(p, axis=0) >= -1e-12)                 # nondecreasing in the SNR
        lam = bulk.edge(delta, gamma)[0]
        x_t = margin * d ** (-2 / 3) * lam / tw_scale(delta, gamma, d)[0]
        assert np.allclose(p[0], 1 - tw1_cdf(x_t))                  # no spike: the Tracy-Widom false alarms
        assert np.all(p[-1] > 0.95)
    assert np.isnan(detection_probability(np.nan, 0.5, 0.5, 100))
    # sharper with d above the transition, and the null rate does not depend on d
    p = detection_probability([0.0, 2.6], 0.5, 0.5, np.array([[100], [400], [1600]]))
    assert np.allclose(p[:, 0], p[0, 0]) and np.all(np.diff(p[:, 1]) > 0)


def _rates(corr, scheme, snr, d=100, reps=64, seed=0):
    T, delta, gamma = 16, 0.5, 0.5
    R = correlation_matrix(corr, T)
    w = pooling_weights(make_scheme(scheme), R)
    m = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class", top_k=1)
    kappa = float(w @ w)
    lam1 = np.array([simulate_replicate(m, snr, np.random.default_rng([seed, r])).eigenvalues[:, 0]
                     for r in range(reps)]) / kappa
    detected = lam1 > bulk.edge(delta, gamma) * (1 + d ** (-2 / 3))
    rho = float(w @ R @ w) / kappa * snr
    return detected.mean(axis=0), detection_probability(rho, delta, gamma, d, 1.0,
                                                        pooled_sign_excess_kurtosis(w, corr.copy_probabilities(T))), lam1


@pytest.mark.parametrize("corr, snr", [
    (make_correlation("prefix", L=4), np.array([0.0, 0.5, 1.2, 1.4, 1.6, 2.0, 3.0])),   # rho = 1.75 snr
    (make_correlation("iid"), np.array([0.0, 1.0, 2.1, 2.4, 2.8, 3.4, 4.5])),           # rho = snr
], ids=["prefix4", "iid"])
def test_detection_rate_at_small_d(corr, snr):
    """d = 100, delta = gamma = 0.5, T = 16, mean weights, class-centred: 64 replicates per SNR; the
    measured rate is within 3 binomial standard errors + 0.03 of the prediction.
    The SNR values avoid the point just below rho_c, where the max-of-two interpolation is known to
    miss the subcritical push-up (module docstring)."""
    rate, pred, lam1 = _rates(corr, "mean", snr, seed=13)
    se = np.sqrt(pred * (1 - pred) / lam1.shape[0])
    assert np.all(np.abs(rate - pred) <= 3 * se + 0.03), (rate, pred)
    # the null top eigenvalue: Tracy-Widom mean and spread on sigma_d (standard errors of 64 draws)
    m, sd = null_top_eigenvalue(0.5, 0.5, 100)
    x0 = lam1[:, 0]
    assert abs(x0.mean() - float(m)) < 3.5 * float(sd) / np.sqrt(x0.size)
    assert 0.7 < x0.std(ddof=1) / float(sd) < 1.35
