"""The theory on a sweep's grid: every formula of :mod:`rmtsweep.theory` at every cell, as xarray.

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

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import xarray as xr

from ..dims import ALL_AXES
from ..model import effective_length
from ..shipped import default
from ..spec import Sweep, SweepFile, load_sweep
from . import finite_t, spikes
from .bulk import edge as bulk_edge, histogram as bulk_histogram
from .cell_law import one_position, one_token_spikes, transition_snr
from .finite_d import pooled_sign_excess_kurtosis
from .finite_size import Mapper, finite_size_arrays, finite_size_law, pooled_arrays
from .pooling import DrawCache
from .token_law import SampleOptions

__all__ = ["ABS", "HISTOGRAM_SECONDS", "LAWS", "SAMPLE",
           "SAMPLE_SECONDS", "SPECTRUM_SAY", "TheoryBudgets", "grid_coords", "pooled_kurtosis", "spectrum_arrays",
           "SIZED", "sized_theory", "theory_dataset", "weight_scalars"]

ABS = "same units as the eigenvalues of S"


def _da(values, dims, coords, long_name: str, units: str = "1", **attrs) -> xr.DataArray:
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
        "theory_alpha": _da(out["alpha"], dims, coords, "population signal strength alpha = w^T R w"),
        "theory_kappa": _da(out["kappa"], dims, coords, "noise level kappa = ||w||^2"),
        "theory_weight_sum": _da(out["w1"], dims, coords, "sum of the pooling weights W1"),
        "theory_T_eff": _da(out["t_eff"], dims, coords, "effective length kappa^2 / sum w^4",
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
    return _da(out, ("T", "weights"), coords, "excess kurtosis of the pooled signs w^T xi",
               description="0 for markov correlation (no closed form; Gaussian value)")


LAWS = ("cubic MP_delta ⊠ MP_gamma", "finite-T law, exact (one token per sequence carries all the weight)",
        "finite-T law over a sampled token-count spectrum (seeded, V = 1000, 4 samples)")
SAMPLE: SampleOptions = {"size": 1000, "replicates": 4, "seed": 0, "resolution": 1e-2}  # ~0.4 CPU-s a law, ~1e-3 in KS
# Seconds of one sampled law (growing as replicates x size^3) and of one histogram (fixed, and per bin), fitted on
# a 2-core machine: an estimate from the grid alone, so that the budget decides alike on every machine.
SAMPLE_SECONDS = 0.25
HISTOGRAM_SECONDS = (0.08, 2.2e-3)
SPECTRUM_SAY = 3.0        # estimated seconds past which the finite-T spectrum law's computation is announced


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


# The finite-T histograms and sampled laws computed in this process, by what determines them (bounded, FIFO).
_MEMO: dict[tuple, object] = {}
MEMO_ENTRIES = 4096


def _memo(key: tuple, compute):
    if key not in _MEMO:
        if len(_MEMO) >= MEMO_ENTRIES:
            del _MEMO[next(iter(_MEMO))]
        _MEMO[key] = compute()
    return _MEMO[key]


def _law_key(profile: tuple, delta: float, gamma: float) -> tuple:
    """The cache key of a sampled token-count law: it depends on ``delta/gamma`` and the weights' profile only."""
    return ("nu", profile, round(delta / gamma, 12), tuple(sorted(SAMPLE.items())))


def _histogram_key(profile: tuple, delta: float, gamma: float, edges: np.ndarray) -> tuple:
    """The cache key of a finite-T histogram (the exact law, ``profile == ()``, takes no sample)."""
    return ("histogram", profile, delta, gamma, edges.tobytes(), tuple(sorted(SAMPLE.items())) if profile else ())


def _finite_t_histogram(profile: tuple, w: np.ndarray, delta: float, gamma: float, edges: np.ndarray) -> np.ndarray:
    """The finite-T law's histogram on ``edges``: exact (``profile == ()``, one position) or over the token-count
    law sampled with :data:`SAMPLE` (which depends on ``delta/gamma`` and the weights' sorted profile only)."""
    def law() -> finite_t.DiscreteLaw:
        if not profile:
            return finite_t.poisson_law(delta, gamma)
        return _memo(_law_key(profile, delta, gamma), lambda: finite_t.sample_token_law(w, delta, gamma, **SAMPLE))
    return _memo(_histogram_key(profile, delta, gamma, edges),
                 lambda: finite_t.histogram(edges, law(), delta, nodes=8))   # callers copy it into their array


