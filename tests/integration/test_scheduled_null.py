"""The null replicates a run schedules for the cells without a law: seeded, stored, resumable, counted, used."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import yaml
from distributed import Client, LocalCluster

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.analysis.compare import compare, summary
from rmtsweep.analysis.detection import LAW, MONTE_CARLO, NO_NULL, SCHEDULED, min_null_replicates
from rmtsweep.model.replicate import simulate_replicate
from rmtsweep.run.grid import Context, replicate_rng, value_key
from rmtsweep.run.plan import plan
from rmtsweep.spec import DEFAULT_NULL_REPLICATES, parse_sweep
from rmtsweep.testing import assert_stores_equal
from tests.helpers import build_store

ATTENTION = {"scheme": "attention", "tau": 1.0}
SWEEP = {"name": "sched-null", "d": 24, "replicates": 20, "replicates_per_task": 10, "seed": 5, "top_k": 1,
         "null_replicates": 24, "correlation": {"model": "iid"}, "table_centering": "class",
         "grid": {"delta": [0.5, 1.0], "gamma": [1.0], "snr": [2.0, 4.0], "T": [1, 2], "weights": ["mean", ATTENTION]}}


def _sweep(**changes) -> dict:
    out = copy.deepcopy(SWEEP)
    for key, value in changes.items():
        if key in out["grid"]:
            out["grid"][key] = value
        else:
            out[key] = value
    return out


def test_the_default_count_is_the_fewest_for_the_level_0_01():
    assert DEFAULT_NULL_REPLICATES == min_null_replicates(0.01) == 99
    data = _sweep()
    del data["null_replicates"]
    assert parse_sweep(data).null_replicate_count == 99
    assert parse_sweep(_sweep(weights=["mean"])).null_replicate_count == 0      # every cell has a law
    assert parse_sweep(_sweep(T=[1])).null_replicate_count == 0
    assert parse_sweep(_sweep(table_centering="none")).null_replicate_count == 0


def test_null_replicates_draw_their_own_value_keyed_streams(tmp_path):
    """Each null replicate is the snr = 0 replicate of SeedSequence(seed, (bits(delta), bits(gamma), T, n,
    0x6E756C6C)), whatever the batching, and differs from every regular replicate's draw."""
    a = build_store(tmp_path / "a.zarr", _sweep())
    b = build_store(tmp_path / "b.zarr", _sweep(replicates_per_task=20, points_per_task=1))
    assert_stores_equal(a, b)
    ds = open_store(a)
    x = ds["null_eigenvalue"]
    assert x.sizes["null_replicate"] == 24
    assert x.sel(weights="mean").isnull().all() and x.sel(T=1).isnull().all()      # cells with a law: none drawn
    sweep = parse_sweep(_sweep())
    model = Context.from_sweep(sweep).models(1.0, 1.0, 2, [1])[0]
    for n in (0, 7, 23):
        ss = np.random.SeedSequence(5, spawn_key=(value_key(1.0), value_key(1.0), 2, n, 0x6E756C6C))
        ref = simulate_replicate(model, np.zeros(1), np.random.Generator(np.random.PCG64(ss))).eigenvalues[0, 0]
        assert float(x.sel(delta=1.0, gamma=1.0, T=2, weights="attention(tau=1)", null_replicate=n)) == ref
    regular = [simulate_replicate(model, np.zeros(1), replicate_rng(5, 1.0, 1.0, 2, r)).eigenvalues[0, 0]
               for r in range(30)]
    assert not set(regular) & set(x.sel(delta=1.0, gamma=1.0, T=2, weights="attention(tau=1)").values.tolist())


def test_an_extended_store_carries_its_null_replicates_over(tmp_path):
    """Replicates added and a T value added: the extended store equals a fresh run of the larger sweep."""
    small, large = _sweep(T=[2]), _sweep(T=[2, 3], replicates=30)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        for name, data in (("grown", small), ("grown", large), ("fresh", large)):
            (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(data))
            run_sweep(load_sweep(tmp_path / f"{name}.yaml"), tmp_path / f"{name}.zarr", client, progress=False)
    assert_stores_equal(tmp_path / "grown.zarr", tmp_path / "fresh.zarr")
    assert open_store(tmp_path / "grown.zarr")["null_eigenvalue"].sel(weights="attention(tau=1)").notnull().all()


