"""One writer per store: a fenced lease in a file beside the store, which a dead run does not hold forever.

The lock of ``store/demo.zarr`` is the file ``store/demo.zarr.lock`` (:func:`lock_file`): beside the
store, not in it, so no swap of the store's directory (an extension) moves or copies it. It holds
the owner's *token* (a random id, the run's fencing token), host, pid, start time and a heartbeat
counter ``beat``.

The protocol, and why a crash anywhere is safe:

1. **Take**: create the file with ``O_CREAT | O_EXCL`` (atomic on local filesystems and NFS), then read
   it back: the run holds the lock only if the file carries its own token.
2. **Hold**: every ``heartbeat`` seconds the owner reads the file; if it still carries its token, it
   writes the next ``beat`` (a new file renamed over the old, so a reader never sees half a lock). A
   failed write is retried at the next beat until the lease would lapse; then, or when the file carries
   another token, the run stops before marking anything more done (:meth:`StoreLock.check`).
3. **Judge**: a reader never compares clocks. A lock is *stale* when its owner is on this host and its
   pid is gone, or when its ``(token, beat)`` has not changed for ``lease`` seconds on the reader's own
   monotonic clock (so an NFS server's clock, or a skewed node's, plays no part). A lock whose beat
   moves is live and is never taken over.
4. **Take over**: rename the stale file aside, then read what was moved: if it is not the lock that was
   judged stale (another run took the store over in between), put it back (``link``, which never
   overwrites) and judge again; else delete it and take the lock as in 1. Two runs that both judge a
   lock stale therefore end with one holder: the other either finds a live lock or sees its own token
   gone at its next beat and stops.
5. **Fence**: every task carries the run's token, and a worker reads the lock file before it writes
   (:func:`holds`): a worker still running for a run that no longer holds the store writes nothing.

The file system's calls above are those of the store's :class:`~rmtsweep.store.backend.Location`: ``create``
(1), ``update`` (2), ``remove_if`` (4), ``read``. **On object storage** (a store at ``s3://bucket/run.zarr``) the
lock is the object ``s3://bucket/run.zarr.lock``, taken with a conditional write (create only if absent: S3's
``If-None-Match``, GCS's and Azure's equivalents) and read back as in 1; a heartbeat replaces the object whole
(readers see the old or the new beat), on S3 only if it is still the object it read (``If-Match``), so an owner
stopped between its read and its write cannot bring back a lock another run took over; a take-over reads the
stale lock and deletes it if it is still the one judged (there is no rename: a run that took the store over in
that instant sees its token gone at its next beat and stops, as in 4); fencing reads the object before each
task's write, as in 5.

**Shares** (the elements of a job array, ``rmtsweep work STORE --share I/N``): element ``I`` of ``N``
writes only its own tasks, so it takes the lock of its share, ``demo.zarr.share-I-of-N.lock``, by the same
protocol; the elements of one array then run side by side. After taking its lock, each party looks for
the locks it excludes (:func:`conflicts`): a run (the store's own lock) excludes every share, and a share
excludes the store's lock and the shares of an array of another size (whose tasks overlap its own).
Both sides look after they hold their own lock, so of two that start together at least one sees the
other and stops.
"""

from __future__ import annotations

import json
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from .. import config
from ..errors import RmtsweepError, RunError, StoreError
from .backend import Location
from .fence import close_staging, fence_out, open_staging
from .location import locate

__all__ = ["LOCK_SUFFIX", "Share", "StoreLock", "conflicts", "holds",
           "holders", "judge", "lock_file", "share_locks"]

LOCK_SUFFIX = ".lock"


Share = tuple[int, int]
"""``(i, n)``: element ``i`` (from 0) of an array of ``n``, which computes the tasks whose ordinal is
``i`` mod ``n``."""

_SHARE = re.compile(r"\.share-(\d+)-of-(\d+)\.lock$")


