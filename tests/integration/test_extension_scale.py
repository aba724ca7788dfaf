"""Extension at scale: streamed chunk by chunk in bounded memory; a change of batching alone rewrites nothing."""

from __future__ import annotations

import copy
import shutil
import subprocess
import sys

import numpy as np
import yaml
import zarr

from rmtsweep import load_sweep
from rmtsweep.run.cost import Blocking
from rmtsweep.run.work import compute_task
from rmtsweep.run.grid import tasks
from rmtsweep.run.runner import make_template, prepare_store
from rmtsweep.spec import SweepFile, parse_sweep
from rmtsweep.store import Writer, blocking_of, write_template
from rmtsweep.theory import on_grid
from tests.helpers import BASE

# 2048 cells in 64 tasks; 64 (delta, gamma) pairs, so the template's 800-bin bulk laws are few
WIDE = {**copy.deepcopy(BASE), "name": "wide", "d": 8, "replicates": 2, "replicates_per_task": 2, "cells_per_task": 32,
        "top_k": 1, "grid": {"delta": np.linspace(0.5, 2.0, 8).tolist(), "gamma": np.linspace(0.5, 2.0, 8).tolist(),
                             "snr": [0.0, 1.0], "T": list(range(2, 18)), "weights": ["mean"]},
        "observables": {"spectrum": {"bins": 800, "max": 8.0}}}              # spectrum: 2048 x 2 x 800 floats


def _fill(path, data):
    sweep = parse_sweep(data)
    prepare_store(SweepFile(sweep, "<test>", yaml.safe_dump(data)), path)
    w = Writer(path)
    for task in tasks(sweep, Blocking(*blocking_of(path))):
        w.write_block(task.region, compute_task(task), task.todo, run=0)
        w.mark_done(task.region)
    return sweep


def test_extension_copies_in_bounded_memory(tmp_path, monkeypatch):
    # the detection nulls over the pooling matrix (2,176 cells, ~25 s) are not what this measures
    monkeypatch.setattr(on_grid, "pooled_arrays", lambda *args: {})
    old = tmp_path / "old.zarr"
    _fill(old, WIDE)
    stored = sum(a.nbytes for _, a in zarr.open_group(str(old)).arrays())      # uncompressed size of every array
    bigger = copy.deepcopy(WIDE)
    bigger["grid"]["delta"] = WIDE["grid"]["delta"] + [2.5]
    bigger["replicates"] = 4
    new = tmp_path / "new.zarr"
    sf = SweepFile(parse_sweep(bigger), "<test>", yaml.safe_dump(bigger))
    write_template(new, make_template(sf, blocking_of(old)))
    budget = stored // 4                                        # reading any whole array would pass it
    # measured in a fresh process: tracemalloc counts every thread's allocations, and a test process may hold
    # threads of earlier tests (an in-process cluster's event loop, an S3 server) that allocate meanwhile
    measure = ("import sys, tracemalloc; from pathlib import Path; from rmtsweep.store import migrate; "
               "tracemalloc.start(); n = migrate.copy_finished(Path(sys.argv[1]), Path(sys.argv[2]), "
               "recompute_all=False); print(n, tracemalloc.get_traced_memory()[1])")
    done = subprocess.run([sys.executable, "-c", measure, str(old), str(new)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    carried, peak = map(int, done.stdout.split())
    assert stored > 16 * 2**20                                  # the arrays are far larger than the budget ...
    assert peak < budget, f"peak {peak / 2**20:.1f} MB during the copy, budget {budget / 2**20:.1f} MB"
    assert carried == 8 * 8 * 16 * 1 * 2                        # every old cell (delta, gamma, T, weights, snr), done
    a, b = zarr.open_group(str(old)), zarr.open_group(str(new))
    assert np.array_equal(a["spectrum"][...], b["spectrum"][:8, :, :, :, :2])
    assert np.isnan(b["spectrum"][8]).all() and not b["done"][8].any() and not b["done"][:, :, :, :, 2:].any()


def test_a_batching_change_alone_rewrites_nothing(reference, sweep_data, write_sweep, tmp_path):
    from distributed import Client, LocalCluster

    from rmtsweep import run_sweep
    _, small = reference
    store = tmp_path / "same.zarr"
    shutil.copytree(small, store)
    sweep_data.update(replicates_per_task=1, cells_per_task=1)             # a different batching, same sweep
    def state(p):   # chunks must not even be rewritten; metadata may be rewritten with the same bytes
        return (p.read_bytes(), None if p.name.startswith(".") else p.stat().st_mtime_ns)
    before = {p: state(p) for p in store.rglob("*") if p.is_file()
              and p.name not in (".zattrs", ".zmetadata")}   # attrs gain the new run
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        report = run_sweep(load_sweep(write_sweep(sweep_data)), store, client, progress=False)
    assert report.tasks_computed == 0
    assert blocking_of(store) == blocking_of(small)                        # the store keeps its own chunks
    after = {p: state(p) for p in before}
    assert after == before