def test_a_changed_null_count_is_refused(tmp_path):
    from rmtsweep.errors import StoreError
    from rmtsweep.store.migrate import plan as migrate_plan
    with pytest.raises(StoreError, match="null_replicates = 30 but the store scheduled 24"):
        migrate_plan(parse_sweep(_sweep()), parse_sweep(_sweep(null_replicates=30)), tmp_path)


def test_the_dry_run_counts_them_and_their_cost():
    with_null, without = plan(parse_sweep(_sweep())), plan(parse_sweep(_sweep(null_replicates=0)))
    assert (with_null.null_replicates, with_null.null_points) == (24, 2)       # T = 2 at two delta values
    assert (without.null_replicates, without.null_points) == (0, 0)
    assert with_null.core_seconds > without.core_seconds


@pytest.mark.parametrize("target", [1.0, 5.0])
def test_the_null_replicates_of_attention_d1600_are_tasks_of_about_the_target(target):
    """The shipped sweep whose first tasks each held 99 null replicates (about 130 s by the cost model): its null
    tasks now take about ``rmtsweep.batching.target-task-seconds`` each (one null replicate where one is longer),
    and the dry run counts them."""
    import dask

    from rmtsweep.run.cost import choose_blocking, null_sweep, point_cost
    from rmtsweep.run.grid import n_tasks, tasks
    from rmtsweep.shipped import resolve_sweep

    sweep = load_sweep(resolve_sweep("attention/d1600")).sweep
    with dask.config.set({"rmtsweep.batching.target-task-seconds": target}):
        b = choose_blocking(sweep)
        the_plan = plan(sweep)
    one = point_cost(null_sweep(sweep)).max()                 # one null replicate of its one point
    assert 99 * one > 100                                       # all of them in one task: over 100 s
    assert b.null * one <= max(target, one) and (b.null + 1) * one > target
    null = [t for t in tasks(sweep, b) if t.null]
    assert len(null) == the_plan.null_tasks == math.ceil(99 / b.null) == n_tasks(sweep, b) - 4
    assert sorted(n for t in null for n in range(t.start[3], t.stop[3])) == list(range(99))
    assert the_plan.longest_task_seconds == pytest.approx(max(point_cost(sweep).max() * 4, b.null * one))


@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_the_scheduled_threshold_keeps_the_exact_order_statistic_level(tmp_path, alpha):
    """Regular snr = 0 replicates are exchangeable with the scheduled null draws of their cell: they exceed the
    order statistic k = ceil((m + 1)(1 - alpha)) with probability (m + 1 - k) / (m + 1), the reference here.

    Pooled over cells, within 3 standard errors: the binomial one of the regular draws plus the threshold's own
    randomness (its exceedance probability is Beta(m + 1 - k, k), variance p (1 - p) / (m + 2) per cell).
    """
    m = 39
    data = _sweep(replicates=120, replicates_per_task=60, null_replicates=m, snr=[0.0], T=[2, 3],
                  delta=[0.5, 1.0], gamma=[0.5, 1.0], weights=[ATTENTION])
    path = build_store(tmp_path / "cal.zarr", data)
    cmp = compare(path, false_alarm=alpha)
    assert (cmp["detection_null"] == SCHEDULED).all()
    k = math.ceil((m + 1) * (1 - alpha) - 1e-9)
    level = (m + 1 - k) / (m + 1)
    rate = cmp["detection_rate"].sel(snr=0.0)
    draws, cells = int(cmp["n_done"].sum()), rate.size
    pooled = float(rate.mean())
    se = math.sqrt(level * (1 - level) * (1 / draws + 1 / ((m + 2) * cells)))
    assert abs(pooled - level) <= 3 * se, (pooled, level, se)
    assert "from the null replicates the run scheduled" in summary(cmp)


def test_a_cell_with_too_few_null_replicates_for_the_level_says_so(tmp_path):
    """10 scheduled null replicates: enough for 0.1 (9), not for 0.05 (19): no snr = 0 either, so no detection."""
    path = build_store(tmp_path / "few.zarr", _sweep(null_replicates=10, T=[2], delta=[1.0]))
    strict = compare(path, false_alarm=0.05)
    assert strict["detection_null"].sel(weights="attention(tau=1)").values.item() == NO_NULL
    assert strict["detection_rate"].sel(weights="attention(tau=1)").isnull().all()
    assert strict["detection_null"].sel(weights="mean").values.item() == LAW
    assert "1 none" in summary(strict)
    loose = compare(path, false_alarm=0.1)
    assert loose["detection_null"].sel(weights="attention(tau=1)").values.item() == SCHEDULED
    assert loose["detection_rate"].sel(weights="attention(tau=1)").notnull().all()


