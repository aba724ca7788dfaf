"""Predictions at the store's own ``d`` where the limit theory is exact but finite size is not small.

Where the weights sit on one position (``theory_law = 1``: every scheme at ``T = 1``) the token
counts do not average out at finite size: the top of the spectrum and the signal outlier's alignment
depend on how often the most repeated tokens were drawn. :func:`rmtsweep.theory.finite_t.realised_count_spikes`
averages the deterministic equivalent over seeded count draws at the store's ``V``, ``N`` (docs/theory.md
§6.1); this module puts it on the grid for the comparison (``finite_size_*``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..theory.token_counts import realised_count_spikes

__all__ = ["BUDGET", "DRAWS", "finite_size_spikes"]

DRAWS = 64     # count draws per (d, delta, gamma): Monte Carlo s.e. ~0.02 on the alignment near threshold
BUDGET = 64    # (d, delta, gamma) points computed (~0.4 s each); beyond, nothing (the variables are absent)


def finite_size_spikes(ds: xr.Dataset, d: int | xr.DataArray) -> dict[str, xr.DataArray]:
    """``finite_size_lambda1`` / ``_overlap`` and their Monte Carlo errors, NaN where ``theory_law != 1``.

    Empty when the store has no such cell, no ``theory_law`` (an uncentred table or an old store), or
    more than :data:`BUDGET` ``(d, delta, gamma)`` points. ``rho = alpha snr / kappa`` is ``snr`` at
    these cells (``alpha = kappa = w_t^2``), so one prediction serves every scheme of a point.
    """
    if "theory_law" not in ds or not bool((ds["theory_law"] == 1).any()):
        return {}
    d_values = np.atleast_1d(d.values if isinstance(d, xr.DataArray) else d).astype(int)
    delta, gamma, snr = (ds[k].values.astype(float) for k in ("delta", "gamma", "snr"))
    if d_values.size * delta.size * gamma.size > BUDGET:
        return {}
    shape = (d_values.size, delta.size, gamma.size, snr.size)
    res = {k: np.empty(shape) for k in ("lambda1", "lambda1_se", "overlap", "overlap_se")}
    for i, dd in enumerate(d_values):
        for j, dl in enumerate(delta):
            for k, g in enumerate(gamma):
                fs = realised_count_spikes(snr, dl, g, int(dd), draws=DRAWS)
                for name in res:
                    res[name][i, j, k] = getattr(fs, name)
    dims = ("d", "delta", "gamma", "snr")
    coords = {"d": d_values, "delta": ds["delta"].values, "gamma": ds["gamma"].values, "snr": ds["snr"].values}
    exact = ds["theory_law"] == 1
    kappa = ds["theory_kappa"]
    out = {}
    for name, what in (("lambda1", "lambda_1"), ("overlap", "top alignment |u_hat_1^T u|^2")):
        scale = kappa if name == "lambda1" else 1.0
        for suffix in ("", "_se"):
            arr = xr.DataArray(res[name + suffix], dims=dims, coords=coords)
            if not isinstance(d, xr.DataArray):
                arr = arr.isel(d=0, drop=True)
            arr = (arr * scale).where(exact)
            long = (f"finite-size prediction of the {what} over realised token counts ({DRAWS} seeded draws; "
                    "theory_law = 1 cells only)") if not suffix else f"Monte Carlo standard error of finite_size_{name}"
            out[f"finite_size_{name}{suffix}"] = arr.assign_attrs(
                long_name=long, units="same units as the eigenvalues of S" if name == "lambda1" else "1")
    return out
