"""Progress suits its output: a bar on a terminal, one plain line every few seconds in a batch log."""

from __future__ import annotations

import io
import re

from rmtsweep.run.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_batch_log_gets_periodic_lines_without_carriage_returns(monkeypatch):
    clock = iter(range(0, 1000, 5))                      # every update is 5 s after the last
    monkeypatch.setattr("rmtsweep.run.progress.time.monotonic", lambda: float(next(clock)))
    out = io.StringIO()
    p = Progress("demo", total=10, done=2, stream=out, every=15.0)
    for _ in range(8):
        p.update(replicates=8)
    p.close()
    lines = out.getvalue().splitlines()
    assert "\r" not in out.getvalue()
    assert 2 <= len(lines) <= 4                          # 8 updates over 40 s at one line per 15 s, plus the last
    assert re.fullmatch(r"demo: tasks 10/10 \(100%\), 64 replicates in \d+s, [\d.,]+ replicates/s, ETA 0s", lines[-1])


def test_terminal_gets_a_bar():
    out = _Terminal()
    p = Progress("demo", total=3, done=0, stream=out)
    for _ in range(3):
        p.update(replicates=1)
    p.close()
    assert "\r" in out.getvalue() and "3/3" in out.getvalue()


def test_disabled_prints_nothing():
    out = io.StringIO()
    p = Progress("demo", total=3, done=0, stream=out, enabled=False)
    p.update(replicates=1)
    p.close()
    assert out.getvalue() == ""
