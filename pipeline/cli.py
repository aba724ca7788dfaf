"""The ``rmtsweep`` command line: the only module that knows all the others.

User mistakes (:class:`~rmtsweep.errors.RmtsweepError`) print one line on stderr and exit with
status 2, never a traceback.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import click

from . import store
from .engine import Engine, Stopped, connect, make_engine, on_sigterm, quiet_shutdown
from .errors import RmtsweepError, RunError, StoreError
from .run import run_sweep
from .shipped import resolve_sweep, sweeps as shipped_sweeps
from .spec import SweepFile, load_sweep

__all__ = ["cli", "main"]


def _store_path(sweep_file: SweepFile, store_path: Path | None) -> Path:
    """``--store``, or the default ``store/<sweep name>.zarr`` (creating ``store/``)."""
    if store_path is not None:
        return store_path
    Path("store").mkdir(exist_ok=True)
    return Path("store") / f"{sweep_file.sweep.name}.zarr"


def _run(sweep_path: Path, store_path: Path | None, engine: Engine, progress: bool, force: bool = False,
         writes: str = "workers") -> Path:
    sweep_file = load_sweep(resolve_sweep(sweep_path))
    path = _store_path(sweep_file, store_path)
    store.Store(path).check()
    start = time.perf_counter()
    with connect(engine) as (client, capacity):
        report = run_sweep(sweep_file, path, client, progress=progress, force=force, writes=writes,
                           expected_threads=capacity.expected_threads, memory_per_thread=capacity.memory_per_thread,
                           notes=lambda line: click.echo(line, err=True))
    st = store.status(path)
    click.echo(f"{path}: {st['tasks_done']}/{st['tasks_total']} tasks done "
               f"({report.tasks_computed} computed now) in {time.perf_counter() - start:.1f} s")
    return path


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rmtsweep")
def cli() -> None:
    """Monte Carlo sweeps of attention-style pooling, held against random-matrix theory."""


_workers = click.option("--workers", type=click.IntRange(min=1), default=None,
                        help="LocalCluster worker processes (default: the machine's cores).")
_progress = click.option("--progress/--no-progress", default=True, show_default=True,
                         help="Show a progress bar (tasks done, rate, ETA).")
_insecure = click.option("--insecure", is_flag=True, help="No TLS for the --cluster slurm|pbs scheduler (default: TLS "
                         "with this run's own credentials): anyone who can reach it could run code as you.")
_dashboard = click.option("--dashboard-address", default=None, metavar="HOST:PORT",
                          help="Where the dashboard listens (default: loopback; reach it through ssh -L).")
_store = click.option("--store", "store_path", type=click.Path(path_type=Path), default=None,
                      help="Zarr store to write, resume or extend (default: store/<sweep name>.zarr).")


def _batch_options(f):
    """The dask-jobqueue options shared by `run` and `submit` (each overrides the config file)."""
    options = [
        click.option("--jobs", type=click.IntRange(min=1), default=None,
                     help="Batch jobs of workers at most (adaptive; default: max_jobs of the config)."),
        click.option("--cluster-config", type=click.Path(path_type=Path), default=None,
                     help="dask-jobqueue settings (default: deploy/<cluster>/jobqueue.yaml)."),
        click.option("--queue", default=None, help="Override the config's queue / partition."),
        click.option("--account", default=None, help="Override the config's account."),
        click.option("--cores", type=int, default=None, help="Override the cores per job."),
        click.option("--memory", default=None, help="Override the memory per job, e.g. 4GB."),
        click.option("--walltime", default=None, help="Override the walltime per job, HH:MM:SS."),
        click.option("--interface", default=None, help="Override the network interface, e.g. ib0."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@_store
@click.option("--cluster", type=click.Choice(["local", "slurm", "pbs"]), default="local", show_default=True,
              help="Where workers run: an embedded LocalCluster, or jobs of a batch system (dask-jobqueue).")
@_workers
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Connect to an existing dask scheduler instead, e.g. tls://host:8786.")
@click.option("--security", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="TLS credentials for --scheduler tls://... (YAML: ca_file, cert, key).")
@_batch_options
@_insecure
@_dashboard
@click.option("--force", is_flag=True, help="Run even if the memory estimate per task exceeds the workers'.")
@click.option("--writes", type=click.Choice(["workers", "driver"]), default="workers", show_default=True,
              help="Who writes each task's data chunks: the workers (the store must be on a filesystem they "
                   "see) or this process.")
@_progress
def run(sweep: Path, store_path: Path | None, progress: bool, force: bool, writes: str, **engine) -> None:
    """Run, resume or extend the sweep defined in SWEEP (a file, or a shipped sweep's name: `rmtsweep sweeps`)."""
    _run(sweep, store_path, make_engine(**engine), progress, force, writes)


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@_store
@click.option("--cluster", type=click.Choice(["slurm", "pbs"]), required=True,
              help="The batch system that runs the driver job and its workers.")
@_batch_options
@_insecure
@_dashboard
@click.option("--dry-run", is_flag=True, help="Print the driver and worker job scripts; submit nothing.")
def submit(sweep: Path, store_path: Path | None, dry_run: bool, **engine) -> None:
    """Submit a driver job that runs SWEEP on the batch system and prints its job id."""
    from .clusters import driver_script, submit_driver, worker_job_script

    sweep = resolve_sweep(sweep)
    sweep_file = load_sweep(sweep)
    path = _store_path(sweep_file, store_path)
    eng = make_engine(**engine)
    config = eng.batch_config()
    script = driver_script(eng.cluster, config, sweep, path, eng.cluster_config, eng.jobs, eng.insecure,
                           eng.dashboard_address)
    if dry_run:
        workers = worker_job_script(eng.cluster, config, eng.insecure)
        click.echo(f"# driver job script\n{script}\n# worker job script\n{workers}")
        return
    job = submit_driver(eng.cluster, script, path.absolute().parent)
    click.echo(f"submitted driver job {job}; follow it with `rmtsweep status {path}`")


@cli.command()
@click.option("--store", "store_path", type=click.Path(path_type=Path), default=Path("store/demo.zarr"),
              show_default=True, help="Where to write the demo store.")
@_workers
@_progress
def demo(store_path: Path, workers: int | None, progress: bool) -> None:
    """Run the shipped demo sweep on a local dask cluster, compare it with theory, draw two maps."""
    _run(resolve_sweep("demo"), store_path, Engine(workers=workers), progress)
    click.echo(f"read it with: python -c \"import rmtsweep; print(rmtsweep.open_store('{store_path}'))\"")
    from .analysis.compare import compare as compare_store, write_comparison
    from .analysis.plots import plot_map
    cmp = compare_store(store_path)
    write_comparison(store_path, cmp)
    click.echo(f"comparison written to {store_path} (group 'comparison'); "
               f"{int(cmp['phase_agrees'].sum())}/{int(cmp['phase_agrees'].count())} cells in the predicted phase")
    maps = store_path.parent / "maps"
    for x, y, var in (("snr", "gamma", "overlap"), ("snr", "weights", "lambda1_z")):
        html, png = plot_map(store_path, x, y, var, maps)
        click.echo(f"map of {var} over ({x}, {y}): {html} and {png}")


@cli.command(name="sweeps")
def list_sweeps() -> None:
    """List the sweeps shipped with rmtsweep (run any of them by name: `rmtsweep run NAME`), with their d."""
    for name, (path, description) in shipped_sweeps().items():
        click.echo(f"{name:28s} {_d_text(path):26s} {description or '(no description)'}")


def _d_text(path: Path) -> str:
    """``d = 400`` for a top-level d, ``d axis: 100, 200, 400`` for ``grid.d`` ('' for a file that does not load)."""
    try:
        sweep = load_sweep(path).sweep
    except RmtsweepError:
        return ""
    values = ", ".join(map(str, sweep.d_values))
    return f"d axis: {values}" if sweep.d_axis else f"d = {values}"


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
    if st["d_axis"] is not None:
        click.echo(f"d axis: {', '.join(map(str, st['d_axis']))} (d is a grid axis: one d value per task)")
    runs = a.get("runs", [])
    keys = ("sweep_hash", "rmtsweep_version", "git_revision")
    if len({tuple(r.get(k) for k in keys) for r in runs}) > 1:
        click.echo("the store was written by runs that differ in sweep, version or revision:")
        for r in runs:
            n = st["replicates_by_run"].get(r["run"], 0)
            click.echo(f"  run {r['run']} started {r['started']}: {n} replicates, sweep {r['sweep_hash'][:12]}, "
                       f"rmtsweep {r['rmtsweep_version']}, git {r['git_revision']}, {r['sweep_file']}")


VERIFY_LINES = 20


@cli.command()
@click.argument("store_path", metavar="STORE", type=click.Path(path_type=Path))
@click.option("--repair", is_flag=True, help="Clear the done flags of corrupt tasks, so the next run recomputes them.")
def verify(store_path: Path, repair: bool) -> None:
    """Check that every finished task of STORE has all its chunks, each matching its checksum; name the bad
    tasks, one line each (exit 1 if any): done without data, or corrupt."""
    store.open_dataset(store_path)                          # a one-line error if it is not a store
    bad = store.corrupt_tasks(store_path)
    if not bad:
        click.echo(f"{store_path}: every finished task's chunks are present, read back and match their checksums")
        return
    for item in bad[:VERIFY_LINES]:
        click.echo(f"{store_path}: {item}")
    if len(bad) > VERIFY_LINES:
        click.echo(f"... and {len(bad) - VERIFY_LINES} more bad task(s)")
    if repair:
        n = store.repair(store_path, bad)
        click.echo(f"{store_path}: cleared the done flags of {n} task(s); rerun `rmtsweep run` on its sweep to "
                   f"recompute exactly those")
        return
    click.echo(f"{store_path}: {len(bad)} bad task(s) (done without data, or corrupt); `rmtsweep verify {store_path} "
               f"--repair` clears them for the next run")
    sys.exit(1)


@contextmanager
def _corruption_named(path: Path) -> Iterator[None]:
    """Turn a failure to read a corrupt chunk into one line naming the task and the repair."""
    try:
        yield
    except (RmtsweepError, click.ClickException):
        raise
    except Exception:
        bad = store.corrupt_tasks(path, limit=1) if store.is_store(path) else []
        if not bad:
            raise
        raise StoreError(f"{path}: {bad[0]}; run `rmtsweep verify {path} --repair`, then `rmtsweep run` to "
                         f"recompute it") from None


@cli.command()
@click.argument("store_path", metavar="STORE", type=click.Path(path_type=Path))
@click.option("--margin-factor", type=click.FloatRange(min=0.0), default=None,
              help="Detection margin in units of kappa lambda_+ d^(-2/3) (default 1).")
@click.option("--write/--no-write", default=True, show_default=True,
              help="Write the comparison into STORE as the zarr group 'comparison'.")
@click.option("--worst", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many worst cells to list per quantity.")
def compare(store_path: Path, margin_factor: float | None, write: bool, worst: int) -> None:
    """Hold the Monte Carlo in STORE against its theory; print a summary (works while it fills)."""
    from .analysis.compare import MARGIN_FACTOR, compare as compare_store, summary, write_comparison
    with _corruption_named(store_path):
        cmp = compare_store(store_path, MARGIN_FACTOR if margin_factor is None else margin_factor)
    click.echo(summary(cmp, worst))
    if write:
        write_comparison(store_path, cmp)
        click.echo(f"written: xr.open_zarr('{store_path}', group='comparison')")


def _selection(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        dim, sep, value = item.partition("=")
        if not sep:
            raise RmtsweepError(f"--select {item!r}: expected DIM=VALUE, e.g. --select snr=3.0")
        out[dim] = value
    return out


@cli.command()
@click.argument("store_path", metavar="STORE", type=click.Path(path_type=Path))
@click.option("--x", "x", required=True, help="Grid axis across: delta, gamma, snr, T, weights (or d, if an axis).")
@click.option("--y", "y", required=True, help="Grid axis up: delta, gamma, snr, T, weights (or d, if an axis).")
@click.option("--var", "var", required=True, help="Store or comparison variable, e.g. overlap, lambda1_z.")
@click.option("--out", type=click.Path(path_type=Path), default=Path("maps"), show_default=True,
              help="Directory for the maps (created if missing), or a file such as fig.pdf (its suffix is the "
                   "format).")
@click.option("--widgets/--facets", default=None,
              help="HTML with widgets or facets over the other axes (default: facets up to 12 panels).")
@click.option("--select", "select", multiple=True, metavar="DIM=VALUE",
              help="Fix an axis (or k) first, e.g. --select d=400.")
@click.option("--format", "formats", multiple=True, metavar="FMT",
              help="html, png, svg or pdf; repeat or comma-separate, e.g. --format png,pdf (default: html and png).")
@click.option("--clim", default=None, metavar="LO,HI",
              help="Colour limits instead of the chosen ones (0-1 for rates and alignments, robust otherwise).")
def plot(store_path: Path, x: str, y: str, var: str, out: Path, widgets: bool | None,
         select: tuple[str, ...], formats: tuple[str, ...], clim: str | None) -> None:
    """Heat map of VAR over the axes X and Y of STORE, with the theory's transitions (HTML + PNG by default).

    Every panel is drawn: beyond 24, static files are split into pages NAME-p1.png, NAME-p2.png, ...
    """
    from .analysis.plots import plot_map
    with _corruption_named(store_path):
        paths = plot_map(store_path, x, y, var, out, widgets, _selection(select), clim=clim,
                         formats=formats or None, notes=lambda line: click.echo(line, err=True))
    for path in paths:
        click.echo(path)


@cli.command()
@click.argument("stores", metavar="STORE...", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), default=Path("figures"), show_default=True,
              help="Directory for the figures (one subdirectory per store).")
def figures(stores: tuple[Path, ...], out: Path) -> None:
    """The paper's figures from the stores of sweeps/paper-*.yaml."""
    from .analysis.figures import figures as make_figures
    files, notes = make_figures(list(stores), out)
    for note in notes:
        click.echo(note)
    for f in files:
        click.echo(f)


@cli.command()
@click.argument("store_path", metavar="STORE", type=click.Path(path_type=Path))
@click.option("--format", "fmt", default="csv", show_default=True, help="csv (tidy table) or netcdf.")
@click.option("--out", type=click.Path(path_type=Path), required=True, help="Output file.")
@click.option("--group", default=None, help="Export a group of the store instead, e.g. comparison.")
@click.option("--var", "variables", multiple=True, help="Only these variables (repeatable).")
@click.option("--phase-diagram", is_flag=True,
              help="Write the transition curves instead: per SNR line the empirical transition SNR with a "
                   "bootstrap interval over replicates, and theory's population and sample thresholds (CSV).")
@click.option("--bootstrap", "n_boot", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Bootstrap resamples per line (--phase-diagram).")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Coverage of the bootstrap interval (--phase-diagram).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the bootstrap (--phase-diagram).")
def export(store_path: Path, fmt: str, out: Path, group: str | None, variables: tuple[str, ...],
           phase_diagram: bool, n_boot: int, level: float, seed: int) -> None:
    """Export STORE (or its comparison group) as tidy CSV or netCDF, or its phase diagram as CSV."""
    from .analysis.export import export as export_store, export_phase_diagram
    with _corruption_named(store_path):
        if phase_diagram:
            if fmt != "csv" or group or variables:
                raise RmtsweepError("--phase-diagram writes one CSV table of the store's SNR lines; drop "
                                    "--format, --group and --var")
            written, method = export_phase_diagram(store_path, out, n_boot, level, seed,
                                                   notes=lambda line: click.echo(line, err=True))
            click.echo(f"{written}: transition SNR per line ({method})")
        else:
            click.echo(export_store(store_path, out, fmt, group, list(variables) or None,
                                    notes=lambda line: click.echo(line, err=True)))


def _os_error(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}" if exc.strerror else f"{where}{type(exc).__name__}: {exc}"


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``rmtsweep`` script.

    Exit status: 0 done; 1 a run failure (a task that keeps failing, an I/O error such as a full disk,
    a lost lock, a batch system that cannot run the workers); 2 a user mistake (bad sweep file, option,
    store path or --scheduler address); 130 interrupted (Ctrl-C); 143 stopped by SIGTERM. Each failure
    prints one line, never a traceback; finished tasks stay in the store and rerunning the same command
    resumes.
    """
    previous = signal.signal(signal.SIGTERM, on_sigterm) if threading.current_thread() is threading.main_thread() \
        else None
    try:
        cli.main(args=argv, standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        quiet_shutdown()
        click.echo("rmtsweep: interrupted; finished tasks are in the store: rerun the same command to resume",
                   err=True)
        sys.exit(130)
    except Stopped:
        click.echo("rmtsweep: stopped by SIGTERM; rerun the same command to resume", err=True)
        sys.exit(143)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except RmtsweepError as exc:
        click.echo(f"rmtsweep: error: {exc}", err=True)
        sys.exit(2)
    except RunError as exc:
        click.echo(f"rmtsweep: error: {exc}", err=True)
        sys.exit(1)
    except OSError as exc:
        click.echo(f"rmtsweep: error: {_os_error(exc)}", err=True)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    main()
