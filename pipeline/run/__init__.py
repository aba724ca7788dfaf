"""Running a sweep: grid (points, tasks, seeds), batching (cost model), execution on dask, the runner."""

from .block import compute_block
from .cost import DRIVER_TASKS_PER_SECOND, TARGET_TASK_SECONDS, Blocking, choose_blocking, point_seconds, task_target
from .execute import RunReport, Window, check_memory, compute_task, run_tasks, write_task
from .grid import Context, Task, grid_shape, n_tasks, replicate_rng, task_memory_bytes, tasks
from .plan import Plan, plan
from .progress import Progress
from .runner import git_revision, make_template, package_version, prepare_store, run_sweep

__all__ = [
    "DRIVER_TASKS_PER_SECOND", "TARGET_TASK_SECONDS", "Blocking", "Context", "Plan", "Progress", "RunReport", "Task", "Window", "check_memory",
    "choose_blocking", "compute_block", "compute_task", "git_revision", "grid_shape", "make_template", "n_tasks",
    "package_version", "plan", "point_seconds", "prepare_store", "replicate_rng", "run_sweep", "run_tasks",
    "task_memory_bytes", "task_target", "tasks", "write_task",
]
