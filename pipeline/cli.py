"""The ``rmtsweep`` command line: the only module that knows all the others.

User mistakes (:class:`~pipeline.errors.RmtsweepError`) print one line on stderr and exit with
status 2, never a traceback.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from . import store
from .errors import RmtsweepError
from .runner import run_sweep
from .spec import load_sweep

DEMO = Path(__file__).resolve().parents[1] / "sweeps" / "demo.yaml"


@contextmanager
def _client(workers: int | None, scheduler: str | None) -> Iterator:
    """A dask client: an existing scheduler, or an embedded LocalCluster (one BLAS thread per worker)."""
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as exc:
            raise RmtsweepError(f"--scheduler {scheduler}: cannot connect ({exc})") from None
        with client:
            yield client
        return
    n = workers or os.cpu_count() or 1
    with LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        click.echo(f"dask LocalCluster: {n} worker(s), dashboard {client.dashboard_link}", err=True)
        yield client


def _run(sweep_path: Path, store_path: Path | None, workers: int | None, scheduler: str | None,
         progress: bool) -> None:
    sweep_file = load_sweep(sweep_path)
    path = store_path or Path("store") / f"{sweep_file.sweep.name}.zarr"
    start = time.perf_counter()
    with _client(workers, scheduler) as client:
        report = run_sweep(sweep_file, path, client, progress=progress)
    st = store.status(path)
    click.echo(f"{path}: {st['tasks_done']}/{st['tasks_total']} tasks done "
               f"({report.tasks_computed} computed now) in {time.perf_counter() - start:.1f} s")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rmtsweep")
def cli() -> None:
    """Monte Carlo sweeps of attention-style pooling, held against random-matrix theory."""


_workers = click.option("--workers", type=click.IntRange(min=1), default=None,
                        help="LocalCluster worker processes (default: the machine's cores).")
_scheduler = click.option("--scheduler", default=None, metavar="ADDRESS",
                          help="Connect to an existing dask scheduler instead, e.g. tcp://host:8786.")
_progress = click.option("--progress/--no-progress", default=True, show_default=True,
                         help="Show a progress bar (tasks done, rate, ETA).")


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=None,
              help="Zarr store to write or resume (default: store/<sweep name>.zarr).")
@_workers
@_scheduler
@_progress
def run(sweep: Path, store_path: Path | None, workers: int | None, scheduler: str | None, progress: bool) -> None:
    """Run (or resume) the sweep defined in SWEEP."""
    _run(sweep, store_path, workers, scheduler, progress)


@cli.command()
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=Path("store/demo.zarr"),
              show_default=True, help="Where to write the demo store.")
@_workers
@_progress
def demo(store_path: Path, workers: int | None, progress: bool) -> None:
    """Run sweeps/demo.yaml on a local dask cluster."""
    if not DEMO.exists():
        raise RmtsweepError(f"{DEMO}: the demo sweep is missing (install from a source checkout)")
    store_path.parent.mkdir(parents=True, exist_ok=True)
    _run(DEMO, store_path, workers, None, progress)
    click.echo(f"read it with: python -c \"import xarray as xr; print(xr.open_zarr('{store_path}'))\"")


@cli.command()
@click.argument("store_path", metavar="STORE", type=click.Path(path_type=Path))
def status(store_path: Path) -> None:
    """Show how much of the sweep in STORE is done, and what produced it."""
    st = store.status(store_path)
    a = st["attrs"]
    done, total = st["tasks_done"], st["tasks_total"]
    state = "complete" if done == total else "incomplete"
    click.echo(f"{store_path}: sweep {a['sweep_name']} (hash {a['sweep_hash'][:12]}), "
               f"rmtsweep {a['rmtsweep_version']}, git {a['git_revision']}, created {a['created']}")
    click.echo(f"tasks done: {done} / {total} ({100 * done / total:.1f}%), replicates "
               f"{st['replicates_done']} / {st['replicates_total']}: {state}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``rmtsweep`` script."""
    try:
        cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RmtsweepError as exc:
        click.echo(f"rmtsweep: error: {exc}", err=True)
        sys.exit(2)
if __name__ == "__main__":
    main()
