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


@pytest.fixture
def write_sweep(tmp_path: Path):
    """Write a sweep definition (dict or raw text) to a YAML file and return its path."""
    def _write(data, name: str = "sweep.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path
    return _write
