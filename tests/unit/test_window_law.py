"""The rank-one spike's critical window: the tabulated law, its map onto a model, and a dense spiked Wishart."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from scipy.integrate import quad

from rmtsweep.theory import _window_table as table
from rmtsweep.theory import spikes
from rmtsweep.theory._common import critical_a
from rmtsweep.theory.finite_d import TW1_MEAN, TW1_SD, subcritical_overlap, tw1_cdf, tw_scale
from rmtsweep.theory.null_law import _johnstone
from rmtsweep.theory.window_law import (W_MAX, W_MIN, W_SEPARATED, lean, lift, overlap_unit, window_coordinate, window_mean,
                                        window_overlap, window_sd)

THETA = 1.0 + np.asarray(table.GRID) * table.N ** (-1 / 3)      # the table's spikes


def test_far_below_the_window_the_law_is_tracy_widom_lifted_by_one_over_w():
    """At ``w = -8``: the sd is TW_1's within 5 %, the mean TW_1's plus the first-order lift ``1 / |w|`` (within
    4 standard errors and 0.01 for the finite ``n``), the overlap ``1 / w^2`` within 10 %, and the table's
    unspiked top is TW_1 (mean within 4 s.e. + 0.03, sd within 5 %)."""
    w = W_MIN
    se = table.MEAN_SE[0]
    assert float(window_mean(w)) == pytest.approx(TW1_MEAN + 1 / abs(w), abs=4 * se + 0.01)
    assert float(lift(w)) == pytest.approx(1 / abs(w), abs=4 * table.LIFT_SE[0] + 0.01)
    assert float(window_sd(w)) == pytest.approx(TW1_SD, rel=0.05)
    assert float(window_overlap(w)) == pytest.approx(1 / w**2, rel=0.1)
    assert table.X0_MEAN == pytest.approx(TW1_MEAN, abs=4 * TW1_SD / np.sqrt(table.REPLICATES) + 0.03)
    assert table.X0_SD == pytest.approx(TW1_SD, rel=0.05)
    assert float(lift(2 * W_MIN)) == pytest.approx(float(lift(W_MIN)) / 2, rel=1e-12)    # the asymptote beyond


def test_far_above_the_window_the_law_is_the_gaussian_outlier():
    """At ``w = 8`` the top eigenvalue is the outlier ``n^(2/3) (theta + 1/theta - 2)`` within 4 s.e., its sd the
    GOE spike's ``2 sqrt(w)`` within 10 % (``4 w`` Tracy-Widom scales squared, finite.d's check), its overlap
    ``n^(1/3) (1 - theta^-2)`` within 4 s.e., and both corrections vanish within 4 s.e."""
    w, theta = W_MAX, THETA[-1]
    n = table.N
    assert float(window_mean(w)) == pytest.approx(n ** (2 / 3) * (theta + 1 / theta - 2), abs=4 * table.MEAN_SE[-1])
    assert float(window_sd(w)) == pytest.approx(2 * np.sqrt(w), rel=0.1)
    assert float(window_overlap(w)) == pytest.approx(n ** (1 / 3) * (1 - theta**-2), abs=4 * table.OVERLAP_SE[-1])
    assert abs(table.LIFT[-1]) < 4 * table.LIFT_SE[-1] and abs(table.LEAN[-1]) < 4 * table.LEAN_SE[-1]
    assert float(lift(W_MAX + 0.1)) == 0.0 and float(lean(W_MAX + 0.1)) == 0.0


def test_inside_the_window_the_maximum_of_two_candidates_misses_the_lift():
    """The table's reason to exist: at the threshold (``w = 0``) the mean top eigenvalue is more than 1 Tracy-Widom
    scale above the maximum of the edge and the outlier, many standard errors out."""
    i = int(np.argmin(np.abs(np.asarray(table.GRID))))
    assert table.LIFT[i] > 1.0 and table.LIFT[i] > 10 * table.LIFT_SE[i]
    # the maximum jumps at w = 0 (the outlier appears at the edge), so each side keeps its own limit
    assert float(lift(0.0)) == table.LIFT[i] and float(lift(1e-9)) == pytest.approx(table.LIFT_RIGHT, abs=1e-6)
    assert float(lean(1e-9)) == pytest.approx(table.LEAN_RIGHT, abs=1e-6)
    assert float(lift(W_SEPARATED)) == 0.0 and float(lean(W_SEPARATED)) == 0.0


def test_the_map_is_the_classical_window_coordinate_and_alignment_slope():
    """For the classical spiked covariance (the cubic at ``delta -> 0``), as ``rho -> rho_c`` the window coordinate
    is ``(rho - rho_c) / sqrt(2 sigma_d / psi_rr)`` and ``K`` is half the alignment's slope at ``rho_c`` times that
    width (``E Y -> 2 w`` above): both from the outlier's location and alignment, not from the resolvent."""
    gamma, d, delta = 0.5, 400, 1e-12
    rc = float(spikes.sample_threshold(delta, gamma))
    sigma = float(tw_scale(delta, gamma, d))
    lg = 1.0 + 1.0 / float(critical_a(np.array(delta), np.array(gamma)))
    lam = (1 + np.sqrt(gamma)) ** 2
    h = 1e-4
    psi = [float(spikes.sample_outlier(rc + k * h, delta, gamma)) for k in (1, 2, 3)]
    psi_rr = (psi[0] - 2 * psi[1] + psi[2]) / h**2                      # one-sided: psi is undefined below rho_c
    width = np.sqrt(2 * sigma / psi_rr)
    slope = (float(spikes.overlap(rc + 2 * h, delta, gamma)) - float(spikes.overlap(rc + h, delta, gamma))) / h
    rho = rc * (1 + 1e-6)
    phi, dphi, num = rho / rc, rho * (1 - gamma + 2 * gamma * lg), 1 + rho * gamma * lg**2 / lam
    assert float(window_coordinate(phi, dphi, sigma, d)) == pytest.approx((rho - rc) / width, rel=1e-3)
    assert float(overlap_unit(dphi, num, sigma, d)) == pytest.approx(slope * width / 2, rel=1e-3)
    assert float(window_coordinate(0.0, 0.0, sigma, d)) == -np.inf and float(overlap_unit(0.0, 1.0, sigma, d)) == 0.0


