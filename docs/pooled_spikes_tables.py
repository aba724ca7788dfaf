"""lambda_1 and the top alignment for T >= 2 at the store's size, against simulation (docs/theory.md §6.5).

    python docs/pooled_spikes_tables.py [D,D,...] [REPLICATES] [DRAWS]    # defaults: 100,200,400 64 8

For fixed weights over ``T >= 2`` positions the store's ``finite_size_lambda1`` and ``finite_size_overlap``
come from :func:`rmtsweep.theory.pooled_spikes.pooled_spikes`: the signal outlier over ``DRAWS`` seeded draws
of the realised pooling matrix. Per cell (``d``; ``T`` = 2, 4, 8; ``(delta, gamma)`` = (0.5, 0.5), (1, 0.25),
(0.25, 1); mean weights with iid signs, and weights ``2^-t`` normalised with a Markov chain of ``r = 0.8``)
and per SNR (0 and 1.2, 1.6, 2.5 times the cubic's threshold ``rho_c kappa / alpha``): the simulated mean of
``lambda_1 / kappa`` and of the top alignment over ``REPLICATES`` replicates (the model's own code, seed
``1000 + d + T``), the prediction, the cubic's limit value (``theory_outlier`` / ``theory_overlap``: the
bulk's edge and 0 below the threshold), and the z-scores of both (the prediction's own standard error
included in its z). Then the counts of cells within 3 s.e., by SNR and by (d, T).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.replicate import CellModel, simulate_replicate
from rmtsweep.theory import spikes
from rmtsweep.theory.pooled_spikes import pooled_spikes

MULTIPLES = (0.0, 1.2, 1.6, 2.5)
POINTS = ((0.5, 0.5), (1.0, 0.25), (0.25, 1.0))


def cell(d: int, T: int, delta: float, gamma: float, kind: str, reps: int, draws: int) -> list[dict]:
    """One cell's rows, one per SNR multiple."""
    corr = make_correlation("iid") if kind == "mean" else make_correlation("markov", r=0.8)
    w = np.full(T, 1.0 / T) if kind == "mean" else 2.0 ** -np.arange(T)
    w = w / w.sum()
    kappa, alpha = float(w @ w), float(w @ corr.matrix(T) @ w)
    snr = float(spikes.sample_threshold(delta, gamma)) * kappa / alpha * np.asarray(MULTIPLES)
    t0 = time.process_time()
    ours = pooled_spikes(snr, w, corr, delta, gamma, d, draws=draws)
    cost = time.process_time() - t0
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr, centering="class",
                      top_k=1)
    rng = np.random.default_rng(1000 + d + T)
    with threadpool_limits(limits=1):
        runs = [simulate_replicate(model, snr, rng) for _ in range(reps)]
    lam = np.array([r.eigenvalues[:, 0] for r in runs]) / kappa
    ov = np.array([r.overlap[:, 0] for r in runs])
    rho = alpha * snr / kappa
    cubic = {"lambda1": spikes.sample_outlier(rho, delta, gamma), "overlap": spikes.overlap(rho, delta, gamma)}
    rows = []
    for i, mult in enumerate(MULTIPLES):
        row = {"d": d, "T": T, "delta": delta, "gamma": gamma, "weights": kind, "multiple": mult, "theory_s": cost}
        for name, sim, pred, pred_se in (("lambda1", lam[:, i], ours.lambda1[i], ours.lambda1_se[i]),
                                         ("overlap", ov[:, i], ours.overlap[i], ours.overlap_se[i])):
            se = sim.std(ddof=1) / np.sqrt(reps)
            row.update({f"{name}_sim": sim.mean(), f"{name}_pred": pred, f"{name}_cubic": cubic[name][i],
                        f"{name}_z": (sim.mean() - pred) / np.hypot(se, pred_se),
                        f"{name}_cubic_z": (sim.mean() - cubic[name][i]) / se})
        rows.append(row)
    return rows


def counts(rows: list[dict], name: str) -> str:
    ours = sum(abs(r[f"{name}_z"]) <= 3 for r in rows)
    cubic = sum(abs(r[f"{name}_cubic_z"]) <= 3 for r in rows)
    return f"{ours}/{len(rows)} (cubic {cubic}/{len(rows)})"


def main(ds: list[int], reps: int, draws: int) -> None:
    print("d T delta gamma weights x | lambda1: sim pred cubic z cubic_z | overlap: sim pred cubic z cubic_z | theory s")
    rows = []
    for d in ds:
        for T in (2, 4, 8):
            for delta, gamma in POINTS:
                for kind in ("mean", "2^-t"):
                    for r in cell(d, T, delta, gamma, kind, reps, draws):
                        rows.append(r)
                        print(f"{d:4d} {T} {delta:.2f} {gamma:.2f} {kind:4s} {r['multiple']:.1f} | "
                              + " | ".join(f"{r[n + '_sim']:.3f} {r[n + '_pred']:.3f} {r[n + '_cubic']:.3f} "
                                           f"{r[n + '_z']:+5.1f} {r[n + '_cubic_z']:+6.1f}" for n in ("lambda1", "overlap"))
                              + f" | {r['theory_s']:.1f}", flush=True)
    print("\ncells within 3 s.e. (ours; the cubic's):")
    null = [r for r in rows if r["multiple"] == 0]
    print(f"  snr 0: lambda1 {counts(null, 'lambda1')}")
    for mult in MULTIPLES[1:]:
        at = [r for r in rows if r["multiple"] == mult]
        print(f"  {mult} x threshold: lambda1 {counts(at, 'lambda1')}, overlap {counts(at, 'overlap')}")
    for d in ds:
        for T in (2, 4, 8):
            at = [r for r in rows if r["d"] == d and r["T"] == T]
            print(f"  d = {d}, T = {T}: null {counts([r for r in at if r['multiple'] == 0], 'lambda1')}; above: "
                  f"lambda1 {counts([r for r in at if r['multiple'] > 0], 'lambda1')}, "
                  f"overlap {counts([r for r in at if r['multiple'] > 0], 'overlap')}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(x) for x in (args[0] if args else "100,200,400").split(",")], int(args[1]) if len(args) > 1 else 64,
         int(args[2]) if len(args) > 2 else 8)
