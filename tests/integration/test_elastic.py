"""The in-flight window follows the cluster as it is now: workers that join a running sweep all get work."""

from __future__ import annotations

import json
import threading
import time

import pytest
from distributed import Client, LocalCluster

from rmtsweep import SweepFile, parse_sweep, run_sweep
from rmtsweep.run.execute import ADAPTIVE_PER_THREAD, MIN_IN_FLIGHT, PER_THREAD, Window

pytestmark = pytest.mark.slow

MANY = {"name": "many", "d": 40, "replicates": 1, "seed": 3, "cells_per_task": 1, "top_k": 1,
        "correlation": {"model": "iid"},
        "grid": {"delta": {"start": 0.5, "stop": 2.0, "num": 10}, "gamma": {"start": 0.5, "stop": 2.0, "num": 5},
                 "snr": [0.0, 2.0], "T": [2, 4], "weights": ["mean"]}}       # 200 tasks of one point


def test_eight_late_joining_workers_are_all_busy(tmp_path):
    sf = SweepFile(parse_sweep(MANY), "<test>", json.dumps(MANY))
    peak, stop, errors = [0], threading.Event(), []
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        def run() -> None:
            try:
                run_sweep(sf, tmp_path / "late.zarr", client, progress=False)
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        runner = threading.Thread(target=run)
        runner.start()
        time.sleep(1.0)                                      # the run has started with no worker at all
        cluster.scale(8)
        deadline = time.monotonic() + 240
        while runner.is_alive() and time.monotonic() < deadline:
            peak[0] = max(peak[0], sum(len(v) > 0 for v in client.processing().values()))
            if peak[0] == 8:
                break
            time.sleep(0.02)
        runner.join(timeout=300)
        stop.set()
    assert not errors, errors
    assert peak[0] == 8, f"at most {peak[0]} of 8 late-joining workers had a task at once"


def test_window_follows_threads_and_the_adaptive_maximum():
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        assert Window(client).size() == MIN_IN_FLIGHT                      # nobody there, fixed cluster
        assert Window(client, expected_threads=20).size() == ADAPTIVE_PER_THREAD * 20
        w = Window(client, refresh=0.0)
        cluster.scale(3)
        client.wait_for_workers(3, timeout=60)
        assert w.size() == max(MIN_IN_FLIGHT, PER_THREAD * 3)
