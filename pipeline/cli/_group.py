"""The ``rmtsweep`` group and its entry point: what every command shares (exit statuses, one-line errors).

Exit status: 0 done; 1 a run failure; 2 a user mistake; 130 interrupted (Ctrl-C); 143 stopped by
SIGTERM. Each failure prints one line, never a traceback.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
from typing import Any, NoReturn

import click

from ..errors import RmtsweepError, RunError
from ..signals import quiet_finalizers

__all__ = ["STORE_LOCATION", "STORE_PATH", "Stopped", "cli", "main", "script", "storage_options"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rmtsweep")
def cli() -> None:
    """Monte Carlo sweeps of attention-style pooling, held against random-matrix theory."""


class _StorePath(click.ParamType):
    """A store's path, or a URL of object storage (:func:`rmtsweep.store.location.locate`): as a ``click.Path``
    a URL would become the local directory ``s3:/...``. With ``writes=True`` a URL is refused in one line
    (:func:`rmtsweep.store.location.local_path`)."""

    name = "path"

    def __init__(self, writes: bool) -> None:
        self.writes = writes

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from ..store.location import local_path, locate
        return local_path(value) if self.writes else locate(value)   # StoreError: a user mistake, exit 2


STORE_PATH = _StorePath(writes=True)
"""A store that the command writes: a path on a file system."""
STORE_LOCATION = _StorePath(writes=False)
"""A store that the command reads: a path, or a URL (``s3://bucket/run.zarr``) with ``--storage-option``."""


def storage_options(command: Any) -> Any:
    """``--storage-option KEY=VALUE`` (repeatable), applied to the command's store arguments that are URLs."""
    import functools

    @functools.wraps(command)
    def wrapped(*args: Any, storage_option: tuple[str, ...], **kwargs: Any) -> Any:
        if storage_option:
            from ..store.location import locate, parse_storage_options
            options = parse_storage_options(storage_option)
            for key in ("store_path", "stores"):
                if key in kwargs:
                    value = kwargs[key]
                    kwargs[key] = (tuple(locate(v, options) for v in value) if isinstance(value, tuple)
                                   else locate(value, options))
        return command(*args, **kwargs)

    return click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
                        help="An option of a store at a URL (fsspec storage_options), e.g. "
                             "endpoint_url=http://127.0.0.1:9000 or anon=true; dotted keys nest "
                             "(client_kwargs.region_name=eu-west-1). Repeatable.")(wrapped)


class Stopped(BaseException):
    """Raised in the main thread by SIGTERM (a batch system's walltime, ``kill``): unwinds like Ctrl-C."""


def _on_sigterm(signum: int, frame: Any) -> None:
    _quiet()
    raise Stopped()


def _quiet() -> None:
    """Silence dask's shutdown chatter: the one line below says what happened."""
    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _stopping(process_ends: bool) -> bool:
    """The process is about to exit: a further Ctrl-C or SIGTERM (an impatient second Ctrl-C) changes nothing.

    Without this, one arriving while the interpreter shut down killed it (exit status -2, not 130: 7 of 20
    double Ctrl-Cs 0.05-0.3 s apart in the first 6 s of a run). Only when ``main`` runs the process's own
    command line (``process_ends``); a caller in the same process keeps its handlers. Returns whether set.

    It also clears CPython's record of an uncaught Ctrl-C. CPython notes a KeyboardInterrupt that leaves any
    ``exec``/``eval`` of source text (a dataclass or namedtuple being made, as imports do) in a process-wide
    flag, and ``python -m`` then ends the process with SIGINT (status -2) even though the interrupt was caught
    and ``sys.exit(130)`` called: 1 single Ctrl-C in 25 at 1.5-2.5 s into a run under load. Each ``exec`` of
    source text resets that flag first, so one that succeeds clears it.

    From then on a finalizer that fails on a closed event loop prints nothing (:func:`quiet_finalizers`).
    """
    if not process_ends or threading.current_thread() is not threading.main_thread():
        return False
    quiet_finalizers()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    exec("None")                    # noqa: S102 -- clears the flag above (CPython's run_eval_code_obj)
    return True


# What a command needs before it can do anything, imported with SIGINT and SIGTERM held: a KeyboardInterrupt
# inside a compiled module's import can be lost, or leave the module half-built. A Ctrl-C meanwhile is raised
# once they are in, and becomes the one line. Held, not only blocked: a thread a library started can receive
# the signal, and Python then raises in the main thread wherever it is. Commands that start work import the
# whole run side, so that no compiled module is imported later, unheld; those that read a store, and a dry
# run, import what they start with, so that they answer at once. --help and --version need none of them.
# rmtsweep.config comes first, alone: it imports dask, which reads the YAML files of its config (a malformed
# one is refused in one line before any other module imports dask), and the settings are checked before the rest.
_STARTS_WORK = {"run", "demo", "submit", "work"}
_HEAVY = {True: ("rmtsweep.spec", "rmtsweep.store", "rmtsweep.run", "rmtsweep.cluster.engine",
                 "rmtsweep.run.runner", "rmtsweep.store.handle", "rmtsweep.theory.on_grid", "distributed", "zarr",
                 "scipy.optimize", "scipy.sparse.linalg", "dask.array", "cryptography.x509",
                 "cryptography.hazmat.primitives.asymmetric.rsa"),
          False: ("rmtsweep.spec", "rmtsweep.store")}


