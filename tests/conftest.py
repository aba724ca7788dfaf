"""Shared fixtures: a small valid sweep as data, and a writer of sweep files."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

BASE = {
    "name": "tiny",
    "d": 24,
    "replicates": 4,
    "replicates_per_task": 2,
    "seed": 7,
    "correlation": {"model": "prefix", "L": 2},
    "table_centering": "class",
    "top_k": 2,
    "grid": {"delta": [0.5, 1.0], "gamma": [0.5], "snr": [0.0, 4.0], "T": [4],
             "weights": ["mean", "optimal"]},
}


@pytest.fixture
def sweep_data() -> dict:
    """A fresh copy of a tiny valid sweep definition (mutate freely)."""
    return copy.deepcopy(BASE)


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny sweep (``BASE``) run once on a 1-worker LocalCluster: (sweep file, store)."""
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("reference")
    sweep_path, store_path = root / "tiny.yaml", root / "reference.zarr"
    sweep_path.write_text(yaml.safe_dump(BASE))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(sweep_path), store_path, client, progress=False)
    return sweep_path, store_path


@pytest.fixture
def write_sweep(tmp_path: Path):
    """Write a sweep definition (dict or raw text) to a YAML file and return its path."""
    def _write(data, name: str = "sweep.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path
    return _write
