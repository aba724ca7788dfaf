"""``rmtsweep run --dry-run``: what a run would do and cost, from the start-up to its last task; nothing runs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..cluster.engine import Engine
    from ..spec import Sweep, SweepFile

__all__ = ["CLUSTER_SECONDS", "IMPORT_SECONDS", "dry_run", "duration", "planned_threads", "refuse_impossible",
           "startup_seconds"]


def planned_threads(engine: Engine) -> int:
    """Worker threads the run would have: LocalCluster processes, or the batch jobs' cores (0: unknown)."""
    import os
    if engine.scheduler:
        return 0
    if engine.cluster == "local":
        return engine.workers or os.cpu_count() or 1
    config = engine.batch_config()
    return (engine.jobs or config.max_jobs) * config.cores


def _memory(engine: Engine, threads: int) -> tuple[float | None, float | None, str]:
    """Bytes a worker thread has and this machine has, as known before a cluster starts (None: unknown), and
    where the first comes from. A LocalCluster gives each worker an equal share of the machine."""
    import os
    total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    if engine.scheduler or not threads:
        return None, total, ""
    if engine.cluster == "local":
        return total / threads, total, f"this machine's memory shared by {threads} worker thread(s)"
    from dask.utils import parse_bytes
    config = engine.batch_config()
    return parse_bytes(config.memory) / config.cores, total, "the cluster config's memory per core"


def refuse_impossible(sweep: Sweep, engine: Engine) -> None:
    """Refuse, before anything starts, a new store's sweep that cannot run on ``engine``'s workers.

    Raises
    ------
    UserError
        A task needs more memory than a worker thread has, or the ``done`` mask more than the driver can hold.
    """
    from ..errors import UserError
    from ..run.plan import impossible, plan
    threads = planned_threads(engine)
    if (why := impossible(plan(sweep, threads=threads), *_memory(engine, threads))) is not None:
        raise UserError(f"{why}, or pass --force to run anyway")


def busy_factor(threads: int, load: float, cores: int) -> float:
    """How much longer ``threads`` busy worker threads take beside a run-queue ``load`` on ``cores`` cores.

    The kernel shares the cores evenly among runnable threads, so each gets ``cores / (load + threads)`` of
    one once they outnumber the cores.
    """
    return max(1.0, (load + threads) / max(cores, 1))


def _machine() -> tuple[int, float]:
    """The cores this process may use and the machine's one-minute load average."""
    import os
    return len(os.sched_getaffinity(0)), os.getloadavg()[0]