def _answers_at_once(argv: list[str]) -> bool:
    """Whether the command line only asks for help or the version (no command runs)."""
    return not argv or bool({"-h", "--help", "--version"} & set(argv))


def _imported(names: tuple[str, ...], workers: bool = False) -> None:
    import importlib

    from ..signals import Held
    with Held(block=True) as held:            # blocked too: the threads and processes started never receive them
        if workers:
            from ..run import forkserver
            forkserver.start()                # its imports overlap the ones below, on another core
        for name in names:
            importlib.import_module(name)
    held.deliver()                            # a Ctrl-C held meanwhile is raised here


def _forks_local_workers(argv: list[str]) -> bool:
    """Whether the command line, as far as it says, runs a sweep on a LocalCluster of worker processes."""
    if argv[0] not in ("run", "demo") or os.environ.get("RMTSWEEP_IN_PROCESS", "").lower() not in FALSE_WORDS:
        return False
    for word, value in zip(argv, [*argv[1:], ""], strict=True):
        option, _, given = word.partition("=")
        if option in ("--dry-run", "--in-process", "--scheduler", "--scheduler-file") \
                or option == "--cluster" and (given or value) != "local":
            return False
    return True


FALSE_WORDS = ("", "0", "false", "no", "off", "n", "f")
"""What click reads as false in a flag's environment variable (``RMTSWEEP_IN_PROCESS``)."""


def _import_heavy(argv: list[str]) -> None:
    """Import what the command needs, having checked every setting first (:func:`rmtsweep.config.check`).

    A command that will fork local workers starts their fork server first (:mod:`rmtsweep.run.forkserver`).
    """
    if _answers_at_once(argv):
        return
    _imported(("rmtsweep.config",))
    from .. import config
    config.check()                            # before anything else is imported or started: refused at once
    _imported(_HEAVY[argv[0] in _STARTS_WORK and "--dry-run" not in argv], _forks_local_workers(argv))


def _failing(process_ends: bool) -> None:
    """The process ends on a failure's one line: what is collected as it exits adds none (see ``_stopping``)."""
    if process_ends:
        quiet_finalizers()


def _os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}" if exc.strerror else f"{where}{type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``rmtsweep`` script.

    Exit status: 0 done; 1 a run failure (a task that keeps failing, an I/O error such as a full disk,
    a lost lock, a batch system that cannot run the workers); 2 a user mistake (bad sweep file, option, setting,
    store path or --scheduler address); 130 interrupted (Ctrl-C); 143 stopped by SIGTERM. Each failure
    prints one line, never a traceback; finished tasks stay in the store and rerunning the same command
    resumes.
    """
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if threading.current_thread() is threading.main_thread() \
        else None
    ignored = False
    try:
        _import_heavy(sys.argv[1:] if argv is None else argv)    # and check every setting first
        cli.main(args=argv, standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        ignored = _stopping(argv is None)
        _quiet()
        click.echo("rmtsweep: interrupted; finished tasks are in the store: rerun the same command to resume",
                   err=True)
        sys.exit(130)
    except Stopped:
        ignored = _stopping(argv is None)
        click.echo("rmtsweep: stopped by SIGTERM; rerun the same command to resume", err=True)
        sys.exit(143)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RunError as exc:                     # before RmtsweepError: a run failure is one of its branches
        _failing(argv is None)
        click.echo(f"rmtsweep: error: {exc}", err=True)
        sys.exit(1)
    except RmtsweepError as exc:                # the other branch: a user mistake
        _failing(argv is None)
        click.echo(f"rmtsweep: error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:
        _failing(argv is None)
        click.echo(f"rmtsweep: error: {_os_error(exc)}", err=True)
        sys.exit(1)
    finally:
        if previous is not None and not ignored:
            signal.signal(signal.SIGTERM, previous)


def script() -> NoReturn:
    """The ``rmtsweep`` command (and ``python -m rmtsweep.cli``): :func:`main`, then a normal exit.

    Before it leaves, the objects the command made are frozen (:func:`gc.freeze`): the interpreter's last
    garbage collections then skip them, instead of walking every object of numpy, xarray, zarr and dask
    on the way out. Threads are joined, ``atexit`` hooks run and output is flushed as in any exit.
    """
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = _status(exc.code)
    if "rmtsweep.run.forkserver" in sys.modules:      # reaped: the command's CPU time then counts its workers'
        sys.modules["rmtsweep.run.forkserver"].stop()
    gc.freeze()
    sys.exit(code)


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` would give (a message is printed on stderr, status 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1
