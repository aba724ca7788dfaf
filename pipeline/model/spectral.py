"""Top-k eigenpairs of a symmetric matrix under a rank-2 update, for many update strengths at once.

Every SNR value of a replicate needs the top-k eigenpairs of

    M(s) = K0 + s (e f^T + f e^T) + s^2 beta e e^T,        s = sqrt(snr),

with the same ``K0`` (the noise Gram matrix) and the same vectors ``e``, ``f``. After ONE
eigendecomposition ``K0 = Q diag(lam) Q^T``, each ``M(s)`` is ``diag(lam) + P B(s) P^T`` in the
eigenbasis, with ``P = Q^T [e, f]`` (n x 2) and ``B(s) = [[s^2 beta, s], [s, 0]]``. Its eigenvalues
are found by bisection on an exact O(n) eigenvalue count, and its eigenvectors are
``x = (diag(lam) - mu)^{-1} P c`` with ``c`` the null vector of a 2 x 2 matrix, so each extra SNR
value costs O(n k) per bisection step instead of a new O(n^3) decomposition.

The count (Haynsworth inertia additivity on ``[[diag(lam) - mu, P], [P^T, -B^{-1}]]``, whose two
Schur complements are ``M(s) - mu`` and ``-B^{-1} - F(mu)``, ``F(mu) = P^T (diag(lam) - mu)^{-1} P``):

    #{eigenvalues of M(s) > mu} = #{lam_i > mu} + #pos(-B^{-1} - F(mu)) - 1

(``-B^{-1}`` has one positive and one negative eigenvalue). It needs no secular-equation
bracketing and is right for coupled, uncoupled and tied ``lam_i`` alike.

Every returned eigenpair is checked a posteriori (residual over the gap to its neighbours, in
the eigenbasis, O(n)); pairs that fail (exact or near ties of ``M(s)``, where the eigenvector
formula loses digits) are flagged so that the caller recomputes that SNR value directly.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rank2_top_k"]

_BISECT_STEPS = 80       # at most; stops once every bracket is below _BISECT_REL * ||M||
_BISECT_REL = 1e-7       # then Rayleigh-quotient steps take the eigenvalue to rounding level
_RQ_STEPS = 3
_RESIDUAL_OVER_GAP = 1e-10   # accept an eigenvector when residual / gap (its angle bound) is below this
_RESIDUAL_REL = 1e-12        # ... and residual / ||M|| is below this


def _count_above(mu: np.ndarray, lam: np.ndarray, P2: np.ndarray, binv: np.ndarray) -> np.ndarray:
    """``#{eigenvalues of M(s) > mu}`` for an array of shifts (rows: SNR values, columns: roots).

    ``lam`` ascending; ``P2`` is (n, 3) with columns ``y^2, y g, g^2``; ``binv`` (n_s, 3) holds the
    entries ``(b11, b12, b22)`` of ``-B^{-1}`` per SNR value.
    """
    above = lam.size - np.searchsorted(lam, mu, side="right")
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        R = 1.0 / (lam[None, None, :] - mu[..., None])          # (n_s, m, n)
        F = R @ P2                                               # (n_s, m, 3)
        h11 = binv[:, None, 0] - F[..., 0]
        h12 = binv[:, None, 1] - F[..., 1]
        h22 = binv[:, None, 2] - F[..., 2]
        det = h11 * h22 - h12 * h12
    pos = np.where(det < 0, 1, np.where(h11 + h22 > 0, 2, 0))
    return above + pos - 1


def _eigvec(mu: np.ndarray, lam: np.ndarray, y: np.ndarray, g: np.ndarray, P2: np.ndarray,
            binv: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit eigenvectors ``x`` (n_s, m, n) in the eigenbasis at shifts ``mu``, and ``y^T x``, ``g^T x``."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        R = 1.0 / (lam[None, None, :] - mu[..., None])
        F = R @ P2
        h11, h12, h22 = binv[:, None, 0] - F[..., 0], binv[:, None, 1] - F[..., 1], binv[:, None, 2] - F[..., 2]
        first = np.hypot(h11, h12) >= np.hypot(h12, h22)     # null vector of H: orthogonal to its larger row
        c1 = np.where(first, -h12, -h22)
        c2 = np.where(first, h11, h12)
        X = R * (y * c1[..., None] + g * c2[..., None])
        X /= np.linalg.norm(X, axis=-1)[..., None]
    return X, X @ y, X @ g


def rank2_top_k(lam: np.ndarray, Q: np.ndarray, e: np.ndarray, f: np.ndarray, beta: float,
                root: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Top-k eigenpairs of ``M(s) = K0 + s (e f^T + f e^T) + s^2 beta e e^T`` for every ``s`` in ``root``.

    Parameters
    ----------
    lam, Q
        Full eigendecomposition of ``K0`` (``lam`` ascending, as ``numpy.linalg.eigh`` returns it).
    e, f
        The update vectors (length n).
    beta
        Coefficient of ``s^2 e e^T``.
    root
        Update strengths ``s >= 0`` (square roots of the SNR values).
    k
        Eigenpairs per ``s`` (``k <= n``).

    Returns
    -------
    values : ndarray, shape (n_s, k)
        Eigenvalues, descending.
    e_proj, f_proj : ndarray, shape (n_s, k)
        ``e^T x_i`` and ``f^T x_i`` of each unit eigenvector ``x_i`` (sign arbitrary).
    ok : ndarray of bool, shape (n_s,)
        False where some eigenpair of that ``s`` failed the residual check (recompute directly).
    """
    n = lam.size
    root = np.asarray(root, dtype=float)
    y, g = Q.T @ e, Q.T @ f
    P2 = np.stack([y * y, y * g, g * g], axis=1)
    desc = lam[::-1]
    values = np.empty((root.size, k))
    e_proj = np.empty((root.size, k))
    f_proj = np.empty((root.size, k))
    ok = np.ones(root.size, dtype=bool)
    zero = root == 0
    if zero.any():  # no update: K0's own top-k
        values[zero], e_proj[zero], f_proj[zero] = desc[:k], y[::-1][:k], g[::-1][:k]
    s = root[~zero]
    if s.size == 0:
        return values, e_proj, f_proj, ok
    m = min(k + 1, n)                       # one extra root: the gap below the k-th
    j = np.arange(m)
    binv = np.stack([np.zeros_like(s), -1.0 / s, np.full_like(s, beta)], axis=1)   # entries of -B^{-1}
    # Weyl: mu_j in [lam_j - rho, lam_j + rho], rho = ||B|| ||P||^2; interlacing: [lam_{j+1}, lam_{j-1}]
    b_norm = np.abs(s * s * beta / 2) + np.hypot(s * s * beta / 2, s)
    rho = b_norm * np.linalg.eigvalsh(np.array([[P2[:, 0].sum(), P2[:, 1].sum()],
                                                 [P2[:, 1].sum(), P2[:, 2].sum()]]))[-1]
    below = np.concatenate([desc[1:], [-np.inf]])[j]
    over = np.concatenate([[np.inf], desc[:-1]])[j]
    lo = np.maximum(desc[j][None, :] - rho[:, None], below[None, :])
    hi = np.minimum(desc[j][None, :] + rho[:, None], over[None, :])
    scale = max(abs(desc[0]), abs(desc[-1])) + rho.max()
    for _ in range(_BISECT_STEPS):
        mid = 0.5 * (lo + hi)
        hit = _count_above(mid, lam, P2, binv) >= (j + 1)[None, :]
        lo, hi = np.where(hit, mid, lo), np.where(hit, hi, mid)
        if np.all(hi - lo <= _BISECT_REL * scale):
            break
    mu = 0.5 * (lo + hi)                                              # (n_s, m)
    # Rayleigh-quotient steps (cubic convergence from the bisection's bracket), kept inside it
    for _ in range(_RQ_STEPS + 1):
        X, py, pg = _eigvec(mu, lam, y, g, P2, binv)
        rq = (X * X) @ lam + (s * s * beta)[:, None] * py * py + 2 * s[:, None] * py * pg
        last = mu
        mu = np.where((rq >= lo) & (rq <= hi), rq, mu)
    mu, estimate = last, mu          # X was computed at `last`; `estimate` is its Rayleigh quotient
    with np.errstate(invalid="ignore", over="ignore"):
        # residual (diag(lam) - mu) x + P B P^T x, with B = [[s^2 beta, s], [s, 0]]
        b1 = (s * s * beta)[:, None] * py + s[:, None] * pg
        b2 = s[:, None] * py
        res = np.linalg.norm((lam - mu[..., None]) * X + y * b1[..., None] + g * b2[..., None], axis=-1)
    gaps = np.full(mu.shape, np.inf)
    if m > 1:
        d = mu[:, :-1] - mu[:, 1:]
        gaps[:, :-1] = np.minimum(gaps[:, :-1], d)
        gaps[:, 1:] = np.minimum(gaps[:, 1:], d)
    good = np.isfinite(res) & (res <= _RESIDUAL_REL * scale) & (res <= _RESIDUAL_OVER_GAP * gaps)
    ok[~zero] = good[:, :k].all(axis=1)
    values[~zero], e_proj[~zero], f_proj[~zero] = estimate[:, :k], py[:, :k], pg[:, :k]
    return values, e_proj, f_proj, ok
