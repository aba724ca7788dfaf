"""The store's theory at its size against the whole run's CPU, per shipped sweep, with an empty theory cache.

    python benchmarks/theory_share.py                    # every shipped sweep (about 25 CPU-minutes)
    python benchmarks/theory_share.py demo theory-check  # some sweeps

Per sweep, two processes with one BLAS thread and the theory cache off (``rmtsweep.theory.cache: none``):

- ``rmtsweep run SWEEP --workers W --no-progress`` into a new store: the CPU seconds of the command and every
  process it started (user and system, from the operating system's accounting of waited-for children);
- the store's theory alone (:func:`rmtsweep.theory.on_grid.sized_theory`, serial): its process CPU seconds, with
  ``dask.array`` imported before the clock starts, as a run's workers have it (xarray imports it at a first array).

It prints both, their ratio (the theory's share of the run) and the dry run's estimate of the theory's seconds
beside its estimate of the Monte Carlo's. CPU seconds hardly move with the machine's load; wall times do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ONE_THREAD, children_cpu

CLI = [sys.executable, "-m", "rmtsweep.cli"]
THEORY_ALONE = """
import sys, time
import dask.array  # noqa: F401 - imported before the clock, as a run's workers have it (their fork server's)
from threadpoolctl import threadpool_limits
import rmtsweep
from rmtsweep.theory.on_grid import sized_theory
sweep = rmtsweep.load_sweep(sys.argv[1], overrides=sys.argv[2:])
with threadpool_limits(limits=1):
    start = time.process_time()
    sized_theory(sweep)
print(time.process_time() - start)
"""


def environment() -> dict[str, str]:
    return {**os.environ, **ONE_THREAD, "DASK_RMTSWEEP__THEORY__CACHE": "none"}


def run_cpu(sweep: list[str], workers: int) -> tuple[float, dict]:
    """CPU seconds of ``rmtsweep run`` (and its workers) into a new store, and the dry run's JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        store = str(Path(tmp) / "s.zarr")
        args = [*sweep, "--store", store, "--workers", str(workers)]
        dry = json.loads(subprocess.run([*CLI, "run", *args, "--dry-run", "--json"], capture_output=True, text=True,
                                        check=True, env=environment()).stdout)
        before = children_cpu()
        subprocess.run([*CLI, "run", *args, "--no-progress"], capture_output=True, check=True, env=environment())
        return children_cpu() - before, dry


def theory_cpu(sweep: list[str]) -> float:
    out = subprocess.run([sys.executable, "-c", THEORY_ALONE, *sweep], capture_output=True, text=True, check=True,
                         env=environment())
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    from rmtsweep.shipped import sweeps
    names = args.sweeps or list(sweeps())
    print(f"command: python benchmarks/theory_share.py {' '.join(sys.argv[1:])}  "
          f"({args.workers} worker processes, theory cache off; load {os.getloadavg()[0]:.1f})")
    print("| sweep | run CPU-s | theory alone CPU-s | theory / run | dry run: theory s | dry run: Monte Carlo s |")
    print("|---|---|---|---|---|---|")
    shares = []
    for name in names:
        sweep = name.split()
        run, dry = run_cpu(sweep, args.workers)
        theory = theory_cpu(sweep)
        shares.append(theory / run)
        print(f"| {name} | {run:.1f} | {theory:.1f} | {theory / run:.2f} | {dry['theory_seconds']:.1f} | "
              f"{dry['core_seconds']:.1f} |", flush=True)
    within = sum(1 for s in shares if s <= 0.25)
    print(f"{within} of {len(shares)} sweeps with the theory at most a quarter of the run's CPU "
          f"(load at the end {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
