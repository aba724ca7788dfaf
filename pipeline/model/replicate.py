"""One Monte Carlo replicate: table, signs, tokens, pooling, and its observables at every SNR.

The noise part of the pooled matrix is drawn once per replicate and shared by every SNR value
(common random numbers: only ``mu = sqrt(snr) u`` changes), and the draws do not depend on the
pooling weights, so one draw serves every weights scheme of a cell. No Python loop runs over tokens
or sequences, and the d x N x T gather is never formed: pooling is one sparse (token-weight, CSR)
product with the table noise, drawn V x d so that product needs no copy. The eigen step is
:mod:`rmtsweep.model.topk`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

from ..types import Centering
from ..types import AttentionScale
from .correlation import Correlation, draw_signs
from .draws import Draws
from .observables import ridge_accuracy, spectrum_density
from .topk import spectrum_top_k

__all__ = [
    "CellModel", "Draws", "ReplicateResult", "draw_replicate", "draw_sequences", "draw_table_noise",
    "draw_tokens", "measure", "pool", "simulate_replicate", "simulate_schemes", "token_weight_matrix",
]


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
    attention
        ``(tau, scale)`` for finite-d causal softmax attention (:mod:`rmtsweep.model.attention`):
        the weights are then computed per sequence and SNR value from the replicate's embeddings,
        and ``w`` is only their large-d limit.
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
    attention: tuple[float, AttentionScale] | None = None

    @property
    def n_pos(self) -> int:
        """Tokens of class +1 (the first ``V // 2``); the rest are class -1."""
        return self.V // 2


@dataclass(frozen=True)
class ReplicateResult:
    """Observables of one replicate over the SNR values.

    A task stores each field that :data:`rmtsweep.results.RESULTS` declares, under the field's name.

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
    kappa_snr, alpha_snr : ndarray, shape (n_snr,)
        Realised ``(1/N) sum_n ||w_n||^2`` and ``(1/N) sum_n (w_n . xi_n)^2`` at each SNR value (for
        fixed weights the same at every SNR: ``kappa`` and ``alpha``; for attention the weights move
        with the SNR, and ``kappa`` / ``alpha`` are NaN).
    attention_distance : ndarray, shape (n_snr,)
        Mean over sequences of the L1 distance of the attention weights to ``causal(tau)`` (NaN for
        fixed weights).
    """

    eigenvalues: np.ndarray
    overlap: np.ndarray
    alpha: float
    kappa: float
    spectrum: np.ndarray | None = None
    accuracy: np.ndarray | None = None
    kappa_snr: np.ndarray | None = None
    alpha_snr: np.ndarray | None = None
    attention_distance: np.ndarray | None = None


def draw_table_noise(model: CellModel, rng: np.random.Generator) -> np.ndarray:
    """Table noise ``Z`` (d x V), class-centred if ``model.centering == "class"``.

    Drawn as its transpose (V x d, row-major), so the returned ``Z`` is a Fortran-ordered view
    whose ``Z.T`` is C-contiguous: pooling multiplies by ``Z.T`` without a copy.
    """
    ZT = rng.standard_normal((model.V, model.d))
    if model.centering == "class":
        p = model.n_pos
        ZT[:p] -= ZT[:p].mean(axis=0)
        ZT[p:] -= ZT[p:].mean(axis=0)
    return ZT.T


def draw_tokens(model: CellModel, xi: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Token ids (N x T), uniform within the class given by each sign."""
    p, q = model.n_pos, model.V - model.n_pos
    U = rng.random(xi.shape)
    pos = np.minimum((U * p).astype(np.int64), p - 1)
    neg = p + np.minimum((U * q).astype(np.int64), q - 1)
    return np.where(xi > 0, pos, neg)


def token_weight_matrix(tokens: np.ndarray, w: np.ndarray, V: int) -> scipy.sparse.csr_array:
    """``A`` (N x V) with ``A[n, v] = sum_t w_t 1[v_{n,t} = v]`` (the transpose of docs/theory.md §6.1's A)."""
    N, T = tokens.shape
    # built directly in CSR form (row n holds its T tokens; a token repeated within a sequence is a
    # duplicate entry, which the sparse product sums), skipping the COO sort
    indptr = np.arange(0, N * T + 1, T, dtype=np.int64)
    return scipy.sparse.csr_array((np.tile(w, N), tokens.ravel().astype(np.int64), indptr), shape=(N, V))


def draw_sequences(model: CellModel, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Signs, labels and token ids of ``n`` sequences."""
    xi, y = draw_signs(model.correlation, model.T, n, rng)
    return xi, y, draw_tokens(model, xi, rng)


def draw_replicate(model: CellModel, rng: np.random.Generator) -> Draws:
    """Draw one replicate: signal direction, table noise, training (and test) sequences, in that order."""
    u = rng.standard_normal(model.d)
    u /= np.linalg.norm(u)
    Z = draw_table_noise(model, rng)
    train = draw_sequences(model, model.N, rng)
    test = draw_sequences(model, model.test_samples, rng) if model.ridge_penalty is not None else None
    return Draws(u, Z, train, test)


def pool(model: CellModel, Z: np.ndarray, sequences: tuple[np.ndarray, np.ndarray, np.ndarray]
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pool sequences with ``model.w``.

    Returns
    -------
    C0T : ndarray, shape (n, d)
        Pooled noise ``(Z A)^T``.
    a : ndarray, shape (n,)
        Pooled signs ``w^T xi_n`` (the signal coefficient of each sample).
    y : ndarray, shape (n,)
        Sequence labels.
    """
    xi, y, tokens = sequences
    C0T = token_weight_matrix(tokens, model.w, model.V) @ Z.T
    return np.asarray(C0T), xi @ model.w, y


def measure(model: CellModel, draws: Draws, snr: np.ndarray) -> ReplicateResult:
    """Pool one replicate's draws with ``model.w`` (or finite-d attention) and measure it at every SNR value."""
    snr = np.asarray(snr, dtype=float)
    if model.attention is not None:
        from .attention import measure_attention      # attention builds on this module's draws
        res = measure_attention(draws, model.n_pos, snr, model.top_k, *model.attention)
        return ReplicateResult(res.eigenvalues, res.overlap, alpha=np.nan, kappa=np.nan, kappa_snr=res.kappa,
                               alpha_snr=res.alpha, attention_distance=res.attention_distance)
    C0T, a, y = pool(model, draws.Z, draws.train)
    eigenvalues, overlap = spectrum_top_k(C0T, a, draws.u, snr, model.top_k)
    kappa = float(model.w @ model.w)
    spectrum = accuracy = None
    if model.spectrum_edges is not None:
        spectrum = spectrum_density(C0T, a, draws.u, snr, kappa, model.spectrum_edges)
    if draws.test is not None and model.ridge_penalty is not None:      # drawn iff a ridge penalty is set
        test = pool(model, draws.Z, draws.test)
        accuracy = ridge_accuracy((C0T, a, y), test, draws.u, snr, model.ridge_penalty)
    alpha = float(a @ a) / model.N
    return ReplicateResult(eigenvalues, overlap, alpha=alpha, kappa=kappa, spectrum=spectrum, accuracy=accuracy,
                           kappa_snr=np.full(snr.size, kappa), alpha_snr=np.full(snr.size, alpha),
                           attention_distance=np.full(snr.size, np.nan))


def simulate_replicate(model: CellModel, snr: np.ndarray, rng: np.random.Generator) -> ReplicateResult:
    """Draw one replicate and measure it at every SNR value (common random numbers).

    Parameters
    ----------
    model
        The cell's sizes, weights, correlation, centering and ``top_k``.
    snr
        The SNR values; the noise, signs and tokens are shared by all of them.
    rng
        This replicate's generator (see :func:`rmtsweep.run.grid.replicate_rng`).

    Examples
    --------
    >>> from rmtsweep.model.correlation import IID
    >>> m = CellModel(d=20, V=40, N=40, T=4, w=np.full(4, 0.25), correlation=IID(),
    ...               centering="class", top_k=2)
    >>> simulate_replicate(m, np.array([0.0, 5.0]), np.random.default_rng(0)).eigenvalues.shape
    (2, 2)
    """
    return measure(model, draw_replicate(model, rng), snr)


def simulate_schemes(models: list[CellModel], snr: np.ndarray, rng: np.random.Generator) -> list[ReplicateResult]:
    """One replicate measured under several pooling-weight schemes from the same draws.

    The draws do not depend on the weights, so each result equals
    ``simulate_replicate(model, snr, rng)`` with a fresh copy of ``rng``; drawing once saves the
    table and the token draws for every scheme after the first. ``models`` must differ only in ``w``.
    """
    draws = draw_replicate(models[0], rng)
    return [measure(model, draws, snr) for model in models]
