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
    assert "every finished chunk reads back" in capsys.readouterr().out
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
    assert "every finished chunk reads back" in capsys.readouterr().out
