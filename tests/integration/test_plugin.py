"""A weights scheme from an installed plugin package (docs/plugin-example), run end to end: the command
line finds it by its entry point, the workers import it, the theory covers it like any fixed scheme."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
import yaml

from rmtsweep.model import correlation_matrix, make_correlation
from tests.helpers import BASE

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """docs/plugin-example installed (not editable) into a folder of its own (built from a copy: the build
    leaves nothing in the source tree)."""
    target, source = tmp_path_factory.mktemp("plugin"), tmp_path_factory.mktemp("plugin-source") / "example"
    shutil.copytree(ROOT / "docs" / "plugin-example", source)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                           str(source)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return target


def run(args: list[str], cwd: Path, plugin: Path | None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(plugin or ""), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "rmtsweep.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def test_a_plugin_scheme_runs_with_its_theory(plugin_path, reference, tmp_path):
    _, ref_store = reference
    sweep = {**BASE, "grid": {**BASE["grid"], "weights": ["mean", {"scheme": "python", "function": "geometric",
                                                                     "params": {"ratio": 0.5}}]}}
    path = tmp_path / "plugin.yaml"
    path.write_text(yaml.safe_dump(sweep))
    proc = run(["run", str(path), "--store", str(tmp_path / "p.zarr"), "--workers", "1", "--no-progress"], tmp_path,
               plugin_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ds, ref = xr.open_zarr(tmp_path / "p.zarr"), xr.open_zarr(ref_store)
    assert list(ds["weights"].values) == ["mean", "geometric(ratio=0.5)"]
    w = 0.5 ** np.arange(3, -1, -1.0)
    w /= w.sum()                                              # the plugin's weights at T = 4, written out here
    R = correlation_matrix(make_correlation(**BASE["correlation"]), 4)
    geo = dict(T=4, weights="geometric(ratio=0.5)")
    assert float(ds["theory_kappa"].sel(geo)) == pytest.approx(w @ w, rel=1e-12)
    assert float(ds["theory_alpha"].sel(geo)) == pytest.approx(w @ R @ w, rel=1e-12)
    assert np.allclose(ds["kappa"].sel(weights="geometric(ratio=0.5)"), w @ w, rtol=1e-12)   # realised = fixed
    assert np.isfinite(ds["theory_outlier"].sel(weights="geometric(ratio=0.5)")).all()
    # the draws do not depend on the schemes: the mean column is the reference store's, bit for bit
    assert np.array_equal(ds["eigenvalues"].sel(weights="mean").values, ref["eigenvalues"].sel(weights="mean").values)


def test_without_the_package_the_sweep_file_is_one_line(tmp_path):
    sweep = {**BASE, "grid": {**BASE["grid"], "weights": [{"scheme": "python", "function": "geometric"}]}}
    path = tmp_path / "plugin.yaml"
    path.write_text(yaml.safe_dump(sweep))
    proc = run(["run", str(path), "--store", str(tmp_path / "p.zarr")], tmp_path, None)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"rmtsweep: error: {path}: grid.weights[0].function: no weights function 'geometric': give "
        "'package.module:name', or the name of an entry point in 'rmtsweep.weights' (none installed) (got "
        "'geometric')"]
    assert not (tmp_path / "p.zarr").exists()


def test_a_plugin_that_returns_the_wrong_length_is_named(plugin_path, tmp_path):
    sweep = {**BASE, "grid": {**BASE["grid"], "weights": [{"scheme": "python", "function": "numpy:ones",
                                                           "params": {"shape": 3}}]}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sweep))
    proc = run(["run", str(path), "--store", str(tmp_path / "p.zarr")], tmp_path, plugin_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == (f"rmtsweep: error: {path}: grid.weights[0]: numpy:ones failed for T = 4: "
                                   "TypeError: ones() got multiple values for argument 'shape'")


def test_a_plugin_correlation_runs_with_its_theory_and_draws_its_signs(plugin_path, tmp_path):
    """The example package's `blocks` model by its entry point: the workers draw its signs, the theory uses its R."""
    sweep = {**BASE, "correlation": {"model": "python", "function": "blocks", "params": {"size": 2, "rho": 0.8}}}
    path = tmp_path / "blocks.yaml"
    path.write_text(yaml.safe_dump(sweep))
    proc = run(["run", str(path), "--store", str(tmp_path / "b.zarr"), "--workers", "1", "--no-progress"], tmp_path,
               plugin_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ds = xr.open_zarr(tmp_path / "b.zarr")
    assert bool(ds["done"].all()) and np.isfinite(ds["eigenvalues"]).all()
    R = np.array([[1, 0.8, 0, 0], [0.8, 1, 0, 0], [0, 0, 1, 0.8], [0, 0, 0.8, 1]])
    mean = dict(T=4, weights="mean")
    assert float(ds["theory_alpha"].sel(mean)) == pytest.approx(np.full(4, 0.25) @ R @ np.full(4, 0.25), rel=1e-12)
    assert float(abs(ds["theory_pooled_kurtosis"]).max()) == 0.0             # no closed form: the Gaussian value
    assert ds.attrs["correlation"] == "blocks(rho=0.8,size=2)"


def test_a_plugin_with_a_syntax_error_is_one_line_naming_its_file_and_line(tmp_path):
    plugin = tmp_path / "plugins"
    plugin.mkdir()
    (plugin / "typo_weights.py").write_text("import numpy as np\n\ndef f(R):\n    return np.ones(len(R)\n")
    sweep = {**BASE, "grid": {**BASE["grid"], "weights": [{"scheme": "python", "function": "typo_weights:f"}]}}
    path = tmp_path / "typo.yaml"
    path.write_text(yaml.safe_dump(sweep))
    proc = run(["run", str(path), "--store", str(tmp_path / "p.zarr")], tmp_path, plugin)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"rmtsweep: error: {path}: grid.weights[0].function: cannot import 'typo_weights' ({plugin}/typo_weights.py, "
        "line 4: SyntaxError: '(' was never closed) (got 'typo_weights:f')"]
    assert not (tmp_path / "p.zarr").exists()
