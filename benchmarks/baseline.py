"""The peer we are measured against: the plain script a researcher would write.

For each parameter point and replicate: build the table ``E = s mu^T + Z``, gather and pool the
token columns, form ``S = C C^T / N`` and call ``numpy.linalg.eigh`` (all eigenpairs), then read off
the top-k eigenvalues and the alignments ``|u_hat_i^T u|^2``. It draws its random numbers with the
pipeline's own draw functions, in the same order as :func:`rmtsweep.model.simulate_replicate`, so
both see identical tables, signs and tokens and their results can be compared to rounding level.
"""

from __future__ import annotations

import numpy as np

from rmtsweep.model.correlation import draw_signs
from rmtsweep.model.replicate import CellModel, draw_table_noise, draw_tokens


def naive_replicate(model: CellModel, snr: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Top-k eigenvalues (descending) and alignments of one replicate at one SNR, done literally.

    Returns
    -------
    eigenvalues, overlap : ndarray, shape (k,)
    """
    u = rng.standard_normal(model.d)
    u /= np.linalg.norm(u)
    Z = draw_table_noise(model, rng)
    xi, _ = draw_signs(model.correlation, model.T, model.N, rng)
    tokens = draw_tokens(model, xi, rng)
    s = np.where(np.arange(model.V) < model.n_pos, 1.0, -1.0)
    E = np.sqrt(snr) * np.outer(u, s) + Z                       # the table, d x V
    C = np.zeros((model.d, model.N))
    for t in range(model.T):                                    # pooled sequences, d x N
        C += model.w[t] * E[:, tokens[:, t]]
    S = C @ C.T / model.N
    vals, vecs = np.linalg.eigh(S)
    k = model.top_k
    return vals[::-1][:k], (u @ vecs[:, ::-1][:, :k]) ** 2


def naive_cell(model: CellModel, snr: np.ndarray, seed_rng) -> tuple[np.ndarray, np.ndarray]:
    """One independent naive run per SNR value (each from a fresh copy of the same generator).

    ``seed_rng`` is a zero-argument callable returning the replicate's generator.
    """
    out = [naive_replicate(model, float(s), seed_rng()) for s in snr]
    return np.stack([o[0] for o in out]), np.stack([o[1] for o in out])
