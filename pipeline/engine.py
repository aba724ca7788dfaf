"""Where a run's work goes: an embedded LocalCluster, a batch-system cluster, or an existing scheduler.

Parsed once from the command line (:func:`make_engine`), then :func:`connect` gives a dask client and
what is known of the cluster's size before any worker has joined.
"""

from __future__ import annotations

import logging
import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import click
from dask.utils import parse_bytes
from distributed import WorkerPlugin

from .errors import ClusterError

__all__ = ["Capacity", "Engine", "connect", "make_engine"]


@dataclass(frozen=True)
class Engine:
    """Where the work runs: an embedded LocalCluster, a batch-system cluster, or an existing scheduler."""

    cluster: str = "local"
    workers: int | None = None
    scheduler: str | None = None
    jobs: int | None = None
    cluster_config: Path | None = None
    overrides: tuple[tuple[str, Any], ...] = ()

    def batch_config(self):
        """The validated dask-jobqueue settings (``--cluster slurm|pbs``)."""
        from .clusters import load_cluster_config
        return load_cluster_config(self.cluster, self.cluster_config, dict(self.overrides))


@dataclass(frozen=True)
class Capacity:
    """What a run knows of its cluster before workers join: threads it may grow to, memory per thread."""

    expected_threads: int = 0
    memory_per_thread: float | None = None


@contextmanager
def connect(engine: Engine) -> Iterator:
    """A connected dask client for ``engine`` and its :class:`Capacity` (workers get one BLAS thread each)."""
    from distributed import Client, LocalCluster

    if engine.scheduler:
        try:
            client = Client(engine.scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"--scheduler {engine.scheduler}: cannot connect ({exc})") from None
        with client:
            yield client, Capacity()
    elif engine.cluster in ("slurm", "pbs"):
        from .clusters import make_cluster, scale_cluster
        config = engine.batch_config()
        with make_cluster(engine.cluster, config) as cluster, Client(cluster) as client:
            scale_cluster(cluster, config, engine.jobs)
            jobs = engine.jobs or config.max_jobs
            click.echo(f"dask-jobqueue {engine.cluster} cluster: up to {jobs} job(s), "
                       f"dashboard {client.dashboard_link}", err=True)
            yield client, Capacity(jobs * config.cores, parse_bytes(config.memory) / config.cores)
    else:
        n = engine.workers or os.cpu_count() or 1
        # workers log only errors: a stop cancels what is in flight, and each worker would warn about it
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0",
                          silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
            client.wait_for_workers(n, timeout=120)     # the memory check needs every worker's limit
            client.register_plugin(IgnoreInterrupt(), name="rmtsweep-ignore-sigint")
            click.echo(f"dask LocalCluster: {n} worker(s), dashboard {client.dashboard_link}", err=True)
            yield client, Capacity()


class IgnoreInterrupt(WorkerPlugin):
    """A worker plugin: the LocalCluster's workers ignore SIGINT.

    They share the terminal's process group, so Ctrl-C reaches each of them as well as this process;
    this process stops the run and shuts the cluster down, so the workers need not (and would print
    a traceback each). The plugin is run again on every worker the nanny restarts.
    """

    def setup(self, worker) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def make_engine(cluster: str, workers=None, scheduler=None, jobs=None, cluster_config=None, **overrides) -> Engine:
    if scheduler and cluster != "local":
        raise ClusterError(f"--scheduler {scheduler} and --cluster {cluster} exclude each other; pick one")
    if cluster == "local" and (jobs or cluster_config or any(v is not None for v in overrides.values())):
        raise ClusterError("--jobs, --cluster-config and the batch options need --cluster slurm or pbs")
    return Engine(cluster, workers, scheduler, jobs, cluster_config,
                  tuple((k, v) for k, v in overrides.items() if v is not None))


