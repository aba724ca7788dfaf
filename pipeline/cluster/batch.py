"""Batch-system clusters: SLURM and PBS workers through dask-jobqueue.

The engine stays dask.distributed: the process that runs ``rmtsweep run`` (the *driver*) holds
the scheduler and the store's lock (workers write the chunks); the batch system only starts workers, each job one
``dask worker`` with a lifetime shorter than its walltime. Settings come from a commented YAML file
(``deploy/<kind>/jobqueue.yaml``, over dask-jobqueue's config ``jobqueue.<kind>``) with keyword overrides, validated
once into a frozen :class:`ClusterConfig`. A batch system that cannot run the workers (no ``sbatch``, a controller
down, a job that ends before its worker joins) stops the run in one line: :mod:`rmtsweep.cluster.jobwatch`.

Example
-------
>>> cfg = load_cluster_config("slurm", overrides={"cores": 2, "queue": None})
>>> "#SBATCH --cpus-per-task=2" in worker_job_script("slurm", cfg)
True
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from dask.utils import parse_bytes, parse_timedelta
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from ..errors import ClusterError
from .jobwatch import jobqueue_classes, jobqueue_settings, watched_job_class
from ..shipped import cluster_config
from ..types import ClusterKind

__all__ = ["ONE_BLAS_THREAD", "ClusterConfig", "driver_script", "load_cluster_config", "make_cluster",
           "rmtsweep_command", "scale_cluster", "submit_driver", "walltime_seconds", "worker_job_script"]

if TYPE_CHECKING:
    from dask_jobqueue import JobQueueCluster
    from distributed.deploy.adaptive import Adaptive

Kind = ClusterKind
_SUBMIT = {"slurm": ["sbatch", "--parsable"], "pbs": ["qsub"]}
# distributed's nanny already sets these for every worker; the exports also cover the job script.
ONE_BLAS_THREAD = "export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1"
_WALLTIME = re.compile(r"^(\d+):([0-5]\d):([0-5]\d)$")


def walltime_seconds(text: str) -> float:
    """Seconds in ``HH:MM:SS`` or a dask duration such as ``"50m"`` or ``"3000s"``."""
    if m := _WALLTIME.match(text):
        return int(m[1]) * 3600 + int(m[2]) * 60 + int(m[3])
    return float(parse_timedelta(text, default="s"))


class ClusterConfig(BaseModel):
    """Validated, frozen settings of one batch system (see ``deploy/<kind>/jobqueue.yaml``).

    ``lifetime`` and ``lifetime_stagger`` may be left ``None``: the lifetime is then the walltime
    minus a margin of 10 % or 5 minutes, whichever is larger, but at most half the walltime, and the
    stagger is at most 1 minute and half that margin, so that ``lifetime + stagger < walltime``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    queue: str | None = None
    account: str | None = None
    cores: int = Field(1, ge=1)
    memory: str = "1GB"
    processes: int = Field(1, ge=1)
    walltime: str = "00:30:00"     # dask-jobqueue's default
    driver_walltime: str | None = None  # of the driver job (`rmtsweep submit`); None = walltime
    driver_stop_warning: int = Field(120, ge=10)   # seconds before the driver's walltime it is sent SIGTERM
    interface: str | None = None
    job_script_prologue: list[str] = []
    job_extra_directives: list[str] = []
    python: str | None = None
    local_directory: str | None = None
    log_directory: str | None = None
    credentials_directory: str | None = None    # where each run's TLS files go (private, removed after the run)
    lifetime: str | None = None
    lifetime_stagger: str | None = None
    min_jobs: int = Field(0, ge=0)
    max_jobs: int = Field(10, ge=1)
    queue_poll: float = Field(10.0, ge=1.0, le=3600.0)   # seconds between squeue/qstat calls while no worker has joined

    @field_validator("memory")
    @classmethod
    def _memory(cls, v: str) -> str:
        try:
            assert parse_bytes(v) > 0
        except (AssertionError, ValueError, TypeError):
            raise ValueError("memory must be a positive size such as '4GB' or '500MB'") from None
        return v

    @field_validator("processes")
    @classmethod
    def _processes(cls, v: int, info: ValidationInfo) -> int:
        cores = info.data.get("cores")
        if cores is not None and cores % v:
            raise ValueError(f"processes must divide cores ({cores}) so each worker gets whole threads")
        return v

    @field_validator("walltime", "driver_walltime")
    @classmethod
    def _walltime(cls, v: str | None) -> str | None:
        if v is not None and (not _WALLTIME.match(v) or walltime_seconds(v) < 60):
            raise ValueError("must be HH:MM:SS and at least 00:01:00, e.g. '02:00:00'")
        return v

    @property
    def driver_walltime_seconds(self) -> int:
        """The driver job's time limit in seconds."""
        return int(walltime_seconds(self.driver_walltime or self.walltime))

    @field_validator("lifetime", "lifetime_stagger")
    @classmethod
    def _lifetime(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is None:
            return v
        try:
            seconds = walltime_seconds(v)
        except (ValueError, TypeError, KeyError):
            raise ValueError("must be a duration such as '55m', '3000s' or '00:55:00'") from None
        walltime = info.data.get("walltime")
        if walltime is None:  # the walltime itself is invalid, and reported
            return v
        limit = walltime_seconds(walltime)
        if info.field_name == "lifetime" and not 1 <= seconds < limit:
            raise ValueError(f"lifetime must be at least 1s and shorter than the walltime {walltime}")
        life = info.data.get("lifetime")
        if info.field_name == "lifetime_stagger" and (
            seconds + (walltime_seconds(life) if life else limit - _margin(limit)) >= limit
        ):
            raise ValueError(f"lifetime + lifetime_stagger must be shorter than the walltime {walltime}")
        return v

    @field_validator("max_jobs")
    @classmethod
    def _max_jobs(cls, v: int, info: ValidationInfo) -> int:
        if v < info.data.get("min_jobs", 0):
            raise ValueError(f"max_jobs must be >= min_jobs ({info.data['min_jobs']})")
        return v

    @property
    def lifetime_seconds(self) -> int:
        """Seconds after which a worker retires (explicit, or derived from the walltime)."""
        w = walltime_seconds(self.walltime)
        return int(walltime_seconds(self.lifetime) if self.lifetime else w - _margin(w))

    @property
    def lifetime_stagger_seconds(self) -> int:
        """Random spread (+/-) of the lifetime, so jobs do not all retire at once."""
        if self.lifetime_stagger:
            return int(walltime_seconds(self.lifetime_stagger))
        return int(min(60.0, (walltime_seconds(self.walltime) - self.lifetime_seconds) / 2))


def _margin(walltime: float) -> float:
    return min(max(0.1 * walltime, 300.0), 0.5 * walltime)


def load_cluster_config(
    kind: Kind, path: Path | None = None, overrides: Mapping[str, Any] | None = None
) -> ClusterConfig:
    """Read a commented YAML cluster config, apply overrides and validate it.

    Parameters
    ----------
    kind : {"slurm", "pbs"}
        Batch system; picks the shipped default ``deploy/<kind>/jobqueue.yaml``.
    path : Path, optional
        A config file of the same layout, over dask's ``jobqueue.<kind>`` where null; default the shipped one.
    overrides : mapping, optional
        Field values that replace the file's (command-line options); ``None`` values are ignored.

    Raises
    ------
    ClusterError
        One line naming the file, the field and the bad value.
    """
    if kind not in _SUBMIT:
        raise ClusterError(f"unknown cluster kind {kind!r}; choose one of: {', '.join(_SUBMIT)}")
    path = Path(path) if path is not None else cluster_config(kind)
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ClusterError(f"cannot read cluster config {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ClusterError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(raw, dict):
        raise ClusterError(f"{path}: expected a mapping of settings, got {type(raw).__name__}")
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    try:
        return ClusterConfig(**{**raw, **given, **(from_dask := jobqueue_settings(kind, {**raw, **given}))})
    except ValidationError as exc:
        raise ClusterError(_describe(exc, path, given, from_dask, kind)) from None


def _describe(exc: ValidationError, path: Path, given: Mapping[str, Any], jq: Mapping[str, Any], kind: Kind) -> str:
    parts = []
    for err in exc.errors():
        loc = err["loc"]
        field = "".join(f"[{x}]" if isinstance(x, int) else str(x) for x in loc) or "(config)"
        key = str(loc[0]) if loc else ""
        origin = f" (option --{key.replace('_', '-')})" if key in given else f" (jobqueue.{kind})" if key in jq else ""
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = f"unknown field; valid fields: {', '.join(ClusterConfig.model_fields)}"
        parts.append(f"field {field!r}{origin} = {err['input']!r}: {msg}")
    return f"{path}: " + "; ".join(parts)


def _job_kwargs(config: ClusterConfig) -> dict[str, Any]:
    """Keyword arguments shared by the SLURM/PBS cluster and job classes of dask-jobqueue."""
    same = ("queue", "account", "cores", "memory", "processes", "walltime", "interface", "python",
            "local_directory", "log_directory")
    return dict(
        {name: getattr(config, name) for name in same},
        job_name="rmtsweep-worker",
        job_script_prologue=[*config.job_script_prologue, ONE_BLAS_THREAD],
        job_extra_directives=list(config.job_extra_directives),
        # Retire before the walltime; the job then ends and adaptive scaling submits a new one.
        # No --lifetime-restart: it would restart the worker inside the same, expiring job.
        worker_extra_args=[
            "--lifetime", f"{config.lifetime_seconds}s",
            "--lifetime-stagger", f"{config.lifetime_stagger_seconds}s",
            "--no-lifetime-restart",
        ],
    )


def default_dashboard(host: str = "localhost") -> str:
    """``host:8787`` (the setting ``rmtsweep.scheduler.dashboard-port``) when that port is free here, else ``host:0``
    (a free port): on a shared login node another user's scheduler may hold it, and dask would then say so in a
    four-line warning on every run."""
    import socket

    from ..config import get
    port = int(get("scheduler.dashboard-port"))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return f"{host}:0"
    return f"{host}:{port}"


def make_cluster(kind: Kind, config: ClusterConfig, security: Any = None,
                 dashboard_address: str | None = None) -> JobQueueCluster:
    """Start a scheduler here and return a ``SLURMCluster``/``PBSCluster`` with no jobs yet.

    ``security`` (a ``distributed.Security`` whose credentials are files the worker jobs can read) makes
    the scheduler listen on ``tls://`` and serve only holders of those credentials; the worker job
    script names the files (``--tls-ca-file``, ``--tls-cert``, ``--tls-key``). The dashboard binds to
    ``dashboard_address`` (``"none"``: no dashboard), else to the dask config's ``jobqueue.<kind>.scheduler-options``,
    else to loopback port 8787, or a free port when another scheduler on this host has 8787 (reach it through an SSH
    tunnel; the run prints its link). Scale it with :func:`scale_cluster`; close it (or use it as a context manager)
    to cancel jobs.
    """
    import dask
    cluster_cls, _ = jobqueue_classes(kind)
    options = dict(dask.config.get(f"jobqueue.{kind}.scheduler-options", None) or {})
    if dashboard_address == "none":            # (engine.NO_DASHBOARD) the scheduler's HTTP server stays on loopback
        options.update(dashboard=False, dashboard_address="localhost:0")
    else:
        options["dashboard_address"] = dashboard_address or options.get("dashboard_address") or default_dashboard()
    try:
        return cluster_cls(job_cls=watched_job_class(kind), security=security, scheduler_options=options,
                           **_job_kwargs(config))
    except (ValueError, RuntimeError, OSError) as exc:  # e.g. an interface this host lacks
        raise ClusterError(f"cannot start a {kind} cluster: {' '.join(str(exc).split())}") from None


def scale_cluster(cluster: JobQueueCluster, config: ClusterConfig, jobs: int | None = None) -> Adaptive:
    """Scale adaptively: between ``min_jobs`` and ``jobs`` (or ``max_jobs`` when ``jobs`` is None).

    Always adaptive, never a fixed ``scale``: only the adaptive loop re-submits jobs whose workers
    retired at their lifetime, and it releases idle jobs in the tail of a sweep. For a fixed number
    of jobs set ``min_jobs`` equal to ``jobs``. One job at least, even with ``min_jobs: 0``, and from
    the start: its submission tells a batch system that cannot run the workers (no ``sbatch``, a
    controller down) before the run writes its store (:class:`~rmtsweep.cluster.jobwatch.JobWatch`).
    """
    maximum = config.max_jobs if jobs is None else jobs
    if maximum < 1:
        raise ClusterError(f"--jobs must be at least 1, got {jobs}")
    return cluster.adapt(minimum_jobs=max(1, min(config.min_jobs, maximum)), maximum_jobs=maximum)


def worker_job_script(kind: Kind, config: ClusterConfig, insecure: bool = False) -> str:
    """The job script each worker job runs, as dask-jobqueue writes it (``cluster.job_script()``).

    Built from dask-jobqueue's job class directly: starts no scheduler, submits nothing and needs no
    ``sbatch``/``qsub``. The scheduler address is a placeholder, and so is the name of the run's
    credentials directory (``.rmtsweep-tls-<run>``): the script names the files, never their contents.
    (A ``log_directory`` is created.)
    """
    from distributed.security import Security

    from .security import CREDENTIALS_PREFIX, credentials_parent
    _, job_cls = jobqueue_classes(kind)
    if insecure:
        return job_cls("tcp://<scheduler-address>:8786", name="dummy-name", **_job_kwargs(config)).job_script()
    run = credentials_parent(kind, config.credentials_directory) / f"{CREDENTIALS_PREFIX}<run>"
    security = Security(require_encryption=True, tls_ca_file=str(run / "ca.pem"), tls_worker_cert=str(run / "cert.pem"),
                        tls_worker_key=str(run / "key.pem"))
    return job_cls("tls://<scheduler-address>:8786", name="dummy-name", protocol="tls://", security=security,
                   **_job_kwargs(config)).job_script()


def driver_script(
    kind: Kind,
    config: ClusterConfig,
    sweep_path: Path,
    store_path: Path | str,
    cluster_config_path: Path | None,
    jobs: int | None,
    insecure: bool = False,
    dashboard_address: str | None = None,
    overrides: tuple[str, ...] = (),
    storage_options: tuple[str, ...] = (),
) -> str:
    """A batch script for the driver: the process that holds the scheduler and the store's lock.

    One core, the workers' ``memory``, ``driver_walltime`` (default the workers' walltime); paths
    are made absolute. Overridable fields are passed on as options so the driver sees ``config``.
    The driver is sent SIGTERM ``driver_stop_warning`` seconds before its walltime, and rmtsweep then
    stops cleanly (finished tasks done, lock released, one line, exit 143), so a resubmission resumes:
    on SLURM the job asks for it (``--signal=B:TERM@...``; SLURM may send it up to a minute early);
    PBS has no such request (at walltime it sends SIGTERM, then SIGKILL after the server's
    ``kill_delay``, often a few seconds), so the script runs rmtsweep under coreutils ``timeout
    --foreground`` (the signal reaches rmtsweep alone, which shuts its cluster down). The driver makes
    its run's TLS credentials itself, on its node, unless ``insecure``.

    A ``store_path`` given as text (an absolute path, or a URL with ``storage_options`` as ``KEY=VALUE`` items) is
    passed on as it is.
    """
    if config.driver_stop_warning >= config.driver_walltime_seconds:
        raise ClusterError(f"driver_stop_warning {config.driver_stop_warning} s must be shorter than the driver's "
                           f"walltime {config.driver_walltime or config.walltime}")
    _, job_cls = jobqueue_classes(kind)
    warning = [f"--signal=B:TERM@{config.driver_stop_warning}"] if kind == "slurm" else []
    header = job_cls(
        "tcp://unused:8786", name="driver", cores=1, memory=config.memory, processes=1,
        queue=config.queue, account=config.account, walltime=config.driver_walltime or config.walltime,
        log_directory=config.log_directory, job_name="rmtsweep-driver",
        job_extra_directives=[*config.job_extra_directives, *warning],
    ).job_header
    cfg = Path(cluster_config_path) if cluster_config_path else cluster_config(kind)
    store = store_path if isinstance(store_path, str) else str(Path(store_path).resolve())
    cmd = [rmtsweep_command(), "run", str(Path(sweep_path).resolve()), *overrides, "--store", store,
           *(arg for item in storage_options for arg in ("--storage-option", item)),
           "--cluster", kind, "--cluster-config", str(cfg.resolve())]
    cmd += ["--jobs", str(jobs)] if jobs is not None else []
    cmd += ["--insecure"] if insecure else []
    cmd += ["--dashboard-address", dashboard_address] if dashboard_address else []
    for field in ("queue", "account", "cores", "memory", "walltime", "interface"):
        if getattr(config, field) is not None:
            cmd += [f"--{field}", str(getattr(config, field))]
    lines = ["#!/usr/bin/env bash", header, "set -eo pipefail", *config.job_script_prologue,
             ONE_BLAS_THREAD, "exec " + shlex.join(_stop_before_walltime(kind, config) + cmd)]
    return "\n".join(lines) + "\n"


def _stop_before_walltime(kind: Kind, config: ClusterConfig) -> list[str]:
    """The command prefix that sends the driver SIGTERM before its walltime where the batch system won't."""
    if kind == "slurm":
        return []
    stop_at = config.driver_walltime_seconds - config.driver_stop_warning
    return ["timeout", "--foreground", "--signal=TERM", "--kill-after=60", "--preserve-status", f"{stop_at}s"]


def rmtsweep_command() -> str:
    """The ``rmtsweep`` script of this interpreter (absolute), as the worker jobs use its ``python``."""
    script = Path(sys.executable).parent / "rmtsweep"
    return str(script) if script.exists() else "rmtsweep"


def submit_driver(kind: Kind, script_text: str, directory: Path, name: str = "driver",
                  options: tuple[str, ...] = ()) -> str:
    """Write the driver (or array) script into ``directory`` and submit it with ``options``; return the job id.

    Raises
    ------
    ClusterError
        When ``sbatch``/``qsub`` is not on PATH or the submission fails (its stderr is quoted).
    """
    command = _SUBMIT[kind]
    if shutil.which(command[0]) is None:
        raise ClusterError(f"{command[0]} not found on PATH: submit from a login node of the {kind} "
                           "cluster, or use --dry-run to print the scripts")
    (directory := Path(directory)).mkdir(parents=True, exist_ok=True)
    script = directory / f"rmtsweep-{name}-{time.strftime('%Y%m%d-%H%M%S')}.sh"
    script.write_text(script_text)
    proc = subprocess.run([*command, *options, str(script)], capture_output=True, text=True)
    if proc.returncode != 0:
        err = " ".join(proc.stderr.split()) or "(no stderr)"
        raise ClusterError(f"{command[0]} {script} failed with exit {proc.returncode}: {err}")
    return proc.stdout.strip().split(";")[0]
