"""What one replicate draws (:class:`Draws`): every pooling, fixed weights or attention, measures the same draws."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Draws"]


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
