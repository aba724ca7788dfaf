"""The run journal lives beside the store (``demo.zarr.journal``): plain xarray and zarr open the store without a
warning about a file of rmtsweep's, and a store that kept its journal inside has it moved out by its next run."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import xarray as xr
import zarr

from rmtsweep.run.cost import choose_blocking
from rmtsweep.run.runner import make_template, run_info
from rmtsweep.spec import load_sweep
from rmtsweep.store import JOURNAL_NAME, Store, journal_file

DATA = Path(__file__).resolve().parents[1] / "data"


def _opened_warnings(store: Path) -> list[str]:
    """What plain xarray and zarr warn, each way they open the store (with its consolidated metadata or not)."""
    opens: list[Callable[[], object]] = [
        lambda: xr.open_zarr(store), lambda: xr.open_zarr(store, consolidated=False),
        lambda: zarr.open_group(store, mode="r"),
        lambda: list(zarr.open_group(store, mode="r", use_consolidated=False).members()),
        lambda: zarr.open_group(store, mode="r", use_consolidated=False).tree(),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for open_ in opens:
            open_()
    return [str(w.message) for w in caught]


def _preparing(sweep_path: Path, store: Path):
    """The store made ready for a run, with its lock held and its journal open (a run that has not ended)."""
    sweep_file = load_sweep(sweep_path)
    blocking = choose_blocking(sweep_file.sweep).as_tuple()
    return Store(store).prepare(sweep_file, lambda b: make_template(sweep_file, b), run_info(sweep_file), blocking)


def test_plain_xarray_and_zarr_open_a_finished_and_a_running_store_without_warnings(reference, tmp_path):
    sweep_path, finished = reference
    assert journal_file(finished).read_text().count(" write ") == 2 and not (finished / JOURNAL_NAME).exists()
    assert _opened_warnings(finished) == []
    running = tmp_path / "running.zarr"
    with _preparing(sweep_path, running) as run:
        run.log("submit", "0-0-0-0")
        assert _opened_warnings(running) == []
    assert journal_file(running).read_text().splitlines() == ["run 0 submit 0-0-0-0"]


def test_a_store_that_kept_its_journal_inside_has_it_moved_beside_by_its_next_run(tmp_path):
    store = tmp_path / "partial.zarr"
    shutil.copytree(DATA / "partial.zarr", store)
    kept = (store / JOURNAL_NAME).read_text().splitlines()
    assert kept and any(" write " in line for line in kept)
    with _preparing(DATA / "partial.yaml", store) as run:
        run.log("write", "0-0-0-1")
    assert not (store / JOURNAL_NAME).exists() and not list(store.glob(f"{JOURNAL_NAME}*"))
    assert journal_file(store).read_text().splitlines() == [*kept, f"run {run.index} write 0-0-0-1"]
    assert _opened_warnings(store) == []


def test_a_new_store_at_the_path_of_a_removed_one_starts_a_new_journal(reference, tmp_path):
    sweep_path, _ = reference
    store = tmp_path / "again.zarr"
    journal_file(store).write_text("run 0 write 0-0-0-0\n")        # left by a store removed from this path
    with _preparing(sweep_path, store) as run:
        run.log("submit", "0-0-0-1")
    assert journal_file(store).read_text().splitlines() == ["run 0 submit 0-0-0-1"]
