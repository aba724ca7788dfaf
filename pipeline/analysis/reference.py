"""What the comparison holds the Monte Carlo against: the store's best prediction, or the limit by name.

The best prediction of ``lambda_1`` and of the top alignment is the one at the store's own size
(``finite_size_*``: realised token counts at ``T = 1``, the realised pooling matrix at fixed weights over
``T >= 2``, docs/theory.md §6.1, §6.5) where the store has it, else the ``d -> infinity`` limit
(``theory_outlier``, ``theory_overlap``). Finite-d attention over ``T >= 2`` has no law at the store's size.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..errors import UserError

__all__ = ["CAPTIONS", "LIMITS", "NO_LAW", "REFERENCES", "SHORT", "finite_size_z", "data_dependent_cells",
           "hold_against", "no_law_cells",
           "reference_text"]


def finite_size_z(ds: xr.Dataset, out: dict[str, xr.DataArray], lazy: bool) -> dict[str, xr.DataArray]:
    """The store's predictions at its size (``finite_size_*``, made with its theory: realised token counts at
    ``T = 1``, the realised pooling matrix at fixed weights over ``T >= 2``) and their z."""
    names = [f"finite_size_{name}{suffix}" for name in ("lambda1", "overlap") for suffix in ("", "_se")]
    if not all(name in ds for name in names):        # no such cell, over budget, or an older store
        return {}
    fs = {name: ds[name] if lazy else ds[name].load() for name in names}
    for name in ("lambda1", "overlap"):
        se = np.sqrt(out[f"{name}_sem"] ** 2 + fs[f"finite_size_{name}_se"] ** 2)
        fs[f"finite_size_{name}_z"] = ((out[f"{name}_mean"] - fs[f"finite_size_{name}"]) / se).assign_attrs(
            long_name=f"(MC - finite_size_{name}) / sqrt(sem^2 + prediction's s.e.^2)", units="1")
    return fs


REFERENCES = ("best", "limit")
LIMITS = {"lambda1": "theory_outlier", "overlap": "theory_overlap"}
SHORT = {"best": "the best prediction, finite size where stored", "limit": "the d -> infinity limit"}
CAPTIONS = {
    "best": "dark cell: the simulated mean is |z| >= 3 from the store's best prediction (red above, blue below)",
    "limit": "dark cell: |z| >= 3 from the d -> infinity limit; below the transition finite d puts lambda_1 under the "
             "limit's edge by about the Tracy-Widom mean (1.2 sigma_d), so those cells are blue",
}


def reference_text(reference: str, name: str) -> str:
    """What ``{name}_theory`` is under ``reference`` (``best`` or ``limit``), for titles and attrs."""
    if reference == "limit":
        return f"the d -> infinity limit {LIMITS[name]}"
    return f"the store's best prediction (finite_size_{name} at the store's d where present, else {LIMITS[name]})"


NO_LAW = 2   # {name}_reference: a cell without a law at the store's size (attention over T >= 2)


def _data_dependent(ds: xr.Dataset) -> set[str]:
    """The labels of the store's weights schemes computed from the data (a plugin's too), from its stored sweep."""
    if "sweep_canonical" not in ds.attrs:
        return set()
    from ..store import stored_sweep       # the store's sweep names its schemes and says which are data-dependent
    try:
        grid = stored_sweep("<store>", dict(ds.attrs)).grid
    except UserError:                      # a plugin not installed here: the names alone decide
        return set()
    return {scheme.label for scheme in grid.weights if scheme.data_dependent}


def no_law_cells(ds: xr.Dataset) -> xr.DataArray:
    """``(T, weights)``: True where no prediction at the store's size exists: data-dependent weights (finite-d
    attention, a plugin's) over ``T >= 2``.

    Its weights are computed from the table, so the pooling matrix is not independent of the table's noise
    and neither finite-size construction applies; only the large-d limit (``causal(tau)``'s) is compared.
    """
    exact = ds["theory_law"] == 1 if "theory_law" in ds else False
    return (data_dependent_cells(ds) & ~exact).transpose("T", "weights")


def data_dependent_cells(ds: xr.Dataset) -> xr.DataArray:
    """``(T, weights)``: True for data-dependent weights over ``T >= 2``, from the coordinates and attributes alone
    (nothing lazy is computed); :func:`no_law_cells` leaves out those of them whose law is exact."""
    dependent = _data_dependent(ds)
    attention = xr.DataArray([str(w).startswith("attention") or str(w) in dependent for w in ds["weights"].values],
                             dims="weights", coords={"weights": ds["weights"]})
    return (attention & (ds["T"] >= 2)).transpose("T", "weights")


def hold_against(out: dict[str, xr.DataArray], fs: dict[str, xr.DataArray], reference: str,
                no_law: xr.DataArray | None = None) -> None:
    """Keep the limit comparison of lambda_1 and the alignment as ``limit_*``, and make ``{name}_theory``,
    ``_error``, ``_z`` the ``reference``'s: the finite-size prediction where the store has one (its own
    Monte Carlo error added in quadrature to the z's), the limit elsewhere; ``{name}_reference`` says which,
    and marks the ``no_law`` cells (:data:`NO_LAW`: the limit, left out of the summary's counts)."""
    for name in ("lambda1", "overlap"):
        for part in ("theory", "error", "z"):
            out[f"limit_{name}_{part}"] = out[f"{name}_{part}"].copy().assign_attrs(
                long_name=out[f"{name}_{part}"].attrs["long_name"] + f" (against {SHORT['limit']})",
                caption=CAPTIONS["limit"], reference=reference_text("limit", name), reference_kind="limit")
        has = fs[f"finite_size_{name}"].notnull() if fs and reference == "best" else None
        if has is not None:
            th = xr.where(has, fs[f"finite_size_{name}"], out[f"{name}_theory"])
            se = np.sqrt(out[f"{name}_sem"] ** 2 + xr.where(has, fs[f"finite_size_{name}_se"], 0.0) ** 2)
            err = out[f"{name}_mean"] - th
            out[f"{name}_theory"], out[f"{name}_error"] = th.assign_attrs(out[f"{name}_theory"].attrs), \
                err.assign_attrs(out[f"{name}_error"].attrs)
            out[f"{name}_z"] = xr.where(se > 0, err / se.where(se > 0), np.nan).assign_attrs(out[f"{name}_z"].attrs)
            flag = has.astype(np.int8)
        else:
            flag = xr.zeros_like(out[f"{name}_theory"], dtype=np.int8)
        if no_law is not None:
            flag = xr.where(no_law, np.int8(NO_LAW), flag).astype(np.int8)
        kind = "best" if has is not None else "limit"
        text = reference_text(kind, name)
        for part in ("theory", "error", "z"):
            attrs = out[f"{name}_{part}"].attrs
            out[f"{name}_{part}"] = out[f"{name}_{part}"].assign_attrs(
                long_name=attrs["long_name"].split(" (against")[0] + f" (against {SHORT[kind]})", reference=text,
                reference_kind=kind, caption=CAPTIONS[kind])
        out[f"{name}_reference"] = flag.assign_attrs(
            long_name=f"prediction {name}_theory holds the cell against: 0 the limit {LIMITS[name]}, "
                      f"1 finite_size_{name} at the store's d, 2 no law at this size (the limit; attention over "
                      "T >= 2, left out of the calibration counts)", flag_values=[0, 1, NO_LAW],
            flag_meanings="limit finite_size no_law_at_this_size", units="1")
