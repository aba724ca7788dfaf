"""Job arrays: the batch script of an array whose elements each compute one share of a store's tasks.

No driver and no scheduler: ``rmtsweep submit --array N`` makes the store, then submits this script once;
element ``I`` runs ``rmtsweep work STORE --share I/N`` (:func:`rmtsweep.run.grid.share_tasks`) on the
cores of its own job. The elements share nothing but the store.

A site caps the elements of one array (SLURM's ``MaxArraySize``, 1001 by default; PBS Pro's
``max_array_size``, 10000): a larger ``N`` is cut into several arrays (:func:`array_parts`), the ``k``-th
computing the shares from its first onwards; with ``--max-running M`` each waits for the one before it to
end, so at most ``M`` elements ever run at once.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

from ..config import get
from ..errors import ClusterError
from .batch import ONE_BLAS_THREAD, ClusterConfig, Kind, rmtsweep_command, walltime_seconds
from .jobwatch import jobqueue_classes

__all__ = ["ARRAY_INDEX", "after_option", "array_parts", "array_script", "site_array_limit"]

ARRAY_INDEX = {"slurm": "SLURM_ARRAY_TASK_ID", "pbs": "PBS_ARRAY_INDEX"}


_LIMIT_QUERY = {"slurm": (["scontrol", "show", "config"], r"^MaxArraySize\s*=\s*(\d+)"),
                "pbs": (["qstat", "-Bf"], r"^\s*max_array_size\s*=\s*(\d+)")}


def site_array_limit(kind: Kind) -> int | None:
    """The most elements one job array may have on this site, or None when the batch system does not say.

    SLURM: ``MaxArraySize`` of ``scontrol show config`` (array indices run to ``MaxArraySize - 1``);
    PBS Pro: the server's ``max_array_size`` (``qstat -Bf``; its default, 10000, is not printed).
    """
    command, pattern = _LIMIT_QUERY[kind]
    try:
        proc = subprocess.run(command, capture_output=True, text=True,
                              timeout=float(get("batch-system.query-timeout")))
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(pattern, proc.stdout, flags=re.MULTILINE) if proc.returncode == 0 else None
    return int(found[1]) if found and int(found[1]) > 0 else None


def array_parts(elements: int, limit: int | None) -> list[tuple[int, int]]:
    """``(first share, elements)`` of each array that together make ``elements``, none above ``limit``.

    >>> array_parts(2500, 1001)
    [(0, 1001), (1001, 1001), (2002, 498)]
    >>> array_parts(64, None)
    [(0, 64)]
    """
    size = elements if limit is None else max(1, limit)
    return [(first, min(size, elements - first)) for first in range(0, elements, size)]


def after_option(kind: Kind, job: str) -> tuple[str, ...]:
    """The submission option that holds an array until the array ``job`` has ended (whatever its outcome)."""
    return (f"--dependency=afterany:{job}",) if kind == "slurm" else ("-W", f"depend=afterany:{job}")


def array_script(kind: Kind, config: ClusterConfig, store_path: Path, elements: int,
                 max_running: int | None = None, part: tuple[int, int] | None = None) -> str:
    """The batch script of a job array of ``elements`` elements over the store at ``store_path``.

    Element ``i`` runs ``rmtsweep work STORE --share i/N`` (every ``N``-th task, :func:`rmtsweep.run.grid.share_tasks`)
    on a LocalCluster of the job's ``cores``; the elements share nothing but the store, and need no network.
    Each job has the workers' ``cores``, ``memory`` and ``walltime``; ``max_running`` caps how many run at
    once (SLURM ``--array=0-(N-1)%M``, PBS Pro ``max_run_subjobs``). Each element is sent SIGTERM
    ``driver_stop_warning`` seconds before its walltime and stops cleanly, losing only the tasks in flight.
    ``part = (first, count)`` makes the array of the shares ``first .. first + count - 1`` only
    (:func:`array_parts`), its element ``j`` computing share ``first + j``.
    """
    if elements < 1:
        raise ClusterError(f"--array must be at least 1, got {elements}")
    if max_running is not None and max_running < 1:
        raise ClusterError(f"--max-running must be at least 1, got {max_running}")
    first, count = part or (0, elements)
    walltime = int(walltime_seconds(config.walltime))
    if config.driver_stop_warning >= walltime:
        raise ClusterError(f"driver_stop_warning {config.driver_stop_warning} s must be shorter than the walltime "
                           f"{config.walltime} of the array's jobs")
    _, job_cls = jobqueue_classes(kind)
    if kind == "slurm":
        extra = [f"--array=0-{count - 1}" + (f"%{max_running}" if max_running else ""),
                 f"--signal=B:TERM@{config.driver_stop_warning}"]
        prefix: list[str] = []
    else:
        extra = [f"-J 0-{count - 1}"] if count > 1 else []
        extra += [f"-W max_run_subjobs={max_running}"] if max_running else []
        prefix = ["timeout", "--foreground", "--signal=TERM", "--kill-after=60", "--preserve-status",
                  f"{walltime - config.driver_stop_warning}s"]
    header = job_cls(
        "tcp://unused:8786", name="array", cores=config.cores, memory=config.memory, processes=1,
        queue=config.queue, account=config.account, walltime=config.walltime, log_directory=config.log_directory,
        job_name="rmtsweep-array", job_extra_directives=[*config.job_extra_directives, *extra],
    ).job_header
    index = ARRAY_INDEX[kind] if kind == "slurm" or count > 1 else None
    element = f"${{{index}:?not an element of a job array}}" if index else "0"
    share = f'"{element}/{elements}"' if not first else f'"$(({element} + {first}))/{elements}"'
    cmd = shlex.join([*prefix, rmtsweep_command(), "work", str(Path(store_path).resolve())])
    lines = ["#!/usr/bin/env bash", header, "set -eo pipefail", *config.job_script_prologue, ONE_BLAS_THREAD,
             f"exec {cmd} --share {share} --workers {config.cores} --no-progress"]
    return "\n".join(lines) + "\n"
