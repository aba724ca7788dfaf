"""The theory on a sweep's grid: every formula of :mod:`rmtsweep.theory` at every cell, as xarray.

The grid's coordinates, weight scalars and budgets are :mod:`.grid`'s; the predicted spectrum is :mod:`.spectrum`'s.

Which formulas a store carries follows its ``table_centering`` (docs/theory.md):

- ``class``: the paper's spike formulas with ``rho = alpha snr / kappa``, except where the weights
  sit on one position (every scheme at ``T = 1``): there the exact finite-T law
  (:mod:`rmtsweep.theory.cell_law`, ``theory_law = 1``). The finite-size predictions at the sweep's own
  ``d`` (:mod:`rmtsweep.theory.finite_size`) come with them, and with fixed weights over ``T >= 2``
  positions (over the realised pooling matrix; ``finite_size_law`` says which).
- ``none``: the corrected uncentred-table theory (:func:`rmtsweep.theory.spikes.uncentred`) — a
  signal outlier at ``rho_s = (alpha/kappa)(snr + delta)`` whose eigenvector's alignment with ``u``
  is scaled by ``snr / (snr + delta)``, and a common-mean outlier at ``rho_b = W1^2 delta / kappa``
  whose eigenvector is orthogonal to ``u``. ``theory_outlier`` is then the largest of the two
  outliers and the edge.

The paper's uncorrected numbers are always kept as ``paper_*`` so a comparison can show how far
they are off on an uncentred table (for ``class`` they equal ``theory_*``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from pathlib import Path

import numpy as np
import xarray as xr

from ..dims import ALL_AXES
from ..spec import Sweep, SweepFile, load_sweep
from . import spikes
from .bulk import edge as bulk_edge
from .cell_law import one_token_spikes, transition_snr
from .finite_size import Mapper, finite_size_arrays, finite_size_law, pooled_arrays
from .grid import ABS, TheoryBudgets, grid_coords, pooled_kurtosis, weight_scalars
from .pooling import DrawCache
from .spectrum import spectrum_arrays

__all__ = ["SIZED", "sized_theory", "theory_dataset"]


def _apply(fn, *args: xr.DataArray) -> xr.DataArray:
    return xr.apply_ufunc(fn, *args)


def _spike_vars(loc: xr.DataArray, ov: xr.DataArray, ph: xr.DataArray, prefix: str, what: str
                ) -> dict[str, xr.DataArray]:
    loc.attrs = {"long_name": f"limit of lambda_1 ({what}): outlier or bulk edge", "units": ABS}
    ov.attrs = {"long_name": f"limit of the top alignment |u_hat^T u|^2 ({what})", "units": "1"}
    ph = ph.astype(np.int8)
    ph.attrs = {"long_name": f"phase ({what})", "units": "1", "flag_values": [0, 1, 2],
                "flag_meanings": "no_population_outlier population_outlier_only sample_outlier"}
    return {f"{prefix}_outlier": loc, f"{prefix}_overlap": ov, f"{prefix}_phase": ph}


def _paper(rho, delta, gamma, kappa) -> dict[str, xr.DataArray]:
    return _spike_vars(_apply(spikes.sample_outlier, rho, delta, gamma) * kappa,
                       _apply(spikes.overlap, rho, delta, gamma), _apply(spikes.phase, rho, delta, gamma),
                       "paper", "paper's formulas, docs/theory.md")


def _uncentred(snr, ws: xr.Dataset, delta, gamma) -> dict[str, xr.DataArray]:
    """The two spikes of an uncentred table (:func:`rmtsweep.theory.spikes.uncentred`) on the grid."""
    kappa = ws["theory_kappa"]
    args = xr.broadcast(snr, ws["theory_alpha"], kappa, ws["theory_weight_sum"], delta, gamma)
    dims, coords = args[0].dims, args[0].coords
    res = spikes.uncentred(*(a.transpose(*dims).values for a in args))
    wrap = {key: xr.DataArray(value, dims=dims, coords=coords) for key, value in res.items()}
    mean = {key: wrap[key].isel(snr=0, drop=True) for key in ("rho_mean", "mean_outlier", "mean_overlap", "mean_phase")}
    out: dict[str, xr.DataArray] = {}
    out.update(_spike_vars(wrap["signal_outlier"] * kappa, wrap["signal_overlap"], wrap["signal_phase"],
                           "theory_signal", "signal outlier, uncentred table"))
    out.update(_spike_vars(mean["mean_outlier"] * kappa, mean["mean_overlap"], mean["mean_phase"],
                           "theory_mean", "common-mean outlier, uncentred table"))
    rho_b = mean["rho_mean"]
    out["theory_rho_signal"] = wrap["rho_signal"].assign_attrs(
        long_name="signal rho_s = (alpha/kappa)(snr + delta)", units="1")
    out["theory_rho_mean"] = rho_b.assign_attrs(long_name="common-mean rho_b = W1^2 delta / kappa", units="1")
    out["theory_outlier"] = (wrap["top"] * kappa).assign_attrs(
        long_name="limit of lambda_1: the larger of the two outliers, or the bulk edge", units=ABS)
    out["theory_overlap"] = out["theory_signal_overlap"].copy().assign_attrs(
        long_name="limit of the signal eigenvector's alignment with u (the top-k eigenvector best aligned with u)",
        units="1")
    out["theory_phase"] = out["theory_signal_phase"].copy()
    return out


def theory_dataset(sweep: Sweep | SweepFile | str | Path, notes: Callable[[str], None] | None = None,
                   budgets: TheoryBudgets | None = None, part: str = "all", mapper: Mapper | None = None,
                   cache: DrawCache | None = None) -> xr.Dataset:
    """Every theory array of the sweep's grid, computed once, when the store is created.

    ``sweep`` is a :class:`~rmtsweep.spec.Sweep`, what :func:`~rmtsweep.spec.load_sweep` returns, or a sweep
    file's path or a shipped sweep's name (``"demo"``), as :func:`rmtsweep.run_sweep` takes.

    The law of each cell (the cubic, or the exact finite-T law where the weights sit on one
    position) is chosen by :mod:`rmtsweep.theory.cell_law` and recorded in ``theory_law``; the
    analysis reads these arrays (or calls the same functions with the same ``theory_law``) and
    recomputes no theory of its own.

    ``notes`` gets a line before a computation expected to take several seconds (the finite-T spectrum law, the
    detection nulls). ``budgets`` bounds what is computed (default: :class:`TheoryBudgets`' defaults).
    ``mapper`` computes the finite-size laws' independent (point, weights) pairs (default: one after another).
    ``cache`` keeps the pooling matrix's draws between stores (:func:`rmtsweep.theory.pooling.cached_draws`): the
    arrays are the same with or without it.

    Returns
    -------
    xarray.Dataset
        Variables ``theory_*`` (the theory this store's centering calls for) and ``paper_*`` (the
        paper's formulas as stated), with units and long names. ``theory_pooled_kurtosis`` feeds the
        finite-d detection rate; ``finite_size_*`` (seeded Monte Carlo predictions at the sweep's own
        ``d``: a ``d`` dimension only where ``d`` is a grid axis) exist where ``theory_law = 1`` (over token
        counts) and at fixed weights over ``T >= 2`` positions (over the realised pooling matrix, with the
        detection null ``pooled_null_*`` of the same draws); ``finite_size_law`` says which. Every other
        array is a large-dimension limit, without ``d``.
    """
    if isinstance(sweep, SweepFile):
        sweep = sweep.sweep
    elif not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep).sweep
    budgets = budgets or TheoryBudgets()
    c = grid_coords(sweep)
    ws = weight_scalars(sweep)
    delta = xr.DataArray(c["delta"], dims="delta", coords={"delta": c["delta"]})
    gamma = xr.DataArray(c["gamma"], dims="gamma", coords={"gamma": c["gamma"]})
    snr = xr.DataArray(c["snr"], dims="snr", coords={"snr": c["snr"]})
    alpha, kappa = ws["theory_alpha"], ws["theory_kappa"]
    centering = sweep.table_centering

    rho = (alpha / kappa * snr).rename("theory_rho")
    rho.attrs = {"long_name": "effective SNR rho = alpha snr / kappa (paper)", "units": "1"}
    edge = _apply(bulk_edge, delta, gamma) * kappa
    edge.attrs = {"long_name": "right edge of the bulk kappa * lambda_+", "units": ABS}
    rho_pop = _apply(spikes.population_threshold, delta)
    rho_pop.attrs = {"long_name": "population threshold on rho: delta + sqrt(delta)", "units": "1"}
    rho_c = _apply(spikes.sample_threshold, delta, gamma)
    rho_c.attrs = {"long_name": "sample threshold on rho (the observable transition)", "units": "1"}

    out = {**ws.data_vars, "theory_rho": rho, "theory_edge": edge,
           "theory_rho_population": rho_pop, "theory_rho_sample": rho_c}
    paper = _paper(rho, delta, gamma, kappa)
    out.update(paper)
    if centering == "class":
        out.update({k.replace("paper_", "theory_"): v.copy() for k, v in paper.items()})
    else:
        out.update(_uncentred(snr, ws, delta, gamma))
    for kind, name in (("population", "theory_snr_population"), ("sample", "theory_snr_sample")):
        snr_t = xr.apply_ufunc(transition_snr, kind, alpha, kappa, delta, gamma, centering)
        out[name] = snr_t.assign_attrs(long_name=f"{'population' if kind == 'population' else 'sample (observable)'} "
                                                 "transition SNR", units="snr")
    out["theory_pooled_kurtosis"] = pooled_kurtosis(sweep)
    out.update(spectrum_arrays(sweep, notes, budgets, finite_t=False))
    ds = xr.Dataset(out)
    if centering == "class":
        ds = one_token_spikes(ds, sweep, budgets.one_token_budget)
    if part == "all":
        ds = ds.assign(_sized(ds, sweep, notes, budgets, mapper, cache))
    elif part == "sized":
        ds = xr.Dataset(_sized(ds, sweep, notes, budgets, mapper, cache))
    return ds.transpose(*[d for d in ALL_AXES if d in ds.dims], ...)


SIZED = ("theory_spectrum", "theory_spectrum_law", "finite_size_*", "pooled_null_*")
"""The theory arrays at a store's own size: the finite-T spectrum law and the finite-size laws. A run
computes them beside its first tasks; until they are written, the store's ``theory_pending`` attribute is true."""


def _sized(ds: xr.Dataset, sweep: Sweep, notes: Callable[[str], None] | None,
           budgets: TheoryBudgets, mapper: Mapper | None = None,
           cache: DrawCache | None = None) -> dict[Hashable, xr.DataArray]:
    """The :data:`SIZED` arrays of ``sweep``, given its template's theory ``ds`` (its laws and kappa)."""
    out: dict[Hashable, xr.DataArray] = {}
    if sweep.observables.spectrum is not None:
        spectrum = spectrum_arrays(sweep, notes, budgets)
        out.update({name: spectrum[name] for name in ("theory_spectrum", "theory_spectrum_law")})
    if sweep.table_centering != "class":
        return out
    sized = ds.assign(finite_size_arrays(sweep, ds["theory_law"], ds["theory_kappa"], budgets.finite_size_budget))
    pooled = pooled_arrays(sweep, ds["theory_law"], notes, budgets.pooled_budget, mapper, cache)
    for name in [name for name in pooled if name in sized]:       # finite_size_*: T = 1 cells, then T >= 2
        pooled[name] = sized[name].combine_first(pooled[name]).assign_attrs(sized[name].attrs)
    sized = sized.assign(pooled)
    if (flag := finite_size_law(sized)) is not None:
        sized["finite_size_law"] = flag
    out.update({name: sized[name] for name in sized.data_vars if name not in ds.data_vars})
    return out


def sized_theory(sweep: Sweep, budgets: TheoryBudgets | None = None, mapper: Mapper | None = None,
                 cache: DrawCache | None = None) -> xr.Dataset:
    """The :data:`SIZED` arrays of ``sweep``, computed beside a run's first tasks (``mapper``, ``cache``: see
    theory_dataset)."""
    return theory_dataset(sweep, budgets=budgets, part="sized", mapper=mapper, cache=cache)
