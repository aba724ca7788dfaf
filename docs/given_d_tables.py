"""The detection null given each replicate's own pooling matrix: where the store's null is off (docs/theory.md §6.4).

    python docs/given_d_tables.py [REPLICATES] [SEED] [D]    # defaults: 1000 4 200

Per cell of :data:`level_tables.CELLS`, ``REPLICATES`` times: one draw of the cell's pooling matrix (of the token
counts at ``T = 1``) and its eigenvalues ``p``, then ``lambda_1`` of ``(1/V) sum_j p_j z_j z_j^T`` (the null
``S / kappa`` given ``D``, by the rotation invariance of the table). It is held against the null law of that same
``D`` (:func:`rmtsweep.theory.null_law.null_parts`, one draw, no mixture) with the bulk edge as derived, centred
with ``n - 1/2`` over all the tokens (:func:`~rmtsweep.theory.null_law.half_corrected_edge`) and centred as the
matched white Wishart (:func:`~rmtsweep.theory.null_law.matched_edge`, the store's). Printed per cell and pooled:
the false alarms at levels 0.05 and 0.01, the mean and sd of ``(lambda_1 - edge) / scale`` (TW_1: -1.21, 1.27,
replicates without a spike candidate), and its pooled quantiles under the matched centring.
"""

from __future__ import annotations

import sys

import numpy as np
from level_tables import CELLS, LEVELS, _weights
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.theory.null_law import (POOLED_TAIL, half_corrected_edge, matched_edge, mixture_cdf, null_parts,
                                      pooled_model, pooling_eigenvalues)
from rmtsweep.theory.tracy_widom import tw_quantile

EDGES = ("as derived", "n - 1/2 over the tokens", "matched Wishart")
PROBS = (0.05, 0.5, 0.95, 0.99)


def cell(i: int, d: int, reps: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(u, s)``: per replicate the null CDF at ``lambda_1`` and the standardised ``lambda_1`` under each edge."""
    T, name, params, kind, delta, gamma = CELLS[i]
    model = pooled_model(_weights(kind, T), make_correlation(name, **params), delta, gamma, d)
    rng = np.random.default_rng([seed, i, d])
    tail = 0.5 if T == 1 else min(0.5, POOLED_TAIL / d)
    u, s = np.full((reps, 3), np.nan), np.full((reps, 3), np.nan)
    with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
        for r in range(reps):
            if T == 1:
                p = model.V * np.bincount(rng.integers(model.V, size=model.N), minlength=model.V) / model.N
            else:
                p = pooling_eigenvalues(model, rng)
            nu, _, loc, scale = null_parts(p, delta, d, tail)
            p = p[p > 1e-12]
            Z = rng.standard_normal((p.size, d)) * np.sqrt(p / model.V)[:, None]
            lam = np.linalg.eigvalsh(Z.T @ Z if p.size >= d else Z @ Z.T)[-1]
            for k, edge in enumerate(((loc[0], scale[0]), half_corrected_edge(nu, delta, d, tail),
                                      matched_edge(nu, delta, d, tail))):
                loc[0], scale[0] = edge
                u[r, k] = float(mixture_cdf(lam, loc[None], scale[None]))
                if np.isnan(loc[1:]).all():
                    s[r, k] = (lam - edge[0]) / edge[1]
    return u, s


def main(reps: int, seed: int, d: int) -> None:
    us, ss = [], []
    print(f"d = {d}; per edge: false alarms at {LEVELS}, mean and sd of (lambda_1 - edge) / scale")
    for i, (T, name, params, kind, delta, gamma) in enumerate(CELLS):
        u, s = cell(i, d, reps, seed)
        us.append(u)
        ss.append(s)
        print(f"{T} {name}{params or ''} {kind} {delta} {gamma} | " + " | ".join(
            " ".join(f"{np.mean(u[:, k] > 1 - lv):.4f}" for lv in LEVELS)
            + f" {np.nanmean(s[:, k]):+.3f} {np.nanstd(s[:, k]):.3f}" for k in range(3)), flush=True)
    u, s = np.concatenate(us), np.concatenate(ss)
    print("\n| edge | " + " | ".join(f"level {lv}" for lv in LEVELS) + " |\n|---|---|---|")
    for k, name in enumerate(EDGES):
        print(f"| {name} | " + " | ".join(f"{np.mean(u[:, k] > 1 - lv):.4f} ± {np.sqrt(lv * (1 - lv) / len(u)):.4f}"
                                          for lv in LEVELS) + " |")
    print(f"\nquantiles {PROBS} of (lambda_1 - edge) / scale, matched, {np.isfinite(s[:, 2]).sum()} replicates: "
          f"{np.round(np.nanquantile(s[:, 2], PROBS), 3)}; TW_1: {np.round(tw_quantile(np.array(PROBS)), 3)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000, int(sys.argv[2]) if len(sys.argv) > 2 else 4,
         int(sys.argv[3]) if len(sys.argv) > 3 else 200)
