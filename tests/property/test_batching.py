"""Property: how a sweep is cut into tasks changes no result (seeds come from coordinate values).

The examples are derandomized (Hypothesis draws them from the test itself): the same on every run and machine.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmtsweep.testing import assert_stores_equal
from tests.helpers import build_store
from tests.property.strategies import batchings, sweeps


@pytest.mark.slow                                           # 10 examples x 2 stores: 5-10 s on a loaded 2-core machine
@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=sweeps(), choices=st.data())
def test_different_batchings_give_bit_identical_stores(data, choices):
    first = choices.draw(batchings(data["replicates"]), label="first batching")
    second = choices.draw(batchings(data["replicates"]), label="second batching")
    with tempfile.TemporaryDirectory() as tmp:
        a = build_store(Path(tmp) / "a.zarr", {**data, **first})
        b = build_store(Path(tmp) / "b.zarr", {**data, **second})
        assert_stores_equal(a, b, same_runs=True)
        chunks = {p: zarr.open_array(str(p / "eigenvalues"), mode="r").chunks for p in (a, b)}
        if "replicates_per_task" in first:                  # the batching asked for is the one the store got
            assert chunks[a][4] == first["replicates_per_task"]
        if "replicates_per_task" in second:
            assert chunks[b][4] == second["replicates_per_task"]
