"""The benchmark runner cannot rot: its quick mode runs every case and its agreement checks pass.

No timing is asserted (timings on shared CI machines are noise); only that the runner finishes and
that our top-k eigenvalues and alignments agree with the naive numpy baseline to 1e-8 relative.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_benchmark_runner_quick_mode():
    proc = subprocess.run([sys.executable, "benchmarks/run.py", "--quick"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "command: `python benchmarks/run.py --quick`" in out
    rows = [line for line in out.splitlines() if line.startswith("| ") and not line.startswith("| case")]
    cases = {line.split("|")[1].strip() for line in rows}
    assert {"a", "b", "c", "d", "e"} <= cases, out
    for line in rows:
        case, agreement = line.split("|")[1].strip(), line.split("|")[-2].strip()
        assert "FAIL" not in agreement, line
        if case in ("a", "b"):                      # the cases with a baseline to agree with
            assert agreement.startswith("ok"), line
    assert "agreement: ALL OK" in out
