"""The predicted ``spectrum`` observable: the bulk density of ``S / kappa`` on the sweep's bins (docs/theory.md §6.1).

The cubic law everywhere, and the finite-T law where ``T_eff`` is small: exact where the weights sit on one
position, else over a sampled token-count law. Both are memoised in this process; their cost is estimated from
the grid alone, so that the budget decides alike on every machine.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xarray as xr

from ..spec import Sweep
from . import finite_t
from .bulk import histogram as bulk_histogram
from .cell_law import one_position
from .grid import TheoryBudgets, cell_weights, grid_coords, labelled, weight_scalars
from .token_law import SampleOptions

__all__ = ["HISTOGRAM_SECONDS", "LAWS", "SAMPLE", "SAMPLE_SECONDS", "SPECTRUM_SAY", "finite_t_cells",
           "spectrum_arrays", "spectrum_cost"]

LAWS = ("cubic MP_delta ⊠ MP_gamma", "finite-T law, exact (one token per sequence carries all the weight)",
        "finite-T law over a sampled token-count spectrum (seeded, V = 1000, 4 samples)")
SAMPLE: SampleOptions = {"size": 1000, "replicates": 4, "seed": 0, "resolution": 1e-2}  # ~0.4 CPU-s a law, ~1e-3 in KS
# Seconds of one sampled law (growing as replicates x size^3) and of one histogram (fixed, and per bin), fitted on
# a 2-core machine: an estimate from the grid alone, so that the budget decides alike on every machine.
SAMPLE_SECONDS = 0.25
HISTOGRAM_SECONDS = (0.035, 0.8e-3)
SPECTRUM_SAY = 3.0        # estimated seconds past which the finite-T spectrum law's computation is announced


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
    wanted, profile, pairs = finite_t_cells(sweep, ws, below)
    profiles = set(profile.values())
    note = ""
    if not finite_t:
        note, wanted = "; the finite-T law is computed beside the run's first tasks", []
    elif (seconds := spectrum_cost(profiles, pairs, edges)[2]) > budget:   # too slow: the cubic, and say so
        note = (f"; the finite-T law was not computed: its sampled laws and histograms (about {seconds:.0f} s) "
                f"exceed the budget of {budget:g} s at store creation")
        wanted = []
    elif notes is not None and wanted:
        laws, histograms, left = spectrum_cost(profiles, pairs, edges, skip_cached=True)
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
        "paper_spectrum": labelled(cubic, ("delta", "gamma", "bin"), coords,
                              "predicted eigenvalue density of S/kappa on the spectrum bins: the cubic law", units),
        "theory_spectrum": labelled(theory, ("delta", "gamma", "T", "weights", "bin"), coords,
                               "predicted eigenvalue density of S/kappa on the spectrum bins (see "
                               "theory_spectrum_law)", units),
        "theory_spectrum_law": labelled(law, ("T", "weights"), coords, "bulk law of theory_spectrum",
                                   flag_values=[0, 1, 2], flag_meanings="cubic finite_T_exact finite_T_sampled",
                                   description="; ".join(LAWS) + note),
    }


def finite_t_cells(sweep: Sweep, ws: xr.Dataset, below: float) -> tuple[list, dict, list[tuple[float, float]]]:
    """The cells needing the finite-T spectrum law ``(T index, weights index, exact, weights)`` (exact where the
    weights sit on one position), each one's sorted weight profile (``()``: exact), and the (delta, gamma) pairs."""
    single = set(one_position(sweep))
    wanted = [(a, b, (a, b) in single, w) for a, b, w, dependent in cell_weights(sweep)
              if (a, b) in single or (not dependent and float(ws["theory_T_eff"][a, b]) < below)]
    profile = {(a, b): () if exact else tuple(np.round(np.sort(np.abs(w[w != 0])) / np.abs(w).max(), 12))
               for a, b, exact, w in wanted}
    c = grid_coords(sweep)
    return wanted, profile, [(float(dl), float(g)) for dl in c["delta"] for g in c["gamma"]]


def spectrum_cost(profiles: set[tuple], pairs: list[tuple[float, float]], edges: np.ndarray,
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
