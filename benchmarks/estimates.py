"""The dry run's estimate against the measured wall time of the same run, per shipped sweep.

    python benchmarks/estimates.py                         # the small shipped sweeps, 2 workers
    python benchmarks/estimates.py demo theory-check       # some sweeps
    python benchmarks/estimates.py --workers 1 --in-process demo

Each sweep runs once into a new store in a temporary directory (``rmtsweep run SWEEP --no-progress``),
timed as a process from its start to its end, after ``rmtsweep run SWEEP --dry-run --json`` gave the
estimate. The table prints the estimate, the measurement and their ratio; the estimate's parts
(start-up, theory, tasks) come from the dry run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SMALL = ["demo", "paper-uncentred", "theory-check-uncentred", "paper-spectrum", "paper-phase", "theory-check",
         "paper-alignment", "finite-t-one-token"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*", default=SMALL)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--in-process", action="store_true")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "rmtsweep.cli"]
    engine = ["--workers", str(args.workers), *(["--in-process"] if args.in_process else [])]
    print(f"command: python benchmarks/estimates.py {' '.join(sys.argv[1:])}")
    print("| sweep | estimate s | start-up s | theory s | tasks s | measured s | measured / estimate |")
    print("|---|---|---|---|---|---|---|")
    for name in args.sweeps:
        with tempfile.TemporaryDirectory() as tmp:
            store = str(Path(tmp) / "s.zarr")
            dry = subprocess.run([*cli, "run", name, "--store", store, "--dry-run", "--json", *engine],
                                 capture_output=True, text=True, check=True)
            plan = json.loads(dry.stdout)
            start = time.perf_counter()
            subprocess.run([*cli, "run", name, "--store", store, "--no-progress", *engine], capture_output=True,
                           text=True, check=True, env=None)
            measured = time.perf_counter() - start
        estimate = plan["estimated_wall_seconds"]
        print(f"| {name} | {estimate:.1f} | {plan['startup_seconds']:.1f} | {plan['theory_seconds']:.1f} | "
              f"{plan['compute_seconds']:.1f} | {measured:.1f} | {measured / estimate:.2f} |", flush=True)


if __name__ == "__main__":
    main()
