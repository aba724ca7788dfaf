"""The version comes from git tags (setuptools-scm, pyproject.toml) and is the same everywhere it is shown."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def test_the_command_prints_the_installed_version():
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[-1] == version("rmtsweep")


def test_provenance_records_the_installed_version():
    import rmtsweep
    from rmtsweep.run import package_version

    assert package_version() == rmtsweep.__version__ == version("rmtsweep")
