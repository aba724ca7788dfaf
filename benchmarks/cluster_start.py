"""What a local cluster of worker processes costs: up, a first task, the close, and CPU-s, in a fresh process each.

    python benchmarks/cluster_start.py                          # this checkout, 1 and 2 workers, 3 rounds
    python benchmarks/cluster_start.py --other /path/to/pyroot  # and another checkout's rmtsweep, in turn

Each measurement is a new process that first imports what a run's driver imports (so they are not counted),
then enters ``rmtsweep.cluster.engine.connect`` with ``--workers N``, runs one trivial task and leaves. The fork
server, where there is one, starts inside the measurement: the command line starts it as it begins instead, so
its imports overlap the command's. CPU-s are the process's and its reaped children's. ``--other`` names a
folder holding another checkout's package as ``rmtsweep`` (it goes first on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

PROBE = """
import resource, sys, time

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def main():
    import distributed, scipy.sparse, zarr
    import rmtsweep.cluster.engine as engine, rmtsweep.run.runner
    c0, t0 = cpu(), time.perf_counter()
    with engine.connect(engine.make_engine("local", workers=int(sys.argv[1]))) as (client, _):
        up = time.perf_counter() - t0
        client.submit(sum, [1, 2], pure=False).result()
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
    close = time.perf_counter() - t1
    try:
        from rmtsweep.run import forkserver
        forkserver.stop()                 # reaped, so that its CPU counts
    except ImportError:
        pass
    print(up, first, close, cpu() - c0)

if __name__ == "__main__":
    main()
"""


def measure(workers: int, pyroot: str | None) -> list[float]:
    env = dict(os.environ)
    if pyroot:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pyroot, env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", PROBE, str(workers)], capture_output=True, text=True, env=env,
                         check=True)
    return [float(x) for x in out.stdout.split()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="a folder holding another checkout's package as rmtsweep")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    codes = {"this checkout": None} | ({f"--other {args.other}": args.other} if args.other else {})
    print(f"command: python benchmarks/cluster_start.py {' '.join(sys.argv[1:])}  (load {os.getloadavg()[0]:.1f})")
    got: dict[tuple[str, int], list[list[float]]] = {}
    for _ in range(args.rounds):
        for workers in (1, 2):
            for name, pyroot in codes.items():
                got.setdefault((name, workers), []).append(measure(workers, pyroot))
    print("| code | workers | up s | first task s | close s | CPU-s |\n|---|---|---|---|---|---|")
    for (name, workers), runs in got.items():
        cells = [statistics.median(run[k] for run in runs) for k in range(4)]
        print(f"| {name} | {workers} | {cells[0]:.2f} | {cells[1]:.2f} | {cells[2]:.2f} | {cells[3]:.2f} |")
    print(f"medians of {args.rounds} rounds; load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
