"""``run``, ``submit``, ``demo``, ``sweeps`` and ``show``: the commands that start work (or show what can be started).

Heavy modules (the store, dask, the theory) are imported inside the commands, so that ``--help``
answers at once.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

import click

from ..errors import ClusterError, RmtsweepError
from ._group import STORE_LOCATION, STORE_PATH, cli, storage_options

if TYPE_CHECKING:
    from ..cluster.engine import Engine
    from ..run.grid import Order
    from ..spec import SweepFile
    from ..types import ClusterKind, Writes

__all__ = ["demo", "list_sweeps", "run", "show", "submit", "work"]


def _store_path(sweep_file: SweepFile, store_path: Path | None, create: bool = True) -> Path:
    """``--store``, or the default ``store/<sweep name>.zarr`` (creating ``store/`` if ``create``)."""
    if store_path is not None:
        return store_path
    if create:
        Path("store").mkdir(exist_ok=True)
    return Path("store") / f"{sweep_file.sweep.name}.zarr"


def _load(sweep: Path, overrides: tuple[str, ...] = ()) -> SweepFile:
    """The sweep file (or shipped sweep) ``sweep`` with the command line's ``KEY=VALUE`` overrides."""
    from ..shipped import resolve_sweep
    from ..spec import load_sweep
    return load_sweep(resolve_sweep(sweep), overrides)


def _run(sweep_file: SweepFile, store_path: Path | None, engine: Engine, progress: bool, force: bool = False,
         writes: Writes = "workers", share: tuple[int, int] | None = None, order: Order = "progressive") -> Path:
    from .. import store
    from ..cluster.engine import connect
    from ..run import open_run, run_sweep
    from ..run.recorded import resume_check
    from .dry_run import planned_threads
    from ..store.lock import conflicts
    path = _store_path(sweep_file, store_path)
    store.Store(store.locate(path)).check(sweep_file)   # a store this sweep cannot resume: refused before the cluster
    resume_check(sweep_file, path)                      # ... or whose theory cannot be computed as it recorded
    if not force and not store.is_store(path):          # a new store's tasks must fit the workers it will have
        from .dry_run import refuse_impossible
        refuse_impossible(sweep_file.sweep, engine)
    if share is None:                     # a store another run of this host writes: refused before the cluster starts
        conflicts(path, None, lease=0.0, tidy=False)
    start = time.perf_counter()

    def echo(line: str) -> None:
        click.echo(line, err=True)
    threads = planned_threads(engine)
    if threads:            # the store, its template and its lock before the cluster: `status` answers while it starts
        with open_run(sweep_file, path, threads, notes=echo, share=share) as opened, \
                connect(engine, notes=echo) as (client, capacity):
            report = opened.compute(client, progress, force, writes, capacity.expected_threads,
                                    capacity.memory_per_thread, order)
    else:                  # --scheduler: the tasks' size waits for its workers' threads
        with connect(engine, notes=echo) as (client, capacity):
            report = run_sweep(sweep_file, path, client, progress=progress, force=force, writes=writes,
                               expected_threads=capacity.expected_threads, memory_per_thread=capacity.memory_per_thread,
                               notes=echo, share=share, order=order)
    done, total = store.tasks_done(path)
    click.echo(f"{path}: {done}/{total} tasks done "
               f"({report.tasks_computed} computed now) in {time.perf_counter() - start:.1f} s")
    return path


_workers = click.option("--workers", type=click.IntRange(min=1), default=None,
                        help="LocalCluster worker processes (default: the machine's cores).")
_progress = click.option("--progress/--no-progress", default=True, show_default=True,
                         help="Show a progress bar (tasks done, rate, ETA).")
_insecure = click.option("--insecure", is_flag=True, help="No TLS for the --cluster slurm|pbs scheduler (default: TLS "
                         "with this run's own credentials): anyone who can reach it could run code as you.")
_dashboard = click.option("--dashboard-address", default=None, metavar="HOST:PORT|none",
                          envvar="RMTSWEEP_DASHBOARD_ADDRESS", show_envvar=True,
                          help="Where the dask dashboard listens, e.g. 127.0.0.1:0 (loopback, any free port; reach "
                               "it through ssh -L). Default: none on this machine (a run starts about a second "
                               "sooner), loopback for --cluster slurm|pbs; none: no dashboard.")
_in_process = click.option("--in-process", is_flag=True, envvar="RMTSWEEP_IN_PROCESS", show_envvar=True,
                           help="The LocalCluster's workers as threads of this process, not worker processes: a run "
                                "starts about 1.5 s sooner (small sweeps, tests); a crash in a task ends "
                                "the run.")
_store = click.option("--store", "store_path", type=STORE_PATH, default=None,
                      help="Zarr store to write, resume or extend (default: store/<sweep name>.zarr).")
