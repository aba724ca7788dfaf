"""The top eigenvalue and alignment in bands of rho / rho_c against the store's best prediction (docs/theory.md §6.6).

    python docs/subcritical_tables.py [D,D,...] [REPLICATES] [SEED] [T,T,...]    # defaults: 200,400 96 7000 3,8,16

Per cell (``d``; ``T`` = 3, 8, 16 by default; ``(delta, gamma)`` = (0.5, 0.5), (1, 0.25), (0.25, 1); mean weights
with iid signs, and weights ``2^-t`` normalised with a Markov chain of ``r = 0.8``; at ``T = 1`` one token per
sequence) and per SNR (0 and 0.3, 0.6, 0.8, 0.9, 1.0, 1.1, 1.25, 1.6, 2.5 times the threshold ``rho_c kappa /
alpha``, the cubic's, and at ``T = 1`` the exact finite-T law's): the simulated mean of
``lambda_1 / kappa`` and of the top alignment over ``REPLICATES`` replicates (the model's own code, seed
``SEED + d + T``), and the z against the store's finite-size prediction
(:func:`rmtsweep.theory.pooled_spikes.pooled_spikes`, at ``T = 1``
:func:`rmtsweep.theory.token_counts.realised_count_spikes`; its own s.e. included), against the same
construction without the critical window's correction (:mod:`rmtsweep.theory.window_law`; the same at ``T = 1``)
and, for the alignment, with a flat ``1/d`` for a draw without an outlier on top. Then, per band of
``rho / rho_c`` (0, (0, 0.8], (0.8, 1.25], (1.25, 2], > 2), the cells within 3 standard errors.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import rmtsweep.theory.pooled_spikes as ps
import rmtsweep.theory.token_counts as tc
from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.replicate import CellModel, simulate_replicate
from rmtsweep.theory import spikes
from rmtsweep.theory.finite_t import poisson_law, threshold

MULTIPLES = (0.0, 0.3, 0.6, 0.8, 0.9, 1.0, 1.1, 1.25, 1.6, 2.5)
POINTS = ((0.5, 0.5), (1.0, 0.25), (0.25, 1.0))
BANDS = (("0", 0.0, 0.0), ("(0, 0.8]", 1e-9, 0.8), ("(0.8, 1.25]", 0.8 + 1e-9, 1.25), ("(1.25, 2]", 1.25 + 1e-9, 2.0),
         ("> 2", 2.0 + 1e-9, np.inf))


def _flat(*args, **kwargs) -> float:
    return 1.0


def _flat_counts(rho, nu, delta, g_top, d) -> float:
    return 1.0 / d


def _none(w):
    return np.zeros(np.shape(w))


def _predict(snr: np.ndarray, w: np.ndarray, corr, delta: float, gamma: float, d: int):
    """The store's finite-size prediction of the cell (realised counts at ``T = 1``, the pooling matrix beyond)."""
    if w.size == 1:
        return tc.realised_count_spikes(snr, delta, gamma, d, draws=64)
    return ps.pooled_spikes(snr, w, corr, delta, gamma, d)