def lock_file(store: str | Path | Location, share: Share | None = None) -> Location:
    """The lock of the store at ``store``: a file beside it (``demo.zarr`` -> ``demo.zarr.lock``); a share's
    is ``demo.zarr.share-I-of-N.lock``. On object storage, the object of that name beside the store's prefix."""
    store = locate(store)
    middle = "" if share is None else f".share-{share[0]}-of-{share[1]}"
    return store.sibling(store.name + middle + LOCK_SUFFIX)


def share_locks(store: str | Path | Location) -> list[tuple[Share, Location]]:
    """The share lock files beside ``store`` (live or not), by share."""
    store = locate(store)
    found: list[tuple[Share, Location]] = []
    for obj in store.siblings(f"{store.name}.share-", "*-of-*.lock"):
        if m := _SHARE.search(obj.name[len(store.name):]):
            found.append(((int(m[1]), int(m[2])), obj))
    return sorted(found, key=lambda item: item[0])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def _read(path: Location) -> dict | None:
    try:
        return _parse(path.read())
    except OSError:
        return None
    except Exception:  # noqa: BLE001 - a storage service's own errors (an endpoint that does not answer)
        return None


def _parse(raw: bytes | None) -> dict | None:
    """A lock's content as a dict, or ``None`` when it is absent or not whole."""
    try:
        info = json.loads(raw) if raw is not None else None
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def _identity(info: dict | None) -> tuple:
    """What changes at every heartbeat of a live owner: its token and beat."""
    return (None, None) if info is None else (info.get("token"), info.get("beat"))


def holds(store: str | Path | Location, token: str, share: Share | None = None, strict: bool = False) -> bool:
    """Whether the run with fencing token ``token`` holds the lock of ``store`` (or of its ``share``; one small
    read). ``strict``: a lock that cannot be read raises the storage's error rather than counting as not held
    (so that a worker tells an outage from a take-over)."""
    if strict:
        return (_parse(lock_file(store, share).read()) or {}).get("token") == token
    return (_read(lock_file(store, share)) or {}).get("token") == token


def _owner(info: dict | None) -> str:
    info = info or {}
    return f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {info.get('started', '?')}"


def _run_refusal(store: Location, info: dict | None) -> StoreError:
    return StoreError(f"{store}: another rmtsweep run is writing this store ({_owner(info)}); wait for it to finish "
                      f"or stop it")


def conflicts(store: str | Path | Location, share: Share | None, lease: float | None = None, tidy: bool = True) -> None:
    """Raise :class:`StoreError` if a lock that ``share`` (``None``: the whole store) excludes is live.

    Called once the caller holds its own lock (module docstring, "Shares"). A stale lock found here is
    removed as a take-over would (so a killed array does not block the next one beyond its lease); with
    ``tidy=False`` it is left alone: a look before taking any lock, to refuse early what the check under
    the lock would refuse anyway (the store's own lock included). ``lease=0`` makes the look instant: only
    a lock of this host (judged by its pid) can then be live; the default is the setting ``rmtsweep.lock.lease``.
    """
    store = locate(store)
    excluded: list[tuple[Share | None, Location]] = [
        (s, path) for s, path in share_locks(store) if share is None or s[1] != share[1]]
    if share is not None or not tidy:
        excluded.insert(0, (None, lock_file(store)))        # the store's own lock
    for other, path in excluded:
        state, info = judge(path, lease)
        if state == "stale":
            if tidy:
                _remove_stale(path, info)
        elif state == "live":
            if other is None:
                raise _run_refusal(store, info)
            if share is None:
                raise StoreError(f"{store}: an array job is computing this store (element {other[0]} of {other[1]}, "
                                 f"{_owner(info)}); wait for the array to finish or cancel it")
            raise StoreError(f"{store}: an array of {other[1]} elements is computing this store (element {other[0]}, "
                             f"{_owner(info)}); its tasks overlap those of an array of {share[1]}: let it finish "
                             f"or cancel it first")


