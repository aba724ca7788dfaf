"""Which law a grid cell's theory comes from, and the one function per quantity that evaluates it.

Two laws give the store's edge, outlier, alignment, phase and sample threshold (docs/theory.md §3.6, §6.1):

- ``CUBIC`` (0): ``MP_delta ⊠ MP_gamma`` and the spike formulas of :mod:`rmtsweep.theory.spikes`;
- ``EXACT`` (1): the finite-T law over ``nu = (gamma/delta) Poisson(delta/gamma)``, exact wherever the
  weights sit on one position (:func:`one_position`): every scheme at ``T = 1`` (attention included: its
  weights are then ``w = [1]`` for every sequence and SNR value) and any fixed scheme whose weights are
  one-hot. A class-centred table only (the uncentred corrections are the cubic's).

The store's ``theory_law`` (T, weights) records which one each cell got. :func:`rmtsweep.theory.on_grid.theory_dataset`
writes the store's arrays with these functions, and the maps and figures draw their curves between
grid points with the same functions and the store's ``theory_law``, so a curve cannot disagree with
the array it shows.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import xarray as xr
from numpy.typing import ArrayLike, NDArray

from ..errors import ArgumentError
from ..spec import Sweep
from ..shipped import default
from . import finite_t, spikes
from .token_law import DiscreteLaw

__all__ = ["CUBIC", "EXACT", "exact_law", "law_at", "limit_spike", "one_position",
           "one_token_spikes", "transition_snr"]

CUBIC, EXACT = 0, 1

Float = NDArray[np.float64]


def law_at(ds: xr.Dataset, T, weights) -> int:
    """A theory dataset's (or store's) ``theory_law`` at one (T, weights); ``CUBIC`` where it has none."""
    return int(ds["theory_law"].sel(T=T, weights=weights)) if "theory_law" in ds else CUBIC


def one_position(sweep: Sweep) -> list[tuple[int, int]]:
    """``(T index, weights index)`` of the cells whose weights sit on one position (the exact law applies).

    ``T = 1`` for every scheme (a data-dependent scheme too: one position gets weight 1), and any fixed
    scheme whose weights have a single nonzero entry (e.g. ``optimal`` for ``prefix(1)``).
    """
    cells = []
    for a, T in enumerate(sweep.grid.T):
        R = sweep.correlation.matrix(int(T))
        for b, scheme in enumerate(sweep.grid.weights):
            if int(T) == 1 or (not scheme.data_dependent and int(np.count_nonzero(scheme.weights(R))) == 1):
                cells.append((a, b))
    return cells


@lru_cache(maxsize=4096)
def exact_law(delta: float, gamma: float) -> tuple[DiscreteLaw, float, float]:
    """``nu = (gamma/delta) Poisson(delta/gamma)``, its main edge and its sample threshold on ``rho``.

    About 30 ms per point, cached: every caller (the store, the maps) gets the same numbers.
    """
    nu = finite_t.poisson_law(delta, gamma)
    return nu, float(finite_t.edge(nu, delta)), float(finite_t.threshold(nu, delta))


def _per_point(fn, delta: ArrayLike, gamma: ArrayLike) -> Float:
    delta, gamma = np.broadcast_arrays(np.asarray(delta, float), np.asarray(gamma, float))
    values = [fn(float(dl), float(g)) for dl, g in zip(delta.ravel(), gamma.ravel(), strict=True)]
    return np.array(values).reshape(delta.shape)


def transition_snr(kind: str, alpha: ArrayLike, kappa: ArrayLike, delta: ArrayLike, gamma: ArrayLike,
                   centering: str = "class", law: int = CUBIC) -> Float:
    """The ``"population"`` or ``"sample"`` transition SNR of a weights scheme under ``law``.

    ``CUBIC``: :func:`rmtsweep.theory.spikes.transition_snr`. ``EXACT`` (class-centred table): the
    sample threshold of the exact finite-T law, ``rho_c kappa / alpha``; the population threshold
    ``delta + sqrt(delta)`` is the same for both laws (it does not depend on the samples).
    """
    if law == CUBIC or kind == "population":
        return spikes.transition_snr(kind, alpha, kappa, delta, gamma, centering)
    if centering != "class":
        raise ArgumentError(f"the exact finite-T law is for a class-centred table, not table_centering={centering!r}")
    rho_c = _per_point(lambda dl, g: exact_law(dl, g)[2], delta, gamma)
    return np.asarray(spikes.snr_threshold(rho_c, alpha, kappa))


def limit_spike(rho: ArrayLike, delta: float, gamma: float, law: int = CUBIC) -> tuple[Float, Float]:
    """Limits of ``lambda_1 / kappa`` and of the top alignment at ``rho`` (class-centred table) under ``law``."""
    if law == CUBIC:
        return spikes.sample_outlier(rho, delta, gamma), spikes.overlap(rho, delta, gamma)
    loc, ov = finite_t.outlier(np.asarray(rho, float), exact_law(float(delta), float(gamma))[0], delta)
    return np.asarray(loc), np.asarray(ov)


def one_token_spikes(ds: xr.Dataset, sweep: Sweep, budget: int | None = None) -> xr.Dataset:
    """Edge, outlier, alignment, phase and sample threshold from the exact law at the :func:`one_position` cells.

    There they replace the cubic's (which stays in ``paper_*``), and ``theory_law`` is ``EXACT``.
    ``theory_rho_sample`` (per delta, gamma) stays the cubic's. Beyond ``budget`` ``(delta, gamma)`` points
    (default: the shipped ``rmtsweep.theory.one-token-budget``) nothing is replaced and the flag's description
    says so.
    """
    budget = int(default("theory.one-token-budget") if budget is None else budget)
    coords = {name: ds[name].values for name in ("delta", "gamma", "T", "weights")}
    flag = np.zeros((coords["T"].size, coords["weights"].size), np.int8)
    cells = one_position(sweep)
    pairs = [(float(dl), float(g)) for dl in coords["delta"] for g in coords["gamma"]]
    note = ""
    if cells and len(pairs) > budget:   # each (delta, gamma) point solves the exact law for its edge and threshold
        note = f"; not computed: {len(pairs)} (delta, gamma) points exceed the budget of {budget}"
        cells = []
    changed = ("theory_edge", "theory_outlier", "theory_overlap", "theory_phase", "theory_snr_sample")
    if cells:                                     # copy only what is overwritten, only when something is
        ds = ds.assign({name: ds[name].copy(deep=True) for name in changed})
    for a, b in cells:
        flag[a, b] = EXACT
        at = {"T": coords["T"][a], "weights": coords["weights"][b]}
        kappa, alpha = float(ds["theory_kappa"].sel(at)), float(ds["theory_alpha"].sel(at))
        rho = ds["theory_rho"].sel(at).values
        for dl, g in pairs:
            rho_pop = float(ds["theory_rho_population"].sel(delta=dl))
            _, edge, rho_c = exact_law(dl, g)
            loc, ov = limit_spike(rho, dl, g, EXACT)
            cell = {"delta": dl, "gamma": g, **at}
            ds["theory_edge"].loc[cell] = kappa * edge
            ds["theory_outlier"].loc[cell] = kappa * loc
            ds["theory_overlap"].loc[cell] = ov
            ds["theory_phase"].loc[cell] = np.where(rho > rho_c, 2, np.where(rho > rho_pop, 1, 0))
            ds["theory_snr_sample"].loc[cell] = transition_snr("sample", alpha, kappa, dl, g, "class", EXACT)
    cell_coords = {k: coords[k] for k in ("T", "weights")}
    ds["theory_law"] = xr.DataArray(flag, dims=("T", "weights"), coords=cell_coords, attrs={
        "long_name": "law behind theory_edge, _outlier, _overlap, _phase, _snr_sample", "units": "1",
        "flag_values": [CUBIC, EXACT], "flag_meanings": "cubic finite_T_exact",
        "description": "finite_T_exact: weights on one position, every scheme at T = 1 (docs/theory.md §6.1)" + note})
    for name in changed:
        ds[name].attrs["long_name"] = ds[name].attrs["long_name"] + " (finite-T law where theory_law = 1)"
    return ds

