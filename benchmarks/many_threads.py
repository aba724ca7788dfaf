"""The dask mode at cluster scale on two cores: hundreds of worker threads whose tasks sleep.

Run from the repository root::

    python benchmarks/many_threads.py            # 250 and 1,000 threads, 10^5 points (about 4 minutes)
    python benchmarks/many_threads.py --quick    # 100 threads, 4,000 points (under a minute)

A ``dask scheduler`` and a few ``dask worker --nthreads K`` processes run on loopback with the preload
``benchmarks/sleeping_tasks.py``: each task sleeps for the cost model's predicted seconds of its points
instead of computing, so the threads are the cluster's and the driver (``rmtsweep run --scheduler``), the
scheduler, the store writes and the ``done`` flags are real. Measured per row: the driver's tasks per
second, the CPU the driver and the scheduler spend per second of sweep (in cores), the fraction of the
threads kept busy (predicted task-seconds / (threads x seconds from the first submit to the end)), and
the time from the command to its first task written. The workers' own CPU (their event loops and the
chunk writes) is reported apart: on a real cluster it is spread over the nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

from rmtsweep.store import journal_file

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def sweep(points: tuple[int, int, int], d: int, replicates: int) -> dict:
    nd, ng, nt = points
    return {"name": "simulated", "d": d, "replicates": replicates, "seed": 1, "correlation": {"model": "iid"},
            "top_k": 1, "grid": {"delta": {"start": 0.5, "stop": 2.0, "num": nd},
                                 "gamma": {"start": 0.5, "stop": 2.0, "num": ng}, "snr": [0.0, 2.0],
                                 "T": {"start": 2, "stop": 1 + nt, "num": nt}, "weights": ["mean"]}}


def _cpu(proc: psutil.Process) -> float:
    """User + system CPU seconds of ``proc`` and its children (the driver's, and the workers' nannies')."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            pass
    return total


def _journal(store: Path) -> list[str]:
    try:
        return journal_file(store).read_text().splitlines()
    except FileNotFoundError:
        return []


def row(threads: int, processes: int, data: dict, tmp: Path) -> dict:
    """One simulated cluster of ``threads`` threads in ``processes`` worker processes, and one sweep on it."""
    from rmtsweep.run.cost import point_seconds
    from rmtsweep.spec import parse_sweep

    sweep_file = tmp / f"sweep-{threads}.yaml"
    sweep_file.write_text(yaml.safe_dump(data))
    store, scheduler_file = tmp / f"s{threads}.zarr", tmp / f"scheduler-{threads}.json"
    env = {**os.environ, "RMTSWEEP_SLEEP_SWEEP": str(sweep_file), "PYTHONPATH": str(ROOT),
           "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", str(scheduler_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)]
    try:
        while not scheduler_file.exists():
            time.sleep(0.1)
        address = json.loads(scheduler_file.read_text())["address"]
        for _ in range(processes):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", str(threads // processes),
                 "--no-dashboard", "--preload", str(HERE / "sleeping_tasks.py"), "--memory-limit", "0"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env))
        from distributed import Client
        with Client(address, timeout="60s") as client:
            client.wait_for_workers(processes, timeout=120)
        scheduler = psutil.Process(procs[0].pid)
        workers = [psutil.Process(p.pid) for p in procs[1:]]
        s0, w0 = _cpu(scheduler), sum(map(_cpu, workers))
        t0 = time.perf_counter()
        driver_proc = subprocess.Popen([sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_file), "--store",
                                        str(store), "--scheduler", address, "--no-progress"],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        driver = psutil.Process(driver_proc.pid)
        first_submit = first_write = None
        driver_cpu = 0.0
        while driver_proc.poll() is None:
            try:
                driver_cpu = _cpu(driver)
            except psutil.NoSuchProcess:
                break
            lines = _journal(store) if first_write is None else []
            if first_submit is None and any(" submit " in line for line in lines):
                first_submit = time.perf_counter() - t0
            if first_write is None and any(" write " in line for line in lines):
                first_write = time.perf_counter() - t0
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        out, err = driver_proc.communicate()
        if driver_proc.returncode != 0:
            raise RuntimeError(f"the run failed: {err[-2000:]}")
        scheduler_cpu, worker_cpu = _cpu(scheduler) - s0, sum(map(_cpu, workers)) - w0
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
    lines = _journal(store)
    tasks = sum(1 for line in lines if " write " in line)
    sw = parse_sweep(data)
    work = float(point_seconds(sw).sum() * sw.replicates)
    busy_span = wall - (first_submit or 0.0)
    return {"threads": threads, "worker_processes": processes, "points": int(point_seconds(sw).size),
            "tasks": tasks, "predicted_core_seconds": round(work, 1), "wall_s": round(wall, 1),
            "first_task_written_s": round(first_write or float("nan"), 1),
            "tasks_per_s": round(tasks / busy_span, 1), "busy_fraction": round(work / (threads * busy_span), 3),
            "driver_cores": round(driver_cpu / wall, 3), "scheduler_cores": round(scheduler_cpu / wall, 3),
            "workers_cores": round(worker_cpu / wall, 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 threads and 4,000 points, same code paths")
    args = parser.parse_args(argv)
    if args.quick:
        plan = [(100, 2, sweep((10, 10, 40), 400, 8))]
    else:
        plan = [(250, 2, sweep((50, 50, 40), 400, 8)), (1000, 4, sweep((50, 50, 40), 600, 16))]
    rows = []
    with tempfile.TemporaryDirectory(prefix="rmtsweep-threads-") as tmp:
        for threads, processes, data in plan:
            rows.append(row(threads, processes, data, Path(tmp)))
    print(f"Command: `python benchmarks/many_threads.py{' --quick' if args.quick else ''}`  "
          f"(machine: {os.cpu_count()} cores; tasks sleep for their predicted seconds)\n")
    print("| threads (worker processes) | points | tasks | predicted core-s | wall s | first task written s | "
          "tasks/s | threads busy | driver cores | scheduler cores | workers' cores |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['threads']} ({r['worker_processes']}) | {r['points']:,} | {r['tasks']:,} | "
              f"{r['predicted_core_seconds']:,.0f} | {r['wall_s']} | {r['first_task_written_s']} | {r['tasks_per_s']} | "
              f"{100 * r['busy_fraction']:.0f} % | {r['driver_cores']} | {r['scheduler_cores']} | {r['workers_cores']} |")
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
