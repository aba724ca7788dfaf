"""``rmtsweep run --dry-run``: what a run would do and cost, from the start-up to its last task; nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..engine import Engine
    from ..spec import SweepFile

__all__ = ["CLUSTER_SECONDS", "IMPORT_SECONDS", "dry_run", "duration", "startup_seconds"]


def _threads(engine: Engine) -> int:
    """Worker threads the run would have: LocalCluster processes, or the batch jobs' cores (0: unknown)."""
    import os
    if engine.scheduler:
        return 0
    if engine.cluster == "local":
        return engine.workers or os.cpu_count() or 1
    config = engine.batch_config()
    return (engine.jobs or config.max_jobs) * config.cores


# Seconds before the first task on the 2-core development machine: the command's imports, then the cluster
IMPORT_SECONDS = 1.2
CLUSTER_SECONDS = {"processes": (0.8, 0.2), "threads": (0.5, 0.0), "scheduler": (0.5, 0.0)}   # fixed, per worker


def startup_seconds(engine: Engine, threads: int) -> float | None:
    """Estimated seconds from the command to a cluster ready for tasks; None for a batch system's queue."""
    if engine.cluster != "local" and not engine.scheduler:
        return None
    kind = "scheduler" if engine.scheduler else "threads" if engine.in_process else "processes"
    fixed, per_worker = CLUSTER_SECONDS[kind]
    return IMPORT_SECONDS + fixed + per_worker * threads


def dry_run(sweep_file: SweepFile, path: Path, engine: Engine, as_json: bool = False) -> None:
    """Print what a run of ``sweep_file`` into ``path`` on ``engine`` would do and cost (``as_json``: as JSON)."""
    from .. import store
    from ..run import Blocking
    from ..run.plan import plan
    sweep, threads = sweep_file.sweep, _threads(engine)
    exists = path.exists() and store.is_store(path)
    the_plan = plan(sweep, Blocking(*store.blocking_of(path)) if exists else None, threads)
    st = store.status(path) if exists else None
    same = st is not None and st.attrs.get("sweep_hash") == sweep.digest()
    left = 1 - st.tasks_done / max(st.tasks_total, 1) if st is not None and same else 1.0
    startup = startup_seconds(engine, threads)
    wall = None if startup is None or not threads else the_plan.wall_seconds(threads, startup, not same, left)
    g, b = sweep.grid, the_plan.blocking
    if as_json:
        import json
        click.echo(json.dumps({
            "sweep": sweep.name, "sweep_hash": sweep.digest(), "store": str(path), "store_exists": exists,
            "tasks_done": st.tasks_done if st else 0, "points": the_plan.points, "cells": the_plan.cells,
            "replicates": the_plan.replicates, "tasks": the_plan.tasks, "points_per_task": b.cells,
            "replicates_per_task": b.replicate, "memory_per_task_bytes": the_plan.memory_per_task,
            "core_seconds": the_plan.core_seconds, "worker_threads": threads, "startup_seconds": startup,
            "theory_seconds": 0.0 if same else the_plan.theory_seconds,
            "theory_serial_seconds": 0.0 if same else the_plan.theory_serial_seconds,
            "compute_seconds": the_plan.compute_seconds(threads, left) if threads else None,
            "estimated_wall_seconds": wall}, indent=2))
        return
    d = f"d axis {', '.join(map(str, sweep.d_values))}" if sweep.d_axis else f"d = {sweep.d}"
    with_overrides = f" with {' '.join(sweep_file.overrides)}" if sweep_file.overrides else ""
    click.echo(f"sweep {sweep.name} ({sweep_file.path}{with_overrides}), hash {sweep.digest()[:12]}: {d}")
    click.echo(f"grid: {the_plan.points} points ({len(g.delta)} delta x {len(g.gamma)} gamma x {len(g.T)} T"
               f"{f' x {len(sweep.d_values)} d' if sweep.d_axis else ''}) x {len(g.weights)} weights x {len(g.snr)} "
               f"SNR = {the_plan.cells} cells, {the_plan.replicates} replicates each")
    click.echo(f"tasks: {the_plan.tasks} of up to {b.cells} points x {b.replicate} replicates; memory up to "
               f"{_bytes(the_plan.memory_per_task)} per task")
    click.echo(f"cost model: {duration(the_plan.core_seconds)} of one core ({the_plan.core_hours:.2g} core-hours); "
               "fitted on a 2-core machine")
    if wall is not None and startup is not None:          # a wall time needs the start-up
        theory = "" if same else f"; the store's theory {duration(the_plan.theory_seconds)} of one core beside them"
        click.echo(f"estimate: about {duration(wall)} end to end on {threads} worker threads (start-up "
                   f"{duration(startup)}, tasks {duration(the_plan.compute_seconds(threads, left))}{theory})")
    elif threads:
        click.echo(f"estimate: about {duration(the_plan.compute_seconds(threads, left))} of tasks on {threads} worker "
                   "threads, once the batch system has started the workers")
    if st is None:                                        # no store yet
        click.echo(f"store: {path} (new)")
    else:
        click.echo(f"store: {path} exists, {st.tasks_done}/{st.tasks_total} tasks done; a run "
                   f"{'computes the rest' if same else 'extends it to this sweep, or says why it cannot'}")
    click.echo("dry run: nothing was started or written")


def _bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def duration(seconds: float) -> str:
    """``seconds`` in seconds, minutes or hours, whichever reads best."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"
