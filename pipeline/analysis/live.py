"""What a live page of a store shows, read again and again as tasks land: progress and the maps' data.

:class:`Watch` re-reads the store's ``done`` flags (:func:`rmtsweep.store.status`) and keeps the counts it
saw, for a rate and an estimate of the time left measured from the tasks that landed while it watched.
:func:`live_map` draws one map of :mod:`rmtsweep.analysis.maps.plot` (the same variable choices, colour scales
and titles) at one value of each axis that is neither across nor up; on a store with few tasks done, or
whose theory arrays are not written yet, it says so instead. Nothing here writes to the store: it is opened
read only and a comparison is computed in memory, never written.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

from .. import config
from ..dims import ALL_AXES
from ..errors import RmtsweepError
from ..store import open_group, status
from ..store.pending import theory_pending
from ..store.writer import array_of, read_array
from .compare import compare, done_digest
from .detection import NO_NULL
from .maps.style import MapFigure
from .maps.plot import map_data, map_figure

__all__ = ["DETECTION", "LiveMap", "Progress", "Watch", "axes", "default_axes", "duration", "live_map",
           "map_variables", "plane"]

DETECTION = "detection_rate"
SKIP_VARS = ("done", "run")


@dataclass(frozen=True)
class Progress:
    """How far a store is, as read at one moment.

    Attributes
    ----------
    done, total
        Tasks done and in all (a task is done when all its ``done`` flags are set).
    replicates_done, replicates_total
        The same in replicates.
    rate
        Tasks a second over the last ``rmtsweep.serve.rate-window`` seconds watched; ``None`` before two readings.
    eta
        Seconds left at that rate; ``None`` without a rate, or when no task landed for three times the gap
        between the tasks seen landing (``rmtsweep.serve.stall`` seconds at least: then ``stalled``).
    quiet
        Seconds since the last task landed (since watching began if none did).
    digest
        A fingerprint of the ``done`` flags: the maps are drawn again when it changes.
    sweep
        The store's sweep name.
    theory_pending
        The store's theory at its own size is not written yet (a run in progress): the maps that need it wait.
    stalled
        No task landed for long enough that the page says so instead of an ETA.
    """

    done: int
    total: int
    replicates_done: int
    replicates_total: int
    rate: float | None
    eta: float | None
    quiet: float
    digest: str
    sweep: str
    theory_pending: bool = False
    stalled: bool = False

    @property
    def complete(self) -> bool:
        """Every task is done."""
        return self.done == self.total

    def count(self) -> str:
        """``N / M tasks``: the page's headline."""
        return f"{self.done} / {self.total} tasks"

    def speed(self) -> str:
        """The rate and the time left, in words."""
        if self.complete:
            return "complete"
        if self.rate is None or (self.eta is None and not self.stalled):
            return "rate: measuring (from the tasks that land while the page watches)"
        if self.eta is None:
            return f"no task landed in the last {duration(self.quiet)}"
        return f"{self.rate * 60:.3g} tasks/min, about {duration(self.eta)} left"


