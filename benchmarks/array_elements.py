"""The array mode at scale on two cores: hundreds of job-array elements against one store, their tasks sleeping.

Run from the repository root::

    python benchmarks/array_elements.py            # 100 and 1,000 elements over 50 processes
    python benchmarks/array_elements.py --quick    # 20 elements

Each element does what ``rmtsweep work STORE --share I/N`` does around its tasks, with the package's own
code: it joins the store (:meth:`rmtsweep.store.Store.join`: its share's lock with a heartbeat, the conflict
check, the run that ``submit --array`` recorded for its share found, the journal), then for each task of
its share (:func:`rmtsweep.run.grid.share_tasks`, reading only its chunks of ``done``) sleeps the task's seconds instead of computing, writes
the task's chunks through the fenced :func:`rmtsweep.run.work.write_task` (the data of a task of the same
shape, computed once), checks its lock, marks the task done and journals it. No dask: an element's
LocalCluster costs the same at any array size, and what grows with the array is the store. The elements
run as threads of ``--processes`` separate processes (each process has its own zarr I/O loop and GIL, as
separate nodes would; threads of one process share both, and then they, not the store, set the pace).

Measured per row: the time for every element to join (``--each-records``: each records its own run under
the metadata lock, which serialises them, as before ``submit`` recorded them all), the tasks per second reached against the sleeping bound (elements / task seconds), and the
coordination CPU per task (the processes' CPU after their imports, over the tasks written: joins, lock checks, chunk and ``done``
writes, journal, heartbeats; the sleeps cost none). An element's share of a core for coordination is that
CPU per task over its task's length (about 1 s as ``submit --array`` sizes them).
"""

from __future__ import annotations

import argparse
import json
import os
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from rmtsweep import SweepFile, parse_sweep, status
from rmtsweep.run import Blocking, ready_store
from rmtsweep.run import work
from rmtsweep.run.grid import share_done, share_tasks
from rmtsweep.store import Store


def sweep_data(elements: int, tasks_each: int) -> dict:
    """A sweep of about ``elements x tasks_each`` tasks, d = 8: 1,000 cells and as many replicates as make the
    count, one cell and one replicate per task (the SNR axis lies inside a task, so more SNR values add none)."""
    cells = 1000
    replicates = max(1, elements * tasks_each // cells)
    data = {"name": "elements", "d": 8, "replicates": replicates, "replicates_per_task": 1, "seed": 1,
            "correlation": {"model": "iid"}, "top_k": 1, "cells_per_task": 1,
            "grid": {"delta": {"start": 0.5, "stop": 2.0, "num": 25}, "gamma": {"start": 0.5, "stop": 2.0, "num": 20},
                     "snr": [0.0, 1.0], "T": [8, 16], "weights": ["mean"]}}
    return data


def element(path: Path, sf: SweepFile, share: tuple[int, int], seconds: float, joined: list, errors: list) -> None:
    start = time.perf_counter()
    try:
        with Store(path).join(sf, share, {"benchmark": True}) as run:
            joined.append(time.perf_counter() - start)
            blocking = Blocking(*run.blocking)
            done = share_done(sf.sweep, blocking, share, run.writer.done.shape, run.writer.done.__getitem__)
            for task in share_tasks(sf.sweep, blocking, done, share):
                time.sleep(seconds)
                result = work.write_task(task, str(path), run.index, run.token, run.token, share)
                if result.get("written") is not True:
                    raise RuntimeError(f"element {share}: {result}")
                run.check()
                run.writer.mark_done_many([task.region])
                run.log("write", task.key)
            run.writer.close()
    except Exception as exc:  # noqa: BLE001 - reported by the caller
        errors.append(f"{share}: {exc!r}")


def host(path: str, data: dict, shares: list[tuple[int, int]], seconds: float, out, ready, go) -> None:
    """One process: its elements as threads, started once every process has imported the package (``ready``,
    then ``go``); puts (join seconds, errors, CPU seconds since the start) on ``out``."""
    ready.put(os.getpid())
    go.wait()
    cpu0 = time.process_time()
    sf = SweepFile(parse_sweep(data), "<benchmark>", json.dumps(data))
    cache: dict = {}                                   # one task's data per shape: the sleep stands for computing
    real = work.compute_block

    def cached(task):
        key = tuple(np.subtract(task.stop, task.start))
        if key not in cache:
            cache[key] = real(task)
        return cache[key]
    work.compute_block = cached
    joined: list[float] = []
    errors: list[str] = []
    threads = [threading.Thread(target=element, args=(Path(path), sf, share, seconds, joined, errors))
               for share in shares]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put((joined, errors, time.process_time() - cpu0))


def measure(elements: int, tasks_each: int, seconds: float, processes: int, each_records: bool = False) -> dict:
    data = sweep_data(elements, tasks_each)
    sf = SweepFile(parse_sweep(data), "<benchmark>", json.dumps(data))
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "elements.zarr"
        # as `submit --array N` does: the N elements' runs recorded once, before they start (with --each-records,
        # as before: each element records its own as it joins, under the metadata lock)
        total, _ = ready_store(sf, path, 1, None if each_records else elements)
        out, ready, go = ctx.Queue(), ctx.Queue(), ctx.Event()
        groups = [[(i, elements) for i in range(k, elements, processes)] for k in range(processes)]
        procs = [ctx.Process(target=host, args=(str(path), data, g, seconds, out, ready, go)) for g in groups if g]
        for p in procs:
            p.start()
        for _ in procs:                                # the imports are not the array's: every process ready first
            ready.get()
        t0 = time.perf_counter()
        go.set()
        results = [out.get() for _ in procs]
        wall = time.perf_counter() - t0
        for p in procs:
            p.join()
        state = status(path)
    joined = [j for r in results for j in r[0]]
    errors = [e for r in results for e in r[1]]
    if errors:
        raise SystemExit(f"{len(errors)} elements failed, e.g. {errors[0]}")
    return {"tasks": total, "done": state["tasks_done"], "wall": wall, "join_median": statistics.median(joined),
            "join_max": max(joined), "tasks_per_s": total / wall, "bound": elements / seconds,
            "cpu_per_task_ms": 1000 * sum(r[2] for r in results) / total, "runs_recorded": len(state["attrs"]["runs"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="20 elements only")
    p.add_argument("--processes", type=int, default=50, help="processes the elements are spread over (default 50)")
    p.add_argument("--each-records", action="store_true",
                   help="the baseline: each element records its own run as it joins (a store readied without N)")
    args = p.parse_args(argv)
    rows = [(20, 50, 0.2)] if args.quick else [(100, 20, 1.0), (1000, 10, 5.0)]
    cmd = "python benchmarks/array_elements.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    print(f"command: `{cmd}`  (machine: {os.cpu_count()} cores)\n")
    print("| elements (processes) | tasks (done) | task sleep s | all joined in s (median) | tasks/s (sleeping bound) | "
          "coordination CPU per task | runs recorded |")
    print("|---|---|---|---|---|---|---|")
    for elements, each, seconds in rows:
        procs = min(args.processes, elements)
        r = measure(elements, each, seconds, procs, args.each_records)
        print(f"| {elements} ({procs}) | {r['tasks']} ({r['done']}) | {seconds} | {r['join_max']:.1f} "
              f"({r['join_median']:.1f}) | {r['tasks_per_s']:.0f} ({r['bound']:.0f}) | {r['cpu_per_task_ms']:.1f} ms | "
              f"{r['runs_recorded']} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
