"""The ``d -> infinity`` limit of a store with a ``d`` axis, by finite-size scaling (docs/theory.md §6.2).

Per line (every coordinate but ``d``) with at least :data:`MIN_D` values of ``d``, a weighted least-
squares fit of ``y(d) = y_inf + a d^(-b)`` with ``b`` fixed:

- the **transition SNR**: the detection margin is ``O(d^-2/3)`` and the outlier leaves the bulk
  quadratically in ``rho - rho_c``, so the crossing of 1/2 moves by ``O(d^-1/3)`` as ``d -> inf``. At
  the d of a sweep the corrections are not negligible, and they depend on the test. So ``b`` is the
  exponent of the store's own prediction (``theory_detection_rate``, under the comparison's test), found as
  the data are: its crossings of 1/2 on the store's SNR grid at each ``d``, then the least-squares slope of
  ``log(t(d) - t_inf)`` (:func:`prediction_exponent`). The same fit applied to the prediction then recovers
  its known limit. Where the store has no such prediction, :func:`transition_exponent` gives ``b`` from the
  cubic's finite-d prediction (0.39 at d = 100, 0.36 at d = 800, tending to 1/3). ``b`` is reported per
  line. The standard error of the measured transition per ``d`` is the spread of a bootstrap over replicates (each
  replicate resampled with all its SNR values); lines where more than half of the resamples are
  censored are NaN;
- ``lambda_1`` and the top alignment at each SNR, ``b = 1``: the bias of a mean of a smooth spectral
  statistic is ``O(1/d)`` away from the critical window (fluctuations sit in the standard errors).
  Near the transition the fit is not meaningful (the window's width shrinks like ``d^-1/3``).

Each limit is held against the ``d``-free theory with ``z = (limit - theory) / sem``; the fit's
``chi^2`` per degree of freedom says whether the exponent describes the data.

The transition's extrapolation assumes a square-root edge and a bulk whose top converges. Per line,
``transition_snr_limit_trust`` (:func:`limit_trust`) says where it does not hold and why: a short
effective length (``T_eff <`` :data:`SHORT_T_EFF`, where the bulk's top drifts up with ``d``), an edge
exponent over the sweep's ``d`` window away from 1/2 (:mod:`rmtsweep.theory.edge_shape`), or a poor fit.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.stats import chi2 as chi2_law

from ..theory import finite_d, spikes
from ..theory.edge_shape import SQUARE_ROOT, law_edge_exponent
from ..theory.null_law import tw_threshold
from .detection import Detection
from .transition import bootstrap_crossings, crossing, transition_snr

__all__ = ["CHI2_LEVEL", "EDGE_TOLERANCE", "MIN_D", "MEAN_EXPONENT", "SHORT_T_EFF", "TRUST", "extrapolate",
           "fit_line", "limit_trust", "limit_variables", "prediction_exponent", "transition_exponent",
           "transition_sem"]

MIN_D = 3
ASYMPTOTIC_EXPONENT = 1.0 / 3.0      # of the transition's approach to its limit, as d -> infinity
MEAN_EXPONENT = 1.0
SHORT_T_EFF = 3.0        # below it the bulk's top drifts up with d (docs/theory.md §6.2, measured)
EDGE_TOLERANCE = 0.1     # |edge exponent - 1/2| beyond which the d^-1/3 window law is not assumed
CHI2_LEVEL = 0.01        # p-value of the fit's chi^2 under which the d^-b law does not describe the data
TRUST = {1: "short_effective_length", 2: "edge_not_square_root", 4: "poor_fit"}


def transition_exponent(delta: float, gamma: float, d_values, rule: Detection | None = None) -> float:
    """The derived finite-d prediction's exponent ``b`` in ``t(d) - t_inf ~ d^-b`` over ``d_values``.

    ``t(d)`` is where :func:`rmtsweep.theory.finite_d.detection_probability` under the detection
    ``rule`` (:class:`rmtsweep.analysis.detection.Detection`; default the margin rule with factor 1)
    crosses 1/2 (on ``rho``; the exponent does not depend on ``alpha/kappa``), ``t_inf`` the sample
    threshold ``rho_c``. Falls back to 1/3 where the prediction has no crossing.

    Examples
    --------
    >>> round(transition_exponent(0.5, 0.5, [100, 200, 400, 800]), 2)
    0.38
    >>> round(transition_exponent(0.5, 0.5, [10**5, 10**6]), 2)
    0.34
    """
    rc = float(spikes.sample_threshold(delta, gamma))
    rho = np.linspace(0.5 * rc, 3.0 * rc, 4001)
    d = np.asarray(d_values, float)
    def probability(dd: int) -> np.ndarray:
        if rule is not None and rule.false_alarm is not None:
            return finite_d.detection_probability(rho, delta, gamma, dd, threshold=tw_threshold(rule.false_alarm, delta,
                                                                                               gamma, dd))
        margin = 1.0 if rule is None or rule.margin_factor is None else rule.margin_factor   # a rule has one of two
        return finite_d.detection_probability(rho, delta, gamma, dd, margin)

    t = np.array([crossing(probability(int(x)), rho) for x in d])
    ok = np.isfinite(t) & (t > rc)
    if ok.sum() < 2:
        return ASYMPTOTIC_EXPONENT
    return float(-np.polyfit(np.log(d[ok]), np.log(t[ok] - rc), 1)[0])


def prediction_exponent(t_pred: xr.DataArray, t_inf: xr.DataArray) -> xr.DataArray:
    """Per line, ``b`` in ``t_pred(d) - t_inf ~ d^-b``: the least-squares slope of ``log(t_pred - t_inf)`` on ``log d``.

    ``t_pred`` is where the store's own prediction (``theory_detection_rate``, under the test the comparison
    uses) crosses 1/2 at each ``d``, found on the store's SNR grid as the measured crossing is. NaN where fewer
    than two ``d`` values have a crossing above ``t_inf``.
    """
    log_d = np.log(t_pred["d"].values.astype(float))

    def slope(t: np.ndarray, t0: float) -> float:
        ok = np.isfinite(t) & (t > t0)
        return float(-np.polyfit(log_d[ok], np.log(t[ok] - t0), 1)[0]) if ok.sum() >= 2 else np.nan
    return xr.apply_ufunc(slope, t_pred, t_inf, input_core_dims=[["d"], []], vectorize=True)


def fit_line(y: np.ndarray, se: np.ndarray, x: np.ndarray) -> tuple[float, float, float, float]:
    """Weighted least squares ``y = y_inf + a x`` (weights ``1/se^2``): ``(y_inf, its s.e., chi^2/dof, a)``.

    NaN where fewer than :data:`MIN_D` points are finite.
    """
    ok = np.isfinite(y) & np.isfinite(se) & (se > 0)
    if ok.sum() < MIN_D:
        return np.nan, np.nan, np.nan, np.nan
    X = np.column_stack([np.ones(ok.sum()), x[ok]])
    w = 1.0 / se[ok] ** 2
    cov = np.linalg.inv(X.T @ (X * w[:, None]))
    beta = cov @ (X.T @ (w * y[ok]))
    chi2 = float(np.sum(w * (y[ok] - X @ beta) ** 2)) / (ok.sum() - 2)
    return float(beta[0]), float(np.sqrt(cov[0, 0])), chi2, float(beta[1])


def extrapolate(y: xr.DataArray, se: xr.DataArray, exponent: float | xr.DataArray) -> tuple[xr.DataArray, ...]:
    """``(y_inf, its standard error, chi^2 per dof)`` of ``y(d) = y_inf + a d^-exponent`` along ``d``.

    Weighted by ``1/se^2`` (absolute: the errors are the data's own). NaN on lines with fewer than
    :data:`MIN_D` finite points. ``exponent`` may vary per line (a DataArray without ``d``).

    Examples
    --------
    >>> d = xr.DataArray([100, 200, 400, 800], dims="d", coords={"d": [100, 200, 400, 800]})
    >>> y0, s0, chi2 = extrapolate(2.0 + 5.0 / d, 0 * d + 0.01, 1.0)
    >>> round(float(y0), 6), round(float(chi2), 6)
    (2.0, 0.0)
    """
    d = y["d"].values.astype(float)
    return tuple(xr.apply_ufunc(lambda a, b, e, i=i: fit_line(a, b, d ** (-e))[i], y, se, exponent,
                                input_core_dims=[["d"], ["d"], []], vectorize=True) for i in range(3))


def transition_sem(hits: xr.DataArray, n_boot: int = 400, seed: int = 0) -> xr.DataArray:
    """Bootstrap standard error of each line's transition SNR (``hits``: 0/1/NaN per replicate and SNR).

    NaN where fewer than two replicates are done or more than half of the resamples are censored.
    """
    rng = np.random.default_rng(seed)
    snr = hits["snr"].values.astype(float)
    h = hits.transpose(..., "replicate", "snr")
    out = np.full(h.shape[:-2], np.nan)
    for idx in np.ndindex(*out.shape):
        a = h.values[idx]
        a = a[np.isfinite(a).all(axis=-1)]
        if a.shape[0] < 2:
            continue
        boot = bootstrap_crossings(a, snr, n_boot, rng)[0]
        if np.isnan(boot).mean() <= 0.5:
            out[idx] = np.nanstd(boot, ddof=1)
    return xr.DataArray(out, dims=h.dims[:-2], coords={k: h[k] for k in h.dims[:-2]})


def limit_trust(chi2: xr.DataArray, points: xr.DataArray, edge_exponent: xr.DataArray,
                t_eff: xr.DataArray | None = None) -> xr.DataArray:
    """Per line, why its transition limit is not to be trusted: a sum of the :data:`TRUST` bits, 0 if none.

    - 1, ``T_eff <`` :data:`SHORT_T_EFF`: the token-count law has unbounded support at fixed ``T``, so the
      bulk's top drifts up with ``d`` and the transition need not approach a limit as ``d^-b``;
    - 2, ``|edge_exponent - 1/2| >`` :data:`EDGE_TOLERANCE`: over the sweep's ``d`` the edge is not a square
      root, so the window does not move as ``d^-1/3``;
    - 4, the fit's ``chi^2`` (``chi2`` per degree of freedom over ``points - 2``) has a p-value below
      :data:`CHI2_LEVEL`.

    NaN where the fit has no value.

    Examples
    --------
    >>> da = lambda v: xr.DataArray(v, dims="line")
    >>> limit_trust(da([0.5, 0.5, 20.0]), da([4, 4, 4]), da([0.52, 1.05, 0.5]), da([8.0, 8.0, 2.7])).values
    array([0., 2., 5.])
    """
    p = xr.apply_ufunc(lambda c, n: chi2_law.sf(c * (n - 2), n - 2) if n > 2 else np.nan, chi2, points,
                       vectorize=True)
    flag = 2 * (abs(edge_exponent - SQUARE_ROOT) > EDGE_TOLERANCE) + 4 * (p < CHI2_LEVEL)
    if t_eff is not None:
        flag = flag + 1 * (t_eff < SHORT_T_EFF)
    return flag.astype(float).where(chi2.notnull())


def limit_variables(cmp: xr.Dataset, hits: xr.DataArray, rule: Detection | None = None, n_boot: int = 400,
                    seed: int = 0, t_eff: xr.DataArray | None = None,
                    law: xr.DataArray | None = None) -> dict[str, xr.DataArray]:
    """The comparison's limit variables, for a comparison ``cmp`` with a ``d`` dim of >= :data:`MIN_D` values.

    ``hits`` are the per-replicate detections (:func:`rmtsweep.analysis.compare.detected`). Returns
    ``transition_snr_sem`` (per d), ``transition_snr_limit``, ``transition_snr_limit_sem``,
    ``transition_snr_limit_z``, ``transition_snr_limit_chi2``, ``transition_snr_limit_exponent``,
    ``transition_snr_limit_edge_exponent`` and ``transition_snr_limit_trust`` (:func:`limit_trust`; ``t_eff``:
    the store's ``theory_T_eff``, ``law``: its ``theory_law``, the cubic where absent), and ``lambda1_limit``,
    ``overlap_limit`` with ``_sem``, ``_z`` and ``_chi2`` (per SNR).
    """
    out: dict[str, xr.DataArray] = {}
    d_values = cmp["d"].values
    b = xr.apply_ufunc(lambda dl, g: transition_exponent(dl, g, d_values, rule), cmp["delta"], cmp["gamma"],
                       vectorize=True)
    if "theory_detection_rate" in cmp:        # the store's own prediction, under the store's own test
        limit = cmp["transition_snr_theory"]
        own = prediction_exponent(transition_snr(cmp["theory_detection_rate"]),
                                  limit.isel(d=0, drop=True) if "d" in limit.dims else limit)
        b = own.fillna(b)
    out["transition_snr_limit_exponent"] = b.assign_attrs(
        long_name="exponent b of the transition fit: that of the store's finite-d prediction (theory_detection_rate) "
                  "over the store's d values", units="1")
    t_se = transition_sem(hits, n_boot, seed)
    out["transition_snr_sem"] = t_se.assign_attrs(
        long_name=f"bootstrap standard error of transition_snr_empirical ({n_boot} resamples)", units="snr")
    specs = [("transition_snr", cmp["transition_snr_empirical"], t_se, cmp["transition_snr_theory"],
              b, "transition SNR", "snr")]
    for name, what, units in (("lambda1", "lambda_1", "same units as the eigenvalues of S"),
                              ("overlap", "top alignment", "1")):
        theory = cmp[f"limit_{name}_theory"] if f"limit_{name}_theory" in cmp else cmp[f"{name}_theory"]   # d-free
        specs.append((name, cmp[f"{name}_mean"], cmp[f"{name}_sem"], theory, MEAN_EXPONENT, what, units))
    for name, y, se, theory, expo, what, units in specs:
        lim, sem, chi2 = extrapolate(y, se, expo)
        fitted = f"{what}(d) = limit + a d^-b (weighted least squares over d; b: {name}_limit_exponent)" \
            if isinstance(expo, xr.DataArray) else f"{what}(d) = limit + a d^-{expo:g} (weighted least squares over d)"
        out[f"{name}_limit"] = lim.assign_attrs(long_name=f"d -> infinity limit of the {what}: {fitted}", units=units)
        out[f"{name}_limit_sem"] = sem.assign_attrs(long_name=f"standard error of {name}_limit", units=units)
        th = theory.isel(d=0, drop=True) if "d" in theory.dims else theory
        out[f"{name}_limit_z"] = ((lim - th) / sem).assign_attrs(
            long_name=f"({name}_limit - theory) / {name}_limit_sem", units="1")
        out[f"{name}_limit_chi2"] = chi2.assign_attrs(long_name=f"chi^2 per degree of freedom of the {name} fit",
                                                      units="1")
    out.update(_trust_variables(cmp, out, t_se, d_values, t_eff, law))
    return out


def _trust_variables(cmp: xr.Dataset, out: dict[str, xr.DataArray], t_se: xr.DataArray, d_values: np.ndarray,
                     t_eff: xr.DataArray | None, law: xr.DataArray | None) -> dict[str, xr.DataArray]:
    """``transition_snr_limit_edge_exponent`` and ``transition_snr_limit_trust`` (:func:`limit_trust`)."""
    law = xr.zeros_like(out["transition_snr_limit"], dtype=int) if law is None else law
    edge = xr.apply_ufunc(lambda dl, g, k: law_edge_exponent(float(dl), float(g), int(k), d_values),
                          cmp["delta"], cmp["gamma"], law, vectorize=True)
    points = (cmp["transition_snr_empirical"].notnull() & t_se.notnull()).sum("d")
    order = out["transition_snr_limit"].dims
    edge = edge.transpose(*order)
    trust = limit_trust(out["transition_snr_limit_chi2"], points, edge, t_eff).transpose(*order)
    masks = list(TRUST)
    why = (f"{masks[0]}: T_eff < {SHORT_T_EFF:g}: at fixed T the token-count law has unbounded support, so the "
           f"bulk's top drifts up with d and the transition need not approach a limit as d^-b; {masks[1]}: the "
           f"edge exponent over the sweep's d (transition_snr_limit_edge_exponent) is more than {EDGE_TOLERANCE:g} "
           f"from 1/2, so the window does not move as d^-1/3; {masks[2]}: the fit's chi^2 has p < {CHI2_LEVEL:g}")
    return {
        "transition_snr_limit_edge_exponent": edge.assign_attrs(
            long_name="exponent a of the threshold's bulk law near its edge, f ~ (edge - x)^a, fitted over "
                      "edge - x in edge * [max(d)^-2/3, min(d)^-2/3] (1/2: a square root; rmtsweep.theory.edge_shape)",
            units="1"),
        "transition_snr_limit_trust": trust.assign_attrs(
            long_name="why transition_snr_limit is not to be trusted: 0 trusted, else a sum of flag_masks",
            units="1", flag_masks=masks, flag_meanings=" ".join(TRUST.values()), description=why),
    }
