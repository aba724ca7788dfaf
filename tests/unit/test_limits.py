"""Finite-size-scaling limits (rmtsweep.analysis.limits) against synthetic data with a known limit."""

from __future__ import annotations

import numpy as np
import xarray as xr

from rmtsweep.analysis.compare import crossing
from rmtsweep.analysis.limits import extrapolate, limit_trust, transition_sem

D = np.array([100, 200, 400, 800])


def test_extrapolation_covers_the_true_limit():
    """400 synthetic lines y = 1 + 3 d^-1/3 + N(0, se^2): the 95 % interval y_inf ± 1.96 sem covers 1
    in 95 % ± 3 binomial s.e. of them, and chi^2 per dof averages 1."""
    rng = np.random.default_rng(3)
    se = 0.02 * np.sqrt(D / 100.0) ** -1
    y = 1.0 + 3.0 * D ** (-1 / 3) + rng.normal(size=(400, D.size)) * se
    da = xr.DataArray(y, dims=("line", "d"), coords={"d": D})
    lim, sem, chi2 = extrapolate(da, xr.full_like(da, 1.0) * se, 1 / 3)
    cover = float((abs(lim - 1.0) <= 1.96 * sem).mean())
    assert abs(cover - 0.95) < 3 * np.sqrt(0.95 * 0.05 / 400)
    assert abs(float(chi2.mean()) - 1.0) < 0.15            # mean of chi^2_2 / 2 over 400 lines: s.e. 0.05
    assert float(sem.isel(line=0)) > se[-1]                 # extrapolating costs precision


def test_extrapolation_needs_three_points():
    da = xr.DataArray([1.0, np.nan, np.nan, 2.0], dims="d", coords={"d": D})
    assert np.isnan(float(extrapolate(da, xr.full_like(da, 0.1), 1.0)[0]))


def test_transition_bootstrap_error_matches_replication():
    """The bootstrap s.e. of one line's crossing agrees with the spread of crossings over 300
    independent lines drawn from the same logistic detection curve (within 20 %)."""
    rng = np.random.default_rng(8)
    snr = np.linspace(0.2, 2.0, 19)
    p = 1 / (1 + np.exp(-(snr - 1.0) / 0.12))
    n = 48
    u = rng.random((300, n, 1))
    hits = (u < p).astype(float)            # one uniform per replicate: monotone in snr, like common random numbers
    spread = np.nanstd(crossing(hits.mean(axis=1), snr), ddof=1)
    da = xr.DataArray(hits[:20], dims=("line", "replicate", "snr"), coords={"snr": snr})
    boot = transition_sem(da, n_boot=400, seed=1).values
    assert abs(np.median(boot) / spread - 1) < 0.2, (np.median(boot), spread)


def test_the_transition_exponent_is_the_stores_own_predictions():
    """A prediction whose crossing moves as t(d) = 1 + 2 d^-0.55 (logistic rates on an SNR grid): its exponent is
    recovered, and the fit with it puts the limit at 1; the cubic's exponent (about 0.38 here) would not."""
    from rmtsweep.analysis.limits import prediction_exponent, transition_exponent
    from rmtsweep.analysis.transition import transition_snr

    snr = np.arange(0.5, 3.0, 0.05)
    t = 1.0 + 2.0 * D ** -0.55
    rate = 1.0 / (1.0 + np.exp(-(snr[None, :] - t[:, None]) / 0.05))
    pred = xr.DataArray(rate, dims=("d", "snr"), coords={"d": D, "snr": snr})
    crossings = transition_snr(pred)
    b = float(prediction_exponent(crossings, xr.DataArray(1.0)))
    assert abs(b - 0.55) < 0.01
    se = xr.full_like(crossings, 0.01)
    assert abs(float(extrapolate(crossings, se, b)[0]) - 1.0) < 0.01
    cubic = transition_exponent(0.5, 0.5, D)
    assert abs(float(extrapolate(crossings, se, cubic)[0]) - 1.0) > 0.03       # 4 % low


def test_trust_flags_each_reason():
    """Bits 1 (T_eff < 3), 2 (edge exponent off 1/2 by more than 0.1) and 4 (chi^2 p < 0.01). With 4 points the
    fit has 2 degrees of freedom, whose chi^2 survival function is exp(-x/2): p = 0.01 at chi^2 = 2 ln 100 = 9.21,
    4.605 per degree of freedom."""
    line = lambda v: xr.DataArray(np.asarray(v, float), dims="line")          # noqa: E731
    chi2 = line([1.0, 4.5, 4.7, 1.0, 1.0, 1.0, 1.0, np.nan])
    edge = line([0.5, 0.5, 0.5, 0.62, 0.38, 0.55, 0.5, 0.5])
    t_eff = line([8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 2.9, 2.9])
    got = limit_trust(chi2, line([4] * 8), edge, t_eff).values
    assert np.array_equal(got, [0, 0, 4, 2, 2, 0, 1, np.nan], equal_nan=True)
    assert np.array_equal(limit_trust(chi2, line([4] * 8), edge).values[:7], [0, 0, 4, 2, 2, 0, 0])
