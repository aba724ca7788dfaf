"""The pooled null's cost at one store-sized point: the dense double-precision path against the store's.

One point like issue 55's: d = 1000, ``V = N = 2000`` (delta = gamma = 0.5), decay(0.6) signs, mean weights over
T = 16 positions, 32 SNR values; one BLAS thread. "before" is every draw's dense centred matrix, its dense Gram
matrix and numpy's double-precision eigenvalues (the path the store took before the sparse draws); "after" is
:func:`rmtsweep.theory.pooled_spikes.pooled_spikes` itself. Both see the same seeded draws. Prints the CPU
seconds of each, their ratio and the largest difference of a detection threshold (levels 0.1, 0.05, 0.01) and of
``lambda_1``, in units of the null's Tracy-Widom scale.

    python benchmarks/null_cost.py            # the point above (about 20 CPU-s)
    python benchmarks/null_cost.py --d 400    # the same at d = 400
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rmtsweep.model.correlation import make_correlation
from rmtsweep.model.schemes import make_scheme
from rmtsweep.theory.null_law import (POOLED_DRAWS, POOLED_TAIL, gram, gram_eigenvalues, mixture_quantile,
                                      pooled_model, pooled_seed, pooling_matrix)
from rmtsweep.theory.pooled_spikes import LANCZOS_STEPS, _draw_prediction, gauss_quadrature, pooled_spikes


def dense(snr: np.ndarray, w: np.ndarray, corr, delta: float, gamma: float, d: int):
    """``(location, scale, lambda1)`` of the pooled null and spikes through dense double-precision spectra."""
    model, rng = pooled_model(w, corr, delta, gamma, d), pooled_seed(w, delta, gamma, d)
    kappa, alpha = float(w @ w), float(w @ corr.matrix(w.size) @ w)
    scale_d = model.V / (model.N * kappa)
    out = []
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(POOLED_DRAWS):
            A, a = pooling_matrix(model, rng)
            p = gram_eigenvalues(gram(A), model)
            nodes, weights = gauss_quadrature(lambda v, A=A: scale_d * (A @ (A.T @ v)), a, LANCZOS_STEPS)
            out.append(_draw_prediction(snr, p, nodes, weights, alpha, float(np.var(a**2)) / model.N, kappa,
                                        delta, d, min(0.5, POOLED_TAIL / d)))
    return np.array([o[2] for o in out]), np.array([o[3] for o in out]), np.mean([o[0] for o in out], axis=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, default=1000)
    parser.add_argument("--T", type=int, default=16)
    parser.add_argument("--weights", default="mean")
    args = parser.parse_args()
    corr, d, delta, gamma = make_correlation("decay", r=0.6), args.d, 0.5, 0.5
    w = make_scheme(args.weights).weights(corr.matrix(args.T))
    snr = np.linspace(0.0, 8.0, 32)
    with threadpool_limits(limits=1):
        pooled_spikes(snr[:1], w, corr, delta, gamma, 100)            # imports and LAPACK loaded, untimed
        start = time.process_time()
        loc, scale, lam = dense(snr, w, corr, delta, gamma, d)
        before = time.process_time() - start
        start = time.process_time()
        ours = pooled_spikes(snr, w, corr, delta, gamma, d)
        after = time.process_time() - start
    sigma = float(scale[:, 0].mean())
    gap = max(abs(mixture_quantile(1 - a, ours.location, ours.scale) - mixture_quantile(1 - a, loc, scale))
              for a in (0.1, 0.05, 0.01)) / sigma
    print(f"command: `python benchmarks/null_cost.py --d {d} --T {args.T} --weights {args.weights}`")
    print(f"pooled null and spikes, d={d} V=N={2 * d} T={args.T} {args.weights} weights, decay(0.6), "
          f"{POOLED_DRAWS} draws, 32 snr, 1 thread")
    print(f"before (dense, double precision): {before:.2f} CPU-s")
    print(f"after (sparse, single precision): {after:.2f} CPU-s")
    print(f"ratio: {before / after:.2f}x")
    print(f"largest threshold difference: {gap:.1e} sigma; lambda_1: {np.abs(ours.lambda1 - lam).max() / sigma:.1e} "
          f"sigma; same spike candidates: {np.array_equal(np.isnan(loc), np.isnan(ours.location))}")


if __name__ == "__main__":
    main()
