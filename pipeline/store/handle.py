"""One store on disk, opened once per run: the lock, recovery, creation, the extension plan, the journal.

The runner reads as *prepare, then execute*::

    store = Store(path)
    store.check()                          # fail fast, before any cluster starts (changes nothing)
    with store.prepare(sweep_file, make_template, info, blocking) as run:   # lock, recover, create or extend, record
        ...                                # run.writer, run.blocking, run.token, run.log(...)

Everything that changes the store happens under its lock (:mod:`rmtsweep.store.lock`), which is
taken first: a second run started meanwhile (a resubmitted driver) waits for nothing and changes
nothing; it is refused.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

import zarr

from ..errors import StoreError, StoreWriteError
from ..spec import SweepFile
from . import migrate
from .io import (CUT_SHORT, array_run, blocking_of, create, half_created, open_group, record_run, store_problem,
                 stored_sweep, write_template)
from .layout import Template
from .backend import Location
from .location import locate
from .lock import Share, StoreLock, conflicts, lock_file
from .metadata import beyond_repair, metadata_damage
from .metalock import metadata_lock
from .fence import make_fence
from .writer import Writer

__all__ = ["JOURNAL_NAME", "JOURNAL_SUFFIX", "PreparedRun", "Store", "journal_file"]

Blocking = tuple[int, ...]
"""A task's size along ``(delta, gamma, T, replicate)`` (the chunks of the per-replicate arrays), then a null task's
along ``null_replicate`` in a store with scheduled null replicates."""

JOURNAL_SUFFIX = ".journal"
JOURNAL_NAME = ".rmtsweep-journal.log"
"""The journal's name inside the store, where stores kept it before it moved beside them; the next run moves it."""


def journal_file(store: str | Path | Location) -> Path:
    """The run journal of the store at ``store`` (on a file system): a file beside it, ``demo.zarr.journal``.

    Beside the store, not in it: zarr takes every object in a store's directory for a node of it, and
    warns of one that is not whenever it lists the store.
    """
    store = locate(store).local()
    return store.sibling(store.name + JOURNAL_SUFFIX)


@dataclass
class PreparedRun:
    """What :meth:`Store.prepare` hands the runner: the run's index, writer, batching, journal."""

    index: int
    writer: Writer
    journal: TextIO | None
    blocking: Blocking
    lock: StoreLock
    carried: int = 0
    plan: str = "same"
    recompute: str | None = None
    """Why an extension recomputes every replicate (``None`` when finished ones are carried over)."""

    @property
    def token(self) -> str:
        """The run's fencing token: a worker writes a task only while the store's lock carries it."""
        return self.lock.token

    @property
    def share(self) -> Share | None:
        """The share of an array job this run computes (``None``: the whole store)."""
        return self.lock.share

    def check(self) -> None:
        """Raise :class:`~rmtsweep.errors.RunError` if the run may no longer write.

        That is: its lock failed, or the store's metadata vanished under it (the directory removed,
        e.g. by a scratch purge), so nothing more is marked done in what is no longer a store.
        """
        self.lock.check()
        if not self.writer.path.child(".zattrs").exists():
            raise StoreWriteError(f"{self.writer.path}: the store was removed while the run wrote it; remove what "
                                  f"is left of it and rerun the same command to start again")

    def log(self, event: str, name: str) -> None:
        """One line in the run's journal (``submit`` / ``write`` of a task); none on object storage (no appends)."""
        if self.journal is not None:
            self.journal.write(f"run {self.index} {event} {name}\n")