# Seconds before the first task on the 2-core development machine: the command's imports (the store exists
# 1.5-2.4 s after the command, benchmarks/start.py), then the cluster
IMPORT_SECONDS = 1.7
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
    sweep, threads = sweep_file.sweep, planned_threads(engine)
    exists = path.exists() and store.is_store(path)
    the_plan = plan(sweep, Blocking(*store.blocking_of(path)) if exists else None, threads)
    st = store.status(path) if exists else None
    same = st is not None and st.attrs.get("sweep_hash") == sweep.digest()
    left = 1 - st.tasks_done / max(st.tasks_total, 1) if st is not None and same else 1.0
    startup = startup_seconds(engine, threads)
    wall = None if startup is None or not threads else the_plan.wall_seconds(threads, startup, not same, left)
    g, b = sweep.grid, the_plan.blocking
    from ..run.plan import impossible, too_long
    problem = None if exists else impossible(the_plan, *_memory(engine, threads))
    cores, load = _machine()
    local = engine.cluster == "local" and not engine.scheduler    # a batch job's node is not this machine
    factor = busy_factor(threads, load, cores) if local and threads else 1.0
    long = too_long(None if wall is None else wall * factor, threads)
    if as_json:
        import json
        click.echo(json.dumps({
            "sweep": sweep.name, "sweep_hash": sweep.digest(), "store": str(path), "store_exists": exists,
            "tasks_done": st.tasks_done if st else 0, "points": the_plan.points, "cells": the_plan.cells,
            "replicates": the_plan.replicates, "null_replicates": the_plan.null_replicates,
            "null_points": the_plan.null_points, "tasks": the_plan.tasks, "null_tasks": the_plan.null_tasks,
            "null_replicates_per_task": b.null or the_plan.null_replicates,
            "longest_task_seconds": the_plan.longest_task_seconds, "points_per_task": b.cells,
            "replicates_per_task": b.replicate, "memory_per_task_bytes": the_plan.memory_per_task,
            "core_seconds": the_plan.core_seconds, "worker_threads": threads, "startup_seconds": startup,
            "theory_seconds": 0.0 if same else the_plan.theory_seconds,
            "theory_serial_seconds": 0.0 if same else the_plan.theory_serial_seconds,
            "compute_seconds": the_plan.compute_seconds(threads, left) if threads else None,
            "estimated_wall_seconds": wall, "cores": cores, "load": load, "busy_factor": factor,
            "estimated_wall_seconds_at_load": None if wall is None else wall * factor,
            "impossible": problem, "too_long": long}, indent=2))
        if problem is not None:
            raise SystemExit(2)
        return
    d = f"d axis {', '.join(map(str, sweep.d_values))}" if sweep.d_axis else f"d = {sweep.d}"
    with_overrides = f" with {' '.join(sweep_file.overrides)}" if sweep_file.overrides else ""
    click.echo(f"sweep {sweep.name} ({sweep_file.path}{with_overrides}), hash {sweep.digest()[:12]}: {d}")
    click.echo(f"grid: {the_plan.points} points ({len(g.delta)} delta x {len(g.gamma)} gamma x {len(g.T)} T"
               f"{f' x {len(sweep.d_values)} d' if sweep.d_axis else ''}) x {len(g.weights)} weights x {len(g.snr)} "
               f"SNR = {the_plan.cells} cells, {the_plan.replicates} replicates each")
    if the_plan.null_replicates:
        click.echo(f"null replicates: {the_plan.null_replicates} per point at snr = 0 for {the_plan.null_points} "
                   "points (the cells without a law at the store's size: attention over T >= 2), "
                   f"{the_plan.null_replicates * the_plan.null_points} in all")
    nulls = (f" ({the_plan.null_tasks} of them of up to {b.null or the_plan.null_replicates} null replicates)"
             if the_plan.null_tasks else "")
    click.echo(f"tasks: {the_plan.tasks} of up to {b.cells} points x {b.replicate} replicates{nulls}; the longest "
               f"{_seconds(the_plan.longest_task_seconds)} by the cost model; memory up to "
               f"{_bytes(the_plan.memory_per_task)} per task")
    click.echo(f"cost model: {duration(the_plan.core_seconds)} of one core ({the_plan.core_hours:.2g} core-hours); "
               "fitted on a 2-core machine")
    if wall is not None and startup is not None:          # a wall time needs the start-up
        theory = "" if same else f"; the store's theory {duration(the_plan.theory_seconds)} of one core beside them"
        click.echo(f"estimate: about {duration(wall)} end to end on {threads} worker threads (start-up "
                   f"{duration(startup)}, tasks {duration(the_plan.compute_seconds(threads, left))}{theory})")
        if local:
            click.echo(f"machine: {_machine_text(cores, load, factor, wall)}")
    elif threads:
        click.echo(f"estimate: about {duration(the_plan.compute_seconds(threads, left))} of tasks on {threads} worker "
                   "threads, once the batch system has started the workers")
    if st is None:                                        # no store yet
        click.echo(f"store: {path} (new)")
    else:
        click.echo(f"store: {path} exists, {st.tasks_done}/{st.tasks_total} tasks done; a run "
                   f"{'computes the rest' if same else 'extends it to this sweep, or says why it cannot'}")
    if long is not None:
        click.echo(f"note: {long}")
    click.echo("dry run: nothing was started or written")
    if problem is not None:
        from ..errors import UserError
        raise UserError(f"{sweep.name}: a run would be refused: {problem}")


def _machine_text(cores: int, load: float, factor: float, wall: float) -> str:
    """What the estimate assumed of this machine: its cores and load, and the slowdown the load implies."""
    if factor < 1.2:
        return f"{cores} cores, load {load:.1f}: the estimate holds on an idle machine like this one"
    return (f"{cores} cores, busy: load {load:.1f}; expect at least {factor:.1f}x the idle estimate, "
            f"{duration(wall * factor)} or more")


def _bytes(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _seconds(seconds: float) -> str:
    """A task's seconds: two significant digits under a minute (tasks are about a second)."""
    return f"{seconds:.2g} s" if seconds < 60 else duration(seconds)


def duration(seconds: float) -> str:
    """``seconds`` in seconds, minutes or hours, whichever reads best."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"