def test_too_few_scheduled_falls_back_to_the_snr_0_replicates(tmp_path):
    path = build_store(tmp_path / "back.zarr", _sweep(null_replicates=10, replicates=40, replicates_per_task=40,
                                                      snr=[0.0, 4.0], T=[2], delta=[1.0]))
    cmp = compare(path, false_alarm=0.05)
    assert cmp["detection_null"].sel(weights="attention(tau=1)").values.item() == MONTE_CARLO


OLD = "ea3828d"      # the last commit before null replicates were scheduled
WHOLE = "1987005"    # the last commit where a point block's first task computed all its null replicates


def _with_old_code(tmp_path, code: str, data: dict, commit: str = OLD, folder: str = "old") -> None:
    """Run ``code`` (with ``DATA`` the sweep ``data``) in a subprocess on the package as of ``commit``, unpacked in
    ``tmp_path / folder``."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    old = tmp_path / folder
    old.mkdir(exist_ok=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", commit, "pipeline"], capture_output=True)
    if archive.returncode:
        pytest.skip(f"commit {commit} is not in this checkout")
    subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
    if not (old / ".pyroot").exists():
        (old / ".pyroot").mkdir()
        (old / ".pyroot" / "rmtsweep").symlink_to(old / "pipeline")
    head = f"import json, pathlib, yaml; from tests.helpers import build_store; DATA = json.loads({json.dumps(data)!r})\n"
    env = {**os.environ, "PYTHONPATH": f"{old / '.pyroot'}{os.pathsep}{root}"}
    subprocess.run([sys.executable, "-c", head + code], env=env, cwd=root, check=True, timeout=600)


@pytest.mark.parametrize("weights, T", [(["mean", {"scheme": "causal", "tau": 1.0}], [1, 2]), ([ATTENTION], [1])])
def test_a_sweep_without_cells_lacking_a_law_writes_the_store_of_before(tmp_path, weights, T):
    """Every chunk and every metadata file equal those the code before scheduled null replicates writes (but the
    provenance of the code: version, revision, time). The critical window's corrections (docs/theory.md §6.7) came
    later and move the finite-size lambda_1 and alignment above snr 0 only: there they are held at snr 0."""
    import json

    import xarray as xr
    window = ("finite_size_lambda1", "finite_size_overlap")

    data = _sweep(weights=weights, T=T, snr=[0.0, 3.0])
    del data["null_replicates"]
    new = build_store(tmp_path / "new" / "s.zarr", data)
    _with_old_code(tmp_path, f"build_store(pathlib.Path({str(tmp_path / 'old' / 's.zarr')!r}), DATA)", data)
    a, b = (sorted(p.relative_to(s) for p in s.rglob("*") if p.is_file()) for s in (new, tmp_path / "old" / "s.zarr"))
    assert a == b
    provenance = {"created", "rmtsweep_version", "git_revision", "sweep_file"}
    for rel in a:
        if rel.parts[0].startswith(window) and not rel.name.startswith("."):
            continue                                    # a chunk of the window's arrays: compared at snr 0 below
        x, y = (new / rel).read_bytes(), (tmp_path / "old" / "s.zarr" / rel).read_bytes()
        if rel.name in (".zattrs", ".zmetadata"):
            def strip(obj):
                if isinstance(obj, dict):
                    return {k: strip(v) for k, v in obj.items() if k not in provenance}
                return obj
            x, y = (json.dumps(strip(json.loads(z)), sort_keys=True).encode() for z in (x, y))
        assert x == y, rel
    with xr.open_zarr(new, consolidated=False) as now, \
            xr.open_zarr(tmp_path / "old" / "s.zarr", consolidated=False) as before:
        names = [v for v in now.data_vars if str(v).startswith(window)]
        assert names
        for name in names:
            xr.testing.assert_identical(now[name].sel(snr=0.0).load(), before[name].sel(snr=0.0).load())


def test_the_tidy_export_leaves_the_null_replicates_out(tmp_path):
    """A CSV row per replicate and SNR: the null replicates, on their own dim, would multiply the rows."""
    import pandas as pd

    from rmtsweep.analysis.export import export
    path = build_store(tmp_path / "csv.zarr", _sweep(T=[2], delta=[1.0]))
    table = pd.read_csv(export(path, tmp_path / "out.csv"))
    assert "null_eigenvalue" not in table.columns and "null_replicate" not in table.columns
    assert len(table) == 2 * 20 * 2                     # weights x replicates x snr


def test_the_dry_run_prints_them(tmp_path, capsys):
    import json

    from tests.helpers import run_main
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(_sweep()))
    code, out, _ = run_main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "s.zarr"), "--dry-run"],
                            capsys)
    assert code == 0 and "null replicates: 24 per point at snr = 0 for 2 points" in out and "48 in all" in out
    code, out, _ = run_main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "s.zarr"), "--dry-run",
                             "--json"], capsys)
    got = json.loads(out)
    assert code == 0 and (got["null_replicates"], got["null_points"]) == (24, 2)
    assert 1 <= got["null_tasks"] < got["tasks"]


def _store_in_blocks(path, data: dict, chunking: tuple[int, ...]):
    """An empty store of the sweep ``data`` chunked as ``chunking`` (``(delta, gamma, T, replicate, null)``)."""
    from rmtsweep.run.runner import make_template
    from rmtsweep.spec import SweepFile
    from rmtsweep.store import Store

    sweep_file = SweepFile(parse_sweep(data), str(path.with_suffix(".yaml")), yaml.safe_dump(data))
    Store(path).create_if_missing(lambda b: make_template(sweep_file, b), chunking)
    return path


def _fill(path, data: dict, run: int = 0) -> None:
    """Every task left in the store at ``path``, computed and written as a run does."""
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.work import compute_task
    from rmtsweep.store import Writer, blocking_of
    from tests.helpers import write_and_mark

    writer = Writer(path)
    for task in tasks(parse_sweep(data), Blocking(*blocking_of(path)), writer.done_mask(),
                      null_done=writer.null_done_mask()):
        write_and_mark(writer, task, compute_task(task), run)


def test_null_replicates_are_tasks_of_their_own_with_the_values_of_any_blocking(tmp_path):
    """Null blocks of 5 of 24 (the last one short), or all 24 in one, give the null_eigenvalue (and null_done) of
    the code that computed them all in the first replicate block's task."""
    import xarray as xr

    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import n_tasks, tasks
    from rmtsweep.store import blocking_of

    data = _sweep(T=[1, 2, 3], replicates_per_task=10, points_per_task=1)
    blocked = _store_in_blocks(tmp_path / "blocked.zarr", data, (1, 1, 1, 10, 5))
    whole = _store_in_blocks(tmp_path / "whole.zarr", data, (1, 1, 1, 10, 24))
    sweep = parse_sweep(data)
    mine = list(tasks(sweep, Blocking(*blocking_of(blocked))))
    null = [t for t in mine if t.null]
    assert len(null) == 2 * 2 * 5 == n_tasks(sweep, Blocking(*blocking_of(blocked))) - 2 * 3 * 2   # T = 2, 3 only
    assert {(t.start[3], t.stop[3]) for t in null} == {(0, 5), (5, 10), (10, 15), (15, 20), (20, 24)}
    assert all(not t.null for t in mine[:2 * 3]) and mine[2 * 3].null     # the first null wave after the first
    for path in (blocked, whole):
        _fill(path, data)
    _with_old_code(tmp_path, f"build_store(pathlib.Path({str(tmp_path / 'ref' / 's.zarr')!r}), DATA)", data,
                   WHOLE, "ref")
    a, b = xr.open_zarr(blocked), xr.open_zarr(whole)
    ref = xr.open_zarr(tmp_path / "ref" / "s.zarr")
    assert a["null_eigenvalue"].chunks[-1] == (5, 5, 5, 5, 4) and ref["null_eigenvalue"].chunks[-1] == (24,)
    x = ref["null_eigenvalue"].values
    assert np.isfinite(x).sum() == 2 * 2 * 24                        # attention at T = 2, 3 (two delta values)
    for store in (a, b):
        assert np.array_equal(store["null_eigenvalue"].values, x, equal_nan=True)
        assert np.array_equal(store["null_done"].values, np.isfinite(x))
    assert_stores_equal(blocked, whole)