@dataclass
class Store:
    """The store at ``path``: everything that knows its file names and how it changes."""

    path: Location

    def __post_init__(self) -> None:
        self.path = locate(self.path)

    @property
    def in_place(self) -> bool:
        """Whether the store is written in place: its storage (object storage) renames no directory and appends
        to no file, so it has no journal (:meth:`prepare`) and no job arrays (:meth:`join`)."""
        return not self.path.renames

    @property
    def journal_path(self) -> Path:
        """The run journal: every task each run submitted and wrote (:func:`journal_file`)."""
        return journal_file(self.path)

    def _adopt_old_journal(self) -> None:
        """Move the journal a store kept inside it (:data:`JOURNAL_NAME`) to :attr:`journal_path`, after what is
        there. It is renamed aside first, so that of two runs or array elements doing this, one moves it."""
        old = self.path.local() / JOURNAL_NAME
        aside = old.with_name(f"{JOURNAL_NAME}.moving-{os.getpid()}")
        try:
            os.rename(old, aside)
        except FileNotFoundError:
            return
        with open(self.journal_path, "ab") as journal:
            journal.write(aside.read_bytes())
        aside.unlink()

    @property
    def lock_path(self) -> Location:
        """The lock file of the run that writes the store (beside it: :func:`~rmtsweep.store.lock.lock_file`)."""
        return lock_file(self.path)

    def check(self, sweep_file: SweepFile | None = None) -> None:
        """Fail fast, before any cluster starts, on a path that cannot become or be an rmtsweep store.

        With ``sweep_file``, also refuse a store that holds a sweep this one cannot resume or extend.
        Reads only: an extension killed half way is finished or undone by :meth:`prepare`, under the lock.
        """
        path = self.path
        if self.in_place:
            problem = store_problem(path)
            if problem and migrate.interrupted(path):
                return                               # an extension cut short: prepare finishes or undoes it first
            if problem and problem.startswith("not an rmtsweep store"):
                raise StoreError(f"{path}: exists and is not an rmtsweep store; choose another --store URL")
            if problem and problem != "does not exist" and not problem.startswith(CUT_SHORT):
                raise StoreError(f"{path}: {problem}")
            if not problem and sweep_file is not None:
                sweep_plan(dict(open_group(path).attrs), sweep_file, path)
            return
        path = path.local()
        if not path.exists() and migrate.interrupted(path):
            return                                   # prepare puts the store back first
        if path.exists():
            problem = store_problem(path)
            if problem and problem.startswith("not an rmtsweep store"):
                raise StoreError(f"{path}: exists and is not an rmtsweep store; choose another --store path")
            if problem:
                raise StoreError(f"{path}: {problem}")
            if not os.access(path, os.W_OK):
                raise StoreWriteError(f"{path}: {_unwritable(path)}")
            self.check_metadata()                   # before the cluster starts (object storage: in prepare)
            if sweep_file is not None:
                sweep_plan(dict(open_group(self.path).attrs), sweep_file, self.path)
            return
        parent = path.absolute().parent
        existing = next(p for p in (parent, *parent.parents) if p.exists())     # created as `mkdir -p` would
        if not existing.is_dir():
            raise StoreError(f"{path}: cannot create the store: {existing} is not a directory")
        if not os.access(existing, os.W_OK):
            raise StoreWriteError(f"{path}: cannot create the store in {existing}: {_unwritable(existing)}")
        try:            # root passes os.access everywhere: /proc or a read-only mount answer only an attempt
            os.rmdir(tempfile.mkdtemp(prefix=f".{path.name}.probe-", dir=existing))
        except OSError as exc:
            raise StoreError(f"{path}: cannot create the store in {existing}: {exc.strerror or exc}") from None

    def create_if_missing(self, make_template: Callable[[Blocking], Template], blocking: Blocking) -> None:
        """Write the template if there is no store yet (refuses a path that is something else).

        Called under the store's lock by :meth:`prepare`; on its own only by tests and benchmarks that
        fill a store by hand.
        """
        self.check()
        if self.in_place:
            if half_created(self.path):                  # a creation cut before its end: under the lock, start over
                self.path.remove(recursive=True)
            if not self.path.child(".zattrs").exists():
                create(self.path, make_template(blocking))
            return
        if not self.path.exists():
            self.path.local().absolute().parent.mkdir(parents=True, exist_ok=True)
            self.journal_path.unlink(missing_ok=True)    # of a store removed from this path: not this one's
            create(self.path, make_template(blocking))

    @contextmanager
    def prepare(self, sweep_file: SweepFile, make_template: Callable[[Blocking], Template], run_info: dict | None,
                blocking: Blocking) -> Iterator[PreparedRun]:
        """Create or extend the store for ``sweep_file``, hold its lock, record the run, open the journal.

        With ``run_info=None`` the store is only made ready (created or extended) and no run is recorded
        (``rmtsweep submit --array``, before the array's elements :meth:`join` it).

        ``blocking`` (``(delta, gamma, T, replicate[, null_replicate])`` sizes of a task) is used for a new store; an
        existing one keeps its own, also when it is extended.

        Raises
        ------
        StoreError
            The path is not a store, holds an incompatible sweep, or another run is writing it.
        """
        self.check()
        with StoreLock(self.path) as lock:
            conflicts(self.path, None)                  # no array job is computing it
            migrate.recover(self.path)                  # under the lock: no other run is extending it now
            if self.path.child(".zattrs").exists() and not half_created(self.path):
                self.check_metadata()                   # before any task: a run rewrites the consolidated copy
            if not self.in_place:
                self._adopt_old_journal()
            self.create_if_missing(make_template, blocking)
            migrate.add_null_done(self.path)             # a store whose null replicates had no tasks of their own
            attrs = dict(open_group(self.path).attrs)   # the one read of the attrs
            stored = stored_sweep(self.path, attrs)
            plan = sweep_plan(attrs, sweep_file, self.path)
            carried, recompute = 0, None
            own = blocking_of(self.path)
            if plan == "extend":
                tpl = make_template(own)
                recompute = migrate.recompute_reason(stored, sweep_file.sweep, self.path, tpl)
                carried = self._extend(tpl, attrs, recompute_all=recompute is not None)
            lock.check()
            if run_info is None:                        # the store made ready for an array job: no run
                yield PreparedRun(-1, self._writer(lock), None, own, lock, carried, plan, recompute)
                return
            index = record_run(self.path, run_info)
            if self.in_place:                           # object storage has no appends: no journal
                yield PreparedRun(index, self._writer(lock), None, own, lock, carried, plan, recompute)
                return
            with open(self.journal_path, "a", buffering=1) as journal:
                yield PreparedRun(index, self._writer(lock), journal, own, lock, carried, plan, recompute)

    def check_metadata(self) -> None:
        """Raise :class:`StoreError` naming a damaged metadata document and its fix (a run that writes the store's
        theory or records itself rewrites the consolidated copy from every document, and would fail there)."""
        damage = metadata_damage(self.path)
        if damage:
            with contextlib.suppress(OSError), metadata_lock(self.path):
                damage = metadata_damage(self.path)     # a document another process was rewriting is not damage
        if damage:
            more = f" (and {len(damage) - 1} more)" if len(damage) > 1 else ""
            fix = f"`rmtsweep verify {self.path} --repair` rebuilds it from its other copy"
            raise StoreError(f"{self.path}: metadata {beyond_repair(self.path, damage) or f'{damage[0]}{more}; {fix}'}")

    def _writer(self, lock: StoreLock) -> Writer:
        """The store's writer for the holder of ``lock``: its chunk writes fenced by the lock's token."""
        return Writer(self.path, make_fence(self.path, lock.path, lock.token))

    @contextmanager
    def join(self, sweep_file: SweepFile, share: Share, run_info: dict) -> Iterator[PreparedRun]:
        """Compute the tasks of one ``share`` of an array job: hold its lock, record the run, open the journal.

        The store must exist, made by ``rmtsweep submit --array`` (:meth:`prepare` with no run) before the
        array starts: an element never creates or extends it. Other elements of the same array run side by
        side; a run of the whole store, or an array of another size, is refused (:func:`conflicts`).

        Raises
        ------
        StoreError
            No store at the path, an extension left half done, a store of another sweep than
            ``sweep_file``'s, or a lock it excludes is live.
        """
        if self.in_place:
            raise StoreError(f"{self.path}: job arrays on object storage are not supported yet; use a file system "
                             f"the elements share, or `rmtsweep run` with a dask cluster")
        self.check()
        if not self.path.exists():
            raise StoreError(f"{self.path}: no store here; `rmtsweep submit SWEEP --array N` makes it before the "
                             f"array starts")
        if migrate.interrupted(self.path):
            raise StoreError(f"{self.path}: an extension of the store was interrupted; `rmtsweep submit` the sweep "
                             f"again to finish it")
        with StoreLock(self.path, share=share) as lock:
            conflicts(self.path, share)
            self._adopt_old_journal()
            attrs = dict(zarr.open_group(str(self.path), mode="r").attrs)
            if sweep_plan(attrs, sweep_file, self.path) != "same":
                raise StoreError(f"{self.path}: holds another sweep than {sweep_file.path}; `rmtsweep submit` it "
                                 f"again to extend the store before the array starts")
            own = blocking_of(self.path)
            lock.check()
            # the run submit recorded for this share (no write to the metadata: a thousand elements starting
            # together would queue on its lock); else, an array made without one, record it now
            index = array_run(cast("list[dict]", attrs.get("runs", [])), share)
            joined = index is not None
            if index is None:
                index = record_run(self.path, {**run_info, "share": list(share)})
            with open(self.journal_path, "a", buffering=1) as journal:
                if joined:             # who computed the share: in the journal, one line
                    journal.write(f"run {index} joined share-{share[0]}-of-{share[1]} host {run_info.get('host')} "
                                  f"pid {run_info.get('pid')} at {run_info.get('started')}\n")
                yield PreparedRun(index, self._writer(lock), journal, own, lock)

    def _extend(self, tpl: Template, attrs: dict, recompute_all: bool) -> int:
        """Rebuild the store for the larger sweep, carrying finished replicates over. Returns how many."""
        new_path = migrate.beside(self.path, migrate.NEW_SUFFIX)
        tpl.frame.attrs["runs"] = attrs.get("runs", [])
        tpl.frame.attrs["created"] = attrs.get("created")
        write_template(new_path, tpl)
        carried = migrate.copy_finished(self.path, new_path, recompute_all)
        migrate.swap(self.path, new_path)
        return carried


def sweep_plan(attrs: dict, sweep_file: SweepFile, path: Location) -> str:
    """:func:`migrate.plan` for the store's ``attrs``; a refusal names both sweeps' hashes and overrides."""
    try:
        return migrate.plan(stored_sweep(path, attrs), sweep_file.sweep, path)
    except StoreError as exc:
        def which(digest: str, overrides) -> str:
            given = " ".join(overrides) if overrides else "none"
            return f"sweep hash {digest[:12]}, overrides {given}"
        raise StoreError(f"{exc} (the store: {which(attrs.get('sweep_hash', '?'), attrs.get('sweep_overrides'))}; "
                         f"this run: {which(sweep_file.sweep.digest(), sweep_file.overrides)})") from None


def _unwritable(path: Path) -> str:
    """The OS's words for why ``path`` cannot be written."""
    return "Read-only file system" if os.statvfs(path).f_flag & os.ST_RDONLY else "Permission denied"
