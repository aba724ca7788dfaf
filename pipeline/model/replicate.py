"""One Monte Carlo replicate of THEORY.md §1: table, signs, tokens, pooling, top-k eigenpairs.

The noise part of the pooled matrix is drawn once per replicate and shared by every SNR value
(common random numbers: only ``mu = sqrt(snr) u`` changes). Writing ``C0`` for the pooled noise
(d x N) and ``a_n = sum_t w_t xi_{n,t}`` for the pooled signs, the pooled matrix is

    C(snr) = C0 + sqrt(snr) u a^T,

so the Gram matrix of each SNR value is the noise Gram plus a rank-2 term. Eigenpairs come from
the smaller of the d x d and N x N Gram matrices (formed once, by one BLAS ``syrk``):

- few SNR values: a top-k solve per value, Lanczos (ARPACK) on the Gram for large matrices and
  LAPACK's ``syevr`` restricted to the top ``k`` for small ones;
- many SNR values: ONE full eigendecomposition of the noise Gram, then each value is a rank-2
  update solved in O(n k) per bisection step (:mod:`pipeline.model.spectral`), with an a
  posteriori residual check and a direct solve for any value it cannot certify.

No Python loop runs over tokens or sequences, and the d x N x T gather is never formed: pooling is
one sparse (token-weight, CSR) product with the table noise, drawn V x d so that product needs no
copy. ``benchmarks/README.md`` has the measurements behind each choice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from .correlation import Correlation, draw_signs
from .observables import ridge_accuracy, spectrum_density
from .spectral import rank2_top_k

Centering = Literal["class", "none"]
_LANCZOS_MIN_N = 500   # below this LAPACK's subset solver beats ARPACK (benchmarks/README.md)
_RANK2_MIN_SNR = 6     # from this many nonzero SNR values one full eigh + rank-2 updates wins


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
    """``A`` (N x V) with ``A[n, v] = sum_t w_t 1[v_{n,t} = v]`` (the transpose of THEORY.md §5's A)."""
    N, T = tokens.shape
    # built directly in CSR form (row n holds its T tokens; a token repeated within a sequence is a
    # duplicate entry, which the sparse product sums), skipping the COO sort
    indptr = np.arange(0, N * T + 1, T, dtype=np.int64)
    return scipy.sparse.csr_array((np.tile(w, N), tokens.ravel().astype(np.int64), indptr), shape=(N, V))


def top_eigh(M: np.ndarray, k: int, e: np.ndarray | None = None, g: np.ndarray | None = None
             ) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenpairs of ``M + e g^T + g e^T`` (symmetric ``M``), descending, computing only those k.

    Lanczos (ARPACK through ``scipy.sparse.linalg.eigsh``, tolerance at machine precision, fixed
    start vector so results are reproducible) for large matrices and few pairs, applying the
    rank-2 term inside the matrix-vector product; otherwise LAPACK ``syevr`` on the top-k index
    range of the explicit matrix. ``M`` may be overwritten.
    """
    n = M.shape[0]
    if _uses_lanczos(n, k):
        op = M
        if e is not None:
            def matvec(x: np.ndarray) -> np.ndarray:
                x = x.ravel()
                return M @ x + e * (g @ x) + g * (e @ x)
            op = scipy.sparse.linalg.LinearOperator((n, n), matvec=matvec, dtype=float)
        try:
            vals, vecs = scipy.sparse.linalg.eigsh(op, k=k, which="LA", tol=0, v0=np.ones(n))
        except scipy.sparse.linalg.ArpackNoConvergence:
            M = M.copy()                                     # LAPACK below; M may be the caller's K0
        else:
            order = np.argsort(vals)[::-1]
            return vals[order], vecs[:, order]
    if e is not None:
        M += np.outer(e, g)
        M += np.outer(g, e)
    vals, vecs = scipy.linalg.eigh(M, subset_by_index=[n - k, n - 1], driver="evr",
                                   overwrite_a=True, check_finite=False)
    return vals[::-1], vecs[:, ::-1]


def _uses_lanczos(n: int, k: int) -> bool:
    return n >= _LANCZOS_MIN_N and k <= n // 20


Method = Literal["auto", "direct", "rank2"]


def spectrum_top_k(C0T: np.ndarray, a: np.ndarray, u: np.ndarray, snr: np.ndarray,
                   k: int, method: Method = "auto") -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenvalues and overlaps with ``u`` of ``S = C C^T / N``, ``C = C0 + sqrt(snr) u a^T``.

    Works on the smaller Gram matrix: ``S`` itself (d x d) when ``d <= N``, else ``C^T C / N``
    (N x N), which has the same nonzero eigenvalues. Both are a noise Gram ``K0`` plus
    ``s (e f^T + f e^T) + s^2 beta e e^T`` with ``s = sqrt(snr)``.

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
    method : {"auto", "direct", "rank2"}
        ``"direct"``: a top-k solve (:func:`top_eigh`) per SNR value. ``"rank2"``: one full
        eigendecomposition of ``K0``, then per SNR value the rank-2 update of
        :func:`pipeline.model.spectral.rank2_top_k` (values it cannot certify are recomputed
        directly). ``"auto"``: ``"rank2"`` from ``_RANK2_MIN_SNR`` nonzero SNR values on.

    Returns
    -------
    eigenvalues, overlap : ndarray, shape (n_snr, k)
    """
    N, d = C0T.shape
    root = np.sqrt(np.asarray(snr, dtype=float))
    if d <= N:  # feature space: S itself (d x d)
        K0 = C0T.T @ C0T                                   # one syrk; scaled in place
        e, f, beta = u, C0T.T @ a / N, float(a @ a) / N
    else:       # sample space: C^T C / N (N x N)
        K0 = C0T @ C0T.T
        e, f, beta = a / np.sqrt(N), C0T @ u / np.sqrt(N), 1.0
    K0 /= N
    if method == "auto":
        method = "rank2" if np.count_nonzero(root) >= _RANK2_MIN_SNR else "direct"
    vals = np.empty((root.size, k))
    pe, pf = np.empty((root.size, k)), np.empty((root.size, k))
    todo = np.ones(root.size, dtype=bool)
    if method == "rank2":
        lam, Q = scipy.linalg.eigh(K0, driver="evd", check_finite=False)
        vals, pe, pf, ok = rank2_top_k(lam, Q, e, f, beta, root, k)
        todo = ~ok
    direct = np.flatnonzero(todo)
    for i in direct:
        s = root[i]
        M = K0 if i == direct[-1] or _uses_lanczos(K0.shape[0], k) else K0.copy()   # LAPACK overwrites
        vals[i], vecs = top_eigh(M, k, e, s * f + (0.5 * s * s * beta) * e)   # update e g^T + g e^T
        pe[i], pf[i] = e @ vecs, f @ vecs
    if d <= N:
        return vals, pe**2
    with np.errstate(divide="ignore", invalid="ignore"):
        ov = (pf + root[:, None] * pe) ** 2 / vals                 # (u^T C v_i)^2 / (N lambda_i)
    return vals, np.where(vals > 0, ov, 0.0)


@dataclass(frozen=True)
class Draws:
    """Everything random in one replicate; none of it depends on the pooling weights.

    Attributes
    ----------
    u : ndarray (d,)
        Unit signal direction.
    Z : ndarray (d, V)
        Table noise (class-centred if asked).
    train, test : tuple of (xi, y, tokens)
        Signs (n x T), labels (n,) and token ids (n x T) of the N training sequences and, for the
        downstream task, of the test sequences (``None`` without it).
    """

    u: np.ndarray
    Z: np.ndarray
    train: tuple[np.ndarray, np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray, np.ndarray] | None


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
    """Pool one replicate's draws with ``model.w`` and measure it at every SNR value."""
    C0T, a, y = pool(model, draws.Z, draws.train)
    eigenvalues, overlap = spectrum_top_k(C0T, a, draws.u, snr, model.top_k)
    kappa = float(model.w @ model.w)
    spectrum = accuracy = None
    if model.spectrum_edges is not None:
        spectrum = spectrum_density(C0T, a, draws.u, snr, kappa, model.spectrum_edges)
    if draws.test is not None:
        test = pool(model, draws.Z, draws.test)
        accuracy = ridge_accuracy((C0T, a, y), test, draws.u, snr, model.ridge_penalty)
    return ReplicateResult(eigenvalues, overlap, alpha=float(a @ a) / model.N, kappa=kappa,
                           spectrum=spectrum, accuracy=accuracy)


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
    return measure(model, draw_replicate(model, rng), snr)


def simulate_schemes(models: list[CellModel], snr: np.ndarray, rng: np.random.Generator) -> list[ReplicateResult]:
    """One replicate measured under several pooling-weight schemes from the same draws.

    The draws do not depend on the weights, so each result equals
    ``simulate_replicate(model, snr, rng)`` with a fresh copy of ``rng``; drawing once saves the
    table and the token draws for every scheme after the first. ``models`` must differ only in ``w``.
    """
    draws = draw_replicate(models[0], rng)
    return [measure(model, draws, snr) for model in models]


def pooled_matrix(model: CellModel, snr: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The literal pooled matrix ``C`` (d x N) and ``u`` for one SNR, from the same draws.

    A reference path for tests and benchmarks: it builds the full table ``E = s mu^T + Z`` and
    gathers ``sum_t w_t E[:, v_{n,t}]``, drawing in the same order as :func:`simulate_replicate`.
    """
    draws = draw_replicate(model, rng)
    u, Z, (_, _, tokens) = draws.u, draws.Z, draws.train
    s = np.where(np.arange(model.V) < model.n_pos, 1.0, -1.0)
    E = np.sqrt(snr) * np.outer(u, s) + Z
    C = sum(model.w[t] * E[:, tokens[:, t]] for t in range(model.T))
    return C, u
