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


def test_a_rebuilt_consolidated_copy_leaves_a_stray_array_out(store, tiny_store, capsys):
    """A stray document (valid JSON, no array of the store's) is never taken into the rebuilt .zmetadata."""
    (store / "junk").mkdir()
    (store / "junk/.zarray").write_text('{"zarr_format": 2, "shape": [1]}')
    (store / ".zmetadata").write_bytes(b"")
    code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code == 0 and "rebuilt" in out, out + err
    assert not any(key.startswith("junk") for key in json.loads((store / ".zmetadata").read_text())["metadata"])
    for argv in (["verify", str(store)], ["compare", str(store), "--no-write"], ["status", str(store)]):
        code, out, err = run_main(argv, capsys)
        assert code == 0 and not err, (argv, out + err)
    assert_stores_equal(store, tiny_store, same_runs=True)


def test_repair_refuses_in_one_line_while_a_run_holds_the_lock(store, capsys):
    from rmtsweep.store import StoreLock
    (store / "kappa/.zarray").write_bytes(b"")
    with StoreLock(store):                              # a run writing the store, as far as the lock says
        code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code == 2 and err.count("\n") == 1 and "another rmtsweep run is writing this store" in err, out + err
    assert (store / "kappa/.zarray").read_bytes() == b""            # nothing repaired under the run
    code, out, err = run_main(["verify", str(store), "--repair"], capsys)
    assert code == 0 and "rebuilt" in out, out + err


def test_a_document_damaged_in_both_copies_is_named_with_a_fix_that_works(store, tmp_path, capsys):
    (store / ".zmetadata").write_bytes(b"")
    (store / "kappa/.zarray").write_bytes(b"")
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(TINY))
    for argv in (["status", str(store)], ["compare", str(store)], ["verify", str(store)],
                 ["run", str(sweep), "--store", str(store)]):
        code, out, err = run_main(argv, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, out + err)
        assert "kappa/.zarray" in err and "rebuild the store from its sweep file: `rmtsweep run " in err, (argv, err)
        assert "--repair" not in err, (argv, err)


def test_root_attributes_lost_in_both_copies_say_what_is_lost_and_how_to_rebuild(store, tmp_path, capsys):
    (store / ".zattrs").write_bytes(b"{")
    (store / ".zmetadata").write_bytes(b"")
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(TINY))
    for argv in (["status", str(store)], ["compare", str(store)], ["verify", str(store)],
                 ["verify", str(store), "--repair"], ["export", str(store), "--out", str(tmp_path / "x.csv")],
                 ["run", str(sweep), "--store", str(store)]):
        code, out, err = run_main(argv, capsys)
        assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (argv, out + err)
        assert "root attributes are lost" in err and "sweep, seed and record of runs" in err, (argv, err)
        assert "rebuild the store from its sweep file: `rmtsweep run " in err and "--repair" not in err, (argv, err)


@pytest.mark.slow
def test_a_resume_checks_its_metadata_before_any_task_runs(tmp_path, capsys):
    """A store waiting for its theory rewrites its consolidated copy at the end: a damaged document stops the run at
    its start, in one line, and the repair lets the same command finish the store."""
    from rmtsweep.run.cost import choose_blocking
    from rmtsweep.run.runner import make_template, run_info
    from rmtsweep.spec import load_sweep
    from rmtsweep.store import Store
    from tests.helpers import writes
    from tests.integration.test_theory_beside import SWEEP
    path = tmp_path / "beside.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    sf = load_sweep(path)
    store = tmp_path / "s.zarr"
    with Store(store).prepare(sf, lambda b: make_template(sf, b, defer=True), run_info(sf),
                              choose_blocking(sf.sweep).as_tuple()):
        pass                                            # a run stopped as soon as its store existed
    assert json.loads((store / ".zattrs").read_text())["theory_pending"] is True
    (store / "overlap/.zarray").write_bytes(b"")
    run = ["run", str(path), "--store", str(store), "--workers", "1", "--no-progress"]
    code, out, err = run_main(run, capsys)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, out + err
    assert "metadata overlap/.zarray is empty" in err and f"rmtsweep verify {store} --repair" in err
    assert writes(store) == 0                           # no task ran
    assert run_main(["verify", str(store), "--repair"], capsys)[0] == 0
    code, out, err = run_main(run, capsys)
    assert code == 0 and "Traceback" not in err, out + err
    code, out, err = run_main(["verify", str(store)], capsys)
    assert code == 0 and "theory_pending" not in (store / ".zattrs").read_text(), out + err
