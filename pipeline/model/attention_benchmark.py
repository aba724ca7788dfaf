"""The fast path of :func:`rmtsweep.model.attention.attention_weights` timed against the literal loop.

Apart from :mod:`rmtsweep.model.attention` because it draws a replicate (:mod:`rmtsweep.model.replicate`),
which itself measures attention: together they would import each other.
"""

from __future__ import annotations

import time

import numpy as np

from .attention import Scale, position_signs, softmax_pool, attention_weights, score_scale
from .correlation import Prefix
from .replicate import CellModel, draw_replicate

__all__ = ["benchmark_attention"]


def _einsum_loop(Z: np.ndarray, u: np.ndarray, tokens: np.ndarray, n_pos: int, snr: np.ndarray,
                 c: float) -> np.ndarray:
    """Per SNR value: gather the full embeddings and form the N x T x T x d score product (baseline)."""
    s = position_signs(tokens, n_pos)[:, :, None]
    noise = Z.T[tokens]
    return np.stack([softmax_pool(c * np.einsum("ntd,nsd->nts", X, X))
                     for X in (noise + np.sqrt(v) * s * u for v in snr)])


def benchmark_attention(d: int = 500, n_snr: int = 16, T: int = 16, delta: float = 0.5, gamma: float = 0.5,
                        tau: float = 1.0, scale: Scale = "d", seed: int = 0, repeat: int = 3) -> dict[str, float]:
    """Time :func:`attention_weights` against the literal per-SNR einsum loop on the same draws.

    Returns the best-of-``repeat`` seconds of each (``fast_s``, ``loop_s``), their ``ratio`` and the
    largest absolute difference of the weights (``max_abs_diff``).
    """
    V, N = round(d / delta), round(d / gamma)
    model = CellModel(d=d, V=V, N=N, T=T, w=np.full(T, 1.0 / T), correlation=Prefix(L=min(4, T)),
                      centering="class", top_k=1)
    draws = draw_replicate(model, np.random.default_rng(seed))
    tokens, snr = draws.train[2], np.linspace(0.0, 8.0, n_snr)
    c = score_scale(tau, d, scale)

    def best(fn) -> tuple[float, np.ndarray]:
        times, out = [], None
        for _ in range(repeat):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        assert out is not None, "repeat must be >= 1"
        return min(times), out

    fast_s, fast = best(lambda: attention_weights(draws.Z, draws.u, tokens, model.n_pos, snr, tau, scale))
    loop_s, loop = best(lambda: _einsum_loop(draws.Z, draws.u, tokens, model.n_pos, snr, c))
    return {"fast_s": fast_s, "loop_s": loop_s, "ratio": loop_s / fast_s,
            "max_abs_diff": float(np.abs(fast - loop).max())}
