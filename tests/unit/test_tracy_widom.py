"""The Tracy-Widom laws (rmtsweep.theory.tracy_widom) against published values, not against themselves.

Sources:

- moments: Bornemann, "On the numerical evaluation of distributions in random matrix theory: a review",
  Markov Process. Related Fields 16 (2010) 803-866, the table of mean, variance, skewness and excess
  kurtosis of TW_1 and TW_2 (the mean and variance of TW_1 are also in finite_d.TW1_MEAN / TW1_SD);
- TW_1 percentiles: Johnstone, "On the distribution of the largest eigenvalue in principal components
  analysis", Ann. Statist. 29 (2001) 295-327, Table 1 (two decimals);
- 0.95 quantiles to four decimals, TW_1 0.9793 and TW_2 -0.2325: Bejan (2005), "Largest eigenvalues
  and sample covariance matrices. Tracy-Widom and Painleve II: computational aspects and realization
  in S-Plus", the tables of quantiles;
- left tails: Deift, Its & Krasovsky (2008), ``F_2(s) ~ tau_2 |s|^(-1/8) exp(-|s|^3/12)``, and Baik,
  Buckingham & DiFranco (2008), ``F_1(s) ~ tau_1 |s|^(-1/16) exp(-|s|^3/24 - |s|^(3/2)/(3 sqrt 2))``,
  ``tau_2 = 2^(1/24) e^(zeta'(-1))``, ``tau_1 = 2^(-11/48) e^(zeta'(-1)/2)``; right tails (Tracy & Widom
  1994, 1996): ``1 - F_2 ~ e^(-4 s^(3/2)/3) / (16 pi s^(3/2))``, ``1 - F_1 ~ e^(-2 s^(3/2)/3) / (4 sqrt(pi) s^(3/4))``.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.polynomial.legendre import leggauss

from rmtsweep.theory.tracy_widom import NODES, S_MAX, S_MIN, tw_cdf, tw_pdf, tw_quantile

# (mean, variance, skewness, excess kurtosis), Bornemann (2010)
MOMENTS = {1: (-1.2065335745820, 1.6077810345810, 0.2934645240, 0.1652429384),
           2: (-1.7710868074116, 0.8131947928329, 0.2240842036, 0.0934480876)}
JOHNSTONE_TW1 = {0.01: -3.90, 0.05: -3.18, 0.10: -2.78, 0.30: -1.91, 0.50: -1.27, 0.70: -0.59,
                 0.90: 0.45, 0.95: 0.98, 0.99: 2.02}
ZETA_PRIME_M1 = 1 / 12 - np.log(1.2824271291006226)      # zeta'(-1) = 1/12 - log(Glaisher's constant)


def moments(beta):
    """Mass, mean, variance, skewness, excess kurtosis of the density by 240-point Gauss-Legendre on [S_MIN, 12]."""
    u, w = leggauss(240)
    x = S_MIN + (u + 1) / 2 * (12 - S_MIN)
    w = w * (12 - S_MIN) / 2
    f = tw_pdf(x, beta)
    mean = w @ (x * f)
    var = w @ ((x - mean) ** 2 * f)
    return (w @ f, mean, var, w @ ((x - mean) ** 3 * f) / var**1.5, w @ ((x - mean) ** 4 * f) / var**2 - 3)


@pytest.mark.parametrize("beta", [1, 2])
def test_moments_are_bornemanns(beta):
    mass, mean, var, skew, kurt = moments(beta)
    m, v, s, k = MOMENTS[beta]
    assert mass == pytest.approx(1.0, abs=1e-12)
    assert mean == pytest.approx(m, abs=1e-10)
    assert var == pytest.approx(v, abs=1e-10)
    assert skew == pytest.approx(s, abs=1e-9)
    assert kurt == pytest.approx(k, abs=1e-9)


def test_quantiles_are_the_published_ones():
    p = np.array(list(JOHNSTONE_TW1))
    assert np.allclose(tw_quantile(p, 1), list(JOHNSTONE_TW1.values()), atol=0.005 + 1e-9)
    assert float(tw_quantile(0.95, 1)) == pytest.approx(0.9793, abs=1e-4)
    assert float(tw_quantile(0.95, 2)) == pytest.approx(-0.2325, abs=1e-4)
    assert float(tw_quantile(0.5, 1)) == pytest.approx(-1.2685, abs=1e-4)      # median (finite_d test)


@pytest.mark.parametrize("beta", [1, 2])
def test_quantile_inverts_the_cdf_and_refuses_what_it_cannot_give(beta):
    p = np.array([[1e-12, 0.01, 0.3], [0.5, 0.9, 1 - 1e-12]])
    q = tw_quantile(p, beta)
    assert q.shape == (2, 3) and np.all(np.diff(q.ravel()) > 0)
    assert np.allclose(tw_cdf(q, beta), p, rtol=1e-10, atol=1e-14)
    assert np.array_equal(tw_quantile([0.0, 1.0], beta), [-np.inf, np.inf]) and np.isnan(tw_quantile(np.nan, beta))
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]; got np.float64\(1.5\)"):
        tw_quantile([0.5, 1.5], beta)
    with pytest.raises(ValueError, match=r"is below F_\d\(S_MIN = -10.0\)"):
        tw_quantile(1e-40, beta)


@pytest.mark.parametrize("beta", [1, 2])
def test_the_tails_follow_their_asymptotics(beta):
    s = np.array([-9.0, -8.0, -6.0, -4.0])
    a = -s
    if beta == 1:
        left = 2 ** (-11 / 48) * np.exp(ZETA_PRIME_M1 / 2) * a ** (-1 / 16) * np.exp(-a**3 / 24 - a**1.5 / (3 * np.sqrt(2)))
    else:
        left = 2 ** (1 / 24) * np.exp(ZETA_PRIME_M1) * a ** (-1 / 8) * np.exp(-a**3 / 12)
    assert np.allclose(tw_cdf(s, beta) / left, 1.0, atol=4e-3)          # F down to 1e-27, relative
    r = np.array([2.0, 4.0, 6.0])
    right = (np.exp(-2 / 3 * r**1.5) / (4 * np.sqrt(np.pi) * r**0.75) if beta == 1
             else np.exp(-4 / 3 * r**1.5) / (16 * np.pi * r**1.5))
    ratio = (1 - tw_cdf(r, beta)) / right                                  # corrections O(s^(-3/2)), from below
    assert np.all(np.diff(ratio) > 0) and 0.65 < ratio[0] and ratio[-1] < 1 and ratio[-1] > 0.9


@pytest.mark.parametrize("beta", [1, 2])
def test_the_density_is_the_derivative_and_the_quadrature_has_converged(beta):
    s = np.linspace(-8.0, 8.0, 81)
    h = 1e-4
    fd = (tw_cdf(s + h, beta) - tw_cdf(s - h, beta)) / (2 * h)
    assert np.allclose(tw_pdf(s, beta), fd, atol=1e-9)
    grid = np.linspace(S_MIN, S_MAX, 105)
    assert np.allclose(tw_cdf(grid, beta), tw_cdf(grid, beta, nodes=2 * NODES), rtol=0, atol=5e-14)
    assert np.allclose(tw_pdf(grid, beta), tw_pdf(grid, beta, nodes=2 * NODES), rtol=0, atol=5e-14)
    F = tw_cdf(grid, beta)
    assert np.all(np.diff(F) >= 0) and F[0] < 1e-21 and F[-1] == 1.0 and np.all(tw_pdf(grid, beta) >= 0)


def test_special_values_shapes_and_bad_beta():
    out = tw_cdf(np.array([-np.inf, -50.0, np.nan, 50.0, np.inf]))
    assert np.array_equal(out[[0, 1, 3, 4]], [0.0, 0.0, 1.0, 1.0]) and np.isnan(out[2])
    assert np.array_equal(tw_pdf([-np.inf, -50.0, 50.0, np.inf]), [0.0] * 4)
    assert tw_cdf(0.0).shape == () and tw_cdf(np.zeros((2, 3, 4))).shape == (2, 3, 4)
    x = np.array([[0.3, -1.0], [0.3, 0.3]])                               # repeated values: computed once, same result
    assert np.array_equal(tw_cdf(x), np.vectorize(lambda v: float(tw_cdf(v)))(x))
    with pytest.raises(ValueError, match=r"beta must be 1 \(GOE\) or 2 \(GUE\); got 4"):
        tw_cdf(0.0, beta=4)


@pytest.mark.parametrize("beta", [1, 2])
def test_agrees_with_the_old_tracywidom_package_within_its_tabulation_error(beta):
    """An extra check while the replaced package is installed: its table (1e-6 digits on a 0.01 grid,
    cubic spline, tail asymptotics) is within 5e-5 of the quadrature (measured: 4.0e-5 at -3.68 for
    beta = 1, 4.3e-5 at -2.82 for beta = 2; the published moments above decide which is right)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                                   # its `import scipy.misc`
        TracyWidom = pytest.importorskip("TracyWidom").TracyWidom
        old = TracyWidom(beta=beta)
        x = np.linspace(-7.0, 7.0, 141)
        assert np.allclose(old.cdf(x), tw_cdf(x, beta), rtol=0, atol=5e-5)
        assert np.allclose(old.pdf(x), tw_pdf(x, beta), rtol=0, atol=2e-4)


def test_rmtsweep_no_longer_imports_the_package_or_scipy_misc():
    """In a fresh interpreter: importing rmtsweep and evaluating F_1 warns nothing about scipy.misc."""
    code = ("import sys, warnings\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    import rmtsweep\n"
            "    from rmtsweep.theory import finite_d\n"
            "    finite_d.detection_probability([0.5, 3.0], 0.5, 0.5, 100)\n"
            "bad = [str(w.message) for w in caught if 'scipy.misc' in str(w.message)]\n"
            "assert not bad, bad\n"
            "assert 'TracyWidom' not in sys.modules and 'scipy.misc' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
