"""The store's theory at its size on a cluster: one point at d = 1000 (delta = gamma = 0.5, decay(0.6) signs, T = 16,
mean weights, 32 SNR values, 4 replicates), as ``benchmarks/start.py --vs-numpy`` and ``benchmarks/null_cost.py``.

Runs ``rmtsweep run --workers N`` as a process (theory cache off, one BLAS thread a worker), ``--repeats`` times,
and prints per run: the theory's wall time (from the note that it is computing to the note that it is written),
the run's wall time, the CPU seconds of the command and its workers, and the load average beside them. Run it on
two checkouts to compare them.

``--span`` computes the same theory in this process instead, one item after another, with a mapper that times each
item (thread CPU-s): it prints the total and the span on 1, 2 and 4 workers (the theory task's own work plus each
round's items dealt in order to the first free worker). Thread CPU time hardly depends on the machine's load.

    python benchmarks/theory_spread.py                 # 2 workers, 2 runs
    python benchmarks/theory_spread.py --workers 4 --repeats 3
    python benchmarks/theory_spread.py --span
"""

from __future__ import annotations

import argparse
import heapq
import os
import subprocess
import sys
import tempfile
import time

from common import ONE_POINT, ONE_THREAD, children_cpu



def one_run(workers: int) -> tuple[float, float, float, float]:
    """``(theory wall s, run wall s, CPU-s, load average)`` of one run."""
    env = {**os.environ, **ONE_THREAD, "DASK_RMTSWEEP__THEORY__CACHE": "none"}
    with tempfile.TemporaryDirectory() as tmp:
        before = children_cpu()
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "rmtsweep.cli", "run", "demo", *ONE_POINT, "--store",
                                 f"{tmp}/s.zarr", "--workers", str(workers), "--no-progress"], env=env,
                                stderr=subprocess.PIPE, text=True, cwd=tmp)
        lines = [(time.perf_counter() - start, line) for line in proc.stderr]     # type: ignore[union-attr]
        proc.wait()
        wall = time.perf_counter() - start
        cpu = children_cpu() - before
    if proc.returncode:
        raise SystemExit("rmtsweep run failed:\n" + "".join(line for _, line in lines[-20:]))
    began = next(t for t, line in lines if "computing the theory at the store's size" in line)
    written = next(t for t, line in lines if "the theory at the store's size is written" in line)
    return written - began, wall, cpu, os.getloadavg()[0]


def span() -> None:
    """Print the theory's total thread CPU-s and its span on 1, 2 and 4 workers (module docstring)."""
    os.environ["DASK_RMTSWEEP__THEORY__CACHE"] = "none"
    from threadpoolctl import threadpool_limits

    from rmtsweep import load_sweep
    from rmtsweep.run.plan import theory_budgets
    from rmtsweep.theory.on_grid import sized_theory
    rounds: list[list[float]] = []

    def mapper(fn, items: list) -> list:
        out, costs = [], []
        for item in items:
            t = time.thread_time()
            out.append(fn(item))
            costs.append(time.thread_time() - t)
        rounds.append(costs)
        return out

    def makespan(costs: list[float], workers: int) -> float:
        free = [0.0] * workers
        for c in costs:
            heapq.heapreplace(free, free[0] + c)
        return max(free)

    with threadpool_limits(limits=1):
        t = time.thread_time()
        sized_theory(load_sweep("demo", ONE_POINT).sweep, theory_budgets(), mapper, None)
        total = time.thread_time() - t
    own = total - sum(map(sum, rounds))
    print("command: python benchmarks/theory_spread.py --span")
    print(f"items per round {[len(r) for r in rounds]}; total {total:.2f} CPU-s; "
          + "; ".join(f"span on {w} worker(s) {own + sum(makespan(r, w) for r in rounds):.2f} CPU-s"
                      for w in (1, 2, 4)) + f"; load {os.getloadavg()[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--span", action="store_true")
    args = parser.parse_args()
    if args.span:
        span()
        return
    print(f"command: python benchmarks/theory_spread.py --workers {args.workers} --repeats {args.repeats}")
    print("| run | theory wall s | run wall s | CPU-s | load (1 min) |\n|---|---|---|---|---|")
    for n in range(args.repeats):
        theory, wall, cpu, load = one_run(args.workers)
        print(f"| {n + 1} | {theory:.1f} | {wall:.1f} | {cpu:.1f} | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
