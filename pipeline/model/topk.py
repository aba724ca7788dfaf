"""Top-k eigenpairs of the pooled sample covariance for every SNR value of a replicate.

Writing ``C0`` for the pooled noise (d x N) and ``a_n = sum_t w_t xi_{n,t}`` for the pooled signs,
the pooled matrix is ``C(snr) = C0 + sqrt(snr) u a^T``, so the Gram matrix of each SNR value is the
noise Gram plus a rank-2 term. Eigenpairs come from the smaller of the d x d and N x N Gram
matrices (formed once, by one BLAS ``syrk``):

- few SNR values: a top-k solve per value, Lanczos (ARPACK) on the Gram for large matrices and
  LAPACK's ``syevr`` restricted to the top ``k`` for small ones;
- many SNR values: ONE full eigendecomposition of the noise Gram, then each value is a rank-2
  update solved in O(n k) per bisection step (:mod:`rmtsweep.model.spectral`), with an a
  posteriori residual check and a direct solve for any value it cannot certify.

``benchmarks/README.md`` has the measurements behind each choice.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse.linalg

from ..types import Method
from .spectral import rank2_top_k

__all__ = ["spectrum_top_k", "top_eigh"]

LANCZOS_MIN_N = 500   # below this LAPACK's subset solver beats ARPACK (benchmarks/README.md)
_RANK2_MIN_SNR = 6     # from this many nonzero SNR values one full eigh + rank-2 updates wins


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
        assert g is not None, "e and g come together"
        M += np.outer(e, g)
        M += np.outer(g, e)
    vals, vecs = scipy.linalg.eigh(M, subset_by_index=[n - k, n - 1], driver="evr",
                                   overwrite_a=True, check_finite=False)
    return vals[::-1], vecs[:, ::-1]


def _uses_lanczos(n: int, k: int) -> bool:
    return n >= LANCZOS_MIN_N and k <= n // 20


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
        :func:`rmtsweep.model.spectral.rank2_top_k` (values it cannot certify are recomputed
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