_store_or_url = click.option("--store", "store_path", type=STORE_LOCATION, default=None,
                             help="Zarr store to write, resume or extend (default: store/<sweep name>.zarr), or a URL "
                                  "of object storage (s3://bucket/run.zarr; with --storage-option).")


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


_overrides = click.argument("overrides", nargs=-1, metavar="[KEY=VALUE | ~KEY]...")


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@_overrides
@_store_or_url
@storage_options
@click.option("--cluster", type=click.Choice(["local", "slurm", "pbs"]), default="local", show_default=True,
              help="Where workers run: an embedded LocalCluster, or jobs of a batch system (dask-jobqueue).")
@_workers
@_in_process
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Connect to an existing dask scheduler instead, e.g. tls://host:8786.")
@click.option("--scheduler-file", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="... or to the one that wrote FILE (dask scheduler --scheduler-file FILE).")
@click.option("--security", type=click.Path(path_type=Path), default=None, metavar="FILE",
              help="TLS credentials for --scheduler tls://... (YAML: ca_file, cert, key).")
@_batch_options
@_insecure
@_dashboard
@click.option("--force", is_flag=True, help="Run even if the memory estimate per task exceeds the workers'.")
@click.option("--writes", type=click.Choice(["workers", "driver"]), default="workers", show_default=True,
              help="Who writes each task's data chunks: the workers (the store must be on a filesystem they "
                   "see, or in a bucket they can reach) or this process.")
@click.option("--order", type=click.Choice(["progressive", "grid"]), default="progressive", show_default=True,
              help="progressive: every point gets a first block of replicates before any gets a second, so a "
                   "partly done store covers the whole grid; grid: each point's replicates in turn. Same results.")
@click.option("--dry-run", is_flag=True, help="Print the points, tasks, memory per task, the cost model's "
              "core-hours, the estimated wall time and the store a run would write; start nothing, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: print the same as JSON.")
@_progress
def run(sweep: Path, overrides: tuple[str, ...], store_path: Path | None, progress: bool, force: bool, writes: Writes,
        order: Order, dry_run: bool, as_json: bool, **engine) -> None:
    """Run, resume or extend the sweep defined in SWEEP (a file, or a shipped sweep's name: `rmtsweep sweeps`).

    KEY=VALUE overrides a field of the sweep file (a dotted path, a YAML value; a comma list is a list),
    ~KEY removes one, e.g. `rmtsweep run demo d=400 grid.T=4,16 replicates=32`; they are kept in the
    store's provenance, and a resume needs the same ones.
    """
    from ..cluster.engine import make_engine
    sweep_file = _load(sweep, overrides)
    eng = make_engine(**engine)
    if dry_run:
        from .dry_run import dry_run as print_dry_run
        print_dry_run(sweep_file, _store_path(sweep_file, store_path, create=False), eng, as_json)
        return
    if as_json:
        raise click.UsageError("--json goes with --dry-run")
    _run(sweep_file, store_path, eng, progress, force, writes, order=order)


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@_overrides
@_store_or_url
@storage_options
@click.option("--cluster", type=click.Choice(["slurm", "pbs"]), required=True,
              help="The batch system that runs the driver job and its workers.")
@_batch_options
@_insecure
@_dashboard
@click.option("--array", "elements", type=click.IntRange(min=1), default=None, metavar="N",
              help="Submit a job array of N elements instead of a driver: each computes every Nth task on its "
                   "node's cores (no scheduler, no network between jobs).")
@click.option("--max-running", type=click.IntRange(min=1), default=None, metavar="M",
              help="With --array: at most M elements at once.")
@click.option("--dry-run", is_flag=True, help="Print the job scripts; submit nothing.")
def submit(sweep: Path, overrides: tuple[str, ...], store_path: Path | None, dry_run: bool, elements: int | None,
           max_running: int | None, **engine) -> None:
    """Submit a driver job that runs SWEEP (with KEY=VALUE overrides, as `run`) and prints its job id.

    With --array N, make the store here and submit a job array instead: element I runs
    `rmtsweep work STORE --share I/N`. Submitting the same again after failures computes what is missing.
    """
    from ..cluster.batch import driver_script, submit_driver, worker_job_script
    from ..cluster.engine import make_engine
    from ..store.location import format_storage_options, local_path, locate

    sweep_file = _load(sweep, overrides)
    path = locate(_store_path(sweep_file, store_path, create=False))    # the driver job makes it (a dry run, nothing)
    eng = make_engine(**engine)
    if not dry_run:
        _refuse_another_sweep(sweep_file, path)
    config = eng.batch_config()
    kind = cast("ClusterKind", eng.cluster)   # --cluster: slurm or pbs
    if elements is not None:
        _submit_array(sweep_file, local_path(path), kind, config, elements, max_running, dry_run)
        return
    if max_running is not None:
        raise click.UsageError("--max-running goes with --array")
    # the driver job is given the store's absolute path or URL; its script goes beside the store, or here
    script = driver_script(kind, config, Path(sweep_file.path), path.job_address(),
                           eng.cluster_config, eng.jobs, eng.insecure, eng.dashboard_address, overrides,
                           format_storage_options(path.storage_options))
    if dry_run:
        workers = worker_job_script(kind, config, eng.insecure)
        click.echo(f"# driver job script\n{script}\n# worker job script\n{workers}")
        return
    job = submit_driver(kind, script, path.local_directory())
    click.echo(f"submitted driver job {job}; follow it with `rmtsweep status {path}`")


