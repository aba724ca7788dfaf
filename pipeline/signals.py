"""Holding SIGINT and SIGTERM over a section that must not be cut in two, then delivering them.

A stop signal (Ctrl-C, a batch system's SIGTERM) raises in the main thread wherever it lands. Around a
section whose steps must happen together or not at all (starting or closing a cluster; marking a batch of
tasks done and journaling it), :class:`Held` keeps the signal and :meth:`Held.deliver` raises it after.
"""

from __future__ import annotations

import signal
import sys
import threading
import warnings
from typing import Any

__all__ = ["STOPS", "Held", "quiet_finalizers"]

STOPS = (signal.SIGINT, signal.SIGTERM)


class Held:
    """SIGINT and SIGTERM held while the body runs; :meth:`deliver` then raises the first one that came.

    With ``block`` both are also blocked in this thread while the body runs, so the threads it starts, and
    the processes those start, never receive them (threads inherit the mask, and a child keeps it across
    fork and exec). Handlers can be set in the main thread only: elsewhere nothing is held.
    """

    def __init__(self, block: bool = False) -> None:
        self.block = block
        self.held: list[int] = []

    def __enter__(self) -> Held:
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            self.previous = {s: signal.signal(s, self._hold) for s in STOPS}
        if self.block:
            self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
        return self

    def _hold(self, signum: int, frame: Any) -> None:
        self.held.append(signum)

    def __exit__(self, *exc: object) -> None:
        if self.block:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)   # one pending here goes to _hold at once
        if self.main:
            for s, handler in self.previous.items():
                signal.signal(s, handler)

    def deliver(self) -> None:
        if self.held:
            signal.raise_signal(self.held[0])     # to the handler it would have met: KeyboardInterrupt, SIGTERM's


def _closed_loop(unraisable: Any) -> bool:
    """Whether a finalizer failed only because the event loop it would close on is closed already."""
    exc = unraisable.exc_value
    return isinstance(exc, RuntimeError) and "IOLoop is closed" in str(exc)


def quiet_finalizers() -> None:
    """From now on, a finalizer that fails on a closed event loop prints nothing (others still do).

    For a process about to end, after its one line: a dask ``Client`` that a stop left unclosed (one a
    worker made for its task, say) is collected after the loop it would close on. Its ``__del__`` then
    prints seven lines of ``Exception ignored ... IOLoop is closed``, which tell the user nothing.
    """
    # A stop during the cluster's start leaves its start-up coroutines unawaited; the warning says nothing to a user
    warnings.filterwarnings("ignore", message=r"coroutine .* was never awaited", category=RuntimeWarning)
    previous = sys.unraisablehook
    if getattr(previous, "quiet_finalizers", False):
        return

    def hook(unraisable: Any) -> None:
        if not _closed_loop(unraisable):
            previous(unraisable)

    hook.quiet_finalizers = True    # type: ignore[attr-defined]
    sys.unraisablehook = hook
