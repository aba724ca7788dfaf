"""One Monte Carlo replicate of THEORY.md §1: table, signs, tokens, pooling, top-k eigenpairs.

The noise part of the pooled matrix is drawn once per replicate and shared by every SNR value
(common random numbers: only ``mu = sqrt(snr) u`` changes). Writing ``C0`` for the pooled noise
(d x N) and ``a_n = sum_t w_t xi_{n,t}`` for the pooled signs, the pooled matrix is

    C(snr) = C0 + sqrt(snr) u a^T,

so the Gram matrix of each SNR value is the noise Gram plus a rank-2 term, an O(n^2) update.
Eigenpairs come from the smaller of the d x d and N x N Gram matrices, through LAPACK's
``syevr`` restricted to the top ``k`` (``scipy.linalg.eigh(subset_by_index=...)``): the matrix is
tridiagonalised, but only ``k`` eigenpairs are computed and back-transformed.

No Python loop runs over tokens or sequences: pooling is one sparse (token-weight) product.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.linalg
import scipy.sparse

from .correlation import Correlation, draw_signs
from .observables import ridge_accuracy, spectrum_density

Centering = Literal["class", "none"]


@dataclass(frozen=True)
class CellModel:
    """Everything one replicate needs: sizes, weights, correlation, centering, top-k.

    Parameters
    ----------
    d, V, N, T
        Embedding dimension, vocabulary size, samples, sequence length.
    w
        Pooling weights (length ``T``).
    correlation
        The sign-correlation model.
    centering
        ``"class"`` subtracts each class's mean noise from the table (so the class means are
        exactly ``±mu``); ``"none"`` is the model as literally stated.
    top_k
        How many top eigenpairs to report.
    spectrum_edges
        Bin edges on ``S / kappa`` for the optional spectrum histogram (None: not computed).
    ridge_penalty, test_samples
        The optional downstream ridge task (None: not computed); fresh test sequences are drawn
        after every training draw, so turning it on does not change the other observables.
    """

    d: int
    V: int
    N: int
    T: int
    w: np.ndarray
    correlation: Correlation
    centering: Centering
    top_k: int
    spectrum_edges: np.ndarray | None = None
    ridge_penalty: float | None = None
    test_samples: int = 0

    @property
    def n_pos(self) -> int:
        """Tokens of class +1 (the first ``V // 2``); the rest are class -1."""
        return self.V // 2


@dataclass(frozen=True)
class ReplicateResult:
    """Observables of one replicate over the SNR values.

    Attributes
    ----------
    eigenvalues : ndarray, shape (n_snr, k)
        Top-k eigenvalues of ``S``, descending, absolute units.
    overlap : ndarray, shape (n_snr, k)
        ``|u_hat_i^T u|^2`` of each top-k eigenvector.
    alpha : float
        Realised ``(1/N) sum_n a_n^2``, the sample version of ``w^T R w``.
    kappa : float
        ``||w||^2``.
    spectrum : ndarray, shape (n_snr, n_bins), optional
        Eigenvalue density of ``S / kappa`` on ``CellModel.spectrum_edges``.
    accuracy : ndarray, shape (n_snr,), optional
        Ridge test accuracy of the downstream task.
    """

    eigenvalues: np.ndarray
    overlap: np.ndarray
    alpha: float
    kappa: float
    spectrum: np.ndarray | None = None
    accuracy: np.ndarray | None = None


def draw_table_noise(model: CellModel, rng: np.random.Generator) -> np.ndarray:
    """Table noise ``Z`` (d x V), class-centred if ``model.centering == "class"``."""
    Z = rng.standard_normal((model.d, model.V))
    if model.centering == "class":
        p = model.n_pos
        Z[:, :p] -= Z[:, :p].mean(axis=1, keepdims=True)
        Z[:, p:] -= Z[:, p:].mean(axis=1, keepdims=True)
    return Z


def draw_tokens(model: CellModel, xi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Token ids (N x T), uniform within the class given by each sign."""
    p, q = model.n_pos, model.V - model.n_pos
    U = rng.random(xi.shape)
    pos = np.minimum((U * p).astype(np.int64), p - 1)
    neg = p + np.minimum((U * q).astype(np.int64), q - 1)
    return np.where(xi > 0, pos, neg)


def token_weight_matrix(tokens: np.ndarray, w: np.ndarray, V: int) -> scipy.sparse.csr_array:
    """``A`` (N x V) with ``A[n, v] = sum_t w_t 1[v_{n,t} = v]`` (the transpose of THEORY.md §5's A)."""
    N, T = tokens.shape
    rows = np.repeat(np.arange(N), T)
    data = np.tile(w, N)
    return scipy.sparse.csr_array((data, (rows, tokens.ravel())), shape=(N, V))


def top_eigh(M: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of a symmetric matrix, descending, computing only those k."""
    n = M.shape[0]
    vals, vecs = scipy.linalg.eigh(M, subset_by_index=[n - k, n - 1], driver="evr",
                                   overwrite_a=True, check_finite=False)
    return vals[::-1], vecs[:, ::-1]


def spectrum_top_k(C0T: np.ndarray, a: np.ndarray, u: np.ndarray, snr: np.ndarray,
                   k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenvalues and overlaps with ``u`` of ``S = C C^T / N``, ``C = C0 + sqrt(snr) u a^T``.

    Parameters
    ----------
    C0T : ndarray, shape (N, d)
        Pooled noise, one row per sample.
    a : ndarray, shape (N,)
        Pooled signs.
    u : ndarray, shape (d,)
        Unit signal direction.
    snr : ndarray, shape (n_snr,)
        SNR values (``||mu||^2``).
    k : int
        Number of eigenpairs.

    Returns
    -------
    eigenvalues, overlap : ndarray, shape (n_snr, k)
    """
    N, d = C0T.shape
    root = np.sqrt(np.asarray(snr, dtype=float))
    out_l = np.empty((root.size, k))
    out_o = np.empty((root.size, k))
    aa = float(a @ a) / N
    if d <= N:  # feature space: S itself (d x d)
        G0 = C0T.T @ C0T / N
        h = C0T.T @ a / N
        for i, s in enumerate(root):
            M = G0 + s * (np.outer(u, h) + np.outer(h, u)) + (s * s * aa) * np.outer(u, u)
            vals, vecs = top_eigh(M, k)
            out_l[i], out_o[i] = vals, (u @ vecs) ** 2
    else:  # sample space: C^T C / N (N x N) shares the nonzero eigenvalues
        K0 = C0T @ C0T.T / N
        p = C0T @ u
        for i, s in enumerate(root):
            M = K0 + (s / N) * (np.outer(a, p) + np.outer(p, a)) + (s * s / N) * np.outer(a, a)
            vals, vecs = top_eigh(M, k)
            proj = (p + s * a) @ vecs                      # (u^T C) v_i
            with np.errstate(divide="ignore", invalid="ignore"):
                ov = proj**2 / (N * vals)
            out_l[i], out_o[i] = vals, np.where(vals > 0, ov, 0.0)
    return out_l, out_o


def simulate_replicate(model: CellModel, snr: np.ndarray, rng: np.random.Generator) -> ReplicateResult:
    """Draw one replicate and measure it at every SNR value (common random numbers).

    Parameters
    ----------
    model
        The cell's sizes, weights, correlation, centering and ``top_k``.
    snr
        The SNR values; the noise, signs and tokens are shared by all of them.
    rng
        This replicate's generator (see :func:`pipeline.grid.replicate_rng`).

    Examples
    --------
    >>> from pipeline.model.correlation import Correlation
    >>> m = CellModel(d=20, V=40, N=40, T=4, w=np.full(4, 0.25), correlation=Correlation("iid"),
    ...               centering="class", top_k=2)
    >>> simulate_replicate(m, np.array([0.0, 5.0]), np.random.default_rng(0)).eigenvalues.shape
    (2, 2)
    """
    u = rng.standard_normal(model.d)
    u /= np.linalg.norm(u)
    Z = draw_table_noise(model, rng)
    C0T, a, y = pooled_noise(model, Z, model.N, rng)
    eigenvalues, overlap = spectrum_top_k(C0T, a, u, snr, model.top_k)
    kappa = float(model.w @ model.w)
    spectrum = accuracy = None
    if model.spectrum_edges is not None:
        spectrum = spectrum_density(C0T, a, u, snr, kappa, model.spectrum_edges)
    if model.ridge_penalty is not None:
        test = pooled_noise(model, Z, model.test_samples, rng)
        accuracy = ridge_accuracy((C0T, a, y), test, u, snr, model.ridge_penalty)
    return ReplicateResult(eigenvalues, overlap, alpha=float(a @ a) / model.N, kappa=kappa,
                           spectrum=spectrum, accuracy=accuracy)


def pooled_noise(model: CellModel, Z: np.ndarray, n: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``n`` sequences over the table noise ``Z`` and pool them.

    Returns
    -------
    C0T : ndarray, shape (n, d)
        Pooled noise ``(Z A)^T``.
    a : ndarray, shape (n,)
        Pooled signs ``w^T xi_n`` (the signal coefficient of each sample).
    y : ndarray, shape (n,)
        Sequence labels.
    """
    xi, y = draw_signs(model.correlation, model.T, n, rng)
    tokens = draw_tokens(model, xi, rng)
    C0T = token_weight_matrix(tokens, model.w, model.V) @ Z.T
    return np.asarray(C0T), xi @ model.w, y


def pooled_matrix(model: CellModel, snr: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The literal pooled matrix ``C`` (d x N) and ``u`` for one SNR, from the same draws.

    A reference path for tests and benchmarks: it builds the full table ``E = s mu^T + Z`` and
    gathers ``sum_t w_t E[:, v_{n,t}]``, drawing in the same order as :func:`simulate_replicate`.
    """
    u = rng.standard_normal(model.d)
    u /= np.linalg.norm(u)
    Z = draw_table_noise(model, rng)
    xi, _ = draw_signs(model.correlation, model.T, model.N, rng)
    tokens = draw_tokens(model, xi, rng)
    s = np.where(np.arange(model.V) < model.n_pos, 1.0, -1.0)
    E = np.sqrt(snr) * np.outer(u, s) + Z
    C = sum(model.w[t] * E[:, tokens[:, t]] for t in range(model.T))
    return C, u
