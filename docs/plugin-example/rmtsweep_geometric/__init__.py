"""Geometric pooling: the last token weighs most, each earlier one ``ratio`` times less (sums to 1)."""

from __future__ import annotations

import numpy as np

__all__ = ["geometric"]


def geometric(R: np.ndarray, ratio: float = 0.5) -> np.ndarray:
    """``w_t ∝ ratio^(T - 1 - t)`` for ``t = 0 .. T-1``, normalised to sum 1 (``R`` gives ``T``; unused otherwise)."""
    if not 0 < ratio <= 1:
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    T = R.shape[0]
    w = ratio ** np.arange(T - 1, -1, -1, dtype=float)
    return w / w.sum()
