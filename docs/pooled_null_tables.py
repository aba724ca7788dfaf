"""The null top eigenvalue for T >= 2 over the realised pooling matrix, against simulation (docs/theory.md §6.4).

    python docs/pooled_null_tables.py [D,D,...] [REPLICATES] [DRAWS]    # defaults: 100,200,400 200 8

For ``T >= 2`` the cubic's Tracy-Widom null is too low where few tokens are pooled. Without signal,
``S / kappa = (1/V) Z^T D Z`` with ``D = (V / (N kappa)) A^T A`` (``A``: the ``N x V`` token-weight matrix,
class-centred like the table) independent of the Gaussian ``Z``; given ``D`` only its eigenvalues ``p``
matter. The store's null (:func:`rmtsweep.theory.null_law.pooled_null`, the detection threshold of
``compare``) takes the main edge of the deterministic equivalent over them, with its own Tracy-Widom scale,
averaged over ``DRAWS`` seeded draws of ``A``. A variant tried and not adopted (column "counting"): the
Tracy-Widom edge matched to that deterministic equivalent's counting function at 0.5 and 2 eigenvalues
(:func:`counting_edge`).

Per cell (``d``, ``delta``, ``gamma``, ``T``; mean weights with iid signs, and weights ``2^-t`` normalised
with a Markov chain of ``r = 0.8``): the simulated mean of ``lambda_1 / kappa`` at ``snr = 0`` over
``REPLICATES`` replicates (the model's own code), the predicted mean, their z-score (both Monte Carlo
errors), and the rates of replicates above the predicted 0.95 quantiles beside the rate above the cubic's.
Then the counts of cells within 3 s.e.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy.integrate import quad

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.replicate import CellModel, simulate_replicate
from rmtsweep.theory.finite_t import density, edge_point
from rmtsweep.theory.null_law import (_second_derivative, mixture_cdf, mixture_quantile, pooled_null,
                                      pooling_eigenvalues, tw_threshold)
from rmtsweep.theory.token_law import empirical_law

ALPHA = 0.05


def counting_edge(p: np.ndarray, delta: float, d: int, levels=(0.5, 2.0)) -> tuple[float, float]:
    """``(l, sigma)`` of the Tracy-Widom edge whose counting function ``(2 / (3 pi)) s^(3/2)`` (eigenvalues above
    ``l - s sigma``) meets the deterministic equivalent's ``n(x) = d mu((x, inf))`` at ``levels``; for a
    square-root edge, that edge and its own scale."""
    nu = empirical_law(p)
    g_edge, top = edge_point(nu, delta)
    sigma0 = (np.sqrt(2.0 / _second_derivative(g_edge, nu, delta)) * d) ** (-2.0 / 3.0)
    s = (1.5 * np.pi * np.asarray(levels)) ** (2.0 / 3.0)
    span = 2.0 * s[-1] * sigma0
    for _ in range(8):
        x = top - span * np.linspace(0.0, 1.0, 801) ** 2
        f = np.nan_to_num(density(x, nu, delta))
        n = d * np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * -np.diff(x))])
        if n[-1] >= levels[-1]:
            break
        span *= 2.0
    xa, xb = np.interp(levels, n, x)
    sigma = (xa - xb) / (s[1] - s[0])
    return float(xa + s[0] * sigma), float(sigma)


def mean_of(loc: np.ndarray, scale: np.ndarray) -> float:
    lo, hi = float(np.nanmin(loc)) - 1.0, float(np.nanmax(loc)) + 1.0
    return lo + quad(lambda x: 1.0 - float(mixture_cdf(x, loc, scale)), lo, hi, limit=200)[0]


def cell(d: int, delta: float, gamma: float, w: np.ndarray, corr, reps: int, draws: int, seed: int) -> dict:
    V, N, T = round(d / delta), round(d / gamma), w.size
    model = CellModel(d=d, V=V, N=N, T=T, w=w, correlation=corr, centering="class", top_k=1)
    start = time.perf_counter()
    with np.errstate(divide="ignore", invalid="ignore"):
        null = pooled_null(w, corr, delta, gamma, d, draws=draws, seed=seed)
    seconds = time.perf_counter() - start
    loc, scale = null.location, null.scale
    # the prediction's own Monte Carlo error: the spread of the per-draw means
    per_draw = np.array([mean_of(loc[i:i + 1], scale[i:i + 1]) for i in range(draws)])
    rng = np.random.default_rng([seed, 1])
    with np.errstate(divide="ignore", invalid="ignore"):
        fits = np.array([counting_edge(pooling_eigenvalues(model, rng), delta, d) for _ in range(draws)])
    c_loc = np.concatenate([fits[:, :1], np.full((draws, loc.shape[1] - 1), np.nan)], axis=1)
    c_scale = np.concatenate([fits[:, 1:], np.full((draws, loc.shape[1] - 1), np.nan)], axis=1)
    sim = np.array([simulate_replicate(model, np.array([0.0]), rng).eigenvalues[0, 0]
                    for _ in range(reps)]) / float(w @ w)
    se = np.hypot(sim.std(ddof=1) / np.sqrt(reps), per_draw.std(ddof=1) / np.sqrt(draws))
    predicted = mean_of(loc, scale)
    return {"sim": sim.mean(), "pred": predicted, "z": (sim.mean() - predicted) / se,
            "fa": (sim > mixture_quantile(1.0 - ALPHA, loc, scale)).mean(),
            "fa_counting": (sim > mixture_quantile(1.0 - ALPHA, c_loc, c_scale)).mean(),
            "fa_cubic": (sim > float(tw_threshold(ALPHA, delta, gamma, d))).mean(), "seconds": seconds}


def main(ds: list[int], reps: int, draws: int) -> None:
    print(f"null lambda_1 / kappa at snr = 0, {reps} replicates per cell, {draws} draws of the pooling matrix\n")
    print("| d | delta | gamma | T | weights, signs | simulated | predicted | z | false alarms (level 0.05) "
          "| counting | cubic's | theory s |")
    print("|" + " --- |" * 12)
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
                          f"{r['z']:+.1f} | {r['fa']:.3f} | {r['fa_counting']:.3f} | {r['fa_cubic']:.3f} | {r['seconds']:.2f} |",
                          flush=True)
    n = len(rows)
    within = sum(abs(r["z"]) <= 3 for r in rows)
    level, counting, cubic = (sum(abs(r[k] - ALPHA) <= band for r in rows) for k in ("fa", "fa_counting", "fa_cubic"))
    means = {k: np.mean([r[k] for r in rows]) for k in ("fa", "fa_counting", "fa_cubic")}
    print(f"\nmean within 3 s.e.: {within}/{n}; false alarms within 3 binomial s.e. of {ALPHA} (+-{band:.3f}): "
          f"{level}/{n} (mean {means['fa']:.3f}), counting {counting}/{n} ({means['fa_counting']:.3f}), "
          f"the cubic's {cubic}/{n} ({means['fa_cubic']:.3f})")


if __name__ == "__main__":
    args = sys.argv[1:]
    main([int(x) for x in (args[0] if args else "100,200,400").split(",")],
         int(args[1]) if len(args) > 1 else 200, int(args[2]) if len(args) > 2 else 8)
