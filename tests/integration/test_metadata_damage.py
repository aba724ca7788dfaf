"""Damaged metadata: every command says which document in one line; verify finds a document the consolidated
copy hides, and --repair rebuilds it from its other copy, leaving the store as it was."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from rmtsweep.testing import assert_stores_equal
from tests.helpers import TINY, run_main

pytestmark = pytest.mark.usefixtures("in_process_runs")

DAMAGE = {
    "empty .zmetadata": (".zmetadata", b""),
    "garbled .zmetadata": (".zmetadata", b'{"metadata": {'),
    "empty .zattrs": (".zattrs", b""),
    "empty zarr.json": ("zarr.json", b""),
    "empty .zarray of an array": ("eigenvalues/.zarray", b""),
    "garbled .zattrs of an array": ("done/.zattrs", b"\x00\x01"),
    "a .zarray that disagrees": ("kappa/.zarray", None),
}
# what the consolidated copy hides from every reader but verify
HIDDEN = {"empty .zarray of an array", "garbled .zattrs of an array", "a .zarray that disagrees"}


def damage(store, kind: str) -> None:
    key, data = DAMAGE[kind]
    if data is None:                                  # valid JSON, another array's shape
        meta = json.loads((store / key).read_text())
        meta["shape"] = [n + 1 for n in meta["shape"]]
        data = json.dumps(meta).encode()
    (store / key).write_bytes(data)


@pytest.fixture
def store(tmp_path, tiny_store):
    copy = tmp_path / "tiny.zarr"
    shutil.copytree(tiny_store, copy)
    return copy


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_each_command_names_the_damaged_document_and_verify_repairs_it(kind, store, tiny_store, tmp_path, capsys):
    damage(store, kind)
    key = DAMAGE[kind][0]
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(TINY))
    if kind not in HIDDEN:
        for argv in (["status", str(store)], ["compare", str(store)], ["run", str(sweep), "--store", str(store)]):
            code, out, err = run_main(argv, capsys)
            assert code != 0, (argv, out)
            assert err.count("\n") == 1 and key in err and "Traceback" not in err, (argv, err)
            assert f"rmtsweep verify {store} --repair" in err
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 1 and f"metadata {key}" in out, out + err
    code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code == 0 and "rebuilt" in out, out + err
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 0 and "metadata" not in out, out + err
    assert not (store / "zarr.json").exists()
    assert_stores_equal(store, tiny_store, same_runs=True)
    for name in (".zattrs", "eigenvalues/.zarray", "done/.zattrs", "kappa/.zarray"):
        assert json.loads((store / name).read_text()) == json.loads((tiny_store / name).read_text())


def test_a_foreign_zarr_store_is_left_untouched(tmp_path, capsys):
    import zarr
    foreign = tmp_path / "foreign.zarr"
    zarr.open_group(str(foreign), mode="w", zarr_format=2).attrs["owner"] = "someone else"
    zarr.consolidate_metadata(str(foreign))
    (foreign / ".zmetadata").write_bytes(b"")
    before = {p.name: p.read_bytes() for p in foreign.iterdir()}
    code, out, err = run_main(["verify", str(foreign), "--repair"], capsys)
    assert code == 2 and "not an rmtsweep store" in err
    assert {p.name: p.read_bytes() for p in foreign.iterdir()} == before


def test_both_copies_damaged_is_one_line_and_changes_nothing(store, capsys):
    (store / ".zmetadata").write_bytes(b"")
    (store / "kappa/.zarray").write_bytes(b"")
    code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code != 0 and err.count("\n") == 1 and "cannot rebuild" in err, out + err
    assert (store / ".zmetadata").read_bytes() == b""
