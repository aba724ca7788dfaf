"""Corruption is noticed: a chunk changed on disk fails its checksum; verify names it, repair recomputes it."""

from __future__ import annotations

import shutil

import pytest

from rmtsweep.cli import main
from rmtsweep.testing import assert_stores_equal


def _flip_middle(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(data)


def _exit(argv, capsys) -> tuple[int, list[str]]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code, capsys.readouterr()


@pytest.mark.slow
def test_verify_names_the_corrupt_task_and_repair_recomputes_it(reference, tmp_path, capsys):
    sweep_path, clean = reference
    store = tmp_path / "corrupt.zarr"
    shutil.copytree(clean, store)
    main(["verify", str(store)])
    assert "every finished task's chunks are present" in capsys.readouterr().out
    chunk = sorted((store / "eigenvalues").glob("*.*"))[-1]                  # the last task's chunk
    _flip_middle(chunk)
    code, out = _exit(["verify", str(store)], capsys)
    assert code == 1
    lines = out.out.strip().splitlines()
    assert lines[0] == (f"{store}: delta=0.5..1 gamma=0.5 T=4 replicates 2-3: eigenvalues chunk is corrupt "
                        f"(RuntimeError: Stored and computed crc32 checksum do not match. Stored: "
                        + lines[0].split("Stored: ")[1])
    assert lines[-1].endswith("--repair` clears them for the next run")
    code, out = _exit(["compare", str(store), "--no-write"], capsys)       # analysis: one line, no traceback
    assert code == 2
    err = out.err.strip().splitlines()
    assert len(err) == 1 and "eigenvalues chunk is corrupt" in err[0] and "rmtsweep verify" in err[0]
    main(["verify", str(store), "--repair"])
    assert "cleared the done flags of 1 task(s)" in capsys.readouterr().out
    main(["run", str(sweep_path), "--store", str(store), "--workers", "1", "--no-progress"])
    assert "(1 computed now)" in capsys.readouterr().out
    assert_stores_equal(store, clean)                                       # bit-identical after the repair
    main(["verify", str(store)])
    assert "every finished task's chunks are present" in capsys.readouterr().out


@pytest.mark.slow
def test_verify_names_a_done_task_whose_chunk_is_absent_and_repair_recomputes_it(reference, tmp_path, capsys):
    """A deleted chunk reads back as the fill value; verify must see it is not there."""
    sweep_path, clean = reference
    store = tmp_path / "absent.zarr"
    shutil.copytree(clean, store)
    (store / "overlap" / "0.0.0.0.1.0.0").unlink()                          # the second replicate block's chunk
    code, out = _exit(["verify", str(store)], capsys)
    assert code == 1
    lines = out.out.strip().splitlines()
    assert lines[0] == (f"{store}: delta=0.5..1 gamma=0.5 T=4 replicates 2-3: marked done but its overlap chunk "
                        f"is absent (done without data)")
    assert len(lines) == 2 and lines[1].startswith(f"{store}: 1 bad task(s)")
    main(["verify", str(store), "--repair"])
    assert "cleared the done flags of 1 task(s)" in capsys.readouterr().out
    main(["run", str(sweep_path), "--store", str(store), "--workers", "1", "--no-progress"])
    assert "(1 computed now)" in capsys.readouterr().out
    assert_stores_equal(store, clean)


def test_a_chunk_of_fill_values_only_is_written_so_presence_means_written(tmp_path):
    """zarr skips all-fill chunks by default; the writer stores them, so verify can tell absent from empty."""
    import numpy as np

    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.work import compute_task
    from rmtsweep.run.grid import tasks
    from rmtsweep.spec import parse_sweep
    from rmtsweep.store import Writer, blocking_of, verify
    from tests.helpers import BASE, build_store

    store = build_store(tmp_path / "s.zarr", BASE)
    task = next(tasks(parse_sweep(BASE), Blocking(*blocking_of(store))))
    values = compute_task(task)
    values["overlap"] = np.full_like(values["overlap"], np.nan)             # a variable legitimately all NaN
    Writer(store).write_block(task.region, values, None, run=1)
    assert (store / "overlap" / "0.0.0.0.0.0.0").exists()
    assert verify(store) == []


def test_the_old_names_of_verify_and_open_store_warn_and_answer_alike(reference, tmp_path):
    """``rmtsweep.store.corrupt_tasks`` and ``open_dataset`` are ``verify`` and ``open_store`` under their old names,
    for one release: each warns and answers alike, here on a store with one chunk flipped."""
    import rmtsweep
    from rmtsweep import store
    _, clean = reference
    damaged = tmp_path / "damaged.zarr"
    shutil.copytree(clean, damaged)
    _flip_middle(next(p for p in sorted((damaged / "eigenvalues").iterdir()) if not p.name.startswith(".")))
    now = rmtsweep.verify(damaged)
    assert len(now) == 1 and "eigenvalues chunk is corrupt" in str(now[0])
    with pytest.warns(DeprecationWarning, match=r"use rmtsweep\.verify"):
        assert store.corrupt_tasks(damaged) == now
    assert "corrupt_tasks" not in store.__all__ and "verify" in store.__all__
    with pytest.warns(DeprecationWarning, match=r"use rmtsweep\.open_store"):
        old = store.open_dataset(clean)
    assert old.identical(rmtsweep.open_store(clean)) and "open_dataset" not in store.__all__
