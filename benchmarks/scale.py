"""Large grids at cluster speed: the run side's start-up, throughput, driver cost, files and elasticity.

Run from the repository root::

    python benchmarks/scale.py            # the full table (about 4 minutes on 2 cores)
    python benchmarks/scale.py --quick    # smaller grids, same code paths (run by the tests)

Prints one Markdown table (measure, parameters, measured, target) and a JSON line of the raw
numbers. Nothing here is a timed test: the numbers are what this machine did in this run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

from rmtsweep.store import journal_file

HERE = Path(__file__).resolve().parent


def trivial_sweep(name: str, delta: int, gamma: int, T: int, **extra) -> dict:
    """A grid of ``delta x gamma x T`` points of trivial cells (d = 8, one scheme, two SNR values)."""
    return {"name": name, "d": 8, "replicates": 1, "seed": 1, "correlation": {"model": "iid"}, "top_k": 1,
            "grid": {"delta": {"start": 0.5, "stop": 2.0, "num": delta}, "gamma": {"start": 0.5, "stop": 2.0, "num": gamma},
                     "snr": [0.0, 2.0], "T": {"start": 2, "stop": 1 + T, "num": T}, "weights": ["mean"]}, **extra}


def _journal_count(store: Path, event: str) -> int:
    try:
        return sum(1 for line in journal_file(store).read_text().splitlines() if f" {event} " in line)
    except FileNotFoundError:
        return 0


def first_event_seconds(sweep: dict, tmp: Path, event: str, workers: int = 2) -> float:
    """Seconds from starting ``rmtsweep run`` to the first ``event`` ("submit" or "write") in its journal."""
    path = tmp / f"{sweep['name']}.yaml"
    path.write_text(yaml.safe_dump(sweep))
    store = tmp / f"{sweep['name']}-{event}.zarr"
    cmd = [sys.executable, "-m", "rmtsweep.cli", "run", str(path), "--store", str(store), "--workers", str(workers),
           "--no-progress"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        while _journal_count(store, event) == 0 and proc.poll() is None:
            time.sleep(0.02)
        return time.perf_counter() - t0
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
        shutil.rmtree(store, ignore_errors=True)


def throughput(sweep: dict, tmp: Path, workers: int, keep: bool = False, writes: str = "workers") -> dict:
    """Run ``sweep`` end to end in this process on a LocalCluster; wall time, driver CPU, files."""
    from distributed import Client, LocalCluster

    from rmtsweep import SweepFile, parse_sweep, run_sweep
    sf = SweepFile(parse_sweep(sweep, "<benchmark>"), "<benchmark>", json.dumps(sweep))
    store = tmp / f"{sweep['name']}.zarr"
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        client.run(lambda: None)
        cpu0 = resource.getrusage(resource.RUSAGE_SELF)
        t0 = time.perf_counter()
        report = run_sweep(sf, store, client, progress=False, writes=writes)
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    files = sum(len(f) for _, _, f in os.walk(store))
    if not keep:
        shutil.rmtree(store, ignore_errors=True)
    return {"wall": wall, "driver_cpu": cpu, "cells": report.cells_computed, "tasks": report.tasks_computed,
            "files": files}


_PEAK = ("import resource, sys\nfrom rmtsweep.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n"
         "    pass\nprint('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")


def analysis_memory(store: Path, tmp: Path) -> dict:
    """Peak resident memory (MB) of status, compare, export and plot on ``store``, each in a fresh process."""
    commands = {"status": ["status", str(store)],
                "compare": ["compare", str(store), "--no-write", "--worst", "3"],
                "export": ["export", str(store), "--format", "csv", "--out", str(tmp / "out.csv")],
                "plot": ["plot", str(store), "--x", "delta", "--y", "gamma", "--var", "lambda1_z",
                         "--select", "snr=2.0", "--select", "T=2", "--out", str(tmp / "maps")]}
    out = {}
    for name, args in commands.items():
        proc = subprocess.run([sys.executable, "-c", _PEAK, *args], capture_output=True, text=True, timeout=600)
        peak = [line for line in proc.stdout.splitlines() if line.startswith("PEAK ")]
        out[name] = int(peak[-1].split()[1]) / 1024 if peak else float("nan")
    return out


def driver_cost(tmp: Path, big: tuple[int, int, int], workers: int = 4) -> dict:
    """Marginal driver CPU (scheduler included): the slope between a grid and one 4x its size.

    Once with the default batching (per cell), once with 20 points per task (per task: what bounds
    the tasks per second one driver can feed). Fixed costs (template, theory, provenance) cancel.
    """
    small, large = (big[0] // 2, big[1] // 2, big[2]), big
    out = {}
    for label, extra in (("default", {}), ("tasks_of_20", {"cells_per_task": 20})):
        a = throughput(trivial_sweep(f"drv-a-{label}", *small, **extra), tmp, workers)
        b = throughput(trivial_sweep(f"drv-b-{label}", *large, **extra), tmp, workers)
        cpu = b["driver_cpu"] - a["driver_cpu"]
        out[label] = {"ms_per_cell": 1e3 * cpu / (b["cells"] - a["cells"]),
                      "ms_per_task": 1e3 * cpu / max(b["tasks"] - a["tasks"], 1), "tasks": b["tasks"], "cells": b["cells"]}
    return out


def efficiency(tmp: Path, quick: bool) -> dict:
    """The demo-like grid: ``run_sweep`` on 2 workers against 2 plain processes splitting the serial loop."""
    demo = yaml.safe_load((HERE.parent / "sweeps" / "demo.yaml").read_text())
    demo.update(name="eff", replicates=8 if quick else 32, replicates_per_task=None)
    if quick:
        demo["d"] = 100
    path = tmp / "eff.yaml"
    path.write_text(yaml.safe_dump(demo))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--serial-half", str(path)]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd + [str(i)], stdout=subprocess.DEVNULL) for i in (0, 1)]
    for p in procs:
        p.wait()
    plain = time.perf_counter() - t0
    run = throughput(demo, tmp, 2)
    return {"plain": plain, "ours": run["wall"], "efficiency": plain / run["wall"], "tasks": run["tasks"]}


def serial_half(path: str, half: int) -> None:
    """One of two plain processes: every other task of the sweep, in this process, no store."""
    from threadpoolctl import threadpool_limits

    from rmtsweep import load_sweep
    from rmtsweep.run import choose_blocking, compute_task, tasks
    sweep = load_sweep(path).sweep
    with threadpool_limits(limits=1):
        for i, task in enumerate(tasks(sweep, choose_blocking(sweep))):
            if i % 2 == half:
                compute_task(task)


def late_workers(tmp: Path, n: int = 8) -> dict:
    """A run starts on a scheduler with no workers; ``n`` join later. Most tasks processing at once."""
    from distributed import Client, LocalCluster

    from rmtsweep import SweepFile, parse_sweep, run_sweep
    sweep = trivial_sweep("late", 10, 10, 8, cells_per_task=1)              # 800 tasks of one point
    sweep["d"] = 40
    sf = SweepFile(parse_sweep(sweep, "<benchmark>"), "<benchmark>", json.dumps(sweep))
    peak, stop = [0], threading.Event()
    with LocalCluster(n_workers=0, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        runner = threading.Thread(target=run_sweep, args=(sf, tmp / "late.zarr", client), kwargs={"progress": False})
        runner.start()
        time.sleep(2.0)
        cluster.scale(n)

        def watch() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], sum(len(v) > 0 for v in client.processing().values()))
                time.sleep(0.05)
        watcher = threading.Thread(target=watch)
        watcher.start()
        runner.join()
        stop.set()
        watcher.join()
    return {"busy_workers": peak[0], "workers": n}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--serial-half", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serial_half:
        serial_half(args.serial_half[0], int(args.serial_half[1]))
        return 0
    start = time.perf_counter()
    q = args.quick
    big = (20, 20, 10) if q else (50, 50, 40)            # 4e3 / 1e5 points
    huge = (50, 50, 40) if q else (100, 100, 100)        # 1e5 / 1e6 points
    files_grid = (10, 10, 20) if q else (20, 20, 50)     # 2e3 / 2e4 points
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        out["first_write_s"] = first_event_seconds(trivial_sweep("big", *big), tmp, "write")
        out["huge_first_submit_s"] = first_event_seconds(trivial_sweep("huge", *huge), tmp, "submit")
        t = throughput(trivial_sweep("tp", *big), tmp, 2, keep=True)
        out["throughput"] = {**t, "cells_per_s": t["cells"] / t["wall"]}
        out["analysis_mb"] = analysis_memory(tmp / "tp.zarr", tmp)
        w20 = {"cells_per_task": 20}                   # many small tasks: where who writes matters
        out["writes"] = {who: throughput(trivial_sweep(f"w-{who}", *big, **w20), tmp, 4, writes=who)
                         for who in ("workers", "driver")}
        out["driver"] = driver_cost(tmp, big)
        f = throughput(trivial_sweep("files", *files_grid), tmp, 2)
        out["files"] = f
        out["efficiency"] = efficiency(tmp, q)
        out["late"] = late_workers(tmp)
    n = lambda g: int(np.prod(g))  # noqa: E731
    dv, d20 = out["driver"]["default"], out["driver"]["tasks_of_20"]
    rows = [
        ("time to first finished cell", f"{n(big):,}-point grid, d=8, 2 workers", f"{out['first_write_s']:.1f} s", "≤ 10 s"),
        ("start-up (template written, first task submitted)", f"{n(huge):,}-point grid", f"{out['huge_first_submit_s']:.1f} s", "< 30 s"),
        ("trivial-cell throughput, end to end", f"{n(big):,} points, d=8, 2 workers, {t['tasks']} tasks",
         f"{out['throughput']['cells_per_s']:,.0f} cells/s", "≥ 1,000 cells/s"),
        ("driver CPU per cell (scheduler included)", f"{dv['cells']:,} points, default batching ({dv['tasks']} tasks), 4 workers",
         f"{dv['ms_per_cell']:.4f} ms", "≤ 0.2 ms"),
        ("driver CPU per task (scheduler included)", f"{d20['cells']:,} points in {d20['tasks']} tasks of 20, 4 workers",
         f"{d20['ms_per_task']:.1f} ms per task = {d20['ms_per_cell']:.3f} ms per cell", "n/a"),
        ("who writes: workers vs driver (tasks of 20 points)", f"{n(big):,} points, 4 workers",
         " vs ".join(f"{out['writes'][w]['cells'] / out['writes'][w]['wall']:,.0f} cells/s, driver CPU "
                     f"{out['writes'][w]['driver_cpu']:.1f} s" for w in ("workers", "driver")), "n/a"),
        ("files per store", f"{n(files_grid):,}-point store", f"{f['files']}", "≤ 600 (2x10^4 points)"),
        ("2-worker parallel efficiency vs 2 plain processes", f"demo grid, {out['efficiency']['tasks']} tasks",
         f"{100 * out['efficiency']['efficiency']:.0f}% ({out['efficiency']['plain']:.1f} s vs {out['efficiency']['ours']:.1f} s)",
         "≥ 85 %"),
        ("peak memory of status / compare / export / plot", f"the {n(big):,}-point store",
         " / ".join(f"{out['analysis_mb'][k]:.0f}" for k in ("status", "compare", "export", "plot")) + " MB",
         "bounded"),
        ("tasks processing with late-joining workers", f"{out['late']['workers']} workers join a running sweep",
         f"{out['late']['busy_workers']} workers busy at once", f"{out['late']['workers']}"),
    ]
    print(f"Command: `python benchmarks/scale.py{' --quick' if q else ''}`  (machine: {os.cpu_count()} cores)\n")
    print("| measure | parameters | measured | target |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\n" + json.dumps(out, default=float))
    print(f"wall time: {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