def _refuse_another_sweep(sweep_file: SweepFile, path) -> None:
    """Refuse here, not in the driver job after its wait in the queue, a store that holds another sweep.

    Only a store this node can read is checked: storage the compute nodes reach and this one cannot is left
    to the driver job.
    """
    from ..errors import StorageUnavailableError
    from ..store import is_store, open_group
    from ..store.handle import sweep_plan
    try:
        if is_store(path):
            sweep_plan(dict(open_group(path).attrs), sweep_file, path)
    except StorageUnavailableError:
        pass


def _submit_array(sweep_file: SweepFile, path: Path, kind: ClusterKind, config, elements: int, max_running: int | None,
                  dry_run: bool) -> None:
    from ..cluster.arrays import after_option, array_parts, array_script, site_array_limit
    from ..cluster.batch import submit_driver
    from ..run import ready_store
    limit = site_array_limit(kind)
    parts = array_parts(elements, limit)
    scripts = [array_script(kind, config, path, elements, max_running, part) for part in parts]
    # with --max-running, each array waits for the one before it: at most M elements at once in all
    chained = max_running is not None
    if dry_run:
        for k, ((first, count), script) in enumerate(zip(parts, scripts, strict=True)):
            what = f"elements {first}-{first + count - 1} of {elements}" if len(parts) > 1 else f"{elements} elements"
            after = (f"; submitted with {' '.join(after_option(kind, f'<job id of array {k}>'))}"
                     if chained and k else "")
            click.echo(f"# job array script {k + 1}/{len(parts)} ({what}{after})\n{script}")
        if len(parts) > 1:
            click.echo(f"# {len(parts)} arrays: this {kind} site takes at most {limit} elements in one")
        return
    path.absolute().parent.mkdir(parents=True, exist_ok=True)
    total, left = ready_store(sweep_file, path, config.cores, elements)   # tasks sized for one element's threads
    if not left:
        click.echo(f"{path}: all {total} tasks are done; nothing submitted")
        return
    jobs: list[str] = []
    for (first, count), script in zip(parts, scripts, strict=True):
        options = after_option(kind, jobs[-1]) if chained and jobs else ()
        try:
            name = "array" if len(parts) == 1 else f"array-{first}-{first + count - 1}"     # one script file each
            jobs.append(submit_driver(kind, script, path.absolute().parent, name=name, options=options))
        except ClusterError as exc:
            if not jobs:
                raise
            raise ClusterError(f"{exc} (after submitting job arrays {', '.join(jobs)}, elements 0-{first - 1} of "
                               f"{elements}: once they end, submit the same command again for the rest)") from None
    arrays = (f"job array {jobs[0]} of {elements} elements" if len(jobs) == 1 else
              f"{len(jobs)} job arrays {', '.join(jobs)} of {' + '.join(str(c) for _, c in parts)} elements "
              f"(at most {limit} in one array here" + ("; each after the one before" if chained else "") + ")")
    click.echo(f"{path}: {left} of {total} tasks to compute; submitted {arrays}; "
               f"follow it with `rmtsweep status {path}`")


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_PATH)
@click.option("--share", "share_text", required=True, metavar="I/N",
              help="Compute element I (from 0) of an array of N: every Nth task of the store, from its Ith.")
@_workers
@_in_process
@_dashboard
@_progress
def work(store_path: Path, share_text: str, workers: int | None, in_process: bool, dashboard_address: str | None,
         progress: bool) -> None:
    """Compute one element's share of the sweep in STORE, beside the other elements of its job array.

    What a job array's element runs (`rmtsweep submit SWEEP --cluster slurm --array N` makes the store and
    submits the array): the sweep is the store's own, the workers a LocalCluster of this node's cores.
    Elements of one array run side by side; a `run` of the store, or an array of another size, is refused
    while one is running. Stopped (SIGTERM before the walltime, Ctrl-C), it loses only its tasks in flight.
    """
    from .. import store
    from ..cluster.engine import make_engine
    from ..spec import SweepFile
    from ..store.lock import conflicts
    share = _parse_share(share_text)
    attrs = store.open_store(store_path).attrs          # a path that is no store: one line naming why
    conflicts(store_path, share, tidy=False)              # refused before the cluster starts, not seconds after
    sweep = store.stored_sweep(store_path, attrs)
    sweep_file = SweepFile(sweep, f"{store_path} (its stored sweep)", attrs["sweep_canonical"])
    _run(sweep_file, store_path, make_engine("local", workers=workers or _node_cores(), in_process=in_process,
                                             dashboard_address=dashboard_address), progress, share=share)


