"""Job arrays: the batch script of an array whose elements each compute one share of a store's tasks.

No driver and no scheduler: ``rmtsweep submit --array N`` makes the store, then submits this script once;
element ``I`` runs ``rmtsweep work STORE --share I/N`` (:func:`rmtsweep.run.grid.share_tasks`) on the
cores of its own job. The elements share nothing but the store.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from .clusters import _ONE_BLAS_THREAD, ClusterConfig, Kind, _seconds, rmtsweep_command
from .jobwatch import jobqueue_classes
from .errors import ClusterError

__all__ = ["ARRAY_INDEX", "array_script"]

ARRAY_INDEX = {"slurm": "SLURM_ARRAY_TASK_ID", "pbs": "PBS_ARRAY_INDEX"}


def array_script(kind: Kind, config: ClusterConfig, store_path: Path, elements: int,
                 max_running: int | None = None) -> str:
    """The batch script of a job array of ``elements`` elements over the store at ``store_path``.

    Element ``i`` runs ``rmtsweep work STORE --share i/N`` (every ``N``-th task, :func:`rmtsweep.run.grid.share_tasks`)
    on a LocalCluster of the job's ``cores``; the elements share nothing but the store, and need no network.
    Each job has the workers' ``cores``, ``memory`` and ``walltime``; ``max_running`` caps how many run at
    once (SLURM ``--array=0-(N-1)%M``, PBS Pro ``max_run_subjobs``). Each element is sent SIGTERM
    ``driver_stop_warning`` seconds before its walltime and stops cleanly, losing only the tasks in flight.
    """
    if elements < 1:
        raise ClusterError(f"--array must be at least 1, got {elements}")
    if max_running is not None and max_running < 1:
        raise ClusterError(f"--max-running must be at least 1, got {max_running}")
    walltime = int(_seconds(config.walltime))
    if config.driver_stop_warning >= walltime:
        raise ClusterError(f"driver_stop_warning {config.driver_stop_warning} s must be shorter than the walltime "
                           f"{config.walltime} of the array's jobs")
    _, job_cls = jobqueue_classes(kind)
    if kind == "slurm":
        extra = [f"--array=0-{elements - 1}" + (f"%{max_running}" if max_running else ""),
                 f"--signal=B:TERM@{config.driver_stop_warning}"]
        prefix: list[str] = []
    else:
        extra = [f"-J 0-{elements - 1}"] if elements > 1 else []
        extra += [f"-W max_run_subjobs={max_running}"] if max_running else []
        prefix = ["timeout", "--foreground", "--signal=TERM", "--kill-after=60", "--preserve-status",
                  f"{walltime - config.driver_stop_warning}s"]
    header = job_cls(
        "tcp://unused:8786", name="array", cores=config.cores, memory=config.memory, processes=1,
        queue=config.queue, account=config.account, walltime=config.walltime, log_directory=config.log_directory,
        job_name="rmtsweep-array", job_extra_directives=[*config.job_extra_directives, *extra],
    ).job_header
    index = ARRAY_INDEX[kind] if kind == "slurm" or elements > 1 else None
    share = f'"${{{index}:?not an element of a job array}}/{elements}"' if index else f"0/{elements}"
    cmd = shlex.join([*prefix, rmtsweep_command(), "work", str(Path(store_path).resolve())])
    lines = ["#!/usr/bin/env bash", header, "set -eo pipefail", *config.job_script_prologue, _ONE_BLAS_THREAD,
             f"exec {cmd} --share {share} --workers {config.cores} --no-progress"]
    return "\n".join(lines) + "\n"
