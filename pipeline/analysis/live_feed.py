"""The live page's one reader of the store (:class:`Feed`) and what it read (:class:`Snapshot`).

Every session of the page shows the feed's latest snapshot and asks the feed for its maps, so that the store
is read, and compared, once a refresh whatever the number of readers of the page. Nothing here writes to the
store.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import xarray as xr

from ..store import open_store, store_problem
from .live import DETECTION, LiveMap, Progress, Watch, axes, default_axes, live_map, map_variables, plane

__all__ = ["Feed", "Snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """The store as the page's reader last read it: what every session of the page shows.

    Attributes
    ----------
    serial
        Readings made so far: a session redraws its head when it changes.
    progress
        The counts of the last reading that succeeded; ``None`` before one did.
    problem
        Why the last reading failed, in one line; empty when it succeeded.
    ds
        The store, opened (lazily) at the last reading whose ``done`` flags or theory changed.
    names, labels, default, variables, second
        The grid axes, their values as text, the axes across and up by default, the variables a map can show
        (:func:`map_variables`) and the second map's by default.
    read_at
        When the last reading was made (``time.time()``).
    """

    serial: int = 0
    progress: Progress | None = None
    problem: str = ""
    ds: xr.Dataset | None = None
    names: tuple[str, ...] = ()
    labels: dict[str, list[str]] = field(default_factory=dict)
    default: tuple[str, str] = ("", "")
    variables: tuple[str, ...] = ()
    second: str = ""
    read_at: float = 0.0

    @property
    def key(self) -> tuple[str, bool] | None:
        """What the maps are drawn from: the ``done`` flags' digest and whether the theory is pending."""
        return None if self.progress is None else (self.progress.digest, self.progress.theory_pending)


class Feed:
    """The page's one reader of the store: every session shows :attr:`snapshot` and asks :meth:`maps` for its
    maps, so that the store is read and compared once a refresh whatever the number of sessions.

    Parameters
    ----------
    watch
        The store watched.
    label
        How the lines name the store (its path or URL).
    say
        Called with one line when the store cannot be read any more, and when it can again: once a change,
        never once a page.
    """

    CACHE = 64          # maps kept for one reading: the selections its readers chose

    def __init__(self, watch: Watch, label: str = "", say: Callable[[str], None] = lambda line: None) -> None:
        self.watch = watch
        self.label = label or str(watch.path)
        self._say = say
        self._lock = threading.Lock()       # one reading or one map's computation at a time
        self._maps: dict[tuple[object, ...], LiveMap] = {}
        self.snapshot = Snapshot()

    def read(self, strict: bool = False) -> Snapshot:
        """Read the store now; when its ``done`` flags or theory changed, open it anew and draw the default maps.

        ``strict``: raise what the reading raised (the first reading, before the page is served); otherwise a
        failed reading keeps the last one's counts and maps and says why in :attr:`Snapshot.problem`.
        """
        with self._lock:
            last, now = self.snapshot, time.time()
            try:
                p = self.watch.poll()
                if last.ds is None or (p.digest, p.theory_pending) != last.key:
                    snap = self._opened(last.serial + 1, p, now)
                    self._maps.clear()
                    self._draw(snap, (DETECTION, snap.second), *snap.default, _fixed(snap, *snap.default, {}))
                else:
                    snap = dataclasses.replace(last, serial=last.serial + 1, progress=p, problem="", read_at=now)
            except Exception as exc:       # a store deleted mid-read fails in many ways: one line each
                if strict:
                    raise
                snap = dataclasses.replace(last, serial=last.serial + 1, problem=self._problem(exc), read_at=now)
            if snap.problem and snap.problem != last.problem:
                self._say(snap.problem)
            elif last.problem and not snap.problem:
                self._say(f"the store {self.label} can be read again")
            self.snapshot = snap
            return snap

    def maps(self, snap: Snapshot, variables: Iterable[str], x: str, y: str, at: dict[str, object]) -> list[LiveMap]:
        """The maps of ``variables`` over ``x`` and ``y`` at ``at`` (:func:`live_map`) from ``snap``'s reading:
        computed once, by the first session that asks, and kept for the others."""
        names = tuple(variables)
        fixed = _fixed(snap, x, y, at)
        got = [self._maps.get((snap.key, v, x, y, fixed)) for v in names]
        if all(m is not None for m in got):
            return [m for m in got if m is not None]
        with self._lock:
            return self._draw(snap, names, x, y, fixed)

    def run(self, interval: float, stop: threading.Event) -> None:
        """Read the store every ``interval`` seconds until ``stop`` is set (a server's background thread)."""
        while not stop.wait(interval):
            self.read()

    def _opened(self, serial: int, p: Progress, now: float) -> Snapshot:
        ds = open_store(self.watch.path)
        variables = tuple(map_variables(ds))
        second = next((v for v in ("overlap", "overlap_mean", "lambda1_z") if v in variables), variables[-1])
        names = tuple(axes(ds))
        return Snapshot(serial, p, "", ds, names, {a: [str(v) for v in ds[a].values] for a in names},
                        default_axes(ds), variables, second, now)

    def _draw(self, snap: Snapshot, names: tuple[str, ...], x: str, y: str,
              fixed: tuple[tuple[str, str], ...]) -> list[LiveMap]:
        """The maps of ``names``, drawn from one reading of the plane for those not kept yet (the lock held)."""
        keys = [(snap.key, v, x, y, fixed) for v in names]
        if any(k not in self._maps for k in keys) and snap.ds is not None:
            at: dict[str, object] = dict(fixed)
            try:
                shown = plane(snap.ds, x, y, at, load=True)        # one reading for every map of the selection
            except Exception as exc:  # noqa: BLE001 - a store unreachable for a moment: the next reading retries
                why = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
                return [LiveMap(v, None, f"{v}: cannot read the store now ({why})") for v in names]
            if len(self._maps) >= self.CACHE:
                self._maps.clear()
            for k, v in zip(keys, names, strict=True):
                if k not in self._maps:
                    try:
                        self._maps[k] = live_map(shown, v, x, y, at)
                    except Exception as exc:  # noqa: BLE001 - one map that cannot be drawn must not stop the page
                        self._maps[k] = LiveMap(v, None, f"{v}: cannot be drawn ({type(exc).__name__}: {exc})")
        return [self._maps.get(k) or LiveMap(v, None, f"{v}: the store was not read yet")
                for k, v in zip(keys, names, strict=True)]

    def _problem(self, exc: BaseException) -> str:
        """One line on a failed reading: the store gone (it is not a readable store any more), else the error."""
        try:
            gone = store_problem(self.watch.path)
        except Exception:  # noqa: BLE001 - the check's own failure says no more than the reading's
            gone = None
        if gone:
            return f"the store {self.label} is gone: {gone}"
        text = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        return f"cannot read the store {self.label} now: {text}"


def _fixed(snap: Snapshot, x: str, y: str, at: dict[str, object]) -> tuple[tuple[str, str], ...]:
    """The value of each axis but ``x`` and ``y`` as text: ``at``'s where it is one of the axis's, else the first
    (as :func:`plane` reads it). Two selections that show the same plane give the same value."""
    def label(axis: str) -> str:
        labels = snap.labels.get(axis, [])
        value = str(at.get(axis))
        return value if value in labels else (labels[0] if labels else "")
    return tuple((a, label(a)) for a in snap.names if a not in (x, y))
