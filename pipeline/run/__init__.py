"""Running a sweep: grid (points, tasks, seeds), batching (cost model), execution on dask, the runner.

``rmtsweep.run.plan`` is the module of :class:`Plan` (its function is ``rmtsweep.plan``).

Each name is imported on first use, so that a worker importing one module of the package (its task code)
does not import the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_names

# The public names, name -> the module of this package that defines it: the one list of them. A name added here is
# in __all__; test_layers.py fails until the TYPE_CHECKING block below imports it too.
_LAZY: dict[str, str] = {
    "compute_block": "block",
    "Blocking": "cost",
    "choose_blocking": "cost",
    "point_seconds": "cost",
    "task_target": "cost",
    "RunReport": "execute",
    "Window": "execute",
    "check_memory": "execute",
    "compute_task": "work",
    "run_tasks": "execute",
    "write_task": "work",
    "Context": "grid",
    "Task": "grid",
    "grid_shape": "grid",
    "n_tasks": "grid",
    "replicate_rng": "grid",
    "task_memory_bytes": "grid",
    "tasks": "grid",
    "Plan": "plan",
    "Progress": "progress",
    "git_revision": "runner",
    "make_template": "runner",
    "package_version": "runner",
    "prepare_store": "runner",
    "run_sweep": "runner",
    "open_run": "runner",
    "OpenRun": "runner",
    "ready_store": "runner",
}

if TYPE_CHECKING:                                   # the names of _LAZY for the type checker
    from .block import compute_block
    from .cost import Blocking, choose_blocking, point_seconds, task_target
    from .execute import RunReport, Window, check_memory, run_tasks
    from .work import compute_task, write_task
    from .grid import Context, Task, grid_shape, n_tasks, replicate_rng, task_memory_bytes, tasks
    from .plan import Plan
    from .progress import Progress
    from .runner import (OpenRun, git_revision, make_template, open_run, package_version, prepare_store, ready_store,
                         run_sweep)

__all__ = [*_LAZY]


__getattr__, __dir__ = lazy_names(__name__, {name: (f".{module}", name) for name, module in _LAZY.items()},
                                  globals())
