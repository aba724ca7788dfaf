"""The sweeps and cluster configs ship with the package: a plain (non-editable) install runs them by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rmtsweep.errors import SweepDefinitionError
from rmtsweep.shipped import cluster_config, resolve_sweep, sweeps

ROOT = Path(__file__).resolve().parents[2]


def test_every_sweep_of_the_repository_is_shipped():
    shipped = sweeps()
    on_disk = {p.relative_to(ROOT / "sweeps").with_suffix("").as_posix() for p in (ROOT / "sweeps").rglob("*.yaml")}
    assert set(shipped) == on_disk
    assert "Mean, optimal and harmonic pooling" in shipped["demo"][1]
    assert resolve_sweep("paper-phase").read_text() == (ROOT / "sweeps" / "paper-phase.yaml").read_text()
    assert resolve_sweep("convergence/d400.yaml").name == "d400.yaml"
    assert cluster_config("pbs").read_text() == (ROOT / "deploy" / "pbs" / "jobqueue.yaml").read_text()


def test_a_path_wins_and_an_unknown_name_is_one_line(tmp_path):
    mine = tmp_path / "demo"
    mine.write_text("name: mine\n")
    assert resolve_sweep(mine) == mine
    with pytest.raises(SweepDefinitionError, match=r"^nope: no such sweep file, and not a shipped sweep \(shipped: .*demo"):
        resolve_sweep("nope")


@pytest.mark.slow
def test_plain_install_runs_shipped_sweeps_from_anywhere(tmp_path):
    """`pip install .` (not editable) into a folder; from another directory, `sweeps` and `submit demo
    --cluster slurm --dry-run` find the shipped files."""
    target = tmp_path / "site"
    build = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                            "--target", str(target), str(ROOT)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"}
    # every subpackage must come from the install: an editable install's finder would supply a missing one
    # from the source tree, so each is asked for its file
    from setuptools import find_namespace_packages
    subpackages = ["rmtsweep"] + [f"rmtsweep.{p}" for p in find_namespace_packages(str(ROOT / "pipeline"))
                                  if "__pycache__" not in p]
    code = "import importlib\nfor name in " + repr(subpackages) + ":\n    print(importlib.import_module(name).__file__)"
    where = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    files = where.stdout.split()
    assert len(files) == len(subpackages) and all(f.startswith(str(target)) for f in files), \
        where.stdout + where.stderr
    listed = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "sweeps"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert listed.returncode == 0 and "paper-phase" in listed.stdout and "demo" in listed.stdout, listed.stderr
    dry = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "submit", "demo", "--cluster", "slurm", "--dry-run"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"--cluster-config {target / 'rmtsweep' / 'deploy' / 'slurm' / 'jobqueue.yaml'}" in dry.stdout
    assert str(target / "rmtsweep" / "sweeps" / "demo.yaml") in dry.stdout
    assert f"--tls-ca-file {tmp_path}/.rmtsweep-tls-<run>/ca.pem" in dry.stdout     # how the credentials travel
    assert sorted(p.name for p in tmp_path.iterdir()) == ["site"]                 # a dry run writes nothing
