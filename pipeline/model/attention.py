"""Finite-d causal softmax attention: per-sequence, per-SNR pooling weights (docs/theory.md §6.3).

For sequence ``n`` with token embeddings ``x_t = s_{v_t} mu + z_{v_t}`` (rows of the table *including*
the signal; ``s_v = +1`` for the first ``V // 2`` tokens, ``-1`` for the rest; ``mu = sqrt(snr) u``)::

    a_{t,s} = exp(c x_t.x_s) / sum_{r<=t} exp(c x_t.x_r)   (s <= t; 0 for s > t)
    w_{n,s} = (1/T) sum_{t>=s} a_{t,s}                      (mean pooling of the outputs o_t)

with ``c = tau / d`` (``scale="d"``, the paper's regime) or ``c = tau / sqrt(d)`` (``scale="sqrt_d"``).
Degenerate cases: ``T = 1`` gives ``w = [1]`` exactly; ``tau = 0`` gives uniform causal attention, i.e.
the ``harmonic`` weights for every sequence, returned bit for bit (both scales).

Fast path: ``x_t.x_s = G0 + sqrt(snr) G1 + snr G2`` with ``G0 = z_t.z_s`` (one batched product of the
gathered noise rows per replicate, in blocks of sequences to bound memory), ``G1 = s_t (u.z_s) +
s_s (u.z_t)``, ``G2 = s_t s_s``; each SNR value then costs O(N T^2) (a masked, max-subtracted softmax).
The weights change with the SNR, so the rank-2 shortcut of :mod:`rmtsweep.model.topk` across the SNR
axis does not apply: each value is pooled (one sparse product) and solved directly.

Large-d limits (:func:`limit_weights`). ``scale="d"``: ``||x_t||^2 / d -> 1`` and ``x_t.x_s / d -> 0``
(s != t), so the scores tend to ``tau 1[s = t]``: ``causal(tau)``. ``scale="sqrt_d"`` (tau > 0): the
self-score is ``tau ||x_t||^2 / sqrt(d) ~ tau sqrt(d)`` while a cross-score between distinct tokens is
``tau z_t.z_s / sqrt(d) + O(snr / sqrt(d)) ~ tau N(0, 1)``, so ``a_{t,s} / a_{t,t} ~ exp(-tau sqrt(d) + tau g)``
and ``a_{t,t} = 1 - O(t exp(tau^2 / 2 - tau sqrt(d)))``: every token attends to itself and the weights tend
to mean pooling ``1/T``. A token repeated earlier in the sequence (probability O(T^2 / V)) has exactly the
self-score, so attention splits evenly over its copies; that moves position weights but not the pooled
vector (the copies share one embedding), so the pooled statistic is mean pooling's up to O(exp(-tau sqrt d)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, ClassVar, Literal

import numpy as np
import scipy.sparse
from pydantic import Field

from ..errors import ArgumentError
from ..types import AttentionScale
from .draws import Draws
from .topk import spectrum_top_k
from .weights import Harmonic, Scheme, Tau, causal_weights

__all__ = [
    "Attention", "AttentionResult", "Scale", "attention_weights", "limit_weights", "position_signs", "softmax_pool",
    "literal_attention_weights", "measure_attention", "pool_attention", "score_scale",
]

Scale = AttentionScale

_GATHER_FLOATS = 1 << 22   # block size (floats) of the gathered noise rows when forming G0


class Attention(Scheme):
    """Finite-d causal softmax attention, mean pooled (data-dependent; per sequence and SNR value).

    :meth:`weights` gives the large-d limit (:func:`limit_weights`), which the theory arrays use; the
    realised weights come from :func:`attention_weights`.
    """

    scheme: Literal["attention"] = "attention"
    tau: Annotated[Tau, Field(ge=0.0)]
    scale: Scale = "d"
    data_dependent: ClassVar[bool] = True

    def _default_label(self) -> str:
        extra = "" if self.scale == "d" else f", scale={self.scale}"
        return f"attention(tau={self.tau:g}{extra})"

    def weights(self, R: np.ndarray) -> np.ndarray:
        return limit_weights(R.shape[0], float(self.tau), self.scale)


@dataclass(frozen=True)
class AttentionResult:
    """Observables of one replicate pooled by finite-d attention, per SNR value.

    Attributes
    ----------
    eigenvalues, overlap : ndarray, shape (n_snr, k)
        Top-k eigenvalues of ``S`` (absolute units) and ``|u_hat_i^T u|^2``.
    kappa, alpha : ndarray, shape (n_snr,)
        Realised ``(1/N) sum_n ||w_n||^2`` and ``(1/N) sum_n (w_n . xi_n)^2``.
    attention_distance : ndarray, shape (n_snr,)
        Mean over sequences of ``sum_s |w_{n,s} - causal(tau)_s|``.
    limit_distance : ndarray, shape (n_snr,)
        The same distance to the scheme's own limit (:func:`limit_weights`; equal to
        ``attention_distance`` for ``scale="d"``).
    """

    eigenvalues: np.ndarray
    overlap: np.ndarray
    kappa: np.ndarray
    alpha: np.ndarray
    attention_distance: np.ndarray
    limit_distance: np.ndarray


def score_scale(tau: float, d: int, scale: Scale) -> float:
    """The score multiplier ``c``: ``tau / d`` or ``tau / sqrt(d)``."""
    if scale == "d":
        return tau / d
    if scale == "sqrt_d":
        return tau / math.sqrt(d)
    raise ArgumentError(f"unknown attention scale {scale!r} (expected 'd' or 'sqrt_d')")


def limit_weights(T: int, tau: float, scale: Scale = "d") -> np.ndarray:
    """Large-d limit of the attention weights: ``causal(tau)`` (scale d), ``1/T`` (sqrt_d, tau > 0).

    ``tau = 0`` is ``harmonic`` for both scales (all scores vanish).
    """
    score_scale(tau, 1, scale)                               # validates ``scale``
    if tau == 0:
        return Harmonic().weights(np.eye(T))
    return causal_weights(T, tau) if scale == "d" else np.full(T, 1.0 / T)


def position_signs(tokens: np.ndarray, n_pos: int) -> np.ndarray:
    """The class sign of each token: +1 for the first ``n_pos`` tokens of the table, -1 for the others."""
    return np.where(tokens < n_pos, 1.0, -1.0)


def _score_parts(Z: np.ndarray, u: np.ndarray, tokens: np.ndarray, n_pos: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``G0 = z_t.z_s``, ``G1 = s_t (u.z_s) + s_s (u.z_t)``, ``G2 = s_t s_s``, each (N, T, T)."""
    N, T = tokens.shape
    ZT = Z.T                                                 # V x d, C-contiguous as drawn
    G0 = np.empty((N, T, T))
    step = max(1, _GATHER_FLOATS // (T * Z.shape[0]))
    for i in range(0, N, step):
        X = ZT[tokens[i:i + step]]                           # (n, T, d) gathered noise rows
        np.matmul(X, X.transpose(0, 2, 1), out=G0[i:i + step])
    s = position_signs(tokens, n_pos)
    p = (ZT @ u)[tokens]                                     # u.z at each position
    sp = s[:, :, None] * p[:, None, :]
    return G0, sp + sp.transpose(0, 2, 1), s[:, :, None] * s[:, None, :]


def softmax_pool(scores: np.ndarray) -> np.ndarray:
    """Causal row softmax of ``scores`` (N, T, T), then ``w_s = (1/T) sum_{t>=s} a_{t,s}`` (N, T)."""
    T = scores.shape[-1]
    scores = np.where(np.tri(T, dtype=bool), scores, -np.inf)
    scores -= scores.max(axis=2, keepdims=True)              # stable: the row max is finite (s = t)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=2, keepdims=True)
    return scores.sum(axis=1) / T


def attention_weights(Z: np.ndarray, u: np.ndarray, tokens: np.ndarray, n_pos: int, snr: np.ndarray,
                      tau: float, scale: Scale = "d") -> np.ndarray:
    """Per-sequence attention pooling weights at every SNR value (the fast path).

    Parameters
    ----------
    Z : ndarray, shape (d, V)
        Table noise (class-centred or not); the table is ``Z + mu s^T``.
    u : ndarray, shape (d,)
        Unit signal direction.
    tokens : ndarray, shape (N, T)
        Token ids.
    n_pos : int
        Tokens ``< n_pos`` have class +1, the rest -1.
    snr : ndarray, shape (n_snr,)
        SNR values.
    tau : float
        Attention temperature (``>= 0``).
    scale : {"d", "sqrt_d"}
        Score multiplier ``tau / d`` or ``tau / sqrt(d)``.

    Returns
    -------
    ndarray, shape (n_snr, N, T)
        ``w_{n,s}``; each row sums to 1.
    """
    snr = np.atleast_1d(np.asarray(snr, dtype=float))
    c = score_scale(tau, Z.shape[0], scale)
    N, T = tokens.shape
    if c == 0:                                               # uniform causal attention: harmonic, exactly
        return np.broadcast_to(limit_weights(T, 0.0), (snr.size, N, T)).copy()
    G0, G1, G2 = _score_parts(Z, u, tokens, n_pos)
    return np.stack([softmax_pool(c * (G0 + np.sqrt(s) * G1 + s * G2)) for s in snr])


def literal_attention_weights(Z: np.ndarray, u: np.ndarray, tokens: np.ndarray, n_pos: int,
                              snr: np.ndarray, tau: float, scale: Scale = "d") -> np.ndarray:
    """The definition, literally: build every ``x_t``, loop over SNR values, sequences and rows.

    Same arguments and result as :func:`attention_weights` (a reference for tests; slow).
    """
    snr = np.atleast_1d(np.asarray(snr, dtype=float))
    c = score_scale(tau, Z.shape[0], scale)
    N, T = tokens.shape
    sign = np.where(np.arange(Z.shape[1]) < n_pos, 1.0, -1.0)
    W = np.zeros((snr.size, N, T))
    for i, s in enumerate(snr):
        E = Z + np.sqrt(s) * np.outer(u, sign)               # the table including the signal
        for n in range(N):
            X = E[:, tokens[n]].T                            # (T, d): x_1 .. x_T
            for t in range(T):
                e = c * (X[:t + 1] @ X[t])
                a = np.exp(e - e.max())
                W[i, n, :t + 1] += a / a.sum() / T
    return W


def pool_attention(Z: np.ndarray, tokens: np.ndarray, xi: np.ndarray, W: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Pool with per-sequence weights ``W`` (N x T) of one SNR value: one sparse product.

    Returns
    -------
    C0T : ndarray, shape (N, d)
        Pooled noise ``sum_t w_{n,t} z_{v_{n,t}}``.
    a : ndarray, shape (N,)
        Pooled signs ``sum_t w_{n,t} xi_{n,t}``.
    """
    N, T = tokens.shape
    indptr = np.arange(0, N * T + 1, T, dtype=np.int64)     # row n holds its T tokens; repeats are summed
    A = scipy.sparse.csr_array((np.ascontiguousarray(W, dtype=float).ravel(),
                                tokens.ravel().astype(np.int64), indptr), shape=(N, Z.shape[1]))
    return np.asarray(A @ Z.T), np.einsum("nt,nt->n", W, xi)


def measure_attention(draws: Draws, n_pos: int, snr: np.ndarray, k: int, tau: float,
                      scale: Scale = "d") -> AttentionResult:
    """One replicate pooled by finite-d attention and measured at every SNR value.

    Parameters
    ----------
    draws
        The replicate (:func:`rmtsweep.model.replicate.draw_replicate`); only ``train`` is used.
    n_pos
        Tokens of class +1 (``V // 2``).
    snr, k
        SNR values and the number of top eigenpairs.
    tau, scale
        As in :func:`attention_weights`.
    """
    snr = np.atleast_1d(np.asarray(snr, dtype=float))
    xi, _, tokens = draws.train
    xi = xi.astype(float)
    T = tokens.shape[1]
    W = attention_weights(draws.Z, draws.u, tokens, n_pos, snr, tau, scale)
    causal, limit = causal_weights(T, tau), limit_weights(T, tau, scale)
    vals, ov = np.empty((snr.size, k)), np.empty((snr.size, k))
    for i in range(snr.size):
        C0T, a = pool_attention(draws.Z, tokens, xi, W[i])
        # the weights change with the SNR: no rank-2 reuse across values, one direct solve each
        e, o = spectrum_top_k(C0T, a, draws.u, snr[i:i + 1], k, method="direct")
        vals[i], ov[i] = e[0], o[0]
    return AttentionResult(
        eigenvalues=vals, overlap=ov, kappa=np.einsum("int,int->i", W, W) / W.shape[1],
        alpha=np.mean(np.einsum("int,nt->in", W, xi) ** 2, axis=1),
        attention_distance=np.abs(W - causal).sum(axis=2).mean(axis=1),
        limit_distance=np.abs(W - limit).sum(axis=2).mean(axis=1))
