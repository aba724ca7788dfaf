"""Why the pooled null keeps every draw's whole spectrum: a top-k splice against it (issue 55, item 2).

At ``min(N, V) >= 1500`` one could compute only each draw's ``k`` largest Gram eigenvalues (ARPACK on the sparse
operator, converged) and take the rest from the sorted spectra of the first two draws, averaged and mapped onto
the draw's own trace (``moments=1``: scaled) or its trace and Frobenius norm (``moments=2``: an affine map). This
prints, per point and variant, the largest difference of a detection threshold (levels 0.1, 0.05, 0.01) from the
exact double-precision null, in units of its Tracy-Widom scale, and the CPU seconds of one draw's top ``k``
against its whole spectrum in single precision (what the store computes). One BLAS thread; about 4 CPU-minutes.

    python benchmarks/null_splice.py
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse.linalg import LinearOperator, eigsh
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.schemes import make_scheme
from rmtsweep.theory.null_law import POOLED_DRAWS, POOLED_TAIL, mixture_quantile, null_parts, pooled_model, pooled_seed
from rmtsweep.theory.pooling import draw_eigenvalues, pooling_draw

POINTS = [("mean", "decay", 16, 1000), ("harmonic", "decay", 4, 1000), ("mean", "markov", 2, 1000)]
VARIANTS = [(64, 1), (64, 2), (128, 1), (128, 2)]


def top(draw, k: int) -> np.ndarray:
    n = draw.A.shape[0]
    op = LinearOperator((n, n), matvec=draw.matvec, dtype=float)
    v0 = np.random.default_rng(0).standard_normal(n)
    return np.sort(eigsh(op, k=k, which="LA", v0=v0, tol=0.0, return_eigenvectors=False))[::-1]


def spliced(K: np.ndarray, head: np.ndarray, bulk: np.ndarray, moments: int) -> np.ndarray:
    """``head`` over ``bulk`` (the shared sorted spectrum past ``head.size``) mapped onto ``K``'s trace (and norm)."""
    rest = bulk[head.size:]
    t1 = float(np.trace(K)) - head.sum()
    if moments == 1:
        return np.concatenate([head, rest * t1 / rest.sum()])
    t2 = float((K**2).sum()) - (head**2).sum()
    b = np.sqrt(max(t2 / rest.size - (t1 / rest.size) ** 2, 0.0) / rest.var())
    return np.concatenate([head, t1 / rest.size - b * rest.mean() + b * rest])


def main() -> None:
    print("command: `python benchmarks/null_splice.py`")
    print("| point | k | moments | threshold difference / sigma | same candidates | top-k s | whole (float32) s |")
    print("|---|---|---|---|---|---|---|")
    for scheme, corr_name, T, d in POINTS:
        corr = make_correlation(corr_name, r=0.6 if corr_name == "decay" else 0.8)
        w = make_scheme(scheme).weights(corr.matrix(T))
        model, tail = pooled_model(w, corr, 0.5, 0.5, d), min(0.5, POOLED_TAIL / d)
        rng = pooled_seed(w, 0.5, 0.5, d)
        with threadpool_limits(limits=1), np.errstate(divide="ignore", invalid="ignore"):
            draws = [pooling_draw(model, rng) for _ in range(POOLED_DRAWS)]
            grams = [dr.gram() for dr in draws]
            exact = [np.sort(np.linalg.eigvalsh(K))[::-1] for K in grams]
            scale_d = model.V / (model.N * float(w @ w))

            def null(spectra):
                ps = [np.concatenate([np.clip(s, 0.0, None) * scale_d, np.zeros(model.V - s.size)]) for s in spectra]
                parts = [null_parts(p, 0.5, d, tail, half=True) for p in ps]
                return np.array([p[2] for p in parts]), np.array([p[3] for p in parts])

            loc0, sc0 = null(exact)
            sigma = float(sc0[:, 0].mean())
            q0 = [mixture_quantile(1 - a, loc0, sc0) for a in (0.1, 0.05, 0.01)]
            start = time.process_time()
            draw_eigenvalues(draws[-1], model)
            whole = time.process_time() - start
            bulk = np.mean(exact[:2], axis=0)
            for k, moments in VARIANTS:
                start = time.process_time()
                heads = [top(dr, k) for dr in draws[2:]]
                per = (time.process_time() - start) / len(heads)
                loc, sc = null(exact[:2] + [spliced(K, h, bulk, moments) for K, h in zip(grams[2:], heads)])
                gap = max(abs(mixture_quantile(1 - a, loc, sc) - q) for a, q in zip((0.1, 0.05, 0.01), q0)) / sigma
                print(f"| {scheme} T={T} {corr_name} d={d} | {k} | {moments} | {gap:.4f} | "
                      f"{np.array_equal(np.isnan(loc), np.isnan(loc0))} | {per:.3f} | {whole:.3f} |", flush=True)


if __name__ == "__main__":
    main()
