"""Optional per-replicate observables: the bulk spectrum histogram and the downstream ridge task.

Both rebuild ``C(snr) = C0 + sqrt(snr) u a^T`` explicitly (they are asked for on figure sweeps,
not on large grids), so they stay independent of the fast top-k path.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ridge_accuracy", "spectrum_density"]


def spectrum_density(C0T: np.ndarray, a: np.ndarray, u: np.ndarray, snr: np.ndarray, kappa: float,
                     edges: np.ndarray) -> np.ndarray:
    """Histogram density of the eigenvalues of ``S / kappa`` on fixed bins, one row per SNR.

    All ``d`` eigenvalues are counted, including the ``d - N`` exact zeros when ``N < d`` (they fall
    in the first bin); eigenvalues beyond the last edge are not counted. Averaging rows over
    replicates gives the empirical spectral density to hold against
    :func:`rmtsweep.theory.density`.

    Returns
    -------
    ndarray, shape (n_snr, len(edges) - 1)
        ``counts / (d * bin_width)``.
    """
    N, d = C0T.shape
    width = np.diff(edges)
    out = np.empty((len(snr), width.size))
    for i, s in enumerate(np.sqrt(np.asarray(snr, dtype=float))):
        CT = C0T + s * np.outer(a, u)
        small = CT.T @ CT if d <= N else CT @ CT.T
        vals = np.clip(np.linalg.eigvalsh(small) / (N * kappa), 0.0, None)   # exact zeros may round below 0
        counts, _ = np.histogram(np.concatenate([vals, np.zeros(d - vals.size)]), bins=edges)
        out[i] = counts / (d * width)
    return out


def ridge_accuracy(train: tuple[np.ndarray, np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray, np.ndarray],
                   u: np.ndarray, snr: np.ndarray, penalty: float) -> np.ndarray:
    """Test accuracy of ridge regression from pooled vectors to sequence labels (docs/theory.md).

    Parameters
    ----------
    train, test
        ``(C0T, a, y)``: pooled noise (n x d), pooled signs (n,), labels (n,) of each sample set,
        drawn from the same table.
    u
        Unit signal direction.
    snr
        SNR values.
    penalty
        Ridge penalty in units of ``kappa``'s scale: ``lambda = penalty * trace(S) / d``.

    Returns
    -------
    ndarray, shape (n_snr,)
        Fraction of test labels predicted right by ``sign((c - mean_train c)^T beta)``.
    """
    (C0T, a, y), (C0T_t, a_t, y_t) = train, test
    N, d = C0T.shape
    out = np.empty(len(snr))
    for i, s in enumerate(np.sqrt(np.asarray(snr, dtype=float))):
        X = C0T + s * np.outer(a, u)
        centre = X.mean(axis=0)
        X -= centre
        G = X.T @ X / N
        lam = penalty * np.trace(G) / d
        beta = np.linalg.solve(G + lam * np.eye(d), X.T @ y / N)
        pred = np.sign((C0T_t + s * np.outer(a_t, u) - centre) @ beta)
        out[i] = np.mean(pred == y_t)
    return out
