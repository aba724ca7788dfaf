"""The theory on a sweep's grid: THEORY.md §3-5 evaluated at every cell, as an ``xarray.Dataset``.

Which formulas a store carries follows its ``table_centering`` (THEORY.md §5):

- ``class``: §4 with the paper's ``rho = alpha snr / kappa``.
- ``none``: the corrected uncentred-table theory — a signal outlier at ``rho_s = (alpha/kappa)(snr +
  delta)`` whose eigenvector's alignment with ``u`` is scaled by ``snr / (snr + delta)``, and a
  common-mean outlier at ``rho_b = W1^2 delta / kappa`` whose eigenvector is orthogonal to ``u``.
  ``theory_outlier`` is then the largest of the two outliers and the edge.

The paper's uncorrected §4 numbers are always kept as ``paper_*`` so a comparison can show how far
they are off on an uncentred table (for ``class`` they equal ``theory_*``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from . import theory
from .model import correlation_matrix, effective_length, pooling_weights
from .spec import Sweep

ABS = "same units as the eigenvalues of S"


def _da(values, dims, coords, long_name: str, units: str = "1", **attrs) -> xr.DataArray:
    return xr.DataArray(np.asarray(values), dims=dims, coords={d: coords[d] for d in dims},
                        attrs={"long_name": long_name, "units": units, **attrs})


def grid_coords(sweep: Sweep) -> dict[str, np.ndarray]:
    """The coordinate values of the grid axes."""
    g = sweep.grid
    return {"delta": np.asarray(g.delta, float), "gamma": np.asarray(g.gamma, float),
            "snr": np.asarray(g.snr, float), "T": np.asarray(g.T, np.int64),
            "weights": np.array([w.label for w in sweep.weight_schemes()], dtype=object)}


def weight_scalars(sweep: Sweep) -> xr.Dataset:
    """``alpha = w^T R w``, ``kappa = ||w||^2``, ``W1 = sum w`` and ``T_eff`` per (T, weights)."""
    coords = grid_coords(sweep)
    corr = sweep.correlation_model()
    shape = (len(coords["T"]), len(coords["weights"]))
    out = {k: np.empty(shape) for k in ("alpha", "kappa", "w1", "t_eff")}
    for i, T in enumerate(coords["T"]):
        R = correlation_matrix(corr, int(T))
        for j, scheme in enumerate(sweep.weight_schemes()):
            w = pooling_weights(scheme, R)
            out["alpha"][i, j], out["kappa"][i, j] = w @ R @ w, w @ w
            out["w1"][i, j], out["t_eff"][i, j] = w.sum(), effective_length(w)
    dims = ("T", "weights")
    return xr.Dataset({
        "theory_alpha": _da(out["alpha"], dims, coords, "population signal strength alpha = w^T R w"),
        "theory_kappa": _da(out["kappa"], dims, coords, "noise level kappa = ||w||^2"),
        "theory_weight_sum": _da(out["w1"], dims, coords, "sum of the pooling weights W1"),
        "theory_T_eff": _da(out["t_eff"], dims, coords, "effective length kappa^2 / sum w^4",
                            description="the cubic bulk law needs T_eff >~ 4 (THEORY.md §5)"),
    })


def _spike_vars(rho: xr.DataArray, delta: xr.DataArray, gamma: xr.DataArray, kappa: xr.DataArray,
                prefix: str, what: str) -> dict[str, xr.DataArray]:
    loc = xr.apply_ufunc(theory.sample_outlier, rho, delta, gamma) * kappa
    ov = xr.apply_ufunc(theory.overlap, rho, delta, gamma)
    ph = xr.apply_ufunc(theory.phase, rho, delta, gamma)
    loc.attrs = {"long_name": f"limit of lambda_1 ({what}): outlier or bulk edge", "units": ABS}
    ov.attrs = {"long_name": f"limit of the top alignment |u_hat^T u|^2 ({what})", "units": "1"}
    ph.attrs = {"long_name": f"phase ({what})", "units": "1",
                "flag_values": [0, 1, 2],
                "flag_meanings": "no_population_outlier population_outlier_only sample_outlier"}
    return {f"{prefix}_outlier": loc, f"{prefix}_overlap": ov, f"{prefix}_phase": ph.astype(np.int8)}


def theory_dataset(sweep: Sweep) -> xr.Dataset:
    """Every theory array of the sweep's grid (no randomness; cheap).

    Returns
    -------
    xarray.Dataset
        Variables ``theory_*`` (the theory this store's centering calls for) and ``paper_*`` (the
        paper's §4 formulas as stated), with units and long names.
    """
    c = grid_coords(sweep)
    ws = weight_scalars(sweep)
    delta = xr.DataArray(c["delta"], dims="delta", coords={"delta": c["delta"]})
    gamma = xr.DataArray(c["gamma"], dims="gamma", coords={"gamma": c["gamma"]})
    snr = xr.DataArray(c["snr"], dims="snr", coords={"snr": c["snr"]})
    alpha, kappa = ws["theory_alpha"], ws["theory_kappa"]
    ratio = alpha / kappa

    rho = (ratio * snr).rename("theory_rho")
    rho.attrs = {"long_name": "effective SNR rho = alpha snr / kappa (paper)", "units": "1"}
    edge = xr.apply_ufunc(theory.edge, delta, gamma) * kappa
    edge.attrs = {"long_name": "right edge of the bulk kappa * lambda_+", "units": ABS}
    rho_pop = xr.apply_ufunc(theory.population_threshold, delta)
    rho_pop.attrs = {"long_name": "population threshold on rho: delta + sqrt(delta)", "units": "1"}
    rho_c = xr.apply_ufunc(theory.sample_threshold, delta, gamma)
    rho_c.attrs = {"long_name": "sample threshold on rho (the observable transition)", "units": "1"}

    out = {**ws.data_vars, "theory_rho": rho, "theory_edge": edge,
           "theory_rho_population": rho_pop, "theory_rho_sample": rho_c}
    paper = _spike_vars(rho, delta, gamma, kappa, "paper", "paper's formulas, THEORY.md §4")
    out.update(paper)

    if sweep.table_centering == "class":
        out.update({k.replace("paper_", "theory_"): v for k, v in paper.items()})
        snr_pop, snr_c = rho_pop / ratio, rho_c / ratio
    else:
        rho_s = ratio * (snr + delta)
        rho_b = ws["theory_weight_sum"] ** 2 * delta / kappa
        sig = _spike_vars(rho_s, delta, gamma, kappa, "theory_signal", "signal outlier, uncentred table")
        mean = _spike_vars(rho_b, delta, gamma, kappa, "theory_mean", "common-mean outlier, uncentred table")
        fraction = xr.where(snr + delta > 0, snr / (snr + delta), 0.0)
        out.update(sig)
        out.update(mean)
        out["theory_rho_signal"] = rho_s.assign_attrs(long_name="signal rho_s = (alpha/kappa)(snr + delta)",
                                                      units="1")
        out["theory_rho_mean"] = rho_b.assign_attrs(long_name="common-mean rho_b = W1^2 delta / kappa", units="1")
        out["theory_outlier"] = np.maximum(sig["theory_signal_outlier"], mean["theory_mean_outlier"]).assign_attrs(
            long_name="limit of lambda_1: the larger of the two outliers, or the bulk edge", units=ABS)
        out["theory_overlap"] = (sig["theory_signal_overlap"] * fraction).assign_attrs(
            long_name="limit of the signal eigenvector's alignment with u "
                      "(the top-k eigenvector best aligned with u)", units="1")
        out["theory_phase"] = sig["theory_signal_phase"]
        snr_pop = np.maximum(rho_pop / ratio - delta, 0.0)
        snr_c = np.maximum(rho_c / ratio - delta, 0.0)

    out["theory_snr_population"] = snr_pop.assign_attrs(long_name="population transition SNR", units="snr")
    out["theory_snr_sample"] = snr_c.assign_attrs(long_name="sample (observable) transition SNR", units="snr")
    ds = xr.Dataset(out)
    return ds.transpose(*[d for d in ("delta", "gamma", "snr", "T", "weights") if d in ds.dims])
