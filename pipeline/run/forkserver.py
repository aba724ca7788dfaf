"""How the LocalClusters rmtsweep makes start their worker processes: forked from a server that imported the task code.

dask spawns each worker as a fresh interpreter, which imports numpy, scipy, zarr, distributed and the task
code before it can join: about 1.3 CPU-s a worker, on the critical path of every local run. rmtsweep asks
dask to fork its workers from multiprocessing's fork server instead. The server starts once a process,
imports the task code, dask's worker and the theory's task once (:data:`SERVED`), and each worker is a copy
of it, up in a few hundredths of a second. The command line starts the server as it begins, so the server's
imports overlap the command's own. Every such cluster is closed to other users (:func:`cluster_options`).

A fork server's environment is the one it started in. A worker is given the environment of the process
that makes its cluster, as that is now: every variable is set again, and those set since removed are removed.
The variables dask sets before it spawns a worker (``distributed.nanny.pre-spawn-environ``: one BLAS thread,
a fixed hash seed) are in the server's environment, since a library reads them as it is imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["LOOPBACK", "SERVED", "SETTINGS", "TASK_CODE", "apply_unset", "cluster_options", "forking_workers", "start",
           "stop", "worker_env"]

LOOPBACK = "127.0.0.1"

TASK_CODE = "rmtsweep.run.work"
"""What a worker runs as its preload, and the first module the fork server imports."""

SERVED = (TASK_CODE, "distributed", "rmtsweep.run.runner", "dask.array")
"""What the fork server imports, so that every worker starts with it: the task code, dask's worker (0.4 s of a
cluster's start otherwise) and the store's theory task (with xarray: 0.4 s before a worker's first theory task).
xarray imports dask.array as it makes its first array, when dask is installed (0.3 s more)."""

SETTINGS = {"distributed.worker.multiprocessing-method": "forkserver",
            "distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": None}
"""dask's settings while rmtsweep makes a LocalCluster of worker processes.

Workers are forked from the fork server. dask would also start each worker with
``MALLOC_TRIM_THRESHOLD_=65536``, which freezes glibc's threshold for serving an allocation from fresh pages:
every array of a task over 128 KiB then costs page faults on each allocation, about half a task's CPU at
d = 300. Without it, a worker allocates as the run's own process does; a value in the user's environment
still reaches the workers.
"""

MARKS = {"RMTSWEEP_TASK_WORKER": "1"}
"""What marks a worker process as a task worker, for whoever inspects the processes."""

UNSET = "RMTSWEEP_WORKER_UNSET"
"""A worker's variable naming (as JSON) the fork server's variables its environment must not have."""

_SERVED: set[str] = set()
"""The variables of every environment this process's fork server may have started in."""


def _pre_spawn() -> dict[str, str]:
    """The variables dask sets before it starts a worker, as it computes them (the user's environment first)."""
    import dask.config
    import distributed  # noqa: F401 - dask has distributed's settings once it is imported
    with dask.config.set(SETTINGS):             # a copy: leaving restores the settings' own dict in place
        wanted = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
    env = {k: os.environ.get(k, str(v)) for k, v in wanted.items() if v is not None}
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"      # dask's fixed seed: workers hash alike
    return env


@contextmanager
def _environment(extra: dict[str, str]) -> Iterator[None]:
    """``os.environ`` holds ``extra`` while the body runs and is put back after (this process's libraries read
    their variables as they were imported)."""
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def start() -> None:
    """Start this process's fork server, importing :data:`SERVED`, unless it runs already.

    Call it with SIGINT and SIGTERM blocked (:class:`rmtsweep.signals.Held`): the server, and so every
    worker, keeps the mask, and a stop reaches the workers through the command alone.
    """
    import multiprocessing
    import signal
    from multiprocessing import forkserver, resource_tracker
    multiprocessing.get_context("forkserver").set_forkserver_preload(list(SERVED))
    pre = _pre_spawn()
    _SERVED.update(os.environ, pre)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    resource_tracker.ensure_running()           # the server's first step; it unblocks SIGINT and SIGTERM here
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    with _environment(pre):
        forkserver.ensure_running()


@contextmanager
def forking_workers() -> Iterator[None]:
    """Make a LocalCluster's worker processes inside this: each nanny reads :data:`SETTINGS` once, as it is
    made, and uses them for every worker it starts or restarts. The fork server is started here if need be."""
    import dask.config
    start()
    with dask.config.set(SETTINGS):
        yield


def stop() -> None:
    """Stop this process's fork server, if it runs, once it has reaped its workers, and reap it.

    For a process about to exit: the server's workers have ended with their cluster, and the process's
    children's CPU time then counts theirs (a server left running is reaped by no one). The server is killed:
    its own exit would tear down every module it imported (0.2-0.6 s), and one no cluster used may still be
    importing them.
    """
    import signal
    import sys
    module = sys.modules.get("multiprocessing.forkserver")
    server = getattr(module, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if server is None or pid is None or not hasattr(server, "_stop"):
        return
    _await_no_children(pid)               # at once for a server that forked nothing
    os.kill(pid, signal.SIGKILL)          # it keeps SIGTERM blocked, as the command did when it started it
    server._stop()                        # CPython's own way to stop it (its tests use it), since 3.8


def _await_no_children(pid: int, timeout: float = 2.0) -> None:
    """Wait, at most ``timeout`` seconds, until process ``pid`` has reaped its children (Linux; elsewhere at once).

    A worker's nanny has seen it end once the server reaped it, so this rarely waits: it covers a worker
    whose cluster gave up waiting for it."""
    import time
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/task/{pid}/children") as listing:
                if not listing.read().strip():
                    return
        except OSError:
            return
        time.sleep(0.01)


def cluster_options() -> dict[str, Any]:
    """What every LocalCluster of worker processes that rmtsweep makes is given, besides its size.

    It listens on loopback and serves only holders of TLS credentials made for it and held in memory
    (``Security.temporary``): any local user reaches loopback, and dask runs what a connected client sends. Its
    workers run the task code's setup as they start (the fork server imported it: a first task would otherwise
    import it, holding the worker's event loop long enough to miss heartbeats), with :func:`worker_env`.
    """
    from distributed.security import Security
    return {"host": LOOPBACK, "security": Security.temporary(), "preload": [TASK_CODE], "env": worker_env()}


def worker_env() -> dict[str, str]:
    """The environment of a worker forked now (a nanny's ``env``): this process's, with :data:`MARKS`, and the
    names of the variables to remove."""
    env = {**os.environ, **MARKS}
    gone = sorted(_SERVED - set(env) - set(_pre_spawn()))
    return {**env, UNSET: json.dumps(gone)}


def apply_unset() -> None:
    """In a worker: remove the variables :func:`worker_env` named."""
    for name in json.loads(os.environ.pop(UNSET, "[]")):
        os.environ.pop(name, None)