def _wishart_prediction(ell: float, p: int, n: int, window: bool) -> tuple[float, float]:
    """E lambda_1 and E |v_1^T e_1|^2 of ``S = X^T X / n``, rows of ``X`` ~ ``N(0, I_p + ell e_1 e_1^T)``, as the
    store predicts them (:mod:`.pooled_spikes`): the maximum of the edge (Johnstone's real-case centring, ``n - 1/2``
    and ``p - 1/2``) and the outlier, the bulk's lean below, and with ``window`` the window law's corrections."""
    gamma, delta = p / n, 1e-12                       # the cubic at delta -> 0 is the classical spiked covariance
    mu, sd = _johnstone(n - 0.5, p - 0.5)
    loc, sigma = mu / n, sd / n
    rc, edge = np.sqrt(gamma), (1 + np.sqrt(gamma)) ** 2
    lg = 1.0 + 1.0 / float(critical_a(np.array(delta), np.array(gamma)))
    if ell > rc:
        psi = float(spikes.sample_outlier(ell, delta, gamma))
        on_top = float(tw1_cdf((psi - loc) / sigma))
        lam = psi + quad(lambda x: 1.0 - float(tw1_cdf((x - loc) / sigma)), psi, psi + 20 * sigma)[0]
        align = float(spikes.overlap(ell, delta, gamma))
    else:
        on_top, lam, align = 0.0, loc + sigma * TW1_MEAN, 0.0
    ov = on_top * align + (1 - on_top) * float(subcritical_overlap(ell, delta, gamma, p))
    if window:
        phi, dphi, num = ell / rc, ell * (1 - gamma + 2 * gamma * lg), 1 + ell * gamma * lg**2 / edge
        w = window_coordinate(phi, dphi, sigma, p)
        lam += sigma * float(lift(w))
        ov += float(overlap_unit(dphi, num, sigma, p)) * float(lean(w))
    return lam, ov


@pytest.mark.slow
def test_a_dense_spiked_wishart_has_the_window_laws_lift_and_lean():
    """Dense real Wishart, ``p = n = 300`` (independent of the tridiagonal table), 500 seeded replicates at 0.8, 1 and
    1.1 times the threshold: the top eigenvalue is within 3.5 standard errors of the prediction with the window law
    and more than 5 from the maximum of two candidates at 0.8 and 1 (the lift). The alignment is within 4 (a finite-p
    lean of up to 3 s.e. below 1 in a seed not used here) and the maximum's more than 5 off at 0.8 and 1.1."""
    p = n = 300
    reps = 500
    rng = np.random.default_rng(20261206)
    rc = np.sqrt(p / n)
    for mult in (0.8, 1.0, 1.1):
        ell = rc * mult
        top, ov = np.empty(reps), np.empty(reps)
        for r in range(reps):
            X = rng.standard_normal((n, p))
            X[:, 0] *= np.sqrt(1 + ell)
            lam, vec = scipy.linalg.eigh(X.T @ X / n, subset_by_index=[p - 1, p - 1])
            top[r], ov[r] = lam[0], vec[0, 0] ** 2
        se, ov_se = top.std(ddof=1) / np.sqrt(reps), ov.std(ddof=1) / np.sqrt(reps)
        new, new_ov = _wishart_prediction(ell, p, n, window=True)
        old, old_ov = _wishart_prediction(ell, p, n, window=False)
        assert abs(top.mean() - new) < 3.5 * se, (mult, top.mean(), new, se)
        assert abs(ov.mean() - new_ov) < 4 * ov_se, (mult, ov.mean(), new_ov, ov_se)
        if mult <= 1:
            assert top.mean() - old > 5 * se, (mult, top.mean(), old, se)
        if mult != 1:
            assert abs(ov.mean() - old_ov) > 5 * ov_se, (mult, ov.mean(), old_ov, ov_se)
