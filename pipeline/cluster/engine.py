"""Where a run's work goes: an embedded LocalCluster, a batch-system cluster, or an existing scheduler.

Parsed once from the command line (:func:`make_engine`), then :func:`connect` gives a dask client and
what is known of the cluster's size before any worker has joined.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any, cast


from ..errors import ClusterError
from ..signals import Held
from ..types import ClusterKind
from ..run.forkserver import LOOPBACK, cluster_options
from .probe import scheduler_client

__all__ = ["NO_DASHBOARD", "Capacity", "Engine", "connect", "make_engine"]

NO_DASHBOARD = "none"     # --dashboard-address none: the run's scheduler serves no dashboard


@dataclass(frozen=True)
class Engine:
    """Where the work runs: an embedded LocalCluster, a batch-system cluster, or an existing scheduler."""

    cluster: str = "local"
    workers: int | None = None
    scheduler: str | None = None
    jobs: int | None = None
    cluster_config: Path | None = None
    overrides: tuple[tuple[str, Any], ...] = ()
    insecure: bool = False                  # --cluster slurm|pbs without TLS
    security: Path | None = None            # --security FILE: credentials for a --scheduler tls://...
    dashboard_address: str | None = None    # None: none locally, loopback:8787 on a batch system;
                                            # "none": no dashboard
    in_process: bool = False                # the LocalCluster's workers as threads of this process

    def batch_config(self):
        """The validated dask-jobqueue settings (``--cluster slurm|pbs``)."""
        from .batch import load_cluster_config
        return load_cluster_config(cast(ClusterKind, self.cluster), self.cluster_config, dict(self.overrides))


def _local_dashboard_off(engine: Engine) -> bool:
    """Whether the embedded LocalCluster serves no dashboard: unless one is asked for (``--dashboard-address``)."""
    return engine.dashboard_address in (None, NO_DASHBOARD)


def _dashboard(client: Any, engine: Engine) -> str:
    """``dashboard <link>``, or ``no dashboard`` (dask would still make up a link to port 8787)."""
    return "no dashboard" if engine.dashboard_address == NO_DASHBOARD else f"dashboard {client.dashboard_link}"


@dataclass(frozen=True)
class Capacity:
    """What a run knows of its cluster before workers join: threads it may grow to, memory per thread."""

    expected_threads: int = 0
    memory_per_thread: float | None = None


@contextmanager
def connect(engine: Engine, notes: Callable[[str], None] = lambda line: None) -> Iterator:
    """A connected dask client for ``engine`` and its :class:`Capacity` (workers get one BLAS thread each).

    ``notes`` gets a line for the user: where the cluster's dashboard is, the batch jobs' fate, warnings.

    Every scheduler started here serves only clients and workers that hold this run's TLS credentials:
    a batch-system cluster's (:mod:`rmtsweep.cluster.security`, unless ``insecure``) and the LocalCluster's
    (:func:`_local_options`), since every user of a shared node reaches loopback. A batch-system cluster's
    dashboard binds to loopback unless ``dashboard_address`` says otherwise (``"none"``: no dashboard). The
    embedded LocalCluster serves one only where ``dashboard_address`` names it: without one, the driver
    neither imports bokeh nor serves it (about half a CPU-second and a second of the cluster's start).

    A cluster started here is started and shut down with SIGINT and SIGTERM held: one that arrives meanwhile
    takes effect as soon as the cluster is up, or once it has shut down, so neither is left half-built. Its
    threads, and the worker processes and batch commands they start, never receive either signal: Ctrl-C
    reaches every process of the terminal's group, and this process alone stops the run and the workers.

    Raises
    ------
    ClusterError
        ``--scheduler`` names an address that is malformed or unreachable (one line naming it and why),
        or the run's TLS credentials cannot be made.
    BatchSystemError
        No worker can come: the batch system refused the worker jobs, or they left its queue before any
        worker joined (a pending job is waited for).
    """
    from distributed import Client

    from ..config import get as setting
    if engine.scheduler:
        from .security import exposure_warning, load_security
        security = load_security(engine.security) if engine.security else None
        with scheduler_client(engine.scheduler, security) as client:
            if security is None and (warning := exposure_warning(engine.scheduler)):
                notes(warning)                            # once connected: a wrong address is its own one line
            yield client, Capacity()
    elif engine.cluster in ("slurm", "pbs"):
        from .batch import make_cluster, scale_cluster
        from .jobwatch import JobWatch
        system = cast(ClusterKind, engine.cluster)        # slurm or pbs, as the branch says
        config = engine.batch_config()
        with _credentials(engine, config, notes) as security, \
                _owned(lambda: make_cluster(system, config, security, engine.dashboard_address),
                       block=True) as cluster, \
                _owned(lambda: Client(cluster)) as client:
            scale_cluster(cluster, config, engine.jobs)
            watch = JobWatch(cluster, system, config.log_directory, notes)
            with watch.watching(interval=config.queue_poll):   # the first submission, then on
                jobs = engine.jobs or config.max_jobs
                notes(f"dask-jobqueue {engine.cluster} cluster: up to {jobs} job(s), {_dashboard(client, engine)}")
                from dask.utils import parse_bytes
                yield client, Capacity(jobs * config.cores, parse_bytes(config.memory) / config.cores)
    else:
        n = engine.workers or os.cpu_count() or 1
        # multiprocessing's resource tracker unblocks SIGINT and SIGTERM in the thread that first starts it;
        # started here, it is no thread of the cluster's
        resource_tracker.ensure_running()
        with _owned(lambda: _local_cluster(engine, n), block=True) as cluster, \
                _owned(lambda: Client(cluster)) as client:
            # the memory check needs every worker's limit
            client.wait_for_workers(n, timeout=setting("scheduler.workers-timeout"))
            kind = "thread(s) of this process" if engine.in_process else "worker(s)"
            notes(f"dask LocalCluster: {n} {kind}, {_local_dashboard(cluster, engine)}")
            yield client, Capacity()


def _local_options(engine: Engine, n: int) -> dict[str, Any]:
    """The keywords of the embedded LocalCluster: closed to every other user of the machine.

    Worker processes talk to the scheduler over TLS with credentials made for this run and held in memory
    (``Security.temporary``): any local user can reach loopback, and dask runs what a connected client sends.
    Worker threads (``in_process``) talk over ``inproc://``, which no other process can reach. Every port,
    the HTTP servers' included, listens on loopback unless ``--dashboard-address`` names another interface.
    The scheduler serves a dashboard only where ``--dashboard-address`` names one.
    """
    off = _local_dashboard_off(engine)
    options: dict[str, Any] = {
        "n_workers": n, "threads_per_worker": 1, "processes": not engine.in_process,
        # with no dashboard the scheduler's HTTP server (health, metrics) still runs: dask's
        # dashboard_address=None would put it on every interface
        "dashboard_address": f"{LOOPBACK}:0" if off else engine.dashboard_address,
        "scheduler_kwargs": {"dashboard": False} if off else None,
        # a stop cancels what is in flight and each worker would log it; every task's failure reaches the
        # driver, which reports it in one line
        "silence_logs": logging.CRITICAL,
    }
    if engine.in_process:
        options["worker_class"] = _loopback_worker()
        # a worker thread's comm closed as the cluster closes is logged at INFO with a traceback, in this
        # process, after the cluster put dask's log level back: shutdown chatter, never a finding
        batched = logging.getLogger("distributed.batched")
        batched.setLevel(max(batched.level, logging.WARNING))
    else:
        options.update(cluster_options())
    return options


def _local_cluster(engine: Engine, n: int) -> Any:
    """The embedded LocalCluster of ``engine``, its worker processes forked as :func:`forking_workers` says."""
    from distributed import LocalCluster

    from ..run.forkserver import forking_workers
    with forking_workers():
        return LocalCluster(**_local_options(engine, n))


def _loopback_worker() -> type:
    """A ``distributed.Worker`` whose HTTP server listens on loopback (dask's default is every interface)."""
    from distributed import Worker

    class LoopbackWorker(Worker):
        def __init__(self, *args: Any, dashboard_address: str | None = None, **kwargs: Any) -> None:
            super().__init__(*args, dashboard_address=dashboard_address or f"{LOOPBACK}:0", **kwargs)

    return LoopbackWorker


def _local_dashboard(cluster: Any, engine: Engine) -> str:
    """``dashboard <link>`` at the address the scheduler's HTTP server is bound to, or ``no dashboard``."""
    from distributed.utils import format_dashboard_link
    if _local_dashboard_off(engine):
        return "no dashboard"
    server = cluster.scheduler.http_server
    host = socket.gethostname() if server.address in ("", "0.0.0.0", "::") else server.address
    return f"dashboard {format_dashboard_link(host, server.port)}"


@contextmanager
def _credentials(engine: Engine, config: Any, notes: Callable[[str], None]) -> Iterator:
    """The run's own TLS ``Security`` (removed afterwards), or None with a warning for ``--insecure``."""
    from .security import credentials_parent, temporary_credentials
    if engine.insecure:
        notes(f"warning: --insecure: the {engine.cluster} run's scheduler listens unencrypted on the cluster's "
              "network; anyone who can reach it can run code as you")
        yield None
        return
    with temporary_credentials(credentials_parent(engine.cluster, config.credentials_directory)) as creds:
        yield creds.security()


@contextmanager
def _owned(start: Callable[[], Any], block: bool = False) -> Iterator:
    """Enter what ``start()`` makes (a cluster, a client), and exit it, with SIGINT and SIGTERM held.

    A signal held while it starts is delivered once it is entered, and so unwinds through its exit; one
    held while it exits is delivered after, unless an exception is already on its way out (the run is
    stopping anyway). ``block`` as for :class:`Held`, while it starts.
    """
    with Held(block) as starting:
        manager = start()
        value = manager.__enter__()
    try:
        starting.deliver()
        yield value
    except BaseException:
        with Held():
            suppressed = manager.__exit__(*sys.exc_info())
        if not suppressed:
            raise
    else:
        with Held() as closing:
            try:
                manager.__exit__(None, None, None)
            except TimeoutError:
                pass        # the work is done and written; a cluster slow to close on a starved machine is no failure
        closing.deliver()


def make_engine(cluster: str, workers=None, scheduler=None, jobs=None, cluster_config=None, insecure: bool = False,
                security=None, dashboard_address=None, scheduler_file=None, in_process: bool = False,
                **overrides) -> Engine:
    """The :class:`Engine` of the command line's options, refusing combinations that mean nothing.

    ``scheduler_file`` (``dask scheduler --scheduler-file FILE``) gives the scheduler's address.
    """
    if scheduler_file is not None:
        if scheduler:
            raise ClusterError("--scheduler and --scheduler-file name the same thing; give one")
        scheduler = _address_in(Path(scheduler_file))
    if scheduler and cluster != "local":
        raise ClusterError(f"--scheduler {scheduler} and --cluster {cluster} exclude each other; pick one")
    if cluster == "local" and (jobs or cluster_config or insecure or any(v is not None for v in overrides.values())):
        raise ClusterError("--jobs, --cluster-config, --insecure and the batch options need --cluster slurm or pbs")
    if dashboard_address and dashboard_address != NO_DASHBOARD and scheduler:
        raise ClusterError(f"--dashboard-address {dashboard_address} (or RMTSWEEP_DASHBOARD_ADDRESS) is for a "
                           "scheduler that rmtsweep starts, not for --scheduler")
    if in_process and (scheduler or cluster != "local"):
        raise ClusterError("--in-process (or RMTSWEEP_IN_PROCESS) is for the embedded LocalCluster, not for "
                           f"{'--scheduler' if scheduler else '--cluster ' + cluster}")
    if security is not None and not scheduler:
        raise ClusterError("--security FILE is for joining a scheduler started elsewhere (--scheduler tls://...); "
                           "a --cluster slurm|pbs run makes its own credentials")
    return Engine(cluster, workers, scheduler, jobs, cluster_config,
                  tuple((k, v) for k, v in overrides.items() if v is not None), insecure,
                  Path(security) if security is not None else None, dashboard_address, in_process)


def _address_in(path: Path) -> str:
    """The ``address`` a dask scheduler wrote into its scheduler file."""
    import json
    try:
        address = json.loads(path.read_text()).get("address")
    except OSError as exc:
        raise ClusterError(f"--scheduler-file {path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, AttributeError):
        raise ClusterError(f"--scheduler-file {path}: not a dask scheduler file (JSON with an address)") from None
    if not isinstance(address, str) or not address:
        raise ClusterError(f"--scheduler-file {path}: not a dask scheduler file (JSON with an address)")
    return address