def spectrum_arrays(sweep: Sweep, notes: Callable[[str], None] | None = None,
                    budgets: TheoryBudgets | None = None, finite_t: bool = True) -> dict[str, xr.DataArray]:
    """The predicted ``spectrum`` observable: the bulk density of ``S/kappa`` on its bins.

    ``paper_spectrum`` (delta, gamma, bin) is the paper's cubic law. ``theory_spectrum`` (delta, gamma, T,
    weights, bin) is the finite-T law of docs/theory.md §6.1 wherever ``T_eff`` is below ``finite_t_below``:
    exact where the weights sit on one position (token counts Poisson), else over the token-count spectrum
    sampled with :data:`SAMPLE`. Elsewhere, and for attention at ``T > 1``, it is the cubic;
    ``theory_spectrum_law`` says which. A grid whose finite-T law is estimated from the grid alone to take
    more than ``finite_t_budget`` seconds keeps the cubic, and the flag's description says so. Empty without
    a spectrum observable. ``notes`` gets one line first when the laws are expected to take more than
    :data:`SPECTRUM_SAY` seconds. Without ``finite_t`` it is the cubic everywhere (:data:`SIZED`).
    """
    budgets = budgets or TheoryBudgets()
    below, budget = budgets.finite_t_below, budgets.finite_t_budget
    spec = sweep.observables.spectrum
    if spec is None:
        return {}
    c = grid_coords(sweep)
    edges = spec.edges()
    bins = 0.5 * (edges[:-1] + edges[1:])
    ws = weight_scalars(sweep)
    cubic = np.array([[bulk_histogram(edges, dl, g) for g in c["gamma"]] for dl in c["delta"]])
    theory = np.repeat(np.repeat(cubic[:, :, None, None, :], len(c["T"]), 2), len(c["weights"]), 3)
    law = np.zeros((len(c["T"]), len(c["weights"])), np.int8)
    wanted, profile, pairs = _finite_t_cells(sweep, ws, below)
    profiles = set(profile.values())
    note = ""
    if not finite_t:
        note, wanted = "; the finite-T law is computed beside the run's first tasks", []
    elif (seconds := _spectrum_cost(profiles, pairs, edges)[2]) > budget:   # too slow: the cubic, and say so
        note = (f"; the finite-T law was not computed: its sampled laws and histograms (about {seconds:.0f} s) "
                f"exceed the budget of {budget:g} s at store creation")
        wanted = []
    elif notes is not None and wanted:
        laws, histograms, left = _spectrum_cost(profiles, pairs, edges, skip_cached=True)
        if left > SPECTRUM_SAY:
            notes(f"{sweep.name}: computing the finite-T spectrum law ({laws} sampled token-count laws, {histograms} "
                  f"histograms; about {left:.0f} s, when a store is made or extended)")
    for a, b, exact, w in wanted:
        law[a, b] = 1 if exact else 2
        for i, dl in enumerate(c["delta"]):
            for j, g in enumerate(c["gamma"]):
                theory[i, j, a, b] = _finite_t_histogram(profile[(a, b)], w, float(dl), float(g), edges)
    coords = {**c, "bin": bins}
    units = "1 / (unit of S/kappa)"
    return {
        "paper_spectrum": _da(cubic, ("delta", "gamma", "bin"), coords,
                              "predicted eigenvalue density of S/kappa on the spectrum bins: the cubic law", units),
        "theory_spectrum": _da(theory, ("delta", "gamma", "T", "weights", "bin"), coords,
                               "predicted eigenvalue density of S/kappa on the spectrum bins (see "
                               "theory_spectrum_law)", units),
        "theory_spectrum_law": _da(law, ("T", "weights"), coords, "bulk law of theory_spectrum",
                                   flag_values=[0, 1, 2], flag_meanings="cubic finite_T_exact finite_T_sampled",
                                   description="; ".join(LAWS) + note),
    }


def _finite_t_cells(sweep: Sweep, ws: xr.Dataset, below: float) -> tuple[list, dict, list[tuple[float, float]]]:
    """The cells needing the finite-T spectrum law ``(T index, weights index, exact, weights)`` (exact where the
    weights sit on one position), each one's sorted weight profile (``()``: exact), and the (delta, gamma) pairs."""
    single = set(one_position(sweep))
    wanted = [(a, b, (a, b) in single, w) for a, b, w, dependent in _cell_weights(sweep)
              if (a, b) in single or (not dependent and float(ws["theory_T_eff"][a, b]) < below)]
    profile = {(a, b): () if exact else tuple(np.round(np.sort(np.abs(w[w != 0])) / np.abs(w).max(), 12))
               for a, b, exact, w in wanted}
    c = grid_coords(sweep)
    return wanted, profile, [(float(dl), float(g)) for dl in c["delta"] for g in c["gamma"]]


def _spectrum_cost(profiles: set[tuple], pairs: list[tuple[float, float]], edges: np.ndarray,
                   skip_cached: bool = False) -> tuple[int, int, float]:
    """(sampled laws, histograms, estimated seconds) of the finite-T spectrum law over ``profiles`` (``()``: the
    exact law, no sample) and the (delta, gamma) ``pairs``; with ``skip_cached``, only what this process has not
    computed yet."""
    samples = {_law_key(p, dl, g) for p in profiles if p for dl, g in pairs}
    histograms = {_histogram_key(p, dl, g, edges) for p in profiles for dl, g in pairs}
    if skip_cached:
        samples, histograms = samples - _MEMO.keys(), histograms - _MEMO.keys()
    per_sample = SAMPLE_SECONDS * SAMPLE["replicates"] / 4 * (SAMPLE["size"] / 1000) ** 3
    per_histogram = HISTOGRAM_SECONDS[0] + HISTOGRAM_SECONDS[1] * (edges.size - 1)
    seconds = len(samples) * per_sample + len(histograms) * per_histogram
    return len(samples), len(histograms), seconds


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


def _cell_weights(sweep: Sweep) -> Iterator[tuple[int, int, np.ndarray, bool]]:
    """``(T index, weights index, w, data-dependent)`` per cell; attention's ``w`` is its large-d limit."""
    for a, T in enumerate(sweep.grid.T):
        R = sweep.correlation.matrix(int(T))
        for b, scheme in enumerate(sweep.grid.weights):
            yield a, b, scheme.weights(R), scheme.data_dependent
