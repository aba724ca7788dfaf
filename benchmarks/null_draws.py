"""Why the pooled null keeps 16 draws at every size: how far fewer draws move a detection threshold (issue 55).

A store's null for fixed weights over ``T >= 2`` positions is a mixture over :data:`POOLED_DRAWS` seeded draws of
the pooling matrix (:func:`rmtsweep.theory.null_law.pooled_null`). Its spectra are most of a large store's theory,
so one would like fewer draws where ``V`` and ``N`` are large. This prints, per point, in units of the null's
Tracy-Widom scale sigma: the spread (sd) across draws of one draw's 0.95 quantile, and the largest difference of a
detection threshold (levels 0.1, 0.05, 0.01) between the 16-draw null and each disjoint group of 4 or 8 of its
draws. The issue's tolerance for a cheaper null is 0.01 sigma. One BLAS thread, theory cache off; about 1 CPU-minute.

    python benchmarks/null_draws.py
"""

from __future__ import annotations

import time

import numpy as np
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.schemes import make_scheme
from rmtsweep.theory.null_law import POOLED_DRAWS, mixture_quantile, pooled_null

# (weights, correlation, its parameters, T, d, delta, gamma)
POINTS = [("mean", "decay", {"r": 0.6}, 16, 1000, 0.5, 0.5), ("mean", "prefix", {"L": 4}, 16, 1000, 0.5, 0.5),
          ("harmonic", "decay", {"r": 0.6}, 4, 1000, 0.5, 0.5), ("mean", "prefix", {"L": 4}, 16, 300, 0.5, 0.25),
          ("harmonic", "prefix", {"L": 4}, 16, 300, 1.0, 0.5), ("optimal", "prefix", {"L": 4}, 16, 300, 0.5, 0.5)]
LEVELS = (0.1, 0.05, 0.01)


def gap(loc: np.ndarray, scale: np.ndarray, group: int, full: list[float], sigma: float) -> float:
    """The largest threshold difference / sigma between the whole null and its disjoint groups of ``group`` draws."""
    return max(abs(mixture_quantile(1 - a, loc[i:i + group], scale[i:i + group]) - q) / sigma
               for i in range(0, loc.shape[0], group) for a, q in zip(LEVELS, full))


def main() -> None:
    print("command: `python benchmarks/null_draws.py` (1 BLAS thread, theory cache off)")
    print("| point | V = N | one draw's 0.95 quantile: sd / sigma | 16 draws: s.e. / sigma | 8 draws: largest "
          "difference / sigma | 4 draws: largest difference / sigma | 16 draws CPU-s |")
    print("|---|---|---|---|---|---|---|")
    for scheme, corr_name, params, T, d, delta, gamma in POINTS:
        corr = make_correlation(corr_name, **params)
        w = make_scheme(scheme).weights(corr.matrix(T))
        start = time.process_time()
        with threadpool_limits(limits=1):
            null = pooled_null(w, corr, delta, gamma, d)
        cpu = time.process_time() - start
        loc, scale = null.location, null.scale
        sigma = float(scale[:, 0].mean())
        one = np.std([mixture_quantile(0.95, loc[i:i + 1], scale[i:i + 1]) for i in range(POOLED_DRAWS)]) / sigma
        full = [mixture_quantile(1 - a, loc, scale) for a in LEVELS]
        size = f"{round(d / delta)}" if delta == gamma else f"{round(d / delta)}, {round(d / gamma)}"
        print(f"| {scheme} T={T} {corr_name} d={d} delta={delta} gamma={gamma} | {size} | {one:.3f} | "
              f"{one / np.sqrt(POOLED_DRAWS):.3f} | {gap(loc, scale, 8, full, sigma):.3f} | "
              f"{gap(loc, scale, 4, full, sigma):.3f} | {cpu:.1f} |", flush=True)


if __name__ == "__main__":
    main()
