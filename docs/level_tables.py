"""False alarms of the detection test at levels 0.05 and 0.01 on null simulations (docs/theory.md §6.4).

    python docs/level_tables.py [REPLICATES] [SEED] [D,D,...]    # defaults: 300 9100 150,250,400

Per null cell (one token per sequence, ``T = 1``, and fixed weights over ``T`` = 2, 3, 4, 8 positions under
five correlation models; ``(delta, gamma)`` and ``d`` as listed in :data:`CELLS`), ``REPLICATES`` null replicates
of the model's own code (seed ``SEED`` + the cell's index) give ``lambda_1 / kappa``; each is held against
the ``1 - level`` quantile of the store's null (:func:`rmtsweep.theory.null_law.count_null` at ``T = 1``,
:func:`~rmtsweep.theory.null_law.pooled_null` beyond, the same seeded draws a store makes) with the bulk edge
centred with ``n - 1/2``, ``d - 1/2`` over all the tokens (:func:`~rmtsweep.theory.null_law.half_corrected_edge`,
the store's centring before) and with the centring of the matched white Wishart
(:func:`~rmtsweep.theory.null_law.matched_edge`, the store's now), the first over 8 draws of the pooling matrix
(the store's before), the second over the store's :data:`~rmtsweep.theory.null_law.POOLED_DRAWS` and over 64 (at
``T = 1`` the store's 64 count draws throughout). Printed: per cell the false-alarm rates, then pooled with their
binomial s.e., and the cells within 3 binomial s.e. of the level.
"""

from __future__ import annotations

import sys
import time
from unittest import mock

import numpy as np
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.replicate import CellModel, simulate_replicate
from rmtsweep.theory import null_law
from rmtsweep.theory.null_law import POOLED_DRAWS, count_null, mixture_quantile, pooled_null

LEVELS = (0.05, 0.01)
# (finite-size centring, draws of the pooling matrix): the store's before, the store's now, many draws
VARIANTS = (("tokens", 8), ("matched", POOLED_DRAWS), ("matched", 64))
NAMES = {("tokens", 8): "n - 1/2 over the tokens, 8 draws", ("matched", POOLED_DRAWS): f"matched, {POOLED_DRAWS} draws",
         ("matched", 64): "matched, 64 draws"}


def _weights(kind: str, T: int) -> np.ndarray:
    if kind == "mean":
        return np.full(T, 1.0 / T)
    if kind == "harmonic":
        h = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, T + 1))])
        return (h[T] - h[:T]) / T
    return 2.0 ** -np.arange(T) / (2.0 - 2.0 ** (1 - T))             # "2^-t", normalised


# (T, correlation model, its parameters, weights, delta, gamma)
CELLS = (
    (1, "iid", {}, "mean", 0.5, 0.5), (1, "iid", {}, "mean", 0.2, 1.0), (1, "iid", {}, "mean", 1.0, 0.5),
    (2, "iid", {}, "mean", 0.5, 0.5), (2, "markov", {"r": 0.5}, "harmonic", 1.0, 0.25),
    (3, "prefix", {"L": 2}, "harmonic", 0.25, 1.0), (3, "markov", {"r": -0.4}, "mean", 0.5, 0.5),
    (4, "decay", {"r": 0.6}, "mean", 1.0, 0.5), (4, "full", {}, "2^-t", 0.5, 0.5),
    (8, "prefix", {"L": 3}, "harmonic", 0.5, 0.5), (8, "markov", {"r": 0.5}, "mean", 0.25, 1.0),
)


def cell(i: int, d: int, reps: int, seed: int) -> dict:
    T, model_name, params, kind, delta, gamma = CELLS[i]
    corr = make_correlation(model_name, **params)
    w = _weights(kind, T)
    kappa = float(w @ w)
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1)
    rng = np.random.default_rng(seed + 100 * i + d)
    with threadpool_limits(limits=1):
        lam = np.array([simulate_replicate(model, np.zeros(1), rng).eigenvalues[0, 0] for _ in range(reps)]) / kappa
    out = {"d": d, "T": T, "corr": f"{model_name}{params or ''}", "weights": kind, "delta": delta, "gamma": gamma}
    for centring, draws in VARIANTS:
        edge = null_law.half_corrected_edge if centring == "tokens" else null_law.matched_edge
        with mock.patch.object(null_law, "matched_edge", edge):      # the store's centring, or the one before
            null = count_null(delta, gamma, d) if T == 1 else pooled_null(w, corr, delta, gamma, d, draws=draws)
        for level in LEVELS:
            q = mixture_quantile(1.0 - level, null.location, null.scale)
            out[(centring, draws, level)] = float(np.mean(lam > q))
    out["reps"] = reps
    return out


def main(reps: int, seed: int, ds: list[int]) -> None:
    t0 = time.process_time()
    rows = []
    print("d T corr weights delta gamma | 0.05: " + ", ".join(NAMES[v] for v in VARIANTS) + " | 0.01: the same")
    for d in ds:
        for i in range(len(CELLS)):
            r = cell(i, d, reps, seed)
            rows.append(r)
            print(f"{d} {r['T']} {r['corr']} {r['weights']} {r['delta']} {r['gamma']} | "
                  + " | ".join(" ".join(f"{r[(*v, level)]:.3f}" for v in VARIANTS) for level in LEVELS), flush=True)
    print("\n| level | edge | pooled false alarms (z) | cells within 3 binomial s.e. |")
    print("|---|---|---|---|")
    total = sum(r["reps"] for r in rows)
    for level in LEVELS:
        for v in VARIANTS:
            hits = sum(r[(*v, level)] * r["reps"] for r in rows)
            se = np.sqrt(level * (1 - level) / total)
            within = sum(abs(r[(*v, level)] - level) <= 3 * np.sqrt(level * (1 - level) / r["reps"]) for r in rows)
            print(f"| {level} | {NAMES[v]} | {hits / total:.4f} ± {se:.4f} "
                  f"({(hits / total - level) / se:+.1f}) | {within}/{len(rows)} |")
    print(f"\n{len(rows)} cells, {total} replicates, {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2 else 9100,
         [int(x) for x in (sys.argv[3] if len(sys.argv) > 3 else "150,250,400").split(",")])
