"""The writer's shape of a task's region, without a read, is numpy's shape of that selection."""

from __future__ import annotations

import numpy as np

from rmtsweep.store.writer import selection_shape


def test_the_shape_of_a_region_is_numpys_shape_of_that_selection():
    rng = np.random.default_rng(20261205)
    for _ in range(500):
        shape = tuple(int(n) for n in rng.integers(1, 6, rng.integers(1, 7)))
        region = []
        for n in shape[:rng.integers(0, len(shape) + 1)]:      # a leading integer (a d value) or slices, some
            lo = int(rng.integers(0, n))                          # running past the end (an edge chunk)
            region.append(lo if rng.random() < 0.2 else slice(lo, lo + int(rng.integers(1, 4))))
        assert selection_shape(tuple(region), shape) == np.zeros(shape)[tuple(region)].shape, (region, shape)
