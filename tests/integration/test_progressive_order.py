"""A run in progressive order (the default) and one in grid order write the same store bit for bit."""

from __future__ import annotations

import pytest
import yaml

from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM

pytestmark = pytest.mark.slow


def test_progressive_and_grid_order_give_bit_identical_stores(tmp_path):
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump({**MEDIUM, "cells_per_task": 2}))
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as cluster, \
            Client(cluster) as client:
        for order in ("grid", "progressive"):
            run_sweep(load_sweep(sweep), tmp_path / f"{order}.zarr", client, progress=False, order=order)
    assert_stores_equal(tmp_path / "grid.zarr", tmp_path / "progressive.zarr", same_runs=True)