def holders(store: str | Path | Location) -> list[dict]:
    """Who holds a lock of ``store`` now, without waiting: the run writing it, or the array elements with a share.

    Each entry is the lock's content (``host``, ``pid``, ``started``, ``beat``) with ``share`` (``None`` for
    the store's own lock) and ``alive``: ``True`` or ``False`` for an owner on this host (its pid), ``None``
    for one elsewhere (no clock is compared; :func:`judge` would watch its heartbeat).
    """
    found = []
    for share, path in [(None, lock_file(store)), *share_locks(store)]:
        info = _read(path)
        if info is None:
            continue
        here = info.get("host") == socket.gethostname()
        found.append({**info, "share": share, "alive": _pid_alive(int(info.get("pid", -1))) if here else None})
    return found


def _remove_stale(path: Location, judged: dict | None) -> None:
    """Delete the lock at ``path`` if it is still the stale one ``judged``; put back anything else moved meanwhile.

    Object storage has no rename: the lock is read and deleted if it is still the one judged. A run that took
    it over in the instant between loses it, sees so at its next beat and stops (as in point 4 of the
    protocol), so there is still at most one holder (:meth:`~rmtsweep.store.backend.Location.remove_if`).
    """
    path.remove_if(lambda raw: _identity(_parse(raw)) == _identity(judged))
    fence_out(path, (judged or {}).get("token"))       # its writers, if any still run, write nothing more


def judge(path: Location, lease: float | None = None, poll: float | None = None,
          clock: Callable[[], float] = time.monotonic,
          sleep: Callable[[float], None] = time.sleep) -> tuple[str, dict | None]:
    """Whether the lock file at ``path`` is ``"free"``, ``"live"`` or ``"stale"``, and what it held.

    A lock on this host is judged by its pid at once. Any other is watched on this process's monotonic
    clock: live as soon as its ``(token, beat)`` changes, stale when it has not changed for ``lease``
    seconds (default: the setting ``rmtsweep.lock.lease``). The file's mtime is never read.
    """
    lease = float(config.get("lock.lease") if lease is None else lease)
    info = _read(path)
    if info is None and not path.exists():
        return "free", None
    if info and info.get("host") == socket.gethostname():
        return ("live" if _pid_alive(int(info.get("pid", -1))) else "stale"), info
    poll = poll if poll is not None else max(min(1.0, lease / 10), 0.01)
    seen, since = _identity(info), clock()
    while clock() - since < lease:
        sleep(poll)
        now = _read(path)
        if now is None and not path.exists():
            return "free", None
        if _identity(now) != seen:
            return "live", now
    return "stale", info


