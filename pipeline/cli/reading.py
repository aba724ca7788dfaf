"""``status``, ``verify``, ``compare``, ``plot``, ``figures`` and ``export``: the commands that read a store.

Heavy modules are imported inside the commands, so that ``--help`` answers at once.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..errors import RmtsweepError, StoreError, UserError
from ._group import STORE_LOCATION, cli, storage_options

if TYPE_CHECKING:
    from ..store.backend import Location
    from ..store.io import StoreStatus

__all__ = ["compare", "export", "figures", "plot", "status", "verify"]


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead (for scripts and dashboards).")
def status(store_path: Path, as_json: bool) -> None:
    """Show how much of the sweep in STORE is done, and what produced it."""
    from .. import store
    from ..store.pending import theory_pending
    st = store.status(store_path)
    a = st.attrs
    done, total = st.tasks_done, st.tasks_total
    overrides = a.get("sweep_overrides", [])
    runs = a.get("runs", [])
    writers = _writers(store_path, st)
    if as_json:
        keys = ("sweep_name", "sweep_hash", "sweep_file", "rmtsweep_version", "git_revision", "created")
        click.echo(json.dumps({
            "store": str(store_path), **{k: a.get(k) for k in keys}, "sweep_overrides": overrides,
            "tasks_done": done, "tasks_total": total, "replicates_done": st.replicates_done,
            "replicates_total": st.replicates_total, "complete": done == total,
            "d_axis": None if st.d_axis is None else [int(x) for x in st.d_axis],
            "theory_pending": theory_pending(a),
            "runs": [{**r, "replicates": st.replicates_by_run.get(r["run"], 0)} for r in runs],
            "writers": writers}, indent=1))
        return
    state = "complete" if done == total else "incomplete"
    with_overrides = f" with {' '.join(overrides)}" if overrides else ""
    click.echo(f"{store_path}: sweep {a['sweep_name']}{with_overrides} (hash {a['sweep_hash'][:12]}), "
               f"rmtsweep {a['rmtsweep_version']}, git {a['git_revision']}, created {a['created']}")
    click.echo(f"tasks done: {done} / {total} ({100 * done / total:.1f}%), replicates "
               f"{st.replicates_done} / {st.replicates_total}: {state}")
    if st.d_axis is not None:
        click.echo(f"d axis: {', '.join(map(str, st.d_axis))} (d is a grid axis: one d value per task)")
    if theory_pending(a):
        click.echo("theory at the store's size: not written yet (the run computes it beside its first tasks; a run "
                   "stopped before then leaves it to the next run); the limit theory is there")
    for w in writers:
        who = "a run" if w["share"] is None else f"array element {w['share'][0]} of {w['share'][1]}"
        left = "" if w["share"] is None else f", {w['tasks_left']} of its {w['tasks']} tasks left"
        state = {True: "", False: " (its process is gone: a stale lock)", None: ""}[w["alive"]]
        click.echo(f"writing: {who}, pid {w['pid']} on {w['host']} since {w['started']}{left}{state}")
    same = ("sweep_hash", "rmtsweep_version", "git_revision")
    if len({tuple(r.get(k) for k in same) for r in runs}) > 1:
        click.echo("the store was written by runs that differ in sweep, version or revision:")
        for r in runs:
            n = st.replicates_by_run.get(r["run"], 0)
            click.echo(f"  run {r['run']} started {r['started']}: {n} replicates, sweep {r['sweep_hash'][:12]}, "
                       f"rmtsweep {r['rmtsweep_version']}, git {r['git_revision']}, {r['sweep_file']}")


def _writers(store_path: Path, st: StoreStatus) -> list[dict]:
    """The store's lock holders (:func:`rmtsweep.store.lock.holders`); an array element's with its share's
    task counts."""
    from .. import store
    from ..run import Blocking
    from ..run.grid import tasks_left
    from ..store.lock import holders
    found = holders(store_path)             # on object storage too: the lock is an object beside the store
    if any(w["share"] is not None for w in found):
        sweep = store.stored_sweep(store_path, st.attrs)
        blocking = Blocking(*store.blocking_of(store_path))
        ds = store.open_store(store_path)
        done = ds["done"].values
        null_done = ds["null_done"].values if "null_done" in ds else None
        for w in found:
            if w["share"] is not None:
                share = tuple(w["share"])
                w["tasks"] = tasks_left(sweep, blocking, None, share)
                w["tasks_left"] = tasks_left(sweep, blocking, done, share, null_done)
    return [{k: v for k, v in w.items() if k not in ("token", "beat")} for w in found]


VERIFY_LINES = 20


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
@click.option("--repair", is_flag=True, help="Under the store's lock: rebuild damaged metadata from its other copy, "
              "rewrite damaged coordinates and theory from the store's sweep, and clear the done flags of corrupt "
              "tasks, so the next run recomputes them.")
def verify(store_path: Location, repair: bool) -> None:
    """Check that every finished task of STORE, and every coordinate and theory array, has all its chunks, each
    matching its checksum; name each bad one in a line (exit 1 if any)."""
    from .. import store
    from ..store.lock import StoreLock, conflicts
    if not repair or not store.locate(store_path).exists():
        _verify(store_path, repair)
        return
    with StoreLock(store_path):                 # no run writes it while it is repaired
        conflicts(store_path, None)             # nor an array job's element
        _verify(store_path, repair)


def _verify(store_path: Location, repair: bool) -> None:
    from .. import store
    from ..store.metadata import rebuild_hint, unrestorable
    if damage := store.metadata_damage(store_path):         # every metadata document, not only the consolidated copy
        for item in damage:
            click.echo(f"{store_path}: metadata {item}")
        left = unrestorable(store_path, damage)
        if left:
            raise StoreError(f"{store_path}: {left[0]}")
        if not repair:
            click.echo(f"{store_path}: {len(damage)} damaged metadata document(s); `rmtsweep verify {store_path} "
                       f"--repair` rebuilds them from their other copy")
            sys.exit(1)
        with store.metadata_lock(store_path):
            if left := store.restore_metadata(store_path, damage):
                raise StoreError(f"{store_path}: {left[0]}")
        click.echo(f"{store_path}: rebuilt {len(damage)} metadata document(s) from their other copy")
    if problem := store.store_problem(store_path):
        raise StoreError(f"{store_path}: {problem}")
    frame, unchecked = store.frame_damage(store_path)
    for piece in frame[:VERIFY_LINES]:
        click.echo(f"{store_path}: {piece}")
    if frame and repair:
        if left := store.rewrite_frame(store_path, frame, notes=click.echo):
            raise StoreError(f"{store_path}: {left[0]}; {rebuild_hint(dict(store.open_group(store_path).attrs))}")
        click.echo(f"{store_path}: rewrote {len({d.name for d in frame})} coordinate and theory array(s) from the "
                   f"store's sweep")
        frame = []
    if unchecked:
        click.echo(f"{store_path}: {len(unchecked)} coordinate and theory array(s) not checksummed (a store made "
                   f"before they were): their chunks are not checked")
    fix = f"`rmtsweep verify {store_path} --repair` rewrites them from the store's sweep"
    if any(d.coordinate for d in frame):      # the tasks are named by their coordinates: checked once they are whole
        click.echo(f"{store_path}: {len(frame)} damaged chunk(s) of coordinates and theory arrays; {fix}, and "
                   f"checks the tasks then")
        sys.exit(1)
    bad = store.verify(store_path)
    if not bad and not frame:
        also = "" if unchecked else ", and so do those of its coordinates and theory"
        click.echo(f"{store_path}: every finished task's chunks are present, read back and match their checksums{also}")
        return
    for task in bad[:VERIFY_LINES]:
        click.echo(f"{store_path}: {task}")
    if len(bad) > VERIFY_LINES:
        click.echo(f"... and {len(bad) - VERIFY_LINES} more bad task(s)")
    if repair:
        n = store.repair(store_path, bad)
        click.echo(f"{store_path}: cleared the done flags of {n} task(s); rerun `rmtsweep run` on its sweep to "
                   f"recompute exactly those")
        return
    if frame:
        click.echo(f"{store_path}: {len(frame)} damaged chunk(s) of theory arrays; {fix}")
    if bad:
        click.echo(f"{store_path}: {len(bad)} bad task(s) (done without data, or corrupt); `rmtsweep verify "
                   f"{store_path} --repair` clears them for the next run")
    sys.exit(1)


@contextmanager
def _corruption_named(path: Path | Location) -> Iterator[None]:
    """Refuse a store whose coordinates or theory are damaged (an absent chunk would read as NaN); turn a failure
    to read a corrupt chunk into one line naming the task and the repair."""
    from .. import store
    from ..store.io import FRAME_REPAIR
    if store.is_store(path):
        if frame := store.frame_damage(path)[0]:
            raise StoreError(f"{path}: {frame[0]}; {FRAME_REPAIR.format(path=path)}")
        try:                                    # a done task's absent chunk would read as NaN too
            absent = store.verify(path, limit=1, read=False)
        except Exception:  # noqa: BLE001 - a corrupt done chunk: named below, when the command reads it
            absent = []
        if absent:
            raise StoreError(f"{path}: {absent[0]}; run `rmtsweep verify {path} --repair`, then `rmtsweep run` to "
                             f"recompute it")
    try:
        yield
    except (RmtsweepError, click.ClickException):
        raise
    except Exception:
        bad = store.verify(path, limit=1) if store.is_store(path) else []
        if not bad:
            raise
        raise StoreError(f"{path}: {bad[0]}; run `rmtsweep verify {path} --repair`, then `rmtsweep run` to "
                         f"recompute it") from None


def _detection_options(command):
    """``--false-alarm`` and ``--margin-factor``: the detection rule of a comparison or a phase diagram."""
    command = click.option("--margin-factor", type=click.FloatRange(min=0.0), default=None,
                           help="Instead, the margin rule: detect above kappa lambda_+ (1 + F d^(-2/3)).")(command)
    return click.option("--false-alarm", type=click.FloatRange(min=0.0, max=1.0, min_open=True, max_open=True),
                        default=None, help="Detect at this false-alarm level: above the 1 - ALPHA quantile of the "
                        "predicted null top eigenvalue at the store's size (default 0.05).")(command)


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
@_detection_options
@click.option("--write/--no-write", default=True, show_default=True,
              help="Write the comparison into STORE as the zarr group 'comparison'.")
@click.option("--worst", type=click.IntRange(min=0), default=5, show_default=True,
              help="How many worst cells to list per quantity.")
def compare(store_path: Path, false_alarm: float | None, margin_factor: float | None, write: bool, worst: int) -> None:
    """Hold the Monte Carlo in STORE against its theory; print a summary (works while it fills)."""
    from ..analysis.compare import compare as compare_store, summary, write_comparison
    with _corruption_named(store_path):
        cmp = compare_store(store_path, false_alarm=false_alarm, margin_factor=margin_factor)
    click.echo(summary(cmp, worst))
    if write:
        write_comparison(store_path, cmp)
        click.echo(f"written: xr.open_zarr('{store_path}', group='comparison')")


def _selection(values: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in values:
        dim, sep, value = item.partition("=")
        if not sep:
            raise UserError(f"--select {item!r}: expected DIM=VALUE, e.g. --select snr=3.0")
        out[dim] = value
    return out


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
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
    from ..analysis.maps.plot import plot as plot_store
    with _corruption_named(store_path):
        paths = plot_store(store_path, x, y, var, _selection(select), clim).save(
            out, widgets, formats=formats or None, notes=lambda line: click.echo(line, err=True))
    for path in paths:
        click.echo(path)


@cli.command()
@click.argument("stores", metavar="STORE...", nargs=-1, required=True, type=STORE_LOCATION)
@storage_options
@click.option("--out", type=click.Path(path_type=Path), default=Path("figures"), show_default=True,
              help="Directory for the figures (one subdirectory per store).")
@click.option("--select", "select", multiple=True, metavar="DIM=VALUE",
              help="Fix an axis first, e.g. --select T=4 (default: a figure of one cell shows the largest T and "
                   "the first delta, gamma and weights, and says so).")
def figures(stores: tuple[Path, ...], out: Path, select: tuple[str, ...]) -> None:
    """The paper's figures from the stores of sweeps/paper-*.yaml."""
    from ..analysis.figures import figures as make_figures
    files, notes = make_figures(list(stores), out, _selection(select))
    for note in notes:
        click.echo(note)
    for f in files:
        click.echo(f)


