"""A store written by an earlier version of the code (``tests/data/partial.zarr``, half computed) opens,
verifies clean and resumes to what a fresh run of its sweep computes, on disk and copied to a bucket: the store
format is kept."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import rmtsweep
from rmtsweep.testing import assert_stores_equal
from tests.helpers import build_store, run_main

DATA = Path(__file__).resolve().parents[1] / "data"
pytestmark = pytest.mark.usefixtures("in_process_runs")


@pytest.fixture
def kept(tmp_path) -> Path:
    """A copy of the kept store (the tests change it), beside a copy of its sweep file."""
    shutil.copy(DATA / "partial.yaml", tmp_path / "partial.yaml")
    return Path(shutil.copytree(DATA / "partial.zarr", tmp_path / "partial.zarr"))


def test_the_kept_store_opens_and_verifies_clean(kept, capsys):
    status = rmtsweep.status(kept)
    assert (status.tasks_done, status.tasks_total) == (2, 4)
    assert rmtsweep.store.verify(kept) == []
    code, out, err = run_main(["verify", str(kept)], capsys)
    assert code == 0, err
    assert "every finished task's chunks are present" in out


def test_the_kept_store_resumes_to_a_fresh_run(kept, tmp_path, capsys):
    code, _, err = run_main(["run", str(kept.with_suffix(".yaml")), "--store", str(kept), "--no-progress"], capsys)
    assert code == 0, err
    status = rmtsweep.status(kept)
    assert status.tasks_done == status.tasks_total == 4
    assert status.replicates_by_run == {0: 8, 1: 8}          # the kept run's replicates were not recomputed
    fresh = build_store(tmp_path / "fresh.zarr", yaml.safe_load((DATA / "partial.yaml").read_text()))
    assert_stores_equal(kept, fresh)


def test_the_kept_store_copied_to_a_bucket_verifies_and_resumes_there(s3_endpoint, tmp_path, capsys):
    s3fs = pytest.importorskip("s3fs")
    fs = s3fs.S3FileSystem(endpoint_url=s3_endpoint, use_listings_cache=False)
    fs.mkdir("kept")
    fs.put(str(DATA / "partial.zarr"), "kept/partial.zarr", recursive=True)
    url, options = "s3://kept/partial.zarr", ["--storage-option", f"endpoint_url={s3_endpoint}"]
    code, out, err = run_main(["verify", url, *options], capsys)
    assert code == 0 and "every finished task's chunks are present" in out, err
    code, _, err = run_main(["run", str(DATA / "partial.yaml"), "--store", url, "--no-progress", *options], capsys)
    assert code == 0, err
    there = rmtsweep.open_store(url, storage_options={"endpoint_url": s3_endpoint})
    fresh = build_store(tmp_path / "fresh.zarr", yaml.safe_load((DATA / "partial.yaml").read_text()))
    assert_stores_equal(there, fresh)
    assert rmtsweep.status(url, storage_options={"endpoint_url": s3_endpoint}).replicates_by_run == {0: 8, 1: 8}
