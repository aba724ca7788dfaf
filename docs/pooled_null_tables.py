"""The null top eigenvalue for T >= 2 over the realised pooling matrix, against simulation (docs/theory.md §7, problem 1).

    python docs/pooled_null_tables.py [D,D,...] [REPLICATES] [DRAWS]    # defaults: 100,200,400 300 8

For ``T >= 2`` the cubic's Tracy-Widom null is too low where few tokens are pooled (false alarms up to
0.33 at level 0.05). Without signal, ``S / kappa = (1/V) Z^T D Z`` with ``D = (V / (N kappa)) A^T A``
(``A``: the ``N x V`` token-weight matrix, class-centred like the table) independent of the Gaussian
``Z``; given ``D`` only its eigenvalues ``p`` matter, and the T = 1 construction applies to them
unchanged (:func:`rmtsweep.theory.null_law.population_null_draw`: the main bulk's edge with its own
Tracy-Widom scale, isolated ``p`` as Gaussian spikes), averaged over ``DRAWS`` seeded draws of ``A``.

Per cell (``d``, ``delta``, ``gamma``, ``T``; mean weights with iid signs, and weights ``2^-t`` normalised
with a Markov chain of ``r = 0.8``): the simulated mean of ``lambda_1 / kappa`` at ``snr = 0`` over
``REPLICATES`` replicates, the predicted mean, their z-score (both Monte Carlo errors), and the rate of
replicates above the predicted 0.95 quantile beside the rate above the cubic's. Then the counts of cells
within 3 s.e. A measurement, not a test: this null is not yet what the store's detection uses.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.integrate import quad

from rmtsweep.model.correlation import draw_signs, make_correlation
from rmtsweep.model.replicate import CellModel, draw_tokens, simulate_replicate, token_weight_matrix
from rmtsweep.theory.null_law import mixture_cdf, mixture_quantile, population_null_draw, tw_threshold

ALPHA = 0.05


def population(model: CellModel, rng: np.random.Generator) -> np.ndarray:
    """The ``V`` eigenvalues of ``D = (V / (N kappa)) A^T A`` for one draw of signs and tokens (class-centred)."""
    xi, _ = draw_signs(model.correlation, model.T, model.N, rng)
    A = token_weight_matrix(draw_tokens(model, xi, rng), model.w, model.V).toarray()
    p = model.n_pos                              # the table is class-centred: so is A's every row
    A[:, :p] -= A[:, :p].mean(1, keepdims=True)
    A[:, p:] -= A[:, p:].mean(1, keepdims=True)
    gram = A @ A.T if model.N <= model.V else A.T @ A
    ev = np.clip(np.linalg.eigvalsh(gram), 0.0, None) * model.V / (model.N * float(model.w @ model.w))
    return np.concatenate([ev, np.zeros(model.V - ev.size)])


def mean_of(loc: np.ndarray, scale: np.ndarray) -> float:
    lo, hi = float(np.nanmin(loc)) - 1.0, float(np.nanmax(loc)) + 1.0
    return lo + quad(lambda x: 1.0 - float(mixture_cdf(x, loc, scale)), lo, hi, limit=200)[0]


def cell(d: int, delta: float, gamma: float, w: np.ndarray, corr, reps: int, draws: int, seed: int) -> dict:
    V, N, T = round(d / delta), round(d / gamma), w.size
    model = CellModel(d=d, V=V, N=N, T=T, w=w, correlation=corr, centering="class", top_k=1)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    found = [population_null_draw(population(model, rng), delta, d) for _ in range(draws)]
    loc, scale = np.array([f[0] for f in found]), np.array([f[1] for f in found])
    # the prediction's own Monte Carlo error: the spread of the per-draw means
    per_draw = np.array([mean_of(loc[i:i + 1], scale[i:i + 1]) for i in range(draws)])
    seconds = time.perf_counter() - start
    q = mixture_quantile(1.0 - ALPHA, loc, scale)
    sim = np.array([simulate_replicate(model, np.array([0.0]), rng).eigenvalues[0, 0]
                    for _ in range(reps)]) / float(w @ w)
    se = np.hypot(sim.std(ddof=1) / np.sqrt(reps), per_draw.std(ddof=1) / np.sqrt(draws))
    predicted = mean_of(loc, scale)
    return {"sim": sim.mean(), "pred": predicted, "z": (sim.mean() - predicted) / se,
            "fa": (sim > q).mean(), "fa_cubic": (sim > float(tw_threshold(ALPHA, delta, gamma, d))).mean(),
            "seconds": seconds}


def main(ds: list[int], reps: int, draws: int) -> None:
    print(f"null lambda_1 / kappa at snr = 0, {reps} replicates per cell, {draws} draws of the pooling matrix\n")
    print("| d | delta | gamma | T | weights, signs | simulated | predicted | z | false alarms (level 0.05) "
          "| cubic's | theory s |")
    print("|" + " --- |" * 11)
    band = 3 * np.sqrt(ALPHA * (1 - ALPHA) / reps)
    rows = []
    for d in ds:
        for T in (2, 4, 8):
            for delta, gamma in ((0.5, 0.5), (1.0, 0.25), (0.25, 1.0)):
                decay = 0.5 ** np.arange(T)
                for name, w, corr in (("mean, iid", np.full(T, 1.0 / T), make_correlation("iid")),
                                      ("2^-t, markov 0.8", decay / decay.sum(), make_correlation("markov", r=0.8))):
                    r = cell(d, delta, gamma, w, corr, reps, draws, seed=d * 1000 + T * 10 + len(rows))
                    rows.append(r)
                    print(f"| {d} | {delta} | {gamma} | {T} | {name} | {r['sim']:.4f} | {r['pred']:.4f} | "
                          f"{r['z']:+.1f} | {r['fa']:.3f} | {r['fa_cubic']:.3f} | {r['seconds']:.1f} |", flush=True)
    n = len(rows)
    within = sum(abs(r["z"]) <= 3 for r in rows)
    level = sum(abs(r["fa"] - ALPHA) <= band for r in rows)
    cubic = sum(abs(r["fa_cubic"] - ALPHA) <= band for r in rows)
    print(f"\nmean within 3 s.e.: {within}/{n}; false alarms within 3 binomial s.e. of {ALPHA} "
          f"(+-{band:.3f}): {level}/{n}, the cubic's {cubic}/{n}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(x) for x in (args[0] if args else "100,200,400").split(",")],
         int(args[1]) if len(args) > 1 else 300, int(args[2]) if len(args) > 2 else 8)
