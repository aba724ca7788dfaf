"""Progress of a run: a bar on a terminal, one line every ``rmtsweep.progress.line-seconds`` in a batch log."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from tqdm.auto import tqdm

from .. import config

__all__ = ["Progress"]



def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


class Progress:
    """Counts tasks and replicates (docs/glossary.md); shows them as a tqdm bar (TTY) or as periodic plain lines (no
    TTY).

    Parameters
    ----------
    name
        The sweep's name, first on every line.
    total, done
        Tasks in the sweep and tasks already done before this run.
    enabled
        ``False`` prints nothing.
    stream
        Where to write (default stderr); a bar only if it is a terminal.
    every
        Seconds between two plain lines (default: the setting ``rmtsweep.progress.line-seconds``).
    """

    def __init__(self, name: str, total: int, done: int, enabled: bool = True,
                 stream: TextIO | None = None, every: float | None = None) -> None:
        self.name, self.total, self.done = name, total, done
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.every = float(config.get("progress.line-seconds") if every is None else every)
        self.replicates = self.now_done = 0
        self.start = self.last = time.monotonic()
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.bar = tqdm(total=total, initial=done, desc=f"{name}: tasks", unit="task", file=self.stream,
                        dynamic_ncols=True) if enabled and tty else None

    def update(self, replicates: int) -> None:
        """One task finished, which computed ``replicates`` (one per point, weights scheme and replicate number)."""
        self.done += 1
        self.now_done += 1
        self.replicates += replicates
        if self.bar is not None:
            self.bar.update()
        elif self.enabled and time.monotonic() - self.last >= self.every:
            self.line()

    def line(self) -> None:
        """Print ``name: tasks a/b (p%), c replicates in t, r replicates/s, ETA e``."""
        now = time.monotonic()
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        left = self.total - self.done
        eta = left * elapsed / max(self.now_done, 1)
        print(f"{self.name}: tasks {self.done}/{self.total} ({100 * self.done / max(self.total, 1):.0f}%), "
              f"{self.replicates} replicates in {_duration(elapsed)}, {self.replicates / elapsed:,.1f} replicates/s, "
              f"ETA {_duration(eta)}", file=self.stream, flush=True)

    def close(self) -> None:
        """Close the bar, or print the last line."""
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.replicates:
            self.line()
