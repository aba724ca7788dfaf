"""A run's store exists from its first second: the theory at the store's size is computed as a task beside the
first Monte Carlo tasks and written when it is back, with the values a store made all at once holds."""

from __future__ import annotations

import copy

import pytest
import xarray as xr
import yaml

from rmtsweep.errors import StoreError
from tests.helpers import BASE, run_main

pytestmark = pytest.mark.slow

SWEEP = {**copy.deepcopy(BASE), "name": "beside", "observables": {"spectrum": {"bins": 8, "max": 6.0}},
         "grid": {**BASE["grid"], "T": [1, 4]}, "correlation": {"model": "iid"}}


@pytest.fixture(scope="module")
def cluster():
    from distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address="127.0.0.1:0") as c, \
            Client(c) as client:
        yield client


def _sweep_file(tmp_path):
    from rmtsweep.spec import load_sweep
    path = tmp_path / "beside.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    return load_sweep(path)


def _theory(ds: xr.Dataset) -> xr.Dataset:
    return ds[[v for v in ds.data_vars if v.startswith(("theory_", "paper_", "finite_size_", "pooled_"))]].load()


def test_the_parts_of_the_theory_make_the_whole():
    from rmtsweep.spec import parse_sweep
    from rmtsweep.theory.on_grid import SIZED, theory_dataset
    sweep = parse_sweep(SWEEP)
    whole = theory_dataset(sweep)
    template, sized = theory_dataset(sweep, part="template"), theory_dataset(sweep, part="sized")
    assert "pooled_null_location" in sized and "finite_size_lambda1" in sized and "theory_spectrum" in sized
    assert not any(v.startswith(("finite_size_", "pooled_")) for v in template.data_vars)
    xr.testing.assert_identical(template.assign(sized.data_vars), whole)
    assert all(any(v == s or (s.endswith("*") and v.startswith(s[:-1])) for s in SIZED) for v in sized.data_vars)


def test_a_run_writes_the_theory_a_store_made_at_once_holds(tmp_path, cluster):
    from distributed import get_task_stream

    from rmtsweep import open_store, run_sweep
    from rmtsweep.theory.on_grid import theory_dataset
    sf = _sweep_file(tmp_path)
    with get_task_stream(cluster) as stream:
        run_sweep(sf, tmp_path / "s.zarr", cluster, progress=False)
    pairs = {t["key"] for t in stream.data if str(t["key"]).startswith("rmtsweep-theory-") and
             str(t["key"]).count("-") == 3}
    assert len(pairs) == 2 * 2 - 1               # its (point, weights) pairs over T >= 2, the first on its own thread
    ds = open_store(tmp_path / "s.zarr")
    assert "theory_pending" not in ds.attrs
    xr.testing.assert_equal(_theory(ds), _theory(theory_dataset(sf.sweep)))


def test_a_store_waiting_for_its_theory_says_so_and_the_next_run_writes_it(tmp_path, cluster, capsys):
    from rmtsweep import open_store, run_sweep
    from rmtsweep.run.runner import make_template, run_info
    from rmtsweep.run.cost import choose_blocking
    from rmtsweep.store import Store
    sf = _sweep_file(tmp_path)
    store = tmp_path / "s.zarr"
    with Store(store).prepare(sf, lambda b: make_template(sf, b, defer=True), run_info(sf),
                              choose_blocking(sf.sweep).as_tuple()):
        pass                                                     # a run stopped as soon as its store existed
    assert open_store(store).attrs["theory_pending"] is True
    code, out, err = run_main(["status", str(store)], capsys)
    assert code == 0 and "theory at the store's size: not written yet" in out
    code, out, err = run_main(["compare", str(store)], capsys)
    assert code == 2 and err.count("\n") == 1 and "its theory at the store's size is not written yet" in err
    from rmtsweep.analysis.compare import compare
    with pytest.raises(StoreError, match="not written yet"):
        compare(store)
    run_sweep(sf, store, cluster, progress=False)
    assert "theory_pending" not in open_store(store).attrs
    code, out, err = run_main(["compare", str(store)], capsys)
    assert code == 0, err