def duration(seconds: float) -> str:
    """``seconds`` in the largest units that say it in a few characters, e.g. ``4 min 10 s``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s < 600 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"


class Watch:
    """The store at ``path`` read again on each :meth:`poll`, with the counts seen so far for a rate.

    Parameters
    ----------
    path
        A store's path, or a located URL of object storage (:func:`rmtsweep.store.locate`).
    clock
        Seconds, for the rate (``time.monotonic``; a test passes its own).
    """

    def __init__(self, path: str | Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._seen: deque[tuple[float, int]] = deque()
        self._changed = clock()

    def poll(self) -> Progress:
        """Read the store's ``done`` flags now; the rate counts the tasks that landed over the last
        ``rmtsweep.serve.rate-window`` seconds of readings (recent enough to follow a cluster that grows)."""
        window, least = float(config.get("serve.rate-window")), float(config.get("serve.stall"))
        st = status(self.path)
        now = self._clock()
        done = st.tasks_done
        if self._seen and done != self._seen[-1][1]:
            self._changed = now
        self._seen.append((now, done))
        while len(self._seen) > 2 and now - self._seen[1][0] >= window:
            self._seen.popleft()
        t0, n0 = self._seen[0]
        rate = (done - n0) / (now - t0) if len(self._seen) > 1 and now > t0 else None
        quiet = now - self._changed
        # stalled: quiet for three times the gap between landings seen before (and the setting's seconds at least)
        busy = (done - n0) / (self._changed - t0) if self._changed > t0 and done > n0 else None
        stalled = quiet > (max(least, 3 / busy) if busy else least)
        eta = (st.tasks_total - done) / rate if rate and not stalled else None
        # a task can land between the two reads: the next poll sees it
        digest = done_digest(read_array(array_of(open_group(self.path), "done")))
        return Progress(done, st.tasks_total, st.replicates_done, st.replicates_total, rate, eta, quiet,
                        digest, str(st.attrs.get("sweep_name", "")), theory_pending(st.attrs), stalled)


def axes(ds: xr.Dataset) -> list[str]:
    """The store's grid axes, in the sweep's order (``d`` too where it is one)."""
    return [a for a in ALL_AXES if a in ds.dims]


def default_axes(ds: xr.Dataset) -> tuple[str, str]:
    """SNR across and the first other axis of more than one value up: a phase diagram, where the store has one."""
    names = axes(ds)
    wide = [a for a in names if ds.sizes[a] > 1]
    x = "snr" if "snr" in wide else (wide or names)[0]
    rest = [a for a in wide if a != x] or [a for a in names if a != x]
    return x, rest[0]


def map_variables(ds: xr.Dataset) -> list[str]:
    """What can be mapped over the grid axes: the comparison's variables (from a comparison of one point,
    computed in memory), then the store's Monte Carlo observables; ``detection_rate`` first."""
    dims = set(ALL_AXES) | {"replicate", "k"}
    store = [str(v) for v, da in ds.data_vars.items()
             if "replicate" in da.dims and set(da.dims) <= dims and da.dtype.kind in "fiub" and v not in SKIP_VARS]
    try:
        cmp = compare(ds.isel({a: [0] for a in axes(ds)}))
        cmp_vars = [str(v) for v, da in cmp.data_vars.items() if set(da.dims) <= dims and da.dtype.kind in "fiub"]
    except (RmtsweepError, ValueError, KeyError):            # no theory yet: the store's own variables still map
        cmp_vars = []
    names = [v for v in cmp_vars if v != DETECTION] + [v for v in store if v not in cmp_vars]
    return [DETECTION] + names


@dataclass(frozen=True)
class LiveMap:
    """One map of the page: the figure to draw (``None`` when there is nothing to draw yet) and a line of text
    saying what it shows (cells with a value, their mean) or why it is empty."""

    var: str
    figure: MapFigure | None
    summary: str


