"""Cell edges and axis scales of maps: geometric on a log axis, never below an axis' natural bound."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.analysis.maps.axes import axis_scale, cell_edges


@pytest.mark.parametrize("values, scale", [([0.25, 0.5, 1.0, 2.0], "log"), ([0.25, 1.0], "log"),
                                           ([0.5, 1.0], "linear"), ([0.0, 1.5, 3.0, 6.0], "linear"),
                                           ([1.0, 2.0, 3.0, 4.0, 5.0], "linear"), ([2.0], "linear")])
def test_axis_scale(values, scale):
    assert axis_scale(values) == scale


@pytest.mark.parametrize("values, lower, first", [([0.0, 1.5, 3.0, 6.0], 0.0, 0.0), ([0.0, 2.0], 0.0, 0.0),
                                                  ([0.2, 1.0], 0.0, 0.0), ([0.6, 1.0], 0.0, 0.4),
                                                  ([0.0, 2.0], None, -1.0), ([-1.0, 1.0], 0.0, -2.0)])
def test_outer_edge_stops_at_the_natural_bound(values, lower, first):
    edges = cell_edges(values, "linear", lower)
    assert edges[0] == pytest.approx(first)
    assert edges[-1] == pytest.approx(values[-1] + (values[-1] - values[-2]) / 2)
    assert np.all(np.diff(edges) > 0)


def test_log_edges_are_geometric_midpoints():
    edges = cell_edges([0.25, 0.5, 1.0, 2.0], "log")
    np.testing.assert_allclose(np.log2(edges), [-2.5, -1.5, -0.5, 0.5, 1.5])
    ratios = edges[1:] / edges[:-1]
    np.testing.assert_allclose(ratios, 2.0)                       # every row the same height on the axis
