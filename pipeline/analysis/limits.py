"""The ``d -> infinity`` limit of a store with a ``d`` axis, by finite-size scaling (docs/theory.md §6.2).

Per line (every coordinate but ``d``) with at least :data:`MIN_D` values of ``d``, a weighted least-
squares fit of ``y(d) = y_inf + a d^(-b)`` with ``b`` fixed:

- the **transition SNR**, ``b = 1/3``: the detection margin is ``O(d^-2/3)`` and the outlier leaves the
  bulk quadratically in ``rho - rho_c``, so the crossing of 1/2 moves by ``O(d^-1/3)``; its
  standard error per ``d`` is the spread of a bootstrap over replicates (each replicate resampled
  with all its SNR values), and lines where more than half of the resamples are censored are NaN;
- ``lambda_1`` and the top alignment at each SNR, ``b = 1``: the bias of a mean of a smooth spectral
  statistic is ``O(1/d)`` away from the critical window (fluctuations sit in the standard errors).
  Near the transition the fit is not meaningful (the window's width shrinks like ``d^-1/3``).

Each limit is held against the ``d``-free theory with ``z = (limit - theory) / sem``; the fit's
``chi^2`` per degree of freedom says whether the exponent describes the data.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from .transition import crossing

__all__ = ["MIN_D", "TRANSITION_EXPONENT", "MEAN_EXPONENT", "extrapolate", "limit_variables", "transition_sem"]

MIN_D = 3
TRANSITION_EXPONENT = 1.0 / 3.0
MEAN_EXPONENT = 1.0


def _wls(y: np.ndarray, se: np.ndarray, x: np.ndarray) -> tuple[float, float, float]:
    ok = np.isfinite(y) & np.isfinite(se) & (se > 0)
    if ok.sum() < MIN_D:
        return np.nan, np.nan, np.nan
    X = np.column_stack([np.ones(ok.sum()), x[ok]])
    w = 1.0 / se[ok] ** 2
    cov = np.linalg.inv(X.T @ (X * w[:, None]))
    beta = cov @ (X.T @ (w * y[ok]))
    chi2 = float(np.sum(w * (y[ok] - X @ beta) ** 2)) / (ok.sum() - 2)
    return float(beta[0]), float(np.sqrt(cov[0, 0])), chi2


def extrapolate(y: xr.DataArray, se: xr.DataArray, exponent: float) -> tuple[xr.DataArray, ...]:
    """``(y_inf, its standard error, chi^2 per dof)`` of ``y(d) = y_inf + a d^-exponent`` along ``d``.

    Weighted by ``1/se^2`` (absolute: the errors are the data's own). NaN on lines with fewer than
    :data:`MIN_D` finite points.

    Examples
    --------
    >>> d = xr.DataArray([100, 200, 400, 800], dims="d", coords={"d": [100, 200, 400, 800]})
    >>> y0, s0, chi2 = extrapolate(2.0 + 5.0 / d, 0 * d + 0.01, 1.0)
    >>> round(float(y0), 6), round(float(chi2), 6)
    (2.0, 0.0)
    """
    x = y["d"].values.astype(float) ** (-exponent)
    return tuple(xr.apply_ufunc(lambda a, b: _wls(a, b, x)[i], y, se, input_core_dims=[["d"], ["d"]],
                                vectorize=True) for i in range(3))


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
        boot = crossing(a[rng.integers(0, a.shape[0], size=(n_boot, a.shape[0]))].mean(axis=1), snr)
        if np.isnan(boot).mean() <= 0.5:
            out[idx] = np.nanstd(boot, ddof=1)
    return xr.DataArray(out, dims=h.dims[:-2], coords={k: h[k] for k in h.dims[:-2]})


def limit_variables(cmp: xr.Dataset, hits: xr.DataArray, n_boot: int = 400, seed: int = 0) -> dict[str, xr.DataArray]:
    """The comparison's limit variables, for a comparison ``cmp`` with a ``d`` dim of >= :data:`MIN_D` values.

    ``hits`` are the per-replicate detections (:func:`rmtsweep.analysis.compare.detected`). Returns
    ``transition_snr_sem`` (per d), ``transition_snr_limit``, ``transition_snr_limit_sem``,
    ``transition_snr_limit_z``, ``transition_snr_limit_chi2``, and ``lambda1_limit``, ``overlap_limit``
    with ``_sem``, ``_z`` and ``_chi2`` (per SNR).
    """
    out: dict[str, xr.DataArray] = {}
    t_se = transition_sem(hits, n_boot, seed)
    out["transition_snr_sem"] = t_se.assign_attrs(
        long_name=f"bootstrap standard error of transition_snr_empirical ({n_boot} resamples)", units="snr")
    specs = [("transition_snr", cmp["transition_snr_empirical"], t_se, cmp["transition_snr_theory"],
              TRANSITION_EXPONENT, "transition SNR", "snr")]
    for name, what, units in (("lambda1", "lambda_1", "same units as the eigenvalues of S"),
                              ("overlap", "top alignment", "1")):
        specs.append((name, cmp[f"{name}_mean"], cmp[f"{name}_sem"], cmp[f"{name}_theory"], MEAN_EXPONENT, what, units))
    for name, y, se, theory, b, what, units in specs:
        lim, sem, chi2 = extrapolate(y, se, b)
        law = f"{what}(d) = limit + a d^-{b:.3g} (weighted least squares over d)"
        out[f"{name}_limit"] = lim.assign_attrs(long_name=f"d -> infinity limit of the {what}: {law}", units=units)
        out[f"{name}_limit_sem"] = sem.assign_attrs(long_name=f"standard error of {name}_limit", units=units)
        th = theory.isel(d=0, drop=True) if "d" in theory.dims else theory
        out[f"{name}_limit_z"] = ((lim - th) / sem).assign_attrs(
            long_name=f"({name}_limit - theory) / {name}_limit_sem", units="1")
        out[f"{name}_limit_chi2"] = chi2.assign_attrs(long_name=f"chi^2 per degree of freedom of the {name} fit",
                                                      units="1")
    return out
