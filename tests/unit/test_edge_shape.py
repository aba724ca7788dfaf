"""The edge-shape check (rmtsweep.theory.edge_shape) against densities whose edge exponent is known."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.theory.cell_law import CUBIC, EXACT
from rmtsweep.theory.edge_shape import edge_exponent, law_edge_exponent, window

D = [100, 200, 400, 800]


def marchenko_pastur(x: np.ndarray, c: float) -> np.ndarray:
    """Marchenko–Pastur density of ratio ``c < 1`` (mean 1), written out: its edges are square roots."""
    a, b = (1 - np.sqrt(c)) ** 2, (1 + np.sqrt(c)) ** 2
    return np.sqrt(np.clip((b - x) * (x - a), 0, None)) / (2 * np.pi * c * x)


@pytest.mark.parametrize("c", [0.1, 0.5, 0.9])
def test_marchenko_pastur_has_a_square_root_edge(c):
    """Near its edge MP is sqrt(b - x) times a smooth factor: the fitted exponent tends to 1/2 with the window."""
    b = (1 + np.sqrt(c)) ** 2
    assert edge_exponent(lambda x: marchenko_pastur(x, c), b, 1e-6, 1e-4) == pytest.approx(0.5, abs=1e-3)
    assert edge_exponent(lambda x: marchenko_pastur(x, c), b, *window(D)) == pytest.approx(0.5, abs=0.05)


@pytest.mark.parametrize("a", [0.25, 1.0, 1.5, 3.0])
def test_a_constructed_edge_returns_its_exponent(a):
    """f(x) = (2 - x)^a (1 + x), an edge of exponent a with a smooth factor: the fit finds a."""
    f = lambda x: (2.0 - x) ** a * (1.0 + x)                                 # noqa: E731
    assert edge_exponent(f, 2.0, 1e-6, 1e-4) == pytest.approx(a, abs=1e-3)


def test_no_density_at_the_window_gives_nan():
    assert np.isnan(edge_exponent(lambda x: np.zeros_like(x), 2.0, *window(D)))


def test_the_cubic_edge_is_a_square_root_and_the_exact_law_need_not_be():
    """The cubic (delta = gamma = 1: Fuss–Catalan of order 2, edge 27/4) is a square root over the sweep's
    window; the one-position law at (delta, gamma) = (1, 0.25) has separated components close to its main
    edge, so over the same window its density falls faster than a square root."""
    assert law_edge_exponent(1.0, 1.0, CUBIC, D) == pytest.approx(0.5, abs=0.05)
    assert law_edge_exponent(0.25, 1.0, EXACT, D) == pytest.approx(0.5, abs=0.05)
    assert law_edge_exponent(1.0, 0.25, EXACT, D) > 0.8
