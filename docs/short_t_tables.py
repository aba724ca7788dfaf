"""lambda_1 and the top alignment well above the transition at T = 1, 2, 3, 16 for every fixed scheme (docs/results.md).

    python docs/short_t_tables.py [D] [REPLICATES] [SEED]     # defaults: 300 48 4100; about 5 CPU-minutes
    python docs/short_t_tables.py given-A [D,D,...] [REPLICATES]   # defaults: 100,200,400 300; about 6 CPU-minutes

Held-out cells: two sign-correlation models (``markov(0.6)`` and ``decay(0.3)``), ``(delta, gamma)`` =
(0.5, 1) and (1, 0.5), ``T`` = 1, 2, 3, 16 and the fixed schemes ``mean``, ``optimal``, ``harmonic``,
``harmonic_paper`` and ``causal(tau=1)`` (at ``T = 1`` all of them are ``w = [1]``: one row). Every scheme of a cell pools the same replicates
(the model's own code, seeded by ``SEED``, the correlation, ``T`` and the point), at 1.5, 2, 3 and 5 times
the cell's sample threshold (the exact finite-T law's where the weights sit on one position, else the
cubic's: the store's ``theory_snr_sample``). Each is held against the store's best prediction at its size:
the realised token counts where the weights sit on one position (:func:`.token_counts.realised_count_spikes`)
and the realised pooling matrix otherwise (:func:`.pooled_spikes.pooled_spikes`), with the prediction's own
standard error in the z-score. Printed: per ``T`` and scheme, the share of cells within 3 s.e. and the mean z,
for ``lambda_1`` and the alignment, and then the same for the cubic's limit values.

``given-A``: the formula of docs/theory.md §6.5 evaluated on each replicate's own pooling matrix and its own
``alpha_hat`` (no average over draws), against that replicate's ``lambda_1`` and alignment: the mean
difference and its z at ``T`` = 2, 3, 16 (``decay(0.5)``, mean weights, 2 and 5 times the cubic's threshold).
What is left there is the formula's own error at this ``d``; the spread of the pooling matrix is taken out.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.replicate import CellModel, draw_replicate, measure, simulate_schemes, token_weight_matrix
from rmtsweep.model.schemes import make_scheme
from rmtsweep.theory import spikes
from rmtsweep.theory.cell_law import exact_law
from rmtsweep.theory.finite_t import outlier
from rmtsweep.theory.null_law import POOLED_TAIL
from rmtsweep.theory.pooled_spikes import LANCZOS_STEPS, _draw_prediction, gauss_quadrature, pooled_spikes
from rmtsweep.theory.pooling import PoolingDraw, draw_eigenvalues
from rmtsweep.theory.token_counts import realised_count_spikes

MULTIPLES = np.array([1.5, 2.0, 3.0, 5.0])
POINTS = ((0.5, 1.0), (1.0, 0.5))
CORRELATIONS = (("markov", {"r": 0.6}), ("decay", {"r": 0.3}))
TS = (1, 2, 3, 16)
SCHEMES = (("mean", {}), ("optimal", {}), ("harmonic", {}), ("harmonic_paper", {}), ("causal", {"tau": 1.0}))


def group(d: int, T: int, delta: float, gamma: float, corr_name: str, corr_args: dict, reps: int,
          seed: int) -> list[dict]:
    """Rows of one (correlation, T, point): every scheme on the same replicates, one row per SNR multiple."""
    corr = make_correlation(corr_name, **corr_args)
    R = corr.matrix(T)
    schemes = [(make_scheme(name, **args).label, make_scheme(name, **args).weights(R))
               for name, args in SCHEMES[:1 if T == 1 else None]]      # at T = 1 every scheme is w = [1]
    rc_cubic = float(spikes.sample_threshold(delta, gamma))
    rc_exact = exact_law(delta, gamma)[2]
    one_hot = [int(np.count_nonzero(w)) == 1 for _, w in schemes]
    snr = {label: (rc_exact if hot else rc_cubic) * float(w @ w) / float(w @ R @ w) * MULTIPLES
           for (label, w), hot in zip(schemes, one_hot, strict=True)}
    every = np.concatenate(list(snr.values()))
    models = [CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr,
                        centering="class", top_k=1) for _, w in schemes]
    rng = np.random.default_rng([seed, T, int(1000 * delta), int(1000 * gamma), len(corr_name)])
    with threadpool_limits(limits=1):
        runs = [simulate_schemes(models, every, rng) for _ in range(reps)]
    rows = []
    for j, ((label, w), hot) in enumerate(zip(schemes, one_hot, strict=True)):
        kappa, alpha = float(w @ w), float(w @ R @ w)
        part = slice(j * MULTIPLES.size, (j + 1) * MULTIPLES.size)
        lam = np.array([r[j].eigenvalues[part, 0] for r in runs]) / kappa
        ov = np.array([r[j].overlap[part, 0] for r in runs])
        rho = alpha * snr[label] / kappa
        if hot:
            p = realised_count_spikes(rho, delta, gamma, d)
            limit = exact_law(delta, gamma)
            lim_lam, lim_ov = outlier(rho, limit[0], delta)
        else:
            p = pooled_spikes(snr[label], w, corr, delta, gamma, d)
            lim_lam, lim_ov = spikes.sample_outlier(rho, delta, gamma), spikes.overlap(rho, delta, gamma)
        for i, mult in enumerate(MULTIPLES):
            row = {"corr": corr_name, "T": T, "delta": delta, "gamma": gamma, "scheme": label, "multiple": mult}
            for name, sim, pred, pred_se, lim in (("lambda1", lam[:, i], p.lambda1[i], p.lambda1_se[i], lim_lam[i]),
                                                  ("overlap", ov[:, i], p.overlap[i], p.overlap_se[i], lim_ov[i])):
                row.update({f"{name}_draws": sim, f"{name}_sim": sim.mean(), f"{name}_pred": pred,
                            f"{name}_pred_se": pred_se, f"{name}_z": z_score(sim, pred, pred_se),
                            f"{name}_limit_z": z_score(sim, lim, 0.0)})
            rows.append(row)
    return rows


def z_score(sim: np.ndarray, pred: float, pred_se: float) -> float:
    """``(mean - pred) / s.e.``, the prediction's own standard error included."""
    return float((sim.mean() - pred) / np.hypot(sim.std(ddof=1) / np.sqrt(sim.size), pred_se))


