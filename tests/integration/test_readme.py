"""Every python block of the README and of docs/api.md runs, against the demo store they describe."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = [block for page in ("README.md", "docs/api.md")
          for block in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("readme")
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", "demo", "--store", "store/demo.zarr",
                           "--workers", "1", "--no-progress"], cwd=where, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return where


def test_the_readme_has_python_blocks():
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(demo_dir, index):
    proc = subprocess.run([sys.executable, "-c", BLOCKS[index]], cwd=demo_dir, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, f"README python block {index + 1} failed:\n{BLOCKS[index]}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip()                    # it printed what it computed