def test_a_run_stopped_between_tasks_resumes_to_the_same_store(tmp_path):
    """The first tasks written (a null task and a regular one without their done flags, as a kill leaves them), then
    the rest from the done masks: the store equals one made in a single pass, null blocks included."""
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.work import compute_task
    from rmtsweep.store import Writer, blocking_of
    from tests.helpers import write_and_mark

    data = _sweep(T=[2, 3], points_per_task=1)
    whole = _store_in_blocks(tmp_path / "whole.zarr", data, (1, 1, 1, 10, 7))
    _fill(whole, data)
    path = _store_in_blocks(tmp_path / "cut.zarr", data, (1, 1, 1, 10, 7))
    sweep = parse_sweep(data)
    writer = Writer(path)
    blocking = Blocking(*blocking_of(path))
    everything = list(tasks(sweep, blocking))
    first = [t for t in everything if not t.null][:3] + [t for t in everything if t.null][:3]
    for i, task in enumerate(first):
        write_and_mark(writer, task, compute_task(task), run=0, mark=i not in (2, 5))
    null_done = writer.null_done_mask()
    assert null_done.any() and not null_done[..., 7:14].any()          # the second null block of every point is left
    left = list(tasks(sweep, blocking, writer.done_mask(), null_done=null_done))
    assert len(left) == len(everything) - 4 and first[5] in left and first[2] in left
    for task in left:
        write_and_mark(writer, task, compute_task(task), run=1)
    assert_stores_equal(path, whole)
    assert not list(tasks(sweep, blocking, writer.done_mask(), null_done=writer.null_done_mask()))


