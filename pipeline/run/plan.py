"""What a sweep will cost before anything runs: points, tasks, memory per task, core-hours, and the wall time
of a run from its start-up to its last task (``run --dry-run``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..spec import Sweep, SweepFile, as_sweep
from .. import config
from ..theory.estimate import theory_parts
from ..theory.grid import TheoryBudgets
from .cost import Blocking, choose_blocking, null_sweep, point_cost, task_target
from .grid import n_tasks, task_memory_bytes

__all__ = ["CLOSE_SECONDS", "LONG_SECONDS", "TEMPLATE_SECONDS", "Plan", "impossible", "plan", "too_long"]

TEMPLATE_SECONDS = 0.5      # writing a new store's template and provenance, beside its theory
CLOSE_SECONDS = 0.5         # after the last write: the summary, closing the client and the cluster (0.3-0.5 s measured)
LONG_SECONDS = 365 * 86400  # a run estimated to take longer is named as such by the dry run and the run


@dataclass(frozen=True)
class Plan:
    """The size of a sweep and the cost model's estimate of it.

    ``core_seconds`` is the cost model's prediction (fitted on a 2-core development machine, within
    about 30 %; ``rmtsweep.run.cost``), summed over every ``d``, point and replicate.
    """

    points: int                 # (d, delta, gamma, T) points
    cells: int                  # points x weights schemes x SNR values
    replicates: int
    tasks: int
    blocking: Blocking
    memory_per_task: int        # bytes, an upper estimate (the largest point)
    done_bytes: int             # bytes of the store's ``done`` and ``null_done`` masks, which the driver reads whole
    core_seconds: float
    theory_seconds: float = 0.0  # a new store's theory, on one core (rmtsweep.theory.estimate)
    theory_serial_seconds: float = 0.0   # the part of it one task computes (the rest spreads over the workers)
    null_replicates: int = 0    # scheduled snr = 0 null replicates per point over T >= 2 (Sweep.null_replicate_count)
    null_points: int = 0        # the points that draw them (T >= 2, every d); their cost is in core_seconds
    null_tasks: int = 0         # the tasks of null replicates among ``tasks`` (Blocking.null of them each at most)
    longest_task_seconds: float = 0.0   # the cost model's bound on one task: its most expensive point times its size

    @property
    def core_hours(self) -> float:
        return self.core_seconds / 3600

    def seconds_on(self, threads: int) -> float:
        """Wall seconds on ``threads`` worker threads, if they stay busy (no start-up, no tail)."""
        return self.core_seconds / max(threads, 1)

    def compute_seconds(self, threads: int, left: float = 1.0) -> float:
        """Wall seconds of the tasks (a share ``left`` of them) on ``threads`` worker threads, in waves."""
        tasks = math.ceil(self.tasks * left)
        return math.ceil(tasks / max(threads, 1)) * self.core_seconds / max(self.tasks, 1)

    def wall_seconds(self, threads: int, startup: float, new_store: bool = True, left: float = 1.0) -> float:
        """Estimated wall seconds of a run: ``startup`` (imports, the cluster), a new store's template, then the
        tasks left and a new store's theory, which runs beside them on the same ``threads`` worker threads; its
        one-task part can outlast them. Then the run closes (:data:`CLOSE_SECONDS`)."""
        work = self.compute_seconds(threads, left)
        if not new_store:
            return startup + work + CLOSE_SECONDS
        shared = work + self.theory_seconds / max(threads, 1)
        return startup + TEMPLATE_SECONDS + max(shared, self.theory_serial_seconds) + CLOSE_SECONDS


def plan(sweep: Sweep | SweepFile | str | Path, blocking: Blocking | None = None, threads: int = 0) -> Plan:
    """The :class:`Plan` of ``sweep`` under ``blocking`` (default: what a new store on ``threads`` threads gets).

    ``sweep`` is what :func:`rmtsweep.load_sweep` returns, a :class:`~rmtsweep.spec.Sweep`, or a sweep file's
    path or a shipped sweep's name (``"demo"``), as :func:`rmtsweep.run_sweep` takes.
    """
    sweep = as_sweep(sweep)
    g = sweep.grid
    blocking = blocking or choose_blocking(sweep, task_target(threads))
    per_d = len(g.delta) * len(g.gamma) * len(g.T)
    seconds = sum(point_cost(sweep, d).total() for d in sweep.d_values) * sweep.replicates
    m = sweep.null_replicate_count
    many_T = np.asarray(g.T) >= 2
    longest = point_cost(sweep).max() * blocking.cells * blocking.replicate
    null_tasks = 0
    if (null := null_sweep(sweep)) is not None:
        seconds += m * sum(point_cost(null, d).total() for d in sweep.d_values)
        longest = max(longest, point_cost(null).max() * blocking.cells * (blocking.null or m))
        null_tasks = n_tasks(sweep, blocking) - n_tasks(sweep.model_copy(update={"null_replicates": 0}), blocking)
    return Plan(points=per_d * len(sweep.d_values), cells=per_d * len(sweep.d_values) * len(g.weights) * len(g.snr),
                replicates=sweep.replicates, tasks=n_tasks(sweep, blocking), blocking=blocking,
                memory_per_task=task_memory_bytes(sweep, blocking), core_seconds=seconds,
                done_bytes=per_d * len(sweep.d_values) * len(g.weights) * (sweep.replicates + m),   # and null_done
                theory_seconds=sum(parts := theory_parts(sweep, theory_budgets())), theory_serial_seconds=parts[0],
                null_replicates=m, null_points=int(many_T.sum()) * len(g.delta) * len(g.gamma) * len(sweep.d_values)
                if m else 0, null_tasks=null_tasks, longest_task_seconds=longest)


def theory_budgets() -> TheoryBudgets:
    """The budgets of a new store's theory, from the settings ``rmtsweep.theory.*``."""
    return TheoryBudgets(**{name.replace("-", "_"): value for name, value in config.recordable("theory").items()})


def _gib(n: float) -> str:
    return f"{n / 2**30:,.2f} GiB"


def impossible(the_plan: Plan, memory_per_thread: float | None, driver_memory: float | None,
               source: str = "") -> str | None:
    """Why ``the_plan`` cannot run where a worker thread has ``memory_per_thread`` bytes (as ``source`` says) and
    the driver ``driver_memory`` (None: unknown), in one line naming what to change; None when it can.

    The driver reads the store's ``done`` mask whole, so it must fit in a quarter of the driver's memory.
    """
    if memory_per_thread and the_plan.memory_per_task > memory_per_thread:
        return (f"estimated memory per task {the_plan.memory_per_task / 2**30:.2f} GiB exceeds the "
                f"{memory_per_thread / 2**30:.2f} GiB a worker thread has ({source or 'before the cluster starts'}); "
                "lower d or raise the workers' memory")
    if driver_memory and the_plan.done_bytes > driver_memory / 4:
        flags = the_plan.replicates + the_plan.null_replicates
        return (f"the store's done mask would hold {_gib(the_plan.done_bytes)} ({flags:,} replicates "
                f"x {the_plan.done_bytes // max(flags, 1):,} points and schemes), more than a quarter "
                f"of this machine's {_gib(driver_memory)}: lower replicates or the grid")
    return None


def too_long(wall_seconds: float | None, threads: int) -> str | None:
    """A line saying that a run of ``wall_seconds`` on ``threads`` worker threads would take over a year."""
    if wall_seconds is None or wall_seconds <= LONG_SECONDS:
        return None
    return (f"this run would take about {wall_seconds / LONG_SECONDS:,.0f} years on {threads} worker threads: "
            "lower replicates, d or the grid, or run on more workers")
