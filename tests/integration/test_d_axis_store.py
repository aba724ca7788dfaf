"""A store whose ``d`` is a grid axis: layout, extension along ``d``, resume, verify, comparison and the CLI."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr
import zarr
from distributed import Client, LocalCluster

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.analysis.compare import MARGIN_FACTOR, compare, detection_margin, detection_rule, theory_detection_rate
from rmtsweep.cli import main
from rmtsweep.errors import StoreError, TaskFailedError
from rmtsweep.run import work
from rmtsweep.spec import parse_sweep
from rmtsweep.store import verify, journal_file, migrate
from rmtsweep.testing import assert_stores_equal
from tests.helpers import BASE, build_store

# BASE with d as an axis, and SNR values on both sides of the transition
AXIS = {**copy.deepcopy(BASE), "name": "tiny-d"}
AXIS.pop("d")
AXIS["grid"] = {**AXIS["grid"], "d": [8, 16], "snr": [0.0, 2.0, 4.0, 8.0]}


def _variant(**grid) -> dict:
    data = copy.deepcopy(AXIS)
    data["grid"].update(grid)
    return data


@pytest.fixture(scope="module")
def client():
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as cl:
        yield cl


@pytest.fixture(scope="module")
def axis_store(tmp_path_factory) -> Path:
    """The d-axis sweep, built in this process (no dask)."""
    return build_store(tmp_path_factory.mktemp("d-axis") / "axis.zarr", AXIS)


def test_layout_puts_d_first(axis_store):
    ds = open_store(axis_store)
    for name in ("eigenvalues", "overlap", "alpha", "kappa", "done", "run"):
        assert ds[name].dims[:2] == ("d", "delta"), name
        assert ds[name].encoding["chunks"][0] == 1, name                   # one d value per task
    assert ds["d"].values.tolist() == [8, 16] and ds["d"].dtype == np.int64
    assert ds["d"].attrs == {"long_name": "embedding dimension d", "units": "1"}
    assert "d" not in ds.attrs and "spawn_key=(d, bits(delta)" in ds.attrs["seeding"]
    assert all("d" not in ds[v].dims for v in ds.data_vars if v.startswith(("theory_", "paper_")))
    assert bool(ds["done"].all())
    # every d has its own streams: the same point at d = 8 and d = 16 holds different numbers
    assert not np.allclose(ds["eigenvalues"].sel(d=8), ds["eigenvalues"].sel(d=16))


def test_verify_names_the_d_of_a_corrupt_task(axis_store, tmp_path):
    import shutil
    store = tmp_path / "corrupt.zarr"
    shutil.copytree(axis_store, store)
    assert verify(store) == []
    chunk = sorted((store / "eigenvalues").glob("1.*"))[-1]                # a chunk of d = 16
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0xFF
    chunk.write_bytes(data)
    (bad,) = verify(store)
    assert str(bad).startswith("d=16 delta=0.5..1 gamma=0.5 T=4 replicates 2-3: eigenvalues chunk is corrupt")


def test_extension_adding_a_d_value_equals_a_fresh_run(client, write_sweep, tmp_path):
    small, big = _variant(d=[16]), _variant(d=[8, 16, 12])
    store, fresh = tmp_path / "grow.zarr", tmp_path / "fresh.zarr"
    run_sweep(load_sweep(write_sweep(small, "small.yaml")), store, client, progress=False)
    before = open_store(store)["eigenvalues"].sel(d=16).values
    report = run_sweep(load_sweep(write_sweep(big, "big.yaml")), store, client, progress=False)
    assert report.tasks_computed == 2 * 2                                  # the two new d values x 2 replicate blocks
    build_store(fresh, big)
    assert_stores_equal(store, fresh)
    ds = open_store(store)
    assert ds["d"].values.tolist() == [8, 16, 12]
    assert np.array_equal(ds["eigenvalues"].sel(d=16).values, before)      # carried over, not recomputed
    assert bool((ds["run"].sel(d=16) == 0).all()) and bool((ds["run"].sel(d=[8, 12]) == 1).all())


@pytest.mark.parametrize("stored, new, message", [
    ({"d": 24}, {"grid.d": [24, 48]}, r"this sweep makes `d` a grid axis \(grid\.d = \[24, 48\]\) but the store has "
                                      r"the top-level d = 24, whose streams are not keyed by d; start a new store "
                                      r"with `grid\.d` and --store NEW_PATH$"),
    ({"grid.d": [8, 16]}, {"d": 8}, r"this sweep has the top-level d = 8 but the store's d is the grid axis grid\.d = "
                                    r"\[8, 16\], whose streams are keyed by d; keep `grid\.d`"),
    ({"d": 24}, {"d": 30}, r"this sweep changes `d` \(24 in the store, 30 in the file\), which changes what the "
                           r"stored results mean \(the streams of a top-level d are not keyed by d\); start a new "
                           r"store with --store NEW_PATH \(with `grid\.d: \[24, 30\]` to sweep d\)$"),
    ({"grid.d": [8, 16]}, {"grid.d": [16]}, r"grid\.d drops \[8\] held in the store; a store only grows"),
])
def test_changes_of_d_that_cannot_extend_are_refused_in_one_line(stored, new, message, tmp_path):
    def sweep(change):
        data = copy.deepcopy(BASE)
        data.pop("d")
        for key, value in change.items():
            (data["grid"] if key.startswith("grid.") else data)[key.removeprefix("grid.")] = value
        return parse_sweep(data)
    with pytest.raises(StoreError, match=rf"^{tmp_path}: {message}") as exc:
        migrate.plan(sweep(stored), sweep(new), tmp_path)
    assert "\n" not in str(exc.value)


def test_resume_after_an_interruption(client, write_sweep, tmp_path, monkeypatch):
    """A run stopped by a failing task (d = 16, second replicate block), a chunk written without its done flag,
    then the same command again: the store equals an uninterrupted build, and nothing written is redone."""
    path = write_sweep(AXIS, "axis.yaml")
    store = tmp_path / "resumed.zarr"
    original = work.compute_block

    def flaky(task):
        if task.d == 16 and task.start[3] == 2:
            raise FloatingPointError("injected failure")
        return original(task)

    monkeypatch.setattr(work, "compute_block", flaky)
    with pytest.raises(TaskFailedError, match=r"task d=16 delta=0\.5\.\.1 gamma=0\.5 T=4 replicates 2-3 failed"):
        run_sweep(load_sweep(path), store, client, progress=False)
    monkeypatch.setattr(work, "compute_block", original)
    done = open_store(store)["done"]
    assert bool(done.sel(d=8).all()) and not bool(done.sel(d=16, replicate=[2, 3]).any())
    # as if killed between a task's data and its done flag: garbage in its chunk, done not set
    group = zarr.open_group(str(store), mode="r+")
    group["eigenvalues"][1, :, :, :, :, 2:4] = -1.0
    run_sweep(load_sweep(path), store, client, progress=False)
    assert_stores_equal(store, build_store(tmp_path / "clean.zarr", AXIS))
    lines = journal_file(store).read_text().splitlines()
    written = {int(r): {ln.split()[3] for ln in lines if ln.startswith(f"run {r} write")} for r in (0, 1)}
    submitted = {ln.split()[3] for ln in lines if ln.startswith("run 1 submit")}
    assert submitted == {"1-0-0-0-1"} and not written[0] & submitted       # only the failed task (d index 1) reran
    assert len(written[0]) + len(written[1]) == 4


def test_compare_takes_the_threshold_at_each_d(axis_store):
    """Both detection rules are taken at each d: the margin ~ d^(-2/3); at the level, the 0.95 quantile of the
    null over the realised pooling matrix at that d (fixed weights, T = 4), recomputed from the theory module."""
    from rmtsweep.theory.null_law import mixture_quantile, pooled_null

    ds = open_store(axis_store)
    edge = ds["theory_edge"].load()
    sweep = parse_sweep(copy.deepcopy(AXIS))
    R = sweep.correlation.matrix(4)
    for rule in ({"margin_factor": MARGIN_FACTOR}, {}):
        cmp = compare(axis_store, **rule)
        limit = cmp["detection_threshold"]
        assert limit.dims[0] == "d" and "d" not in cmp.attrs
        for d in (8, 16):
            if rule:
                expected = edge + detection_margin(edge, d)
            else:
                expected = xr.zeros_like(edge)
                for delta in ds["delta"].values:
                    for gamma in ds["gamma"].values:
                        for b, scheme in enumerate(sweep.grid.weights):
                            null = pooled_null(w := scheme.weights(R), sweep.correlation, delta, gamma, d)
                            at_cell = dict(delta=delta, gamma=gamma, T=4, weights=ds["weights"].values[b])
                            expected.loc[at_cell] = float(w @ w) * mixture_quantile(0.95, null.location, null.scale)
            at = limit.sel(d=d)
            assert np.allclose(at, expected.transpose(*at.dims), rtol=1e-9)
            lam1 = ds["eigenvalues"].sel(d=d, k=1).load()
            rate = (lam1 > expected).mean("replicate")
            assert np.array_equal(cmp["detection_rate"].sel(d=d), rate.transpose(*cmp["detection_rate"].sel(d=d).dims))
            rule_obj = detection_rule(**rule)
            at_d = theory_detection_rate(ds, d, rule_obj)                        # the finite-d theory at this one d
            got = cmp["theory_detection_rate"].sel(d=d)
            assert np.array_equal(got, at_d.transpose(*got.dims))
        if rule:
            excess = limit - edge
            assert np.allclose(excess.sel(d=8) / excess.sel(d=16), 2 ** (2 / 3))   # the margin ~ d^(-2/3)
        assert not np.allclose(cmp["theory_detection_rate"].sel(d=8), cmp["theory_detection_rate"].sel(d=16))
    null = theory_detection_rate(ds, 16, detection_rule()).sel(snr=0.0)
    assert np.allclose(null.where(ds["theory_rho"].sel(snr=0.0) == 0), 0.05, equal_nan=True)   # the level at rho = 0


def test_cli_on_a_d_axis_store(write_sweep, tmp_path, capsys):
    sweep_path = write_sweep(AXIS, "axis.yaml")
    store = tmp_path / "cli.zarr"
    main(["run", str(sweep_path), "--store", str(store), "--workers", "1", "--no-progress"])
    out = capsys.readouterr()
    assert "one d value each (d = 8, 16)" in out.err and "4/4 tasks done" in out.out
    main(["status", str(store)])
    assert "d axis: 8, 16" in capsys.readouterr().out
    main(["compare", str(store)])
    assert "d=8 delta=0.5" in capsys.readouterr().out                        # the summary's lines name d
    table = tmp_path / "phase.csv"
    main(["export", str(store), "--phase-diagram", "--out", str(table), "--bootstrap", "50"])
    phase = pd.read_csv(table)
    assert list(phase.columns[:2]) == ["d", "delta"] and sorted(set(phase["d"])) == [8, 16]
    assert len(phase) == 2 * 2 * 2                                           # a line per d, delta and weights
    tidy = tmp_path / "cmp.csv"
    main(["export", str(store), "--group", "comparison", "--var", "detection_rate", "--out", str(tidy)])
    assert pd.read_csv(tidy).columns[0] == "d"
    capsys.readouterr()
    main(["plot", str(store), "--x", "snr", "--y", "delta", "--var", "detection_rate", "--select", "d=16",
          "--format", "png", "--out", str(tmp_path / "maps")])
    (png,) = [Path(p) for p in capsys.readouterr().out.split()]
    assert png.exists() and png.suffix == ".png"
    main(["plot", str(store), "--x", "snr", "--y", "d", "--var", "overlap", "--select", "delta=0.5",
          "--format", "png", "--out", str(tmp_path / "maps")])
    assert capsys.readouterr().out.strip().endswith(".png")


def test_sweeps_lists_the_d_axis(capsys):
    main(["sweeps"])
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("finite-d "))
    assert re.match(r"finite-d\s+axis 100,200,400,800\s", line), line
