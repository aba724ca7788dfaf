"""Running a sweep: grid (cells, tasks, seeds), execution on dask, the runner (prepare, then execute)."""

from .execute import RunReport, check_memory, compute_task, run_tasks
from .grid import Context, Task, n_tasks, replicate_blocks, replicate_rng, task_memory_bytes, task_shape, tasks
from .runner import git_revision, make_template, package_version, prepare_store, run_sweep

__all__ = [
    "Context", "RunReport", "Task", "check_memory", "compute_task", "git_revision", "make_template", "n_tasks",
    "package_version", "prepare_store", "replicate_blocks", "replicate_rng", "run_sweep", "run_tasks", "task_memory_bytes",
    "task_shape", "tasks",
]
