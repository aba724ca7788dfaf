"""Write ``partial.zarr``: a store half computed by a run, kept to check that later code opens, verifies and
resumes stores written before it.

Run from the repository's root with the code whose stores are to be kept::

    python tests/data/make_partial_store.py

It writes ``tests/data/partial.yaml`` (the sweep) and ``tests/data/partial.zarr`` (4 tasks, the first 2 done
by run 0, through the same calls a run makes: the store's lock, its template, the run's record and journal).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SWEEP = {
    "name": "partial", "d": 24, "replicates": 4, "replicates_per_task": 2, "cells_per_task": 1, "seed": 7,
    "correlation": {"model": "prefix", "L": 2}, "table_centering": "class", "top_k": 2,
    "grid": {"delta": [0.5, 1.0], "gamma": [0.5], "snr": [0.0, 4.0], "T": [4], "weights": ["mean", "optimal"]},
}
DONE = 2


def main() -> None:
    from rmtsweep.run.cost import choose_blocking
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.runner import make_template, run_info
    from rmtsweep.run.work import compute_task
    from rmtsweep.spec import load_sweep
    from rmtsweep.store import Store

    sweep_path, store_path = HERE / "partial.yaml", HERE / "partial.zarr"
    sweep_path.write_text(yaml.safe_dump(SWEEP, sort_keys=False))
    shutil.rmtree(store_path, ignore_errors=True)
    sweep_file = load_sweep(sweep_path)
    blocking = choose_blocking(sweep_file.sweep).as_tuple()
    with Store(store_path).prepare(sweep_file, lambda b: make_template(sweep_file, b), run_info(sweep_file),
                                   blocking) as run:
        for task in list(tasks(sweep_file.sweep, choose_blocking(sweep_file.sweep)))[:DONE]:
            run.log("submit", task.key)
            run.writer.write_block(task.region, compute_task(task), task.todo, run=run.index)
            run.writer.mark_done(task.region)
            run.log("write", task.key)


if __name__ == "__main__":
    main()