def cell(d: int, T: int, delta: float, gamma: float, kind: str, reps: int, seed: int) -> list[dict]:
    """One cell's rows, one per SNR multiple."""
    corr = make_correlation("iid") if kind == "mean" else make_correlation("markov", r=0.8)
    w = np.full(T, 1.0 / T) if kind == "mean" else 2.0 ** -np.arange(T)
    w = w / w.sum()
    kappa, alpha = float(w @ w), float(w @ corr.matrix(T) @ w)
    rc = float(threshold(poisson_law(delta, gamma), delta)) if T == 1 else float(spikes.sample_threshold(delta, gamma))
    snr = rc * kappa / alpha * np.asarray(MULTIPLES)
    ours = _predict(snr, w, corr, delta, gamma, d)
    lift, lean = ps.lift, ps.lean
    ps.lift, ps.lean = _none, _none
    try:
        old = _predict(snr, w, corr, delta, gamma, d)
        factor, ps.bulk_overlap_factor = ps.bulk_overlap_factor, _flat
        counts, tc.bulk_overlap = tc.bulk_overlap, _flat_counts
        try:
            flat = _predict(snr, w, corr, delta, gamma, d)
        finally:
            ps.bulk_overlap_factor, tc.bulk_overlap = factor, counts
    finally:
        ps.lift, ps.lean = lift, lean
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1)
    rng = np.random.default_rng(seed + d + T)
    with threadpool_limits(limits=1):
        runs = [simulate_replicate(model, snr, rng) for _ in range(reps)]
    lam = np.array([r.eigenvalues[:, 0] for r in runs]) / kappa
    ov = np.array([r.overlap[:, 0] for r in runs])
    rows = []
    for i, mult in enumerate(MULTIPLES):
        row = {"d": d, "T": T, "delta": delta, "gamma": gamma, "weights": kind, "multiple": mult}
        for name, sim in (("lambda1", lam[:, i]), ("overlap", ov[:, i])):
            se = sim.std(ddof=1) / np.sqrt(reps)
            row[f"{name}_sim"] = sim.mean()
            for tag, pred in (("", ours), ("_old", old), ("_flat", flat)):
                mean, mean_se = getattr(pred, name)[i], getattr(pred, f"{name}_se")[i]
                row.update({f"{name}{tag}_pred": mean, f"{name}{tag}_z": (sim.mean() - mean) / np.hypot(se, mean_se)})
        rows.append(row)
    return rows


def bands(rows: list[dict]) -> None:
    print("\n| rho / rho_c | cells | lambda_1 within 3 s.e. | without the window law | alignment within 3 s.e. "
          "| without the window law | alignment, flat 1/d |")
    print("|---|---|---|---|---|---|---|")
    for label, lo, hi in BANDS:
        sel = [r for r in rows if lo <= r["multiple"] <= hi]
        if not sel:
            continue
        n = len(sel)

        def frac(key: str) -> str:
            k = sum(abs(r[key]) <= 3 for r in sel)
            return f"{k}/{n} ({100 * k / n:.0f} %)"

        print(f"| {label} | {n} | {frac('lambda1_z')} | {frac('lambda1_old_z')} | {frac('overlap_z')} | "
              f"{frac('overlap_old_z')} | {frac('overlap_flat_z')} |")


def main(ds: list[int], reps: int, seed: int, Ts: list[int]) -> None:
    print("d T delta gamma weights x | lambda1: sim pred z old_pred old_z | overlap: sim pred z old_pred old_z flat_z")
    rows = []
    t0 = time.process_time()
    for d in ds:
        for T in Ts:
            for delta, gamma in POINTS:
                for kind in ("mean",) if T == 1 else ("mean", "2^-t"):
                    for r in cell(d, T, delta, gamma, kind, reps, seed):
                        rows.append(r)
                        print(f"{d:4d} {T:2d} {delta:.2f} {gamma:.2f} {kind:4s} {r['multiple']:.2f} | "
                              f"{r['lambda1_sim']:.4f} {r['lambda1_pred']:.4f} {r['lambda1_z']:+.1f} "
                              f"{r['lambda1_old_pred']:.4f} {r['lambda1_old_z']:+.1f} | "
                              f"{r['overlap_sim']:.4f} {r['overlap_pred']:.4f} {r['overlap_z']:+.1f} "
                              f"{r['overlap_old_pred']:.4f} {r['overlap_old_z']:+.1f} {r['overlap_flat_z']:+.1f}",
                              flush=True)
    bands(rows)
    print(f"\n{len(rows)} cells, {time.process_time() - t0:.0f} CPU-s")


if __name__ == "__main__":
    main([int(x) for x in (sys.argv[1] if len(sys.argv) > 1 else "200,400").split(",")],
         int(sys.argv[2]) if len(sys.argv) > 2 else 96, int(sys.argv[3]) if len(sys.argv) > 3 else 7000,
         [int(x) for x in (sys.argv[4] if len(sys.argv) > 4 else "3,8,16").split(",")])
