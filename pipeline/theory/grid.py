"""The sweep's grid as the theory sees it: coordinates, each cell's weight scalars, and the theory's budgets.

:mod:`.spectrum` and :mod:`.on_grid` build the store's theory arrays from these.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from ..model import effective_length
from ..shipped import default
from ..spec import Sweep
from .finite_d import pooled_sign_excess_kurtosis

__all__ = ["ABS", "TheoryBudgets", "cell_weights", "grid_coords", "labelled", "pooled_kurtosis", "weight_scalars"]

ABS = "same units as the eigenvalues of S"


def labelled(values, dims, coords, long_name: str, units: str = "1", **attrs) -> xr.DataArray:
    """``values`` as a DataArray on ``dims`` (coordinates from ``coords``), with its long name, units and attrs."""
    return xr.DataArray(np.asarray(values), dims=dims, coords={d: coords[d] for d in dims},
                        attrs={"long_name": long_name, "units": units, **attrs})


def grid_coords(sweep: Sweep) -> dict[str, np.ndarray]:
    """The coordinate values of the grid axes."""
    g = sweep.grid
    return {"delta": np.asarray(g.delta, float), "gamma": np.asarray(g.gamma, float),
            "snr": np.asarray(g.snr, float), "T": np.asarray(g.T, np.int64),
            "weights": np.array([w.label for w in g.weights], dtype=object)}


def weight_scalars(sweep: Sweep) -> xr.Dataset:
    """``alpha = w^T R w``, ``kappa = ||w||^2``, ``W1 = sum w`` and ``T_eff`` per (T, weights)."""
    coords = grid_coords(sweep)
    shape = (len(coords["T"]), len(coords["weights"]))
    out = {k: np.empty(shape) for k in ("alpha", "kappa", "w1", "t_eff")}
    for i, T in enumerate(coords["T"]):
        R = sweep.correlation.matrix(int(T))
        for j, scheme in enumerate(sweep.grid.weights):
            w = scheme.weights(R)
            out["alpha"][i, j], out["kappa"][i, j] = w @ R @ w, w @ w
            out["w1"][i, j], out["t_eff"][i, j] = w.sum(), effective_length(w)
    dims = ("T", "weights")
    return xr.Dataset({
        "theory_alpha": labelled(out["alpha"], dims, coords, "population signal strength alpha = w^T R w"),
        "theory_kappa": labelled(out["kappa"], dims, coords, "noise level kappa = ||w||^2"),
        "theory_weight_sum": labelled(out["w1"], dims, coords, "sum of the pooling weights W1"),
        "theory_T_eff": labelled(out["t_eff"], dims, coords, "effective length kappa^2 / sum w^4",
                            description="the cubic bulk law needs T_eff >~ 4 (docs/theory.md)"),
    })


def pooled_kurtosis(sweep: Sweep) -> xr.DataArray:
    """Excess kurtosis of the pooled signs ``w^T xi`` per (T, weights) (:mod:`rmtsweep.theory.finite_d`).

    Exact for the label models; 0 (the Gaussian value) for the others (``markov``, ``python``), whose pooled
    signs have no closed form here.
    """
    coords = grid_coords(sweep)
    out = np.zeros((len(coords["T"]), len(coords["weights"])))
    corr = sweep.correlation
    for i, T in enumerate(coords["T"]):
        R = corr.matrix(int(T))
        if not corr.label_model:
            continue
        q = corr.copy_probabilities(int(T))
        for j, scheme in enumerate(sweep.grid.weights):
            out[i, j] = pooled_sign_excess_kurtosis(scheme.weights(R), q)
    return labelled(out, ("T", "weights"), coords, "excess kurtosis of the pooled signs w^T xi",
               description="0 for markov correlation (no closed form; Gaussian value)")


@dataclass(frozen=True)
class TheoryBudgets:
    """What a new store's theory may compute; beyond a budget the cheaper law stands and the store says so.

    The run passes the settings ``rmtsweep.theory.*`` in, since this package knows nothing of dask's config; a
    field left out takes the setting's shipped default (:func:`rmtsweep.shipped.default`). The budgets decide
    what a store's theory holds.
    """

    # T_eff under which the finite-T spectrum law replaces the cubic; above it the cubic is within 0.003
    finite_t_below: float = field(default_factory=lambda: float(default("theory.finite-t-below")))
    # estimated seconds of the finite-T spectrum law a template may take; beyond, the cubic
    finite_t_budget: float = field(default_factory=lambda: float(default("theory.finite-t-budget")))
    # (delta, gamma) points of the exact one-token law
    one_token_budget: int = field(default_factory=lambda: int(default("theory.one-token-budget")))
    # (d, delta, gamma) points of the finite-size laws over token counts
    finite_size_budget: int = field(default_factory=lambda: int(default("theory.finite-size-budget")))
    # work units of the finite-size laws over T >= 2 positions
    pooled_budget: float = field(default_factory=lambda: float(default("theory.pooled-budget")))



def cell_weights(sweep: Sweep) -> Iterator[tuple[int, int, np.ndarray, bool]]:
    """``(T index, weights index, w, data-dependent)`` per cell; attention's ``w`` is its large-d limit."""
    for a, T in enumerate(sweep.grid.T):
        R = sweep.correlation.matrix(int(T))
        for b, scheme in enumerate(sweep.grid.weights):
            yield a, b, scheme.weights(R), scheme.data_dependent
