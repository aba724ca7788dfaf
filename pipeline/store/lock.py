"""One writer per store: a lock file that a dead run does not hold forever.

The lock is a file created with ``O_CREAT | O_EXCL`` (atomic on local filesystems and NFS), holding
the owner's host, pid and start time. While the run lives, a background thread touches it every
``HEARTBEAT`` seconds. A lock is stale, and is taken over, when its owner is on this host and its
pid is gone, or when its heartbeat is older than ``STALE_AFTER`` seconds (an owner on another host
that died). A live run's lock is never taken over.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

from ..errors import RunError, StoreError

__all__ = ["HEARTBEAT", "LOCK_NAME", "METADATA_LOCK_NAME", "STALE_AFTER", "StoreLock", "is_stale", "metadata_lock"]

LOCK_NAME = ".rmtsweep.lock"
METADATA_LOCK_NAME = ".rmtsweep-metadata.lock"
HEARTBEAT = 5.0
STALE_AFTER = 60.0


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the lock at ``path`` belongs to a run that is gone."""
    info = _read(path)
    try:
        age = (now or time.time()) - path.stat().st_mtime
    except FileNotFoundError:
        return True
    if info and info.get("host") == socket.gethostname():
        return not _pid_alive(int(info.get("pid", -1)))
    return age > STALE_AFTER


class StoreLock:
    """Exclusive write access to a store directory, for use as a context manager.

    Examples
    --------
    >>> with StoreLock(Path("store/demo.zarr")):   # doctest: +SKIP
    ...     pass
    """

    def __init__(self, store: Path, heartbeat: float = HEARTBEAT) -> None:
        self.path = Path(store) / LOCK_NAME
        self.heartbeat = heartbeat
        self.failure: OSError | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w") as f:
            json.dump({"host": socket.gethostname(), "pid": os.getpid(),
                       "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, f)
        return True

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreError` naming the live owner."""
        for _ in range(3):
            if self._create():
                break
            if not is_stale(self.path):
                info = _read(self.path) or {}
                raise StoreError(f"{self.path.parent}: another rmtsweep run is writing this store "
                                 f"(pid {info.get('pid', '?')} on {info.get('host', '?')} since "
                                 f"{info.get('started', '?')}); wait for it to finish or stop it")
            # move the stale lock aside atomically, so two runs cannot both remove a fresh one
            try:
                os.rename(self.path, self.path.with_name(f"{LOCK_NAME}.stale-{uuid.uuid4().hex[:8]}"))
            except FileNotFoundError:
                pass
            for old in self.path.parent.glob(f"{LOCK_NAME}.stale-*"):
                old.unlink(missing_ok=True)
        else:
            raise StoreError(f"{self.path.parent}: could not take the store's lock")
        self._thread = threading.Thread(target=self._beat, name="rmtsweep-lock-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            try:
                os.utime(self.path)
            except OSError as exc:
                self.failure = exc          # the run stops at its next check (see check)
                return

    def check(self) -> None:
        """Raise :class:`RunError` if the heartbeat could not be written.

        A lock whose heartbeat stops looks stale to other hosts after ``STALE_AFTER`` seconds, so a
        run that cannot refresh it must stop before another run may take the store over.
        """
        if self.failure is not None:
            raise RunError(f"{self.path.parent}: cannot refresh the store's lock ({self.failure.strerror or self.failure}); "
                           f"stopped so that no other run can take the store over; rerun to resume")

    def release(self) -> None:
        """Stop the heartbeat and remove the lock."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        info = _read(self.path)
        if info and info.get("pid") == os.getpid() and info.get("host") == socket.gethostname():
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> "StoreLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@contextlib.contextmanager
def metadata_lock(store: Path, timeout: float = 30.0) -> Iterator[None]:
    """Exclusive right to rewrite the store's consolidated metadata, held for one read-merge-replace.

    A run (recording itself) and ``rmtsweep compare --write`` (adding its group) both rewrite
    ``.zmetadata``; taking this short-lived lock first means neither loses the other's entries. A
    lock older than ``timeout`` belongs to a process that died mid-write and is broken.
    """
    path = Path(store) / METADATA_LOCK_NAME
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            break
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime > timeout:
                    path.unlink(missing_ok=True)
                    continue
            except FileNotFoundError:
                continue
            if time.monotonic() > deadline:
                raise StoreError(f"{store}: another process is rewriting the store's metadata ({path.name} held "
                                 f"for over {timeout:g} s); try again") from None
            time.sleep(0.05)
    os.close(fd)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
