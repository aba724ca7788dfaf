"""Benchmark cases c and d: the dask pipeline against the same work as an in-process loop."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from common import interleaved, row

from rmtsweep.run.cost import Blocking, choose_blocking

HERE = Path(__file__).resolve().parent
RUNNER = HERE / "run.py"

# -- cases c and d: the dask pipeline --------------------------------------------------------------
def sweep_file(d: int, replicates: int, per_task: int | None, grid: dict):
    from rmtsweep import SweepFile, parse_sweep
    data = {"name": "bench", "d": d, "replicates": replicates, "seed": 2026,
            "correlation": {"model": "prefix", "L": 4}, "table_centering": "class", "top_k": 3, "grid": grid}
    if per_task:
        data["replicates_per_task"] = per_task
    return SweepFile(parse_sweep(data, "<benchmark>"), "<benchmark>", json.dumps(data))


def serial_sweep(sf) -> None:
    """The same sweep as one in-process loop of ``compute_task`` over ``grid.tasks`` (no store)."""
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    for task in tasks(sf.sweep, choose_blocking(sf.sweep)):
        compute_task(task)


def parallel_sweep(sf, client, tmp: Path, fixed: list[float]) -> None:
    """``run_sweep`` into a fresh store; the template (a fixed cost per sweep) is timed into ``fixed``."""
    from rmtsweep import run_sweep
    from rmtsweep.run.runner import prepare_store
    path = tmp / f"store-{time.perf_counter_ns()}.zarr"
    t0 = time.perf_counter()
    prepare_store(sf, path)
    fixed.append(time.perf_counter() - t0)
    run_sweep(sf, path, client, progress=False)      # finds the template and computes every task


def demo_task_seconds(d: int, replicates: int) -> dict:
    """Seconds per replicate of each demo cell (1 core), to choose ``replicates_per_task``."""
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    from rmtsweep import load_sweep
    sweep = load_sweep(HERE.parent / "sweeps" / "demo.yaml").sweep
    sweep = sweep.model_copy(update={"d": d, "replicates": replicates, "replicates_per_task": replicates})
    per_rep = []
    for task in tasks(sweep, Blocking(1, 1, 1, replicates)):
        t0 = time.perf_counter()
        compute_task(task)
        per_rep.append((time.perf_counter() - t0) / replicates)
    return {"demo_seconds_per_replicate_min": min(per_rep), "demo_seconds_per_replicate_max": max(per_rep)}


DEMO_GRID = {"delta": [0.5, 1.0], "gamma": [0.25, 0.5], "snr": {"start": 0.0, "stop": 6.0, "num": 13},
             "T": [16], "weights": ["mean", "optimal", "harmonic"]}


def c_sweep_file(quick: bool):
    """Case c's sweep: the demo grid (d = 300, 4x its replicates, 8 per task); tiny in quick mode."""
    return sweep_file(60, 4, 2, DEMO_GRID) if quick else sweep_file(300, 32, 8, DEMO_GRID)


def machine_bound(quick: bool, repeats: int) -> dict:
    """Parallel efficiency the machine itself allows: case c's serial loop in 1 vs 2 plain processes.

    No dask: each process runs the whole in-process loop; with 2 truly independent cores two
    concurrent runs take as long as one.
    """
    cmd = [sys.executable, str(RUNNER), "--serial-loop"] + (["--quick"] if quick else [])
    alone, pair = [], []                  # seconds of the loop itself, as each process reports it
    for _ in range(repeats):
        alone.append(float(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split()[-1]))
        procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
                 for _ in range(2)]
        pair.append(float(np.mean([float(p.communicate()[0].split()[-1]) for p in procs])))
    return {"alone": float(np.median(alone)), "pair": float(np.median(pair))}


