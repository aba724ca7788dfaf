"""The in-flight window follows the cluster as it is now: workers that join a running sweep all get work."""

from __future__ import annotations

import json
import threading
import time

import pytest
from distributed import Client, LocalCluster

from rmtsweep import SweepFile, parse_sweep, run_sweep
from rmtsweep import config
from rmtsweep.run.execute import Window

pytestmark = pytest.mark.slow

MANY = {"name": "many", "d": 40, "replicates": 1, "seed": 3, "cells_per_task": 1, "top_k": 1,
        "correlation": {"model": "iid"},
        "grid": {"delta": {"start": 0.5, "stop": 2.0, "num": 10}, "gamma": {"start": 0.5, "stop": 2.0, "num": 5},
                 "snr": [0.0, 2.0], "T": [2, 4], "weights": ["mean"]}}       # 100 tasks of one point


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
    window = config.get("run.window")
    MIN_IN_FLIGHT, PER_THREAD, ADAPTIVE_PER_THREAD = (window[k] for k in ("min-in-flight", "per-thread",
                                                                         "adaptive-per-thread"))
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        assert Window(client).size() == MIN_IN_FLIGHT                      # nobody there, fixed cluster
        assert Window(client, expected_threads=20).size() == ADAPTIVE_PER_THREAD * 20
        w = Window(client, refresh=0.0)
        cluster.scale(3)
        client.wait_for_workers(3, timeout=60)
        assert w.size() == max(MIN_IN_FLIGHT, PER_THREAD * 3)


def test_a_large_window_goes_to_the_scheduler_in_few_messages(tmp_path):
    """The window is handed over in batches (``SUBMIT_BATCH`` tasks a message), not one graph update per task;
    the store is the same bit for bit as with a window of a few tasks refilled one at a time."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    SUBMIT_BATCH = config.get("run.submit-batch")
    from rmtsweep.testing import assert_stores_equal

    class Graphs(SchedulerPlugin):
        def __init__(self) -> None:
            self.sizes: list[int] = []

        def update_graph(self, scheduler, **kwargs) -> None:
            tasks = sum(1 for key in kwargs["keys"] if "rmtsweep-task-" in str(key))    # not the theory's task
            if tasks:
                self.sizes.append(tasks)

    sf = SweepFile(parse_sweep(MANY), "<test>", json.dumps(MANY))
    sizes = {}
    for name, expected_threads in (("batched", 60), ("trickled", 0)):        # windows of 600 and of 8 tasks
        graphs = Graphs()
        with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as cluster, \
                Client(cluster) as client:
            cluster.scheduler.add_plugin(graphs, name="graphs")
            report = run_sweep(sf, tmp_path / f"{name}.zarr", client, progress=False, expected_threads=expected_threads)
        assert report.tasks_computed == 100
        sizes[name] = graphs.sizes
    assert sizes["batched"] == [min(SUBMIT_BATCH, 100), *([100 - SUBMIT_BATCH] if SUBMIT_BATCH < 100 else [])]
    assert sum(sizes["trickled"]) == 100 and len(sizes["trickled"]) > 50    # refilled as tasks finish, a few a time
    assert_stores_equal(tmp_path / "batched.zarr", tmp_path / "trickled.zarr")
