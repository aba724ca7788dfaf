"""How soon a run shows something, per shipped sweep, and the dry run's estimate against the measurement.

    python benchmarks/start.py                      # every shipped sweep, 2 workers (about 15 minutes on 2 cores)
    python benchmarks/start.py demo theory-check    # some sweeps
    python benchmarks/start.py --unseen             # sweeps the cost model was not tuned on (shipped ones, changed)
    python benchmarks/start.py --vs-numpy           # only the one-point d = 1000 sweep against the numpy loop

Each sweep runs once into a new store in a temporary directory (``rmtsweep run SWEEP --no-progress``) as a
process. A thread timestamps its stderr lines ("dask LocalCluster: ..." is the cluster up) while this process
polls, every 5 ms, for the store's ``.zattrs`` (the store exists) and the first ``submit`` line of its journal
(the first Monte Carlo task handed to the scheduler). Before it, ``rmtsweep run SWEEP --dry-run --json`` gives
the estimate: on an idle machine, and at the one-minute load it saw (``busy_factor``). Times are seconds from the
command's start.

``--vs-numpy`` runs one point at d = 1000 (delta = gamma = 0.5, T = 16, prefix(4), mean weights, 32 SNR values
in [0, 8], 4 replicates) with ``rmtsweep run --workers 1`` and as the plain numpy loop a researcher would write
(``baseline.naive_cell``: one full ``eigh`` per SNR value and replicate), each as a process, alternately,
three times; it prints the medians and their ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from rmtsweep.store import journal_file

HERE = Path(__file__).resolve().parent
CLI = [sys.executable, "-m", "rmtsweep.cli"]
ONE_POINT = ["d=1000", "grid.delta=0.5", "grid.gamma=0.5", "grid.T=16", "grid.weights=mean", "replicates=4",
             "grid.snr={start: 0, stop: 8, num: 32}"]
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


def timed_run(args: list[str], store: Path) -> dict[str, float]:
    """Run ``rmtsweep run ARGS --store STORE`` as a process; seconds to each milestone."""
    start = time.perf_counter()
    proc = subprocess.Popen([*CLI, "run", *args, "--store", str(store), "--no-progress"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
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
        if text.count(" write ") > writes:             # the last Monte Carlo task written so far
            writes, seen["written"] = text.count(" write "), now
        time.sleep(0.005)
    seen["done"] = time.perf_counter() - start
    reader.join()
    if proc.returncode:
        raise SystemExit(f"rmtsweep run {' '.join(args)} failed:\n{proc.stdout.read()}")   # type: ignore[union-attr]
    return seen


def start_table(names: list[str], workers: int) -> None:
    engine = ["--workers", str(workers)]
    print(f"command: python benchmarks/start.py {' '.join(sys.argv[1:])}  ({workers} worker processes)")
    print("| sweep | store exists s | cluster up s | first task s | first task after cluster up s | "
          "last task written s | done s | estimate s | done / estimate | load | estimate at load s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    ratios = []
    for name in names:
        sweep = name.split()                          # a sweep's name, then its KEY=VALUE overrides
        with tempfile.TemporaryDirectory() as tmp:
            store = Path(tmp) / "s.zarr"
            dry = subprocess.run([*CLI, "run", *sweep, "--store", str(store), "--dry-run", "--json", *engine],
                                 capture_output=True, text=True, check=True)
            dry_json = json.loads(dry.stdout)
            estimate, at_load = dry_json["estimated_wall_seconds"], dry_json["estimated_wall_seconds_at_load"]
            t = timed_run([*sweep, *engine], store)
        ratios.append(t["done"] / estimate)
        print(f"| {name} | {t.get('store', float('nan')):.2f} | {t.get('cluster', float('nan')):.2f} | "
              f"{t.get('submit', float('nan')):.2f} | {t.get('submit', float('nan')) - t.get('cluster', 0):.2f} | "
              f"{t.get('written', float('nan')):.1f} | {t['done']:.1f} | {estimate:.1f} | {t['done'] / estimate:.2f} | "
              f"{dry_json['load']:.1f} | {at_load:.1f} |", flush=True)
    if ratios:
        for band in (0.3, 0.5):
            within = sum(1 for r in ratios if abs(r - 1) <= band)
            print(f"{within} of {len(ratios)} sweeps within {100 * band:.0f} % of the estimate", end="; ")
        print(f"done / estimate {min(ratios):.2f}-{max(ratios):.2f}")


def vs_numpy(repeats: int = 3) -> None:
    print("command: python benchmarks/start.py --vs-numpy")
    ours, simulated, loop = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            t = timed_run(["demo", *ONE_POINT, "--workers", "1"], Path(tmp) / "s.zarr")
            ours.append(t["done"])
            simulated.append(t["written"])
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", NUMPY_LOOP.format(here=str(HERE))], check=True)
        loop.append(time.perf_counter() - t0)
    a, b = statistics.median(ours), statistics.median(loop)
    c = statistics.median(simulated)
    print("| case | rmtsweep run, 1 worker | numpy loop | ratio |\n|---|---|---|---|")
    print(f"| one point, d=1000, 32 snr, 4 replicates, end to end | {a:.1f} s | {b:.1f} s | {b / a:.1f}x |")
    print(f"| the same, to the last Monte Carlo task written | {c:.1f} s | {b:.1f} s | {b / c:.1f}x |")
    print(f"runs: rmtsweep {', '.join(f'{x:.1f}' for x in ours)} s (last task written "
          f"{', '.join(f'{x:.1f}' for x in simulated)} s); numpy {', '.join(f'{x:.1f}' for x in loop)} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="*")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--vs-numpy", action="store_true")
    parser.add_argument("--unseen", action="store_true")
    args = parser.parse_args()
    if args.vs_numpy:
        vs_numpy()
        return
    start_table(args.sweeps or (UNSEEN if args.unseen else shipped()), args.workers)


if __name__ == "__main__":
    main()
