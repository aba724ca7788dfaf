"""Two example plugins: geometric pooling weights, and a correlation model of blocks of positions.

- ``geometric``: the last token weighs most, each earlier one ``ratio`` times less (sums to 1).
- ``blocks``: the positions fall into consecutive blocks of ``size``; two signs in one block have
  correlation ``rho``, two in different blocks none.
"""

from __future__ import annotations

import numpy as np

__all__ = ["blocks", "geometric"]


def geometric(R: np.ndarray, ratio: float = 0.5) -> np.ndarray:
    """``w_t ∝ ratio^(T - 1 - t)`` for ``t = 0 .. T-1``, normalised to sum 1 (``R`` gives ``T``; unused otherwise)."""
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    T = R.shape[0]
    w = ratio ** np.arange(T - 1, -1, -1, dtype=float)
    return w / w.sum()


def blocks(T: int, size: int = 2, rho: float = 0.5) -> np.ndarray:
    """The ``T x T`` sign correlation of blocks of ``size`` positions: ``R_ts = rho`` within a block, ``0`` across.

    rmtsweep draws its signs exactly, as the signs of a Gaussian vector with correlation ``sin(pi R / 2)``.
    """
    if size < 1 or not 0 <= rho <= 1:
        raise ValueError(f"size must be >= 1 and rho in [0, 1], got size={size}, rho={rho}")
    block = np.arange(T) // size
    R = np.where(block[:, None] == block[None, :], float(rho), 0.0)
    np.fill_diagonal(R, 1.0)
    return R
