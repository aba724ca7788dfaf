"""Tests of rmtsweep.theory: the bulk law MP_delta ⊠ MP_gamma and the spike formulas (docs/theory.md §3)."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.optimize import brentq

from rmtsweep import theory
from rmtsweep.theory import (
    atom,
    density,
    edge,
    moments,
    outlier_from_stieltjes,
    overlap,
    phase,
    population_outlier,
    population_overlap,
    population_threshold,
    sample_outlier,
    sample_threshold,
    snr_threshold,
    stieltjes,
    stieltjes_derivative,
    uncentred,
)

REFERENCE = [(0.5, 0.5), (1.0, 0.25), (0.25, 1.0)]
BULK_CASES = REFERENCE + [(2.0, 0.5), (1.0, 1.0), (0.5, 3.0), (3.0, 3.0)]  # (1, 1), (3, 3): hard edge at 0


def support_breaks(delta: float, gamma: float) -> np.ndarray:
    """0, the edge, and the other critical values of ``z(g)`` inside: where the density has a kink or gap."""
    p, q = delta + gamma + delta * gamma, 2 * delta * gamma
    a = np.roots([1.0, 0.0, -p, -q])
    a = a.real[(np.abs(a.imag) < 1e-12) & (np.abs(a.real) > 1e-12)]
    lam = (a + 1) * (a + delta) * (a + gamma) / a**2
    top = float(edge(delta, gamma))
    return np.unique(np.r_[0.0, lam[(lam > 1e-12) & (lam < top * (1 - 1e-9))], top])


@functools.lru_cache
def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.polynomial.legendre.leggauss(n)


def integrate(fun, delta: float, gamma: float, n: int = 256) -> float:
    """``∫_0^edge fun(x) f(x) dx``: Gauss–Legendre in ``th`` on each piece, ``x = lo + (hi - lo) u(th)``,
    ``u = (1 - cos th) / 2`` (``u^3`` on the piece starting at 0).

    The substitution turns the square-root edges into smooth integrands, so the rule converges fast on
    each piece between support breaks.
    """
    nodes, weights = gauss_legendre(n)
    th, wth = np.pi * (nodes + 1) / 2, np.pi * weights / 2
    total = 0.0
    breaks = support_breaks(delta, gamma)
    u, du = (1 - np.cos(th)) / 2, np.sin(th) / 2
    for lo, hi in zip(breaks[:-1], breaks[1:]):
        power = 3 if lo == 0 else 1  # x ~ u^3 at 0 also tames the x^(-2/3) hard edge of delta = gamma = 1
        x = lo + (hi - lo) * u**power
        total += np.sum(wth * fun(x) * density(x, delta, gamma) * (hi - lo) * power * u ** (power - 1) * du)
    return float(total)


def mp_density(x: np.ndarray, c: float) -> np.ndarray:
    lo, hi = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    inside = (x > lo) & (x < hi)
    safe_x = np.where(inside, x, 1.0)
    return np.where(inside, np.sqrt(np.abs((hi - x) * (x - lo))) / (2 * np.pi * c * safe_x), 0.0)


def psi_prime_theory(rho: float, delta: float, gamma: float) -> float:
    """``psi'(ell(rho))`` written exactly as in docs/theory.md §3.3 (independent of the module's algebra)."""
    ell = rho * (rho + 1 - delta) / (rho - delta)
    zeta = 1 - delta / (rho - delta) ** 2
    return 1 - gamma + 2 * gamma * ell / rho - gamma * ell**2 / (rho**2 * zeta)


# --- bulk -------------------------------------------------------------------------------------------


def test_edge_reference() -> None:
    assert float(edge(0.5, 0.5)) == pytest.approx(4.409, abs=5e-4)
    assert float(edge(0.0, 0.0)) == 1.0


@pytest.mark.parametrize("c", [0.1, 0.5, 1.0, 3.0])
def test_edge_marchenko_pastur_limits(c: float) -> None:
    mp_edge = (1 + np.sqrt(c)) ** 2
    assert float(edge(1e-9, c)) == pytest.approx(mp_edge, abs=1e-6)
    assert float(edge(c, 0.0)) == pytest.approx(mp_edge, abs=1e-12)


def test_edge_symmetric_and_minimum_of_z() -> None:
    d, g = np.meshgrid([0.1, 0.5, 1.0, 2.5], [0.05, 0.5, 1.0, 4.0])
    np.testing.assert_allclose(edge(d, g), edge(g, d), rtol=1e-14)
    gg = 1 + np.logspace(-4, 4, 200_001)  # brute-force minimum of z(g) over g > 1
    for delta, gamma in BULK_CASES:
        z = gg * (1 - delta + delta * gg) * (1 - gamma + gamma * gg) / (gg - 1)
        assert float(edge(delta, gamma)) == pytest.approx(z.min(), rel=1e-7)
        assert float(edge(delta, gamma)) <= z.min()


@pytest.mark.parametrize(("delta", "gamma"), BULK_CASES)
def test_edge_is_end_of_support(delta: float, gamma: float) -> None:
    lam = float(edge(delta, gamma))
    assert density(lam * (1 - 1e-6), delta, gamma) > 0
    assert density(lam * (1 + 1e-9), delta, gamma) == 0
    assert density(lam * 1.5, delta, gamma) == 0


@pytest.mark.parametrize(("delta", "gamma"), [(0.5, 0.5), (2.0, 0.5), (0.5, 3.0), (3.0, 2.0)])
def test_density_gap_above_zero(delta: float, gamma: float) -> None:
    lower = support_breaks(delta, gamma)[1]  # from np.roots, independent of the module's trig formula
    assert 0 < lower < float(edge(delta, gamma))
    assert density(lower * (1 + 1e-6), delta, gamma) > 0
    below = lower * np.array([1e-20, 1e-8, 0.5, 1 - 1e-6])  # near-double real roots must not leak
    assert np.all(density(below, delta, gamma) == 0)


def test_atom_values() -> None:
    got = atom([0.5, 2.0, 0.5, 4.0, 1.0], [0.5, 0.5, 3.0, 2.0, 1.0])
    np.testing.assert_allclose(got, [0, 0.5, 2 / 3, 0.75, 0])


@pytest.mark.parametrize(("delta", "gamma"), BULK_CASES)
def test_density_mass_is_one_minus_atom(delta: float, gamma: float) -> None:
    mass = integrate(lambda x: np.ones_like(x), delta, gamma)
    # 1e-8: at delta = gamma > 1 the density near 0 sits on a near-double root, good to ~1e-9 in mass
    assert mass == pytest.approx(1 - float(atom(delta, gamma)), abs=1e-8)


@pytest.mark.parametrize(("delta", "gamma"), BULK_CASES)
def test_density_moments(delta: float, gamma: float) -> None:
    m1, m2 = moments(delta, gamma)
    assert integrate(lambda x: x, delta, gamma) == pytest.approx(float(m1), abs=1e-10)
    assert integrate(lambda x: x * x, delta, gamma) == pytest.approx(float(m2), abs=1e-10)
    assert float(m2) == 1 + delta + gamma


@pytest.mark.parametrize("c", [0.25, 0.5, 2.0])
def test_density_marchenko_pastur_limit(c: float) -> None:
    x = np.linspace(-0.5, 7.0, 3001)
    np.testing.assert_allclose(density(x, 0.0, c), mp_density(x, c), atol=1e-12)
    lo, hi = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    away = (np.abs(x - lo) > 1e-3) & (np.abs(x - hi) > 1e-3)  # the edges move by O(1e-8): sqrt effect there
    np.testing.assert_allclose(density(x, c, 1e-8)[away], mp_density(x, c)[away], atol=1e-5)
    assert np.all(density(x, 0.0, 0.0) == 0)  # point mass at 1: no density


def test_density_zero_off_support_and_nonnegative() -> None:
    x = np.linspace(-2.0, 8.0, 4001)
    for delta, gamma in BULK_CASES:
        f = density(x, delta, gamma)
        assert np.all(f >= 0) and np.all(f[x <= 0] == 0)


@pytest.mark.parametrize(("delta", "gamma"), REFERENCE + [(2.0, 0.5)])
def test_stieltjes_matches_integral(delta: float, gamma: float) -> None:
    lam = float(edge(delta, gamma))
    for z in [lam * 1.01, lam * 1.5, lam + 10.0]:
        expected = integrate(lambda x: 1.0 / (z - x), delta, gamma) + float(atom(delta, gamma)) / z
        assert float(stieltjes(z, delta, gamma)) == pytest.approx(expected, rel=1e-10)


def test_stieltjes_asymptotics_derivative_and_domain() -> None:
    delta, gamma = 0.5, 0.25
    z = np.array([1e3, 1e4])
    series = 1 / z + 1 / z**2 + (1 + delta + gamma) / z**3  # moments 1, 1, 1 + delta + gamma
    np.testing.assert_allclose(stieltjes(z, delta, gamma), series, rtol=1e-8)
    z = float(edge(delta, gamma)) * np.array([1.001, 1.2, 3.0])
    h = 1e-6 * z
    fd = (stieltjes(z + h, delta, gamma) - stieltjes(z - h, delta, gamma)) / (2 * h)
    np.testing.assert_allclose(stieltjes_derivative(z, delta, gamma), fd, rtol=1e-6)
    assert np.isnan(stieltjes(0.99 * float(edge(delta, gamma)), delta, gamma))


# --- spikes -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("point", "expected"), zip(REFERENCE, [1.781, 2.366, 1.616]))
def test_sample_threshold_reference(point: tuple[float, float], expected: float) -> None:
    delta, gamma = point
    rho_c = float(sample_threshold(delta, gamma))
    assert rho_c == pytest.approx(expected, abs=5e-4)
    lo = float(population_threshold(delta)) * (1 + 1e-12)  # psi' -> -inf at the population threshold
    root = brentq(psi_prime_theory, lo, 50, args=(delta, gamma), xtol=1e-14)
    assert rho_c == pytest.approx(root, abs=1e-12)
    assert psi_prime_theory(rho_c * 0.99, delta, gamma) < 0 < psi_prime_theory(rho_c * 1.01, delta, gamma)


def test_sample_threshold_limits() -> None:
    delta = np.array([0.1, 0.5, 1.0, 3.0])
    np.testing.assert_allclose(sample_threshold(delta, 0.0), delta + np.sqrt(delta), rtol=1e-14)
    np.testing.assert_allclose(sample_threshold(delta, 1e-9), delta + np.sqrt(delta), atol=1e-8)
    np.testing.assert_allclose(sample_threshold(0.0, delta), np.sqrt(delta), rtol=1e-14)
    assert np.all(sample_threshold(delta, 0.3) > population_threshold(delta))


@pytest.mark.parametrize("delta", [0.0, 1e-10])
def test_classic_spiked_model(delta: float) -> None:
    gamma = 0.5
    rho = np.array([0.8, 1.0, 2.0, 5.0])
    assert float(sample_threshold(delta, gamma)) == pytest.approx(np.sqrt(gamma), abs=1e-5)
    np.testing.assert_allclose(sample_outlier(rho, delta, gamma), (1 + rho) * (1 + gamma / rho), rtol=1e-8)
    expected = (1 - gamma / rho**2) / (1 + gamma / rho)
    np.testing.assert_allclose(overlap(rho, delta, gamma), expected, rtol=1e-8)
    assert float(overlap(0.6, delta, gamma)) == 0


def test_population_level() -> None:
    delta = 0.5
    rho = np.array([0.5, 1.2, 2.0])
    thr = delta + np.sqrt(delta)
    assert float(population_threshold(delta)) == pytest.approx(thr)
    ell = population_outlier(rho, delta)
    assert np.all(np.isnan(ell[:2])) and ell[2] == pytest.approx(2 * 2.5 / 1.5)
    np.testing.assert_allclose(population_overlap(rho, delta), [0, 0, 1 - 0.5 / 1.5**2])


@pytest.mark.parametrize(("delta", "gamma"), REFERENCE)
def test_continuity_at_sample_threshold(delta: float, gamma: float) -> None:
    rho_c = float(sample_threshold(delta, gamma))
    lam = float(edge(delta, gamma))
    assert float(sample_outlier(rho_c * (1 + 1e-7), delta, gamma)) == pytest.approx(lam, abs=1e-4)
    assert 0 < float(overlap(rho_c * (1 + 1e-7), delta, gamma)) < 1e-3
    assert float(sample_outlier(rho_c * 0.9, delta, gamma)) == lam
    assert float(overlap(rho_c * 0.9, delta, gamma)) == 0
    rho = rho_c * np.linspace(1.001, 20, 200)  # monotone above threshold, alignment in (0, 1)
    assert np.all(np.diff(sample_outlier(rho, delta, gamma)) > 0)
    assert np.all(np.diff(overlap(rho, delta, gamma)) > 0) and np.all(overlap(rho, delta, gamma) < 1)


def test_phase() -> None:
    delta, gamma = 0.5, 0.5  # population threshold 1.207, rho_c 1.781
    got = phase([0.3, 1.207, 1.3, 1.78, 1.79, 10.0], delta, gamma)
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, [0, 0, 1, 1, 2, 2])
    np.testing.assert_array_equal(phase([0.5, 1.0], 0.0, 0.0), [2, 2])


@pytest.mark.parametrize(("delta", "gamma"), REFERENCE)
def test_closed_form_matches_one_shot(delta: float, gamma: float) -> None:
    rho = float(sample_threshold(delta, gamma)) * np.array([1.01, 1.2, 2.0, 5.0, 30.0])
    loc, align = outlier_from_stieltjes(rho, delta, gamma)
    np.testing.assert_allclose(loc, sample_outlier(rho, delta, gamma), rtol=1e-10)
    np.testing.assert_allclose(align, overlap(rho, delta, gamma), atol=1e-10)
    loc, align = outlier_from_stieltjes(0.9 * rho[0], delta, gamma)  # below rho_c: edge and 0
    assert float(loc) == float(edge(delta, gamma)) and float(align) == 0


def test_snr_threshold() -> None:
    got = snr_threshold(1.781, [0.5, 0.0, 2.0], [0.25, 0.25, 1.0])
    np.testing.assert_allclose(got, [1.781 / 2, np.inf, 1.781 / 2])


def test_uncentred_mean_weights_at_zero_snr() -> None:
    # mean weights w = 1/T with i.i.d. signs: kappa = alpha = 1/T, w1 = 1.
    T, delta, gamma = 16, 0.5, 0.5
    out = uncentred(0.0, 1 / T, 1 / T, 1.0, delta, gamma)
    assert float(out["rho_mean"]) == pytest.approx(T * delta)
    # rho_b = 8, a = 7.5: psi = 8.5 * 8 * 8 / 7.5^2 = 2176/225 = 9.671. The "≈ 9.9" quoted in earlier notes is a d = 400
    # Monte Carlo figure; ||b||^2 fluctuates by sqrt(2/d), so that estimate has sd ≈ 0.7 per replicate.
    assert float(out["mean_outlier"]) == pytest.approx(2176 / 225, rel=1e-12)
    assert float(out["top"]) == float(out["mean_outlier"])
    assert float(out["rho_signal"]) == pytest.approx(delta)  # below the population threshold
    assert int(out["signal_phase"]) == 0 and int(out["mean_phase"]) == 2
    assert float(out["signal_outlier"]) == float(edge(delta, gamma))
    assert float(out["signal_overlap"]) == 0


def test_uncentred_signal_overlap_and_top() -> None:
    snr = np.array([0.0, 1.0, 4.0])
    alpha, kappa, w1, delta, gamma = 0.5, 0.25, 1.5, 0.5, 0.5
    out = uncentred(snr, alpha, kappa, w1, delta, gamma)
    rho_s = alpha / kappa * (snr + delta)
    np.testing.assert_allclose(out["rho_signal"], rho_s)
    np.testing.assert_allclose(out["signal_outlier"], sample_outlier(rho_s, delta, gamma))
    np.testing.assert_allclose(out["signal_overlap"], overlap(rho_s, delta, gamma) * snr / (snr + delta))
    np.testing.assert_allclose(out["rho_mean"], w1**2 * delta / kappa)
    np.testing.assert_allclose(out["top"], np.maximum(out["signal_outlier"], out["mean_outlier"]))
    assert float(uncentred(0.0, 1.0, 1.0, 1.0, 0.0, 0.5)["signal_overlap"]) == 0  # snr + delta == 0


# --- shapes -----------------------------------------------------------------------------------------


def test_broadcasting_and_dtypes() -> None:
    a = np.array([[0.4], [0.5], [1.0]])  # (3, 1)
    b = np.array([[0.25, 0.5, 1.0, 2.0]])  # (1, 4)
    rho = 3.0 * np.ones((1, 4))
    shaped = {
        "edge": edge(a, b), "atom": atom(a, b), "moments": moments(a, b)[1],
        "density": density(b + 1, a, 0.5), "stieltjes": stieltjes(10 * b + 10, a, 0.5),
        "stieltjes_derivative": stieltjes_derivative(10 * b + 10, a, 0.5),
        "population_threshold": population_threshold(a + 0 * b),
        "population_outlier": population_outlier(rho, a),
        "population_overlap": population_overlap(rho, a), "sample_threshold": sample_threshold(a, b),
        "sample_outlier": sample_outlier(rho, a, b), "overlap": overlap(rho, a, b), "phase": phase(rho, a, b),
        "snr_threshold": snr_threshold(a, b, 1.0), "one_shot": outlier_from_stieltjes(rho, a, b)[0],
        "uncentred": uncentred(a, b, 0.5, 1.0, 0.5, 0.5)["top"],
    }
    for name, value in shaped.items():
        assert isinstance(value, np.ndarray) and value.shape == (3, 4), name
        assert value.dtype == (np.int8 if name == "phase" else np.float64), name
    scalar = sample_outlier(3.0, 0.5, 0.5)
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar.dtype == np.float64
    assert set(theory.__all__) >= {"edge", "density", "uncentred", "outlier_from_stieltjes"}


def test_bisection_stops_where_further_halvings_change_nothing() -> None:
    """`_common.bisect` ends early and gives the brackets of the full count of halvings, bit for bit (a plain loop of
    every halving is the reference), on seeded roots spread over 12 decades and a NaN bracket."""
    from rmtsweep.theory._common import bisect

    rng = np.random.default_rng(3)
    root = 10.0 ** rng.uniform(-6, 6, 200)
    lo0, hi0 = np.zeros(201), np.append(root * rng.uniform(1.5, 1e3, 200), np.nan)
    calls = []

    def below(x):
        calls.append(1)
        return np.append(x[:-1] ** 3 < root**3, False)

    ref_lo, ref_hi = lo0, hi0
    for _ in range(200):
        mid = 0.5 * (ref_lo + ref_hi)
        up = np.append(mid[:-1] ** 3 < root**3, False)
        ref_lo, ref_hi = np.where(up, mid, ref_lo), np.where(up, ref_hi, mid)
    lo, hi = bisect(below, lo0, hi0, 200)
    np.testing.assert_array_equal(lo, ref_lo)
    np.testing.assert_array_equal(hi, ref_hi)
    assert len(calls) < 120                                      # 200 without the early stop
    assert np.all(hi[:-1] - lo[:-1] <= np.spacing(hi[:-1]))      # down to adjacent floats
