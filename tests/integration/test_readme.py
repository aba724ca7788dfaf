"""Every python block of the README and of the site's pages runs, against the demo store they describe.

The pages are docs/getting-started.md and the user guide's (docs/user-guide/*.md). The dimensions the user guide
documents for a store are those `rmtsweep.open_store` gives for the demo store.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/getting-started.md",
         *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("docs/user-guide/*.md"))]
BLOCKS = [(page, block) for page in PAGES
          for block in re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("readme")
    # the store the pages read, not a test of worker processes: its worker is a thread (--in-process)
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", "demo", "--store", "store/demo.zarr",
                           "--workers", "1", "--in-process", "--no-progress"], cwd=where, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return where


def test_the_readme_has_python_blocks():
    assert BLOCKS


def test_the_user_guide_has_python_blocks():
    assert {page for page, _ in BLOCKS} >= {"README.md", "docs/getting-started.md", "docs/user-guide/python-api.md",
                                             "docs/user-guide/stores.md"}


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"{page}-{i}" for i, (page, _) in enumerate(BLOCKS)])
def test_readme_block_runs(demo_dir, index):
    """Each block runs saved as a file, as a user runs it: a block that starts a cluster needs its `__main__` guard."""
    page, block = BLOCKS[index]
    script = demo_dir / f"block_{index}.py"
    script.write_text(block)
    proc = subprocess.run([sys.executable, script.name], cwd=demo_dir, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{page}: python block failed:\n{block}\n{proc.stderr[-2000:]}"
    assert proc.stdout.strip()                    # it printed what it computed


def documented_dimensions() -> dict[str, str]:
    """The store's dimensions as docs/user-guide/stores.md lists them: name -> when it is present."""
    text = (ROOT / "docs/user-guide/stores.md").read_text()
    table = text.split(":name: store-dimensions", 1)[1].split("```", 1)[0]
    rows = re.findall(r"^\* - `(\w+)`\n  - (.+)$", table, flags=re.M)
    assert rows, "no dimension table in docs/user-guide/stores.md"
    return dict(rows)


def test_the_documented_dimensions_are_the_demo_stores(demo_dir):
    """The demo (top-level d, fixed weights over T = 16, no spectrum) has the dims documented as always present
    and those of the pooling null; every documented dimension is one the package names (rmtsweep.dims)."""
    import rmtsweep
    from rmtsweep import dims

    documented = documented_dimensions()
    for_the_demo = {name for name, when in documented.items()
                    if when == "always" or "fixed weights over `T >= 2`" in when}
    with rmtsweep.open_store(demo_dir / "store" / "demo.zarr") as ds:
        assert set(ds.sizes) == for_the_demo
    assert set(documented) == {*dims.ALL_AXES, "replicate", "k", "bin", *dims.NULL_DIMS}