def _parse_share(text: str) -> tuple[int, int]:
    """``"I/N"`` as ``(I, N)``, ``0 <= I < N``, or a one-line usage error."""
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not I/N, e.g. 3/64", param_hint="--share") from None
    if not 0 <= i < n:
        raise click.BadParameter(f"{text!r}: I must be in 0..N-1", param_hint="--share")
    return i, n


def _node_cores() -> int:
    """The cores this job was given (SLURM, PBS), else those this process may run on."""
    import os
    for name in ("SLURM_CPUS_PER_TASK", "NCPUS", "PBS_NCPUS"):
        if os.environ.get(name, "").isdigit() and int(os.environ[name]) > 0:
            return int(os.environ[name])
    return len(os.sched_getaffinity(0))


@cli.command()
@click.option("--store", "store_path", type=STORE_PATH, default=Path("store/demo.zarr"),
              show_default=True, help="Where to write the demo store.")
@_workers
@_progress
@_dashboard
def demo(store_path: Path, workers: int | None, progress: bool, dashboard_address: str | None) -> None:
    """Run the shipped demo sweep on a local dask cluster, compare it with theory, draw two maps."""
    from ..cluster.engine import Engine
    _run(_load(Path("demo")), store_path, Engine(workers=workers, dashboard_address=dashboard_address), progress)
    click.echo(f"read it with: python -c \"import rmtsweep; print(rmtsweep.open_store('{store_path}'))\"")
    from ..analysis.compare import compare as compare_store, write_comparison
    from ..analysis.maps.plot import plot as plot_store
    cmp = compare_store(store_path)
    write_comparison(store_path, cmp)
    click.echo(f"comparison written to {store_path} (group 'comparison'); "
               f"{int(cmp['phase_agrees'].sum())}/{int(cmp['phase_agrees'].count())} cells in the predicted phase")
    maps = store_path.parent / "maps"
    for x, y, var in (("snr", "gamma", "overlap"), ("snr", "weights", "lambda1_z")):
        html, png = plot_store(store_path, x, y, var).save(maps)
        click.echo(f"map of {var} over ({x}, {y}): {html} and {png}")


@cli.command()
@click.argument("sweep", type=click.Path(path_type=Path))
@_overrides
def show(sweep: Path, overrides: tuple[str, ...]) -> None:
    """Print the sweep SWEEP resolves to, with KEY=VALUE overrides (as `run`), as a sweep file (YAML).

    Every default is filled in: the output is what a run would use, and run as a file it is the same
    sweep (the same hash).
    """
    sweep_file = _load(sweep, overrides)
    with_overrides = f" with {' '.join(sweep_file.overrides)}" if sweep_file.overrides else ""
    click.echo(f"# sweep {sweep_file.sweep.name} ({sweep_file.path}{with_overrides}), "
               f"hash {sweep_file.sweep.digest()[:12]}")
    click.echo(sweep_file.sweep.to_yaml(), nl=False)


@cli.command(name="sweeps")
def list_sweeps() -> None:
    """List the sweeps shipped with rmtsweep (run any of them by name: `rmtsweep run NAME`): d, size, cost."""
    from ..shipped import sweeps as shipped_sweeps
    click.echo(f"{'name':28s} {'d':22s} {'points':>7s} {'one core':>9s}  description")
    for name, (path, description) in shipped_sweeps().items():
        click.echo(f"{name:28s} {_size_text(path)}  {description or '(no description)'}")


def _size_text(path: Path) -> str:
    """A sweep file's d (``400``, or the axis ``100,200,400``), points and the cost model's core-hours."""
    from ..run.plan import plan
    from ..spec import load_sweep
    try:
        sweep = load_sweep(path).sweep
    except RmtsweepError as exc:
        return f"{'(does not load: ' + str(exc)[:60] + ')':40s}"
    the_plan = plan(sweep)
    d = ("axis " if sweep.d_axis else "") + ",".join(map(str, sweep.d_values))
    from .dry_run import duration
    return f"{d:22s} {the_plan.points:7d} {duration(the_plan.core_seconds):>9s}"