def subsets(rows: list[dict], k: int) -> None:
    """Per ``T``: the share of cells with ``|z| > 3`` for ``lambda_1`` (mean z) when each cell keeps only
    ``k`` replicates, over the disjoint subsets of the same replicates: how far such a share scatters by chance."""
    n = rows[0]["lambda1_draws"].size // k
    print(f"\nThe same cells with {k} replicates each ({n} disjoint subsets): share of cells with |z| > 3 for "
          "lambda_1 (mean z), mean weights:\n")
    for T in TS:
        at = [r for r in rows if r["T"] == T and r["scheme"] == "mean"]
        parts = []
        for j in range(n):
            z = np.array([z_score(r["lambda1_draws"][j * k:(j + 1) * k], r["lambda1_pred"], r["lambda1_pred_se"])
                          for r in at])
            parts.append(f"{100 * np.mean(np.abs(z) > 3):.1f} % ({np.mean(z):+.2f})")
        print(f"  T = {T}: " + ", ".join(parts))


def summary(rows: list[dict], key: str) -> str:
    z = np.array([r[key] for r in rows])
    return f"{100 * np.mean(np.abs(z) <= 3):5.1f} % ({np.mean(z):+.2f})"


def main(d: int, reps: int, seed: int) -> None:
    t0 = time.process_time()
    rows = []
    for corr_name, corr_args in CORRELATIONS:
        for T in TS:
            for delta, gamma in POINTS:
                rows += group(d, T, delta, gamma, corr_name, corr_args, reps, seed)
    labels = list(dict.fromkeys(r["scheme"] for r in rows))
    print(f"d = {d}, {reps} replicates, seed {seed}: {len(rows)} cells at 1.5-5 times the threshold; "
          f"{time.process_time() - t0:.0f} CPU-s\n")
    print("Cells within 3 s.e. of the store's best prediction (mean z), by T and scheme:\n")
    print("| T | scheme | cells | lambda_1 | alignment | lambda_1, limit | alignment, limit |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for T in TS:
        for label in labels:
            at = [r for r in rows if r["T"] == T and r["scheme"] == label]
            if at:
                print(f"| {T} | {label} | {len(at)} | {summary(at, 'lambda1_z')} | {summary(at, 'overlap_z')} | "
                      f"{summary(at, 'lambda1_limit_z')} | {summary(at, 'overlap_limit_z')} |")
    print(f"\nAll: lambda_1 {summary(rows, 'lambda1_z')}, alignment {summary(rows, 'overlap_z')}")
    subsets(rows, 8)
    worst = sorted(rows, key=lambda r: -max(abs(r["lambda1_z"]), abs(r["overlap_z"])))[:6]
    print("\nWorst cells:")
    for r in worst:
        print(f"  {r['corr']} T={r['T']} ({r['delta']:g}, {r['gamma']:g}) {r['scheme']} x{r['multiple']:g}: "
              f"lambda_1 {r['lambda1_sim']:.3f} vs {r['lambda1_pred']:.3f} (z {r['lambda1_z']:+.1f}), "
              f"alignment {r['overlap_sim']:.4f} vs {r['overlap_pred']:.4f} (z {r['overlap_z']:+.1f})")


def given_a(ds: list[int], reps: int) -> None:
    """The §6.5 formula on each replicate's own pooling matrix (module docstring, ``given-A``)."""
    corr, mult = make_correlation("decay", r=0.5), np.array([2.0, 5.0])
    print("| d | T | (delta, gamma) | lambda_1 - formula, 2 x / 5 x threshold (z) | alignment - formula (z) |")
    print("| --- | --- | --- | --- | --- |")
    for d in ds:
        for T in (2, 3, 16):
            w = np.full(T, 1.0 / T)
            kappa, alpha = float(w @ w), float(w @ corr.matrix(T) @ w)
            for delta, gamma in ((0.5, 0.5), (1.0, 0.25)):
                model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr,
                                  centering="class", top_k=1)
                snr = float(spikes.sample_threshold(delta, gamma)) * kappa / alpha * mult
                rng = np.random.default_rng([d, T, int(1000 * delta)])
                diffs = []
                with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
                    for _ in range(reps):
                        draws = draw_replicate(model, rng)
                        res = measure(model, draws, snr)
                        draw = own_draw(model, *draws.train)
                        nodes, weights = gauss_quadrature(lambda v, dr=draw: model.V / (model.N * kappa) * dr.matvec(v),
                                                          draw.a, LANCZOS_STEPS)
                        lam, ov, _, _ = _draw_prediction(snr, draw_eigenvalues(draw, model), nodes, weights,
                                                         float(draw.a @ draw.a) / model.N, 0.0, kappa, delta, d,
                                                         min(0.5, POOLED_TAIL / d))
                        diffs.append(np.r_[res.eigenvalues[:, 0] / kappa - lam, res.overlap[:, 0] - ov])
                x = np.array(diffs)
                z = x.mean(0) / (x.std(0, ddof=1) / np.sqrt(reps))
                print(f"| {d} | {T} | ({delta:g}, {gamma:g}) | {x[:, 0].mean():+.3f} ({z[0]:+.1f}) / "
                      f"{x[:, 1].mean():+.3f} ({z[1]:+.1f}) | {x[:, 2].mean():+.4f} ({z[2]:+.1f}) / "
                      f"{x[:, 3].mean():+.4f} ({z[3]:+.1f}) |", flush=True)


def own_draw(model: CellModel, xi: np.ndarray, _labels: np.ndarray, tokens: np.ndarray) -> PoolingDraw:
    """A replicate's own pooling matrix as the :class:`.pooling.PoolingDraw` that :func:`.pooling.pooling_draw`
    would have drawn from the same signs and tokens."""
    A = token_weight_matrix(tokens, model.w, model.V)
    n = model.n_pos
    means = np.stack([np.asarray(A[:, :n].sum(axis=1)) / n, np.asarray(A[:, n:].sum(axis=1)) / (model.V - n)], 1)
    return PoolingDraw(A, means, n, xi @ model.w)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "given-A":
        given_a([int(x) for x in (args[1] if len(args) > 1 else "100,200,400").split(",")],
                int(args[2]) if len(args) > 2 else 300)
        sys.exit()
    main(int(args[0]) if args else 300, int(args[1]) if len(args) > 1 else 48, int(args[2]) if len(args) > 2 else 4100)