def live_map(ds: xr.Dataset, var: str, x: str, y: str, at: dict[str, object]) -> LiveMap:
    """The map of ``var`` over ``x`` and ``y`` at the values ``at`` of the other axes (default: their first).

    Parameters
    ----------
    ds
        The store, opened (:func:`rmtsweep.store.open_store`).
    var
        A store or comparison variable (:func:`map_variables`).
    x, y
        Two different grid axes.
    at
        ``{axis: value}`` for the other axes.

    Returns
    -------
    LiveMap
        The figure and a summary line; no figure while no replicate of the selection is done, or when the
        variable needs theory arrays the store does not hold yet (the summary says which).
    """
    sub = plane(ds, x, y, at)
    done = int(sub["done"].sum())
    if done == 0:
        return LiveMap(var, None, f"{var}: no replicate done yet at this selection; the map appears as tasks land")
    pending = LiveMap(var, None, f"{var}: the store's theory arrays are not written yet; the map appears when they are")
    from_store = var in sub.data_vars
    if not from_store and _theory_missing(sub):
        return pending
    try:
        if from_store:
            da, _ = map_data(sub, var)
            sub = _transition_scalars(sub)
        else:
            cmp = compare(_beside_null(ds, sub, x, y, at)).sel(snr=sub["snr"].values)
            if var not in cmp.data_vars:
                return LiveMap(var, None, f"{var}: not a variable of this store")
            if var == DETECTION and "detection_null" in cmp and bool((cmp["detection_null"] == NO_NULL).all()):
                return LiveMap(var, None, f"{var}: no null law at the store's size here, and too few null "
                                          "replicates (scheduled, or at snr = 0) for a Monte Carlo null")
            if var == DETECTION and not np.isfinite(np.asarray(cmp["detection_threshold"], dtype=float)).any():
                return pending                                # no threshold: every rate would read 0
            da, _ = map_data(sub.assign({k: v for k, v in cmp.data_vars.items() if k not in sub}), var)
        values = np.asarray(da.values, dtype=float)
        finite = np.isfinite(values)
        if not finite.any():
            return LiveMap(var, None, f"{var}: no cell has a value yet; the map appears as tasks land")
        fig = map_figure(da.rename(var), sub, x, y)
    except (RmtsweepError, ValueError, KeyError) as exc:      # e.g. a theory array absent from an older store
        return LiveMap(var, None, f"{var}: cannot be drawn yet ({str(exc).splitlines()[0][:200]})")
    mean = "" if fig.scale.kind == "categorical" else f", mean {np.nanmean(values):.4g}"
    summary = f"{var}: {int(finite.sum())} of {finite.size} cells with a value{mean}, from {done} done replicate(s)"
    return LiveMap(var, fig, summary)


def plane(ds: xr.Dataset, x: str, y: str, at: dict[str, object], load: bool = False) -> xr.Dataset:
    """The store at one value of each axis besides ``x`` and ``y`` (``at``, else the first), those axes kept
    one value long. ``load``: read into memory at once, so that two maps drawn from it count the same tasks
    while a run keeps writing."""
    sub = ds.isel({a: [_index(ds, a, at.get(a))] for a in axes(ds) if a not in (x, y)})
    return sub.load() if load else sub


def _beside_null(ds: xr.Dataset, sub: xr.Dataset, x: str, y: str, at: dict[str, object]) -> xr.Dataset:
    """``sub`` with the store's ``snr = 0`` beside its SNR: the Monte Carlo null of cells without a law needs it."""
    snr = [float(v) for v in ds["snr"].values] if "snr" in ds.dims else []
    if "snr" in (x, y) or 0.0 not in snr or 0.0 in sub["snr"].values:
        return sub
    index = {a: [_index(ds, a, at.get(a))] for a in axes(ds) if a not in (x, y)}
    index["snr"] = [snr.index(0.0), *index["snr"]]
    return ds.isel(index)


def _index(ds: xr.Dataset, axis: str, value: object) -> int:
    """The position of ``value`` on ``axis`` (compared as text, as a widget gives it); the first if absent."""
    if value is None:
        return 0
    labels = [str(v) for v in ds[axis].values]
    return labels.index(str(value)) if str(value) in labels else 0


def _transition_scalars(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with NaN ``theory_alpha`` / ``theory_kappa`` where they are not written yet: the map of a store
    variable is then drawn without transition lines, rather than not at all."""
    shape = {a: ds[a] for a in ("T", "weights") if a in ds.dims}
    missing = {v: xr.DataArray(np.full(tuple(len(c) for c in shape.values()), np.nan), coords=shape, dims=list(shape))
               for v in ("theory_alpha", "theory_kappa") if v not in ds.data_vars}
    return ds.assign(missing) if missing else ds


def _theory_missing(ds: xr.Dataset) -> bool:
    """Whether the store's theory is not all there yet: its theory at its own size is pending
    (:mod:`rmtsweep.store.pending`), or it holds no ``theory_*`` float array with a value."""
    if theory_pending(ds.attrs):
        return True
    theory = [v for v, da in ds.data_vars.items() if str(v).startswith("theory_") and da.dtype.kind == "f"]
    return not any(bool(np.isfinite(np.asarray(ds[v].values, dtype=float)).any()) for v in theory)
