"""What a sweep will cost before anything runs: points, tasks, memory per task, core-hours, and the wall time
of a run from its start-up to its last task (``run --dry-run``)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..spec import Sweep, SweepFile, as_sweep
from .. import config
from ..theory.estimate import theory_parts
from ..theory.on_grid import TheoryBudgets
from .cost import Blocking, choose_blocking, point_cost, task_target
from .grid import n_tasks, task_memory_bytes

__all__ = ["TEMPLATE_SECONDS", "Plan", "plan"]

TEMPLATE_SECONDS = 0.5      # writing a new store's template and provenance, beside its theory


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
    core_seconds: float
    theory_seconds: float = 0.0  # a new store's theory, on one core (rmtsweep.theory.estimate)
    theory_serial_seconds: float = 0.0   # the part of it one task computes (the rest spreads over the workers)

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
        one-task part can outlast them."""
        work = self.compute_seconds(threads, left)
        if not new_store:
            return startup + work
        shared = work + self.theory_seconds / max(threads, 1)
        return startup + TEMPLATE_SECONDS + max(shared, self.theory_serial_seconds)


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
    return Plan(points=per_d * len(sweep.d_values), cells=per_d * len(sweep.d_values) * len(g.weights) * len(g.snr),
                replicates=sweep.replicates, tasks=n_tasks(sweep, blocking), blocking=blocking,
                memory_per_task=task_memory_bytes(sweep, blocking), core_seconds=seconds,
                theory_seconds=sum(parts := theory_parts(sweep, theory_budgets())), theory_serial_seconds=parts[0])


def theory_budgets() -> TheoryBudgets:
    """The budgets of a new store's theory, from the settings ``rmtsweep.theory.*``."""
    return TheoryBudgets(**{name.replace("-", "_"): value for name, value in config.settings("theory").items()})
