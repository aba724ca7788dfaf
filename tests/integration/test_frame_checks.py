"""Checksums on everything a store holds: a changed or deleted chunk of a replicate array, a theory array or a
coordinate is named by verify, refused by compare, and brought back by verify --repair (and a run, for replicates)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
import xarray as xr
import yaml

from rmtsweep.testing import assert_stores_equal
from tests.helpers import BASE, build_store, run_main

pytestmark = pytest.mark.usefixtures("in_process_runs")

# kind of array: (array, chunk): the second task's chunk of a replicate array, a limit theory array's one chunk, a
# seeded finite-size theory array's (computed at the store's size), a coordinate's
CHUNKS = {"replicate": ("eigenvalues", "0.0.0.0.1.0.0"), "theory": ("theory_edge", "0.0.0.0"),
          "sized theory": ("pooled_null_location", "0.0.0.0.0.0"), "coordinate": ("gamma", "0")}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The BASE sweep's store, made and filled once (read only: each test damages a copy)."""
    root = tmp_path_factory.mktemp("frame")
    (root / "tiny.yaml").write_text(yaml.safe_dump(BASE))
    return build_store(root / "clean.zarr", BASE)


def _flip(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(data)


@pytest.mark.parametrize("how", ["flipped", "deleted"])
@pytest.mark.parametrize("kind", list(CHUNKS))
def test_a_damaged_chunk_is_named_refused_and_repaired(kind, how, clean, tmp_path, capsys):
    store = tmp_path / "damaged.zarr"
    shutil.copytree(clean, store)
    name, key = CHUNKS[kind]
    chunk = store / name / key
    _flip(chunk) if how == "flipped" else chunk.unlink()
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 1 and name in out and not err, out + err
    code, out, err = run_main(["compare", str(store), "--no-write"], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and name in lines[0] and "rmtsweep verify" in lines[0], out + err
    assert "Traceback" not in err and "summary" not in out.lower()
    code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code == 0, out + err
    if kind == "replicate":                         # the message's next step: the run recomputes the task
        assert "rerun `rmtsweep run`" in out
        sweep = clean.parent / "tiny.yaml"
        code, out, err = run_main(["run", str(sweep), "--store", str(store), "--workers", "1", "--no-progress"],
                                  capsys)
        assert code == 0 and "(1 computed now)" in out, out + err
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 0 and "not checksummed" not in out, out + err
    assert_stores_equal(store, clean, same_runs=kind != "replicate")        # replicate data: bit for bit
    repaired, original = xr.open_zarr(store).load(), xr.open_zarr(clean).load()
    for var in original.variables:
        a, b = repaired[var].values, original[var].values
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), var


def test_every_array_of_a_new_store_carries_a_checksum(clean):
    import zarr

    from rmtsweep.store.frame_check import checksummed
    group = zarr.open_group(str(clean), mode="r")
    names = [name for name, _ in group.arrays()]
    assert {"theory_edge", "paper_overlap", "finite_size_lambda1", "pooled_null_location", "delta",
            "weights"} <= set(names)
    assert [name for name, array in group.arrays() if not checksummed(array)] == []


def test_a_store_made_without_frame_checksums_opens_and_verifies(tmp_path, capsys, monkeypatch):
    """A store made before the frame carried checksums: its frame is not checked, nothing fails."""
    import rmtsweep.store.io as io
    monkeypatch.setattr(io, "checksum_encoding", lambda ds, names=None: {})
    store = build_store(tmp_path / "old.zarr", BASE)
    monkeypatch.undo()
    assert "filters" in (store / "theory_edge" / ".zarray").read_text()
    assert '"filters": null' in (store / "theory_edge" / ".zarray").read_text()
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 0 and "not checksummed" in out and "every finished task's chunks are present" in out, out + err
    (store / "theory_edge" / "0.0.0.0").unlink()            # unchecked: it reads as NaN, as it always did
    code, out, err = run_main(["compare", str(store), "--no-write"], capsys)
    assert code == 0, out + err