class StoreLock:
    """Exclusive, fenced write access to a store, for use as a context manager.

    Parameters
    ----------
    store
        The store's path (the lock is :func:`lock_file` of it; the store itself need not exist yet).
    heartbeat, lease
        Seconds between heartbeats, and without one before other runs may take the store over (default: the
        settings ``rmtsweep.lock.heartbeat`` and ``rmtsweep.lock.lease`` when the lock is made).

    Examples
    --------
    >>> with StoreLock(Path("store/demo.zarr")) as lock:   # doctest: +SKIP
    ...     lock.token                                     # the fencing token every task carries
    """

    def __init__(self, store: str | Path | Location, heartbeat: float | None = None, lease: float | None = None,
                 share: Share | None = None) -> None:
        self.store, self.share = locate(store), share
        self.path = lock_file(self.store, share)
        self.heartbeat = float(config.get("lock.heartbeat") if heartbeat is None else heartbeat)
        self.lease = float(config.get("lock.lease") if lease is None else lease)
        self.token = uuid.uuid4().hex
        self.failure: str | None = None
        self.beat = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _info(self) -> dict:
        return {"token": self.token, "host": socket.gethostname(), "pid": os.getpid(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "beat": self.beat}

    def _create(self) -> bool:
        if not self.path.create(json.dumps(self._info()).encode(), parents=True):
            return False
        return (_read(self.path) or {}).get("token") == self.token

    def _refuse(self, info: dict | None) -> StoreError:
        if self.share is not None:
            return StoreError(f"{self.store}: element {self.share[0]} of {self.share[1]} is already being computed "
                              f"({_owner(info)}); wait for it to finish or cancel it")
        return _run_refusal(self.store, info)

    def _take_over(self, judged: dict | None) -> None:
        """Move the stale lock ``judged`` out of the way; put back anything else that was moved instead."""
        _remove_stale(self.path, judged)

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreError` naming the live owner.

        Waits up to ``lease`` seconds when the lock belongs to another host (its heartbeat must be
        seen not to move before it may be taken over); refuses at once when its owner is alive on
        this host or its heartbeat moves.
        """
        for _ in range(5):
            if self._create():
                break
            state, info = judge(self.path, self.lease)
            if state == "live":
                raise self._refuse(info)
            if state == "stale":
                self._take_over(info)
        else:
            raise StoreError(f"{self.store}: could not take the store's lock ({self.path}); another run is taking "
                             f"it at the same time; try again")
        open_staging(self.path, self.token)
        self._thread = threading.Thread(target=self._beat, name="rmtsweep-lock-heartbeat", daemon=True)
        self._thread.start()

    def _write_beat(self) -> None:
        def beaten(raw: bytes | None) -> bytes:
            held = _parse(raw)
            if held is None and raw is not None:
                raise OSError("cannot read the lock file")
            if held is None or held.get("token") != self.token:
                raise LookupError("taken over")
            return json.dumps({**held, "beat": self.beat + 1}).encode()
        # only the lock just read: a holder stopped between its read and its write (a suspended node) would
        # otherwise bring back, with its own token, a lock another run took over, and pass its lock checks again
        if not self.path.update(beaten):
            raise LookupError("taken over")
        self.beat += 1

    def _beat(self) -> None:
        last_ok = time.monotonic()
        while not self._stop.wait(self.heartbeat):
            try:
                self._write_beat()
                last_ok = time.monotonic()
            except LookupError:
                self.failure = f"the lock ({self.path}) now belongs to another run"
                return
            except Exception as exc:  # noqa: BLE001 - an OSError, or a storage service's own error
                # transient (an NFS hiccup, a bucket's endpoint not answering): try again at the next beat, unless
                # the lease would lapse first
                if time.monotonic() - last_ok + self.heartbeat >= self.lease:
                    self.failure = (f"cannot refresh the store's lock ({getattr(exc, 'strerror', None) or exc}) "
                                    f"for {time.monotonic() - last_ok:.0f} s")
                    return

    def check(self) -> None:
        """Raise :class:`RunError` if the run may no longer write the store.

        That is: its heartbeat could not be written for almost a lease (other runs would soon judge
        the lock stale), or the lock file no longer carries this run's token.
        """
        if self.failure is None:
            try:
                held = holds(self.store, self.token, self.share, strict=True)
            except RmtsweepError:
                raise                       # the storage's own one line (it does not answer, credentials expired)
            except Exception:  # noqa: BLE001 - any other failure to read it: the run cannot show it holds the lock
                held = False
            if not held:
                self.failure = f"the lock ({self.path}) is no longer this run's"
        if self.failure is not None:
            raise RunError(f"{self.store}: {self.failure}; stopped so that no other run can take the store over; "
                           f"rerun to resume")

    def release(self) -> None:
        """Stop the heartbeat and remove the lock (if it is still this run's)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        close_staging(self.path, self.token)
        if holds(self.store, self.token, self.share):
            self.path.remove()

    def __enter__(self) -> StoreLock:
        try:
            self.acquire()
        except BaseException:
            self.release()                  # a signal between creating the file and returning: leave no lock
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.release()