def test_a_store_made_before_resumes_without_null_replicates(tmp_path, monkeypatch):
    """An attention store the code before scheduled null replicates began: its run resumes to the store that code
    finishes, computing no null replicate (the store has nowhere to keep them)."""
    import rmtsweep.run.block

    data = _sweep(T=[2], snr=[0.0, 3.0])
    del data["null_replicates"]
    cut, whole = tmp_path / "old" / "cut.zarr", tmp_path / "old" / "whole.zarr"
    _with_old_code(tmp_path, f"""build_store(pathlib.Path({str(whole)!r}), DATA)
from rmtsweep.run.cost import Blocking
from rmtsweep.run.grid import tasks
from rmtsweep.run.runner import prepare_store
from rmtsweep.run.work import compute_task
from rmtsweep.spec import SweepFile, parse_sweep
from rmtsweep.store import Writer, blocking_of
cut = pathlib.Path({str(cut)!r})
sweep = parse_sweep(DATA)
prepare_store(SweepFile(sweep, str(cut.with_suffix(".yaml")), yaml.safe_dump(DATA)), cut)
writer = Writer(cut)
task = list(tasks(sweep, Blocking(*blocking_of(cut))))[-1]     # a later block: the first is left to do
writer.write_block(task.region, compute_task(task), task.todo, run=0)
writer.mark_done(task.region)
""", data)

    def refuse(task):
        raise AssertionError("a null replicate computed for a store without null_eigenvalue")
    monkeypatch.setattr(rmtsweep.run.block, "compute_null", refuse)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(tmp_path / "s.yaml"), cut, client, progress=False)
    assert "null_eigenvalue" not in open_store(cut)
    assert_stores_equal(cut, whole)


def test_verify_names_a_done_null_block_without_its_chunk_and_repair_has_it_recomputed(tmp_path):
    """A null_eigenvalue chunk removed after its null_done was set: verify names that null task alone, repair clears
    its null_done, and the next fill gives the store back."""
    import shutil

    from rmtsweep.store import repair, verify

    data = _sweep(T=[2], delta=[1.0])
    path = _store_in_blocks(tmp_path / "v.zarr", data, (1, 1, 1, 10, 10))
    _fill(path, data)
    whole = tmp_path / "whole.zarr"
    shutil.copytree(path, whole)
    assert verify(path) == []
    (path / "null_eigenvalue" / "0.0.0.0.1").unlink()           # null replicates 10-19
    bad = verify(path)
    assert [(c.variable, c.null, str(c)) for c in bad] == [
        ("null_eigenvalue", True, "delta=1 gamma=1 T=2 null replicates 10-19: marked done but its null_eigenvalue "
                                  "chunk is absent (done without data)")]
    assert repair(path, bad) == 1
    assert not open_store(path)["null_done"].isel(null_replicate=slice(10, 20)).any()
    assert open_store(path)["done"].all()                        # the regular replicates stay done
    _fill(path, data, run=1)
    assert verify(path) == []
    assert_stores_equal(path, whole)