def _pending_store(tmp_path):
    """A store stopped as soon as it existed, under the shipped settings: its theory at its size still to compute."""
    from rmtsweep import open_store
    from rmtsweep.run.cost import choose_blocking
    from rmtsweep.run.runner import make_template, run_info
    from rmtsweep.store import Store
    sf = _sweep_file(tmp_path)
    store = tmp_path / "s.zarr"
    with Store(store).prepare(sf, lambda b: make_template(sf, b, defer=True), run_info(sf),
                              choose_blocking(sf.sweep).as_tuple()):
        pass
    assert open_store(store).attrs["theory_pending"] is True
    return sf, store


# Every theory budget at 0 (and the finite-T law nowhere): the sized theory would hold no finite-size or pooled
# arrays under these settings.
OTHER_BUDGETS = {"DASK_RMTSWEEP__THEORY__FINITE_T_BELOW": "0", "DASK_RMTSWEEP__THEORY__FINITE_T_BUDGET": "0",
                 "DASK_RMTSWEEP__THEORY__ONE_TOKEN_BUDGET": "0", "DASK_RMTSWEEP__THEORY__FINITE_SIZE_BUDGET": "0",
                 "DASK_RMTSWEEP__THEORY__POOLED_BUDGET": "0"}


def test_a_resume_computes_the_theory_its_store_recorded(tmp_path):
    """Resumed with other budgets in the environment, a pending store gets the theory of its recorded ones: the
    arrays and values of a store made at once under the shipped budgets, which its record still names."""
    import os
    import subprocess
    import sys

    from rmtsweep import open_store
    from rmtsweep.theory.grid import TheoryBudgets
    from rmtsweep.theory.on_grid import theory_dataset
    sf, store = _pending_store(tmp_path)
    recorded = dict(open_store(store).attrs["config"])
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DASK_RMTSWEEP")}, **OTHER_BUDGETS,
           "DASK_RMTSWEEP__THEORY__CACHE": os.environ["DASK_RMTSWEEP__THEORY__CACHE"]}     # the suite's, not the user's
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", sf.path, "--store", str(store), "--workers",
                           "2", "--in-process", "--no-progress"], env=env, capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ds = open_store(store)
    assert "theory_pending" not in ds.attrs and ds.attrs["config"] == recorded
    reference = _theory(theory_dataset(sf.sweep, budgets=TheoryBudgets()))      # the shipped budgets, at once
    assert sum(v.startswith(("finite_size_", "pooled_null_")) for v in reference.data_vars) >= 7
    assert set(_theory(ds).data_vars) == set(reference.data_vars)
    xr.testing.assert_equal(_theory(ds), reference)
    assert (f"{store}: the store's recorded theory settings are used: finite-t-below 8 (now 0), finite-t-budget 25 "
            f"(now 0), one-token-budget 256 (now 0), finite-size-budget 64 (now 0), pooled-budget 4e+11 (now 0)\n"
            in proc.stderr), proc.stderr


@pytest.mark.parametrize("damage, why", [
    ("out of range", "the recorded rmtsweep.theory.finite-size-budget is -1, not a whole number >= 0"),
    ("no record", "the store records no rmtsweep.theory settings (attrs['config']['theory'])")])
def test_a_pending_store_whose_record_cannot_be_used_is_refused_before_a_cluster_starts(damage, why, tmp_path,
                                                                                       monkeypatch, capsys):
    from rmtsweep.store import consolidate, open_group
    sf, store = _pending_store(tmp_path)
    group = open_group(store, mode="r+")
    if damage == "no record":
        del group.attrs["config"]
    else:
        group.attrs["config"] = {**group.attrs["config"], "theory": {**group.attrs["config"]["theory"],
                                                                     "finite-size-budget": -1}}
    consolidate(store)
    before = {p: p.read_bytes() for p in store.rglob("*") if p.is_file()}

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started for a store whose theory cannot be computed as recorded")
    monkeypatch.setattr("rmtsweep.cluster.engine.connect", no_cluster)
    code, _, err = run_main(["run", sf.path, "--store", str(store), "--no-progress"], capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err == (f"rmtsweep: error: {store}: its theory at its own size is still to be computed, but {why}; move "
                   f"the store aside and rerun to start a new one\n")
    assert {p: p.read_bytes() for p in store.rglob("*") if p.is_file()} == before
