"""The benchmark runner cannot rot: its quick mode runs every case and its agreement checks pass.

No timing is asserted (timings on shared CI machines are noise); only that the runner finishes and
that our top-k eigenvalues and alignments agree with the naive numpy baseline to 1e-8 relative.
"""

from __future__ import annotations

import importlib.util
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


@pytest.mark.slow
def test_peers_benchmark_quick_mode():
    """The peers do rmtsweep's work bit for bit, and every tool's kill and rerun leaves nothing wrong or missing.

    A peer not installed is skipped by the script with a line saying how to install it; no time is asserted.
    """
    proc = subprocess.run([sys.executable, "benchmarks/peers.py", "--quick"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "agreement: every tool's arrays equal rmtsweep's bit for bit (108 units x 4 SNR)" in out, out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.strip().strip("|").split("|")]
            for line in out.splitlines() if line.startswith("| ") and not line.startswith("| tool")}
    expected = {"rmtsweep"}
    for module, name in (("pipefunc", "pipefunc"), ("hydra", "Hydra multirun, joblib launcher")):
        if importlib.util.find_spec(module) is None:
            assert "not installed, skipped (pip install -e '.[bench]')" in out, out
        else:
            expected.add(name)
    assert set(rows) == expected, out
    for cells in rows.values():
        files, kept, wrong_missing = cells[5], cells[7], cells[9]
        assert int(files.replace(",", "")) > 0, cells
        assert kept.endswith(" of 108") and 0 <= int(kept.split()[0]) <= 108, cells
        assert wrong_missing == "0 / 0", cells
