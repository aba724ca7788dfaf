"""How soon a run shows something, per shipped sweep, and the dry run's estimate against the measurement.

    python benchmarks/start.py                      # every shipped sweep, 2 workers (about 15 minutes on 2 cores)
    python benchmarks/start.py demo theory-check    # some sweeps
    python benchmarks/start.py --unseen             # sweeps the cost model was not tuned on (shipped ones, changed)
    python benchmarks/start.py --vs-numpy           # only the one-point d = 1000 sweep against the numpy loop
    python benchmarks/start.py --vs-numpy --other PYROOT   # ... and another checkout's rmtsweep, in turn

Each sweep runs once into a new store in a temporary directory (``rmtsweep run SWEEP --no-progress``) as a
process, with an empty theory cache of its own: the dry run estimates a new store's theory from scratch. A
thread timestamps its stderr lines ("dask LocalCluster: ..." is the cluster up) while this process
polls, every 5 ms, for the store's ``.zattrs`` (the store exists), the first ``submit`` line of its journal
(the first Monte Carlo task handed to the scheduler) and its ``write`` lines (a task's results written). Before
it, ``rmtsweep run SWEEP --dry-run --json`` gives the estimate: on an idle machine, and at the one-minute load it
saw (``busy_factor``). Times are seconds from the command's start.

``--vs-numpy`` runs one point at d = 1000 (delta = gamma = 0.5, T = 16, prefix(4), mean weights, 32 SNR values
in [0, 8], 4 replicates) with ``rmtsweep run --workers 1`` and as the plain numpy loop a researcher would write
(``baseline.naive_cell``: one full ``eigh`` per SNR value and replicate), each as a process with one BLAS thread,
alternately,
three times; it prints the medians and their ratio. Each round runs rmtsweep twice: with an empty theory cache
(a folder of its own, ``DASK_RMTSWEEP__THEORY__CACHE``), then into a new store with the cache that run filled.
Beside each wall time it prints the CPU-seconds of the process and the workers it reaped. ``--other PYROOT`` runs
another checkout's rmtsweep too (a folder holding its package as ``rmtsweep``, first on ``PYTHONPATH``), in turn
with this one, and prints its rows beside.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ONE_POINT, ONE_THREAD, children_cpu
from rmtsweep.store import journal_file

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "rmtsweep.cli"]
UNSEEN = ["demo d=500 grid.T=4,8", "theory-check d=250 grid.weights=mean,harmonic replicates=16",
          "paper-alignment d=300 replicates=8", "paper-phase d=200 grid.T=8", "attention/d400 replicates=8 d=600",
          "paper-finite-t d=200 replicates=8", "finite-t-one-token d=800 replicates=8"]
"""Shipped sweeps with overrides: other sizes, positions and schemes than those the cost model was checked on."""
NUMPY_LOOP = """
import sys, numpy as np
sys.path.insert(0, {here!r})
from baseline import naive_cell
from common import make_model
model = make_model(1000)
snr = np.linspace(0, 8, 32)
for replicate in range(4):
    naive_cell(model, snr, lambda: np.random.default_rng(replicate))
