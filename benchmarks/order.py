"""The progressive order against the grid order: same sweep, same workers, the wall time of each.

    python benchmarks/order.py                  # demo with 32 replicates and paper-phase, 2 workers (about 4 minutes)
    python benchmarks/order.py demo --repeats 5

Each sweep runs as a process (``rmtsweep run SWEEP --order ORDER --no-progress``) into a new store, the two
orders alternately (grid, progressive, grid, ...) so that load from other jobs hits both alike. Printed: the
median wall time of each order, their ratio, and the task count of each (from the store's journal), which
shows that both orders cut the same tasks.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "rmtsweep.cli"]
CASES = {"demo": ["replicates=32"], "paper-phase": []}


def one_run(name: str, order: str, workers: int) -> tuple[float, int]:
    """Wall seconds of one run and the tasks it wrote."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "s.zarr"
        start = time.perf_counter()
        subprocess.run([*CLI, "run", name, *CASES.get(name, []), "--store", str(store), "--order", order,
                        "--workers", str(workers), "--no-progress"], check=True, capture_output=True)
        wall = time.perf_counter() - start
        tasks = (store / ".rmtsweep-journal.log").read_text().count(" write ")
    return wall, tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", default=list(CASES))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(f"command: python benchmarks/order.py {' '.join(sys.argv[1:])}  ({args.workers} workers)")
    print("| sweep | grid order s | progressive order s | progressive / grid | tasks (grid, progressive) |")
    print("|---|---|---|---|---|")
    for name in args.sweeps:
        runs: dict[str, list[float]] = {"grid": [], "progressive": []}
        tasks = {}
        for _ in range(args.repeats):
            for order in runs:
                wall, tasks[order] = one_run(name, order, args.workers)
                runs[order].append(wall)
        g, p = statistics.median(runs["grid"]), statistics.median(runs["progressive"])
        print(f"| {name} {' '.join(CASES.get(name, []))} | {g:.1f} | {p:.1f} | {p / g:.2f} | "
              f"{tasks['grid']}, {tasks['progressive']} |", flush=True)


if __name__ == "__main__":
    main()
