"""The rooms' layering (pyproject's import-linter contracts) holds: a lower room never imports a higher one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept():
    pytest.importorskip("importlinter", reason="import-linter is not installed (pip install -e '.[test]')")
    # in this interpreter, not through a `lint-imports` on PATH: another Python's would check the rmtsweep
    # that Python imports, which need not be this checkout
    command = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    proc = subprocess.run([sys.executable, "-c", command, "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_public_api_has_all():
    """Every package of rmtsweep declares its public names, and they all exist."""
    import importlib
    import pkgutil

    import rmtsweep

    names = ["rmtsweep"] + [m.name for m in pkgutil.walk_packages(rmtsweep.__path__, "rmtsweep.")]
    for name in names:
        module = importlib.import_module(name)
        assert hasattr(module, "__all__"), f"{name} has no __all__"
        missing = [n for n in module.__all__ if not hasattr(module, n)]
        assert not missing, f"{name}.__all__ names missing attributes {missing}"


def test_nothing_imports_pipeline():
    """The import name is rmtsweep: no code, test or benchmark imports `pipeline`."""
    offenders = []
    for p in [*ROOT.glob("pipeline/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py"),
              *ROOT.glob("docs/*.py")]:
        for i, line in enumerate(p.read_text().splitlines(), 1):
            s = line.strip()
            if p.name != "test_layers.py" and (s.startswith(("import pipeline", "from pipeline")) or "-m pipeline" in s):
                offenders.append(f"{p.relative_to(ROOT)}:{i}")
    assert not offenders, offenders
    assert sys.modules.get("pipeline") is None or "rmtsweep" in str(sys.modules["pipeline"])


def test_the_package_says_its_version():
    from importlib.metadata import version

    import rmtsweep
    assert rmtsweep.__version__ == version("rmtsweep") and rmtsweep.__version__[0].isdigit()


@pytest.mark.parametrize("package", ["rmtsweep", "rmtsweep.store", "rmtsweep.run"])
def test_lazy_names_are_listed_once(package):
    """A package's ``_LAZY`` is the one list of its names: ``__all__`` holds them, the type checker imports them."""
    import ast
    import importlib

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).read_text())
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    assert len(blocks) == 1, f"{package} has {len(blocks)} `if TYPE_CHECKING:` blocks"
    typed = [alias.asname or alias.name for node in ast.walk(blocks[0])
             if isinstance(node, ast.ImportFrom) for alias in node.names]
    lazy = set(module._LAZY)
    assert sorted(lazy - set(typed)) == [], f"{package}'s TYPE_CHECKING block does not import these names of _LAZY"
    assert sorted(set(typed) - lazy) == [], f"{package}'s TYPE_CHECKING block imports names _LAZY does not have"
    assert len(typed) == len(set(typed)), f"{package}'s TYPE_CHECKING block imports a name twice"
    assert lazy <= set(module.__all__)
    # ruff's F401 is off in these files: the names they import from the package at once must be public too
    eager = [alias.asname or alias.name for node in tree.body
             if isinstance(node, ast.ImportFrom) and node.level and node.module != "lazy" for alias in node.names]
    assert sorted(set(eager) - set(module.__all__)) == [], f"{package} imports these names but leaves them out of __all__"
    for name in lazy:                                 # each entry of the table points at what the block imports
        assert getattr(module, name) is not None, name
