"""The store protocol step by step: lock first, fenced workers, done only with data, extension equals a fresh run.

The store protocol's page (docs/explanation/store-protocol.md) names these tests beside each step.
"""

from __future__ import annotations

import copy
import subprocess

import numpy as np
import pytest
import yaml
import zarr

from rmtsweep.errors import StoreError
from rmtsweep.store import Store, verify
from rmtsweep.store.lock import StoreLock, lock_file
from rmtsweep.store.migrate import NEW_SUFFIX
from tests.helpers import BASE, build_store, run_main

pytestmark = pytest.mark.usefixtures("in_process_runs")     # runs of the store, not of worker processes



@pytest.fixture
def _run(capsys):
    """``rmtsweep run SWEEP --store STORE`` as the command line has it, in this process (the protocol is the store's,
    not a process's: 1 CPU-second of imports less a run): its exit status and output."""
    def run(sweep: dict, store, tmp_path, *extra) -> subprocess.CompletedProcess:
        path = tmp_path / f"{sweep['name']}-{len(list(tmp_path.glob('*.yaml')))}.yaml"
        path.write_text(yaml.safe_dump(sweep))
        argv = ["run", str(path), "--store", str(store), "--workers", "1", "--no-progress", *extra]
        return subprocess.CompletedProcess(argv, *run_main(argv, capsys))
    return run


def test_a_run_started_while_another_holds_the_store_changes_nothing(tmp_path):
    """Recovery runs under the lock: a second driver cannot delete the first one's half-built extension."""
    from rmtsweep.run.runner import make_template
    from rmtsweep.spec import SweepFile, parse_sweep
    store = build_store(tmp_path / "s.zarr", BASE)
    new = store.with_name(store.name + NEW_SUFFIX)              # the first run's extension, being written
    new.mkdir()
    (new / "marker").write_text("being written")
    sweep_file = SweepFile(parse_sweep(BASE), str(tmp_path / "s.yaml"), yaml.safe_dump(BASE))
    with StoreLock(store):
        Store(store).check()                                    # the CLI's early check reads only
        with pytest.raises(StoreError, match="another rmtsweep run is writing this store"):
            with Store(store).prepare(sweep_file, lambda b: make_template(sweep_file, b), {}, (1, 1, 1, 2)):
                pass
        assert (new / "marker").exists()
    with Store(store).prepare(sweep_file, lambda b: make_template(sweep_file, b), {}, (1, 1, 1, 2)) as run:
        assert not new.exists() and run.plan == "same"          # the lock's holder recovers
        assert lock_file(store).exists() and run.lock.path == lock_file(store)


@pytest.mark.parametrize("share", [None, (1, 2)], ids=["run", "array element 1/2"])
def test_a_worker_writes_nothing_for_a_run_that_no_longer_holds_the_store(share, tmp_path):
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.work import write_task
    from rmtsweep.run.grid import tasks
    from rmtsweep.spec import parse_sweep
    from rmtsweep.store import blocking_of
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile
    store = tmp_path / "s.zarr"
    prepare_store(SweepFile(parse_sweep(BASE), "s.yaml", yaml.safe_dump(BASE)), store)
    task = next(tasks(parse_sweep(BASE), Blocking(*blocking_of(store))))
    with StoreLock(store, share=share) as old:
        pass                                                     # the run stopped; its lock is gone
    with StoreLock(store, share=share) as current:
        assert write_task(task, str(store), 0, "w", old.token, share) == {"fenced": str(store)}
        if share:                                                # the token of another share fences too
            with StoreLock(store, share=(0, 2)) as other:
                assert write_task(task, str(store), 0, "w", other.token, share) == {"fenced": str(store)}
        assert not list((store / "eigenvalues").glob("0.*"))      # nothing written
        result = write_task(task, str(store), 0, "w", current.token, share)
        assert result["written"] is True and list((store / "eigenvalues").glob("0.*"))


@pytest.mark.slow
def test_failed_writes_beside_good_ones_mark_nothing_done_without_data(_run, tmp_path):
    """Some tasks' chunks cannot be written (a directory where the chunk file goes): the run stops in one
    line, every done task has all its chunks, none of the failed tasks is done, and a rerun completes."""
    from rmtsweep.testing import assert_stores_equal
    sweep = {**copy.deepcopy(BASE), "name": "half", "replicates": 16, "cells_per_task": 1}
    store, clean = tmp_path / "half.zarr", build_store(tmp_path / "clean.zarr", sweep)     # clean: in this process
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile, parse_sweep
    prepare_store(SweepFile(parse_sweep(sweep), "half.yaml", yaml.safe_dump(sweep)), store)
    keys = sorted(p.name for p in (clean / "overlap").iterdir() if p.name[0].isdigit())
    blocked = keys[1::2]                                         # every other task cannot write its overlap
    for key in blocked:
        (store / "overlap" / key).mkdir()
    proc = _run(sweep, store, tmp_path)
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("rmtsweep: error: ")
    assert verify(store) == []                            # every done task has every chunk
    done = zarr.open_group(str(store))["done"]
    for key in blocked:
        coords = tuple(int(c) for c in key.split("."))[:done.ndim]
        region = tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, done.chunks))
        assert not done[region].any(), key
    for key in blocked:
        (store / "overlap" / key).rmdir()
    again = _run(sweep, store, tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert_stores_equal(store, clean)


@pytest.mark.slow
def test_an_extension_that_adds_attention_equals_a_fresh_run(_run, tmp_path):
    """The new variables kappa_snr, alpha_snr, attention_distance of carried replicates are as a fresh run has them."""
    from rmtsweep.testing import assert_stores_equal
    small = {**copy.deepcopy(BASE), "name": "ext"}
    large = copy.deepcopy(small)
    large["grid"]["weights"] = ["mean", "optimal", {"scheme": "attention", "tau": 1.0, "scale": "sqrt_d"}]
    store, fresh = tmp_path / "ext.zarr", tmp_path / "fresh.zarr"
    assert _run(small, store, tmp_path).returncode == 0
    before = zarr.open_group(str(store))["eigenvalues"][...]
    ext = _run(large, store, tmp_path)
    assert ext.returncode == 0, ext.stderr[-2000:]
    assert "recomputed" not in ext.stderr                        # carried over, not recomputed
    assert_stores_equal(store, build_store(fresh, large))
    got = zarr.open_group(str(store))
    assert np.isfinite(got["kappa_snr"][..., :2, :, :]).all()      # the carried fixed-weights replicates
    assert np.array_equal(got["eigenvalues"][:, :, :, :2], before)


@pytest.mark.slow
def test_changing_the_snr_axis_says_everything_is_recomputed(_run, tmp_path):
    sweep = {**copy.deepcopy(BASE), "name": "snr"}
    store = tmp_path / "snr.zarr"
    assert _run(sweep, store, tmp_path).returncode == 0
    sweep["grid"]["snr"] = [0.0, 2.0, 4.0]
    proc = _run(sweep, store, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (f"{store}: extended; grid.snr changes ([0.0, 4.0] in the store, [0.0, 2.0, 4.0] in the file) and a task "
            f"computes every SNR value of a cell from the same draws: every replicate is recomputed") in proc.stderr
    import re
    total, todo = re.search(r"(\d+) tasks of up to .*\((\d+) to compute\)", proc.stderr).groups()
    assert total == todo