def test_a_store_whose_first_tasks_computed_the_null_replicates_resumes_to_a_fresh_store(tmp_path):
    """A store of the code where a point block's first task computed all its null replicates, stopped with one such
    task done and one written without its done flags: a run gives it null_done flags and finishes it as a fresh
    run of this code does."""
    data = _sweep(T=[2], points_per_task=1)
    cut = tmp_path / "ref" / "cut.zarr"
    _with_old_code(tmp_path, f"""from rmtsweep.run.cost import Blocking
from rmtsweep.run.grid import tasks
from rmtsweep.run.runner import prepare_store
from rmtsweep.run.work import compute_task
from rmtsweep.spec import SweepFile, parse_sweep
from rmtsweep.store import Writer, blocking_of
cut = pathlib.Path({str(cut)!r})
sweep = parse_sweep(DATA)
prepare_store(SweepFile(sweep, str(cut.with_suffix(".yaml")), yaml.safe_dump(DATA)), cut)
writer = Writer(cut)
first = [t for t in tasks(sweep, Blocking(*blocking_of(cut))) if t.start[3] == 0]
assert len(first) == 2 and all(t.computes_null for t in first)
for i, task in enumerate(first):
    writer.write_block(task.region, compute_task(task), task.todo, run=0)
    if i == 0:
        writer.mark_done(task.region)
""", data, WHOLE, "ref")
    assert "null_done" not in open_store(cut)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(tmp_path / "s.yaml"), cut, client, progress=False)
        run_sweep(load_sweep(tmp_path / "s.yaml"), tmp_path / "fresh.zarr", client, progress=False)
    assert_stores_equal(cut, tmp_path / "fresh.zarr")
    assert open_store(cut)["null_done"].sel(weights="attention(tau=1)").all()


def test_status_counts_the_null_tasks_as_the_run_does(tmp_path):
    """A store whose regular tasks are done but whose null tasks are not is not complete."""
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import n_tasks, tasks, tasks_left
    from rmtsweep.run.work import compute_task
    from rmtsweep.store import Writer, blocking_of, status, tasks_done
    from tests.helpers import write_and_mark

    data = _sweep(T=[1, 2, 3], points_per_task=1)
    path = _store_in_blocks(tmp_path / "s.zarr", data, (1, 1, 1, 10, 10))
    sweep = parse_sweep(data)
    blocking = Blocking(*blocking_of(path))
    writer = Writer(path)
    every = list(tasks(sweep, blocking))
    for task in every:
        if not task.null or task.start[3] == 0:
            write_and_mark(writer, task, compute_task(task), run=0)
    total = n_tasks(sweep, blocking)
    left = tasks_left(sweep, blocking, writer.done_mask(), null_done=writer.null_done_mask())
    assert total == len(every) == 2 * 3 * 2 + 2 * 2 * 3 and left == 2 * 2 * 2          # null blocks 10-19, 20-23 left
    st = status(path)
    assert (st.tasks_done, st.tasks_total) == tasks_done(path) == (total - left, total) and not st.complete
    _fill(path, data)
    assert status(path).complete and tasks_done(path) == (total, total)


@pytest.mark.parametrize("order", ["progressive", "grid"])
def test_the_shares_of_an_array_partition_the_null_tasks_too(order):
    """Over a d axis and T values with and without null replicates: the shares of 3 hold every task once, as many as
    tasks_left counts for each, in either order."""
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import n_tasks, share_tasks, tasks, tasks_left

    data = _sweep(T=[1, 2, 3])
    del data["d"]
    data["grid"]["d"] = [16, 24]
    sweep = parse_sweep(data)
    blocking = Blocking(1, 1, 2, 10, 10)                          # T blocks (1, 2) and (3,); null blocks 0-9 ...
    every = [(t.null, t.key) for t in tasks(sweep, blocking, order=order)]
    assert len(every) == len(set(every)) == n_tasks(sweep, blocking) == 2 * 2 * 2 * 2 + 2 * 2 * 2 * 3
    shares = [[(t.null, t.key) for t in share_tasks(sweep, blocking, None, (i, 3), order)] for i in range(3)]
    assert sorted(sum(shares, [])) == sorted(every)
    assert [len(s) for s in shares] == [tasks_left(sweep, blocking, None, (i, 3)) for i in range(3)]