"""


def shipped() -> list[str]:
    from rmtsweep.shipped import sweeps
    return list(sweeps())


def timed_run(args: list[str], store: Path, env: dict[str, str] | None = None) -> dict[str, float]:
    """Run ``rmtsweep run ARGS --store STORE`` as a process; seconds to each milestone, and its ``cpu``."""
    cpu = children_cpu()
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, "run", *args, "--store", str(store), "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    seen: dict[str, float] = {}

    def read_stderr() -> None:
        for line in proc.stderr:                      # type: ignore[union-attr]
            if line.startswith("dask LocalCluster") and "cluster" not in seen:
                seen["cluster"] = time.perf_counter() - start
    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    journal = journal_file(store)
    writes = 0
    while proc.poll() is None:
        now = time.perf_counter() - start
        if "store" not in seen and (store / ".zattrs").exists():
            seen["store"] = now
        text = journal.read_text() if journal.exists() else ""
        if "submit" not in seen and " submit " in text:
            seen["submit"] = now
        if text.count(" write ") > writes:             # the first and the last Monte Carlo task written so far
            writes, seen["written"] = text.count(" write "), now
            seen.setdefault("first", now)
        time.sleep(0.005)
    seen["done"] = time.perf_counter() - start
    reader.join()
    seen["cpu"] = children_cpu() - cpu
    if proc.returncode:
        raise SystemExit(f"rmtsweep run {' '.join(args)} failed:\n{proc.stdout.read()}")   # type: ignore[union-attr]
    return seen


def start_table(names: list[str], workers: int) -> None:
    engine = ["--workers", str(workers)]
    print(f"command: python benchmarks/start.py {' '.join(sys.argv[1:])}  ({workers} worker processes)")
    print("| sweep | store exists s | cluster up s | first task s | first task after cluster up s | "
          "first task written s | last task written s | done s | estimate s | done / estimate | load | "
          "estimate at load s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for name in names:
        sweep = name.split()                          # a sweep's name, then its KEY=VALUE overrides
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "s.zarr"
            env = {**os.environ, "DASK_RMTSWEEP__THEORY__CACHE": str(Path(tmp) / "cache")}
            dry = subprocess.run([*CLI, "run", *sweep, "--store", str(store), "--dry-run", "--json", *engine],
                                 capture_output=True, text=True, check=True, env=env)
            dry_json = json.loads(dry.stdout)
            estimate, at_load = dry_json["estimated_wall_seconds"], dry_json["estimated_wall_seconds_at_load"]
            t = timed_run([*sweep, *engine], store, env)
        ratios.append(t["done"] / estimate)
        print(f"| {name} | {t.get('store', float('nan')):.2f} | {t.get('cluster', float('nan')):.2f} | "
              f"{t.get('submit', float('nan')):.2f} | {t.get('submit', float('nan')) - t.get('cluster', 0):.2f} | "
              f"{t.get('first', float('nan')):.2f} | {t.get('written', float('nan')):.1f} | {t['done']:.1f} | "
              f"{estimate:.1f} | {t['done'] / estimate:.2f} | "
              f"{dry_json['load']:.1f} | {at_load:.1f} |", flush=True)
    if ratios:
        for band in (0.3, 0.5):
            within = sum(1 for r in ratios if abs(r - 1) <= band)
            print(f"{within} of {len(ratios)} sweeps within {100 * band:.0f} % of the estimate", end="; ")
        print(f"done / estimate {min(ratios):.2f}-{max(ratios):.2f}")


def vs_numpy(repeats: int = 3, other: str | None = None) -> None:
    print(f"command: python benchmarks/start.py {' '.join(sys.argv[1:])}")
    codes = {"": None} | ({f" ({other})": other} if other else {})
    runs: dict[tuple[str, str], list[dict[str, float]]] = {(c, k): [] for c in codes for k in ("empty", "warm")}
    loop: list[float] = []
    loop_cpu: list[float] = []
    for _ in range(repeats):
        for code, root in codes.items():
            with tempfile.TemporaryDirectory() as tmp:
                env = {**os.environ, "DASK_RMTSWEEP__THEORY__CACHE": str(Path(tmp) / "cache")}
                if root:
                    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
                for cache in ("empty", "warm"):        # the first run fills the cache the second reads
                    runs[code, cache].append(timed_run(["demo", *ONE_POINT, "--workers", "1"],
                                                       Path(tmp) / f"{cache}.zarr", env))
        cpu, t0 = children_cpu(), time.perf_counter()
        # one BLAS thread, as the run's worker has: a second thread beside a busy core spins and can take 10x longer
        subprocess.run([sys.executable, "-c", NUMPY_LOOP.format(here=str(HERE))], check=True,
                       env={**os.environ, **ONE_THREAD})
        loop.append(time.perf_counter() - t0)
        loop_cpu.append(children_cpu() - cpu)
    b, b_cpu = statistics.median(loop), statistics.median(loop_cpu)
    print("| case | rmtsweep run, 1 worker | CPU-s | numpy loop | CPU-s | ratio |\n|---|---|---|---|---|---|")
    for (code, cache), timed in runs.items():
        a, a_cpu = statistics.median(t["done"] for t in timed), statistics.median(t["cpu"] for t in timed)
        c = statistics.median(t["written"] for t in timed)
        what = f"one point, d=1000, 32 snr, 4 replicates, {cache} theory cache{code}"
        print(f"| {what}, end to end | {a:.1f} s | {a_cpu:.1f} | {b:.1f} s | {b_cpu:.1f} | {b / a:.1f}x |")
        print(f"| {what}, to the last Monte Carlo task written | {c:.1f} s | | {b:.1f} s | | {b / c:.1f}x |")
    for (code, cache), timed in runs.items():
        each = ", ".join(f"{t['done']:.1f} s ({t['cpu']:.1f} CPU-s)" for t in timed)
        written = ", ".join(f"{t['written']:.1f}" for t in timed)
        cluster = ", ".join(f"{t.get('cluster', float('nan')):.2f}" for t in timed)
        print(f"runs, {cache} cache{code}: {each} (cluster up {cluster} s; last task written {written} s)")
    print(f"numpy: {', '.join(f'{x:.1f} s ({y:.1f} CPU-s)' for x, y in zip(loop, loop_cpu, strict=True))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vs-numpy", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="with --vs-numpy: rounds of runs (default 3)")
    parser.add_argument("--unseen", action="store_true")
    parser.add_argument("--other", help="with --vs-numpy: a folder holding another checkout's package as rmtsweep")
    args = parser.parse_args()
    if args.other and not args.vs_numpy:
        parser.error("--other goes with --vs-numpy")
    if args.vs_numpy:
        vs_numpy(args.repeats, args.other)
        return
    start_table(args.sweeps or (UNSEEN if args.unseen else shipped()), args.workers)


if __name__ == "__main__":
    main()