@cli.command()
@click.argument("store_path", metavar="STORE", type=STORE_LOCATION)
@storage_options
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
@_detection_options
def export(store_path: Path, fmt: str, out: Path, group: str | None, variables: tuple[str, ...],
           phase_diagram: bool, n_boot: int, level: float, seed: int, false_alarm: float | None,
           margin_factor: float | None) -> None:
    """Export STORE (or its comparison group) as tidy CSV or netCDF, or its phase diagram as CSV."""
    from ..analysis.export import export as export_store, export_phase_diagram
    with _corruption_named(store_path):
        if phase_diagram:
            if fmt != "csv" or group or variables:
                raise UserError("--phase-diagram writes one CSV table of the store's SNR lines; drop "
                                    "--format, --group and --var")
            written, method = export_phase_diagram(store_path, out, n_boot, level, seed,
                                                   notes=lambda line: click.echo(line, err=True),
                                                   false_alarm=false_alarm, margin_factor=margin_factor)
            click.echo(f"{written}: transition SNR per line ({method})")
        else:
            if false_alarm is not None or margin_factor is not None:
                raise UserError("--false-alarm and --margin-factor choose the detection rule of --phase-diagram; the "
                                "values exported otherwise are the store's (a comparison group keeps the rule it was "
                                "written with: `rmtsweep compare --false-alarm ...`)")
            click.echo(export_store(store_path, out, fmt, group, list(variables) or None,
                                    notes=lambda line: click.echo(line, err=True)))
