"""The progressive order and its batching against the grid order and the batching before it: wall times.

    python benchmarks/order.py                  # demo with 32 replicates and paper-phase, 2 workers (about 4 minutes)
    python benchmarks/order.py demo --repeats 5

Each sweep runs as a process (``rmtsweep run SWEEP --order ORDER --no-progress``) into a new store, three ways
in turn (so that load from other jobs hits all alike): the grid order with the batching before the progressive
order (``rmtsweep.batching.progressive-blocks`` 1: a point's replicates in as few tasks as fit), the grid order,
and the progressive order (both with the default of 4 replicate blocks per point). Printed: the median wall time
of each, the ratios, and the task counts (from the store's journal).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rmtsweep.store import journal_file

CLI = [sys.executable, "-m", "rmtsweep.cli"]
CASES = {"demo": ["replicates=32"], "paper-phase": []}


WAYS = {"before": ("grid", "1"), "grid": ("grid", "4"), "progressive": ("progressive", "4")}


def one_run(name: str, way: str, workers: int) -> tuple[float, int]:
    """Wall seconds of one run and the tasks it wrote."""
    order, blocks = WAYS[way]
    env = {**os.environ, "DASK_RMTSWEEP__BATCHING__PROGRESSIVE_BLOCKS": blocks}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.zarr"
        start = time.perf_counter()
        subprocess.run([*CLI, "run", name, *CASES.get(name, []), "--store", str(store), "--order", order,
                        "--workers", str(workers), "--no-progress"], check=True, capture_output=True, env=env)
        wall = time.perf_counter() - start
        tasks = (journal_file(store)).read_text().count(" write ")
    return wall, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", default=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"command: python benchmarks/order.py {' '.join(sys.argv[1:])}  ({args.workers} workers)")
    print("| sweep | batching before, grid order s | grid order s | progressive order s | progressive / before | "
          "progressive / grid | tasks (before, grid, progressive) |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sweeps:
        runs: dict[str, list[float]] = {way: [] for way in WAYS}
        tasks = {}
        for _ in range(args.repeats):
            for way in WAYS:
                wall, tasks[way] = one_run(name, way, args.workers)
                runs[way].append(wall)
        b, g, p = (statistics.median(runs[way]) for way in WAYS)
        print(f"| {name} {' '.join(CASES.get(name, []))} | {b:.1f} | {g:.1f} | {p:.1f} | {p / b:.2f} | {p / g:.2f} | "
              f"{tasks['before']}, {tasks['grid']}, {tasks['progressive']} |", flush=True)


if __name__ == "__main__":
    main()