def pipeline_cases(quick: bool, repeats: int) -> tuple[list[dict], dict]:
    from distributed import Client, LocalCluster
    from rmtsweep.run.grid import n_tasks
    if quick:
        c_sweep = c_sweep_file(True)                                                   # 24 tasks
        d_grid = {"delta": [0.5, 1.0], "gamma": [0.5, 1.0], "snr": {"start": 0.0, "stop": 6.0, "num": 13},
                  "T": [4, 8], "weights": ["mean", "optimal", "harmonic"]}              # 24 cells
        d_sweep = sweep_file(24, 1, None, d_grid)
    else:
        c_sweep = c_sweep_file(False)                                                  # 48 tasks
        d_grid = {"delta": [0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0],
                  "gamma": [0.25, 0.5, 0.75, 1.0, 1.25], "snr": {"start": 0.0, "stop": 6.0, "num": 13},
                  "T": [4, 8, 12, 16, 20, 24, 28, 32, 48, 64],
                  "weights": ["mean", "optimal", "harmonic", {"scheme": "causal", "tau": 1.0}]}  # 2,000 cells
        d_sweep = sweep_file(40, 1, None, d_grid)
    rows, info = [], {}
    with threadpool_limits(limits=1):
        info.update(demo_task_seconds(60 if quick else 300, 2 if quick else 8))
    hw = machine_bound(quick, repeats)
    r = row("c0", "machine bound: case c's serial loop, 2 plain processes at once vs 1 (no dask)",
            hw["pair"], hw["alone"], None, "2 at once", "1 alone")
    r["note"] = f"efficiency {100 * hw['alone'] / hw['pair']:.0f}% (100% on 2 independent cores)"
    rows.append(r)
    info["machine_efficiency"] = hw["alone"] / hw["pair"]
    # quick mode's workers are threads: it shows the cases run and print their rows, and spares two processes' start
    with tempfile.TemporaryDirectory() as tmp, \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=not quick, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        tmp = Path(tmp)
        parallel_sweep(c_sweep, client, tmp, [])                                       # warm the workers
        for name, sf in (("c", c_sweep), ("d", d_sweep)):
            reps = repeats if name == "c" else (repeats if quick else 1)
            fixed: list[float] = []
            with threadpool_limits(limits=1):
                t, _ = interleaved({"serial": lambda: serial_sweep(sf),
                                    "parallel": lambda: parallel_sweep(sf, client, tmp, fixed)}, reps, warmup=False)
            template = float(np.median(fixed))
            blocking = choose_blocking(sf.sweep)
            nt = n_tasks(sf.sweep, blocking)
            s = sf.sweep
            if name == "c":
                eff = t["serial"] / (2 * t["parallel"])
                eff_run = t["serial"] / (2 * (t["parallel"] - template))
                r = row("c", f"d={s.d}, demo grid, {nt} tasks x {blocking.cells} points x {blocking.replicate} replicates, 13 snr, 2 workers",
                        t["parallel"], t["serial"], None, "run_sweep", "serial loop")
                r["note"] = (f"efficiency {100 * eff:.0f}% ({100 * eff_run:.0f}% without the "
                             f"{template:.2f} s store template; {100 * eff / info['machine_efficiency']:.0f}% "
                             f"of the machine bound c0)")
                info.update(c_efficiency=eff, c_efficiency_without_template=eff_run,
                            c_task_seconds=t["serial"] / nt, c_template_seconds=template)
            else:
                points = int(np.prod([len(s.grid.delta), len(s.grid.gamma), len(s.grid.T)]))
                point_s = t["serial"] / points
                overhead = (2 * (t["parallel"] - template) - t["serial"]) / points   # worker-seconds per point
                r = row("d", f"d={s.d}, {points} points x {len(s.grid.weights)} schemes in {nt} tasks of "
                             f"{blocking.cells} points, 1 replicate, 13 snr, 2 workers",
                        t["parallel"], t["serial"], None, "run_sweep", "serial loop")
                r["note"] = (f"overhead {1e3 * overhead:.2f} ms/point = {100 * overhead / point_s:.0f}% of a "
                             f"{1e3 * point_s:.1f} ms point")
                info.update(d_overhead_fraction=overhead / point_s, d_overhead_ms=1e3 * overhead,
                            d_point_ms=1e3 * point_s, d_template_seconds=template)
            rows.append(r)
        info["breakdown"] = overhead_breakdown(d_sweep, client, tmp)
    return rows, info


def overhead_breakdown(sf, client, tmp: Path) -> dict:
    """Per-task costs outside the computation: store write, dask round trip, task pickle size."""
    import pickle

    from rmtsweep import store
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.runner import prepare_store
    path = tmp / "breakdown.zarr"
    prepare_store(sf, path)
    writer = store.Writer(path)
    sample = [t for _, t in zip(range(50), tasks(sf.sweep, Blocking(*store.blocking_of(path))))]
    values = [compute_task(t) for t in sample]
    t0 = time.perf_counter()
    for t, v in zip(sample, values):
        writer.write_block(t.region, v, t.todo, 0)
        writer.mark_done(t.region)
    write_ms = 1e3 * (time.perf_counter() - t0) / len(sample)
    t0 = time.perf_counter()
    for t in sample:
        client.submit(len, [t], pure=False).result()
    roundtrip_ms = 1e3 * (time.perf_counter() - t0) / len(sample)
    return {"store_write_ms": write_ms, "dask_roundtrip_ms": roundtrip_ms,
            "task_pickle_bytes": len(pickle.dumps(sample[0]))}


