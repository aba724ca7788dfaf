"""rmtsweep's settings in dask.config: the shipped defaults, their overrides, and what a store records of them."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import dask
import pytest
import yaml

from rmtsweep import config
from rmtsweep.errors import SettingsError
from tests.helpers import BASE

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any DASK_RMTSWEEP__ setting, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_RMTSWEEP")}
    return {**env, **extra}


def test_dask_config_shows_the_shipped_defaults():
    code = "import json, dask, rmtsweep.config; print(json.dumps(dask.config.get('rmtsweep')))"
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, timeout=120,
                         check=True).stdout
    shipped = yaml.safe_load((ROOT / "pipeline" / "rmtsweep.yaml").read_text())["rmtsweep"]
    assert json.loads(out) == shipped
    assert shipped["run"]["window"]["min-in-flight"] == 4 and shipped["lock"]["lease"] == 60.0


def test_import_rmtsweep_leaves_dask_unimported():
    """The command line and short scripts do not pay for dask: the defaults load when a value is first read."""
    code = "import sys, rmtsweep; print('dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(), capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert out.strip() == "False"


def test_every_key_is_documented_with_its_range():
    """The page's table gives every key of the shipped file, its default and the range the schema checks."""
    page = (ROOT / "docs" / "user-guide" / "configuration.md").read_text()

    def keys(tree: dict, prefix: str) -> list[str]:
        return [k for name, value in tree.items()
                for k in (keys(value, f"{prefix}.{name}") if isinstance(value, dict) else [f"{prefix}.{name}"])]

    shipped = keys(config.defaults()["rmtsweep"], "rmtsweep")
    assert [f"rmtsweep.{k}" for k in config.keys()] == shipped
    rows = {m.group(1): (m.group(2), m.group(3)) for m in
            re.finditer(r"^\| `(rmtsweep\.[a-z.-]+)` \| `([^`]*)` \| ([^|]+) \|", page, re.MULTILINE)}
    missing = [k for k in shipped if k not in rows]
    assert not missing, f"docs/user-guide/configuration.md does not describe {missing}"
    assert not set(rows) - set(shipped), "the page describes keys the shipped file does not have"
    for key in shipped:
        default, allowed = rows[key]
        node = config.defaults()                            # the shipped value (the suite sets the cache's folder)
        for part in key.split("."):
            node = node[part]
        assert yaml.safe_load(default) == node, key
        assert allowed.strip() == config.allowed(key.removeprefix("rmtsweep.")), key


def test_the_shipped_defaults_are_in_their_ranges():
    config.check()                 # without any setting changed: the shipped file
    assert config.current()["lock"] == {"lease": 60.0, "heartbeat": 5.0}


# The schema, written out here as the page states it: (key, a value inside, values outside).
RANGES = [
    ("run.window.min-in-flight", 1, [0, -1, 1.5, "x", True]),
    ("run.window.per-thread", 1, [0]),
    ("run.window.adaptive-per-thread", 1, [0]),
    ("run.window.refresh", 0.01, [0, -1.0, float("inf"), float("nan")]),
    ("run.submit-batch", 1, [0]),
    ("run.retries", 0, [-1, 0.5]),
    ("batching.target-task-seconds", 1e-9, [0.0, float("inf")]),
    ("batching.progressive-blocks", 1, [0]),
    ("batching.driver-tasks-per-second", 0.5, [0, -1]),
    ("lock.lease", 6.0, [0, -60.0, float("inf"), "abc", None, [1]]),
    ("lock.heartbeat", 59.9, [0, -1, 60.0, 61]),
    ("progress.line-seconds", 0.1, [0]),
    ("theory.finite-t-below", 0, [-1, float("inf")]),
    ("theory.finite-t-budget", 0, [-0.5]),
    ("theory.one-token-budget", 0, [-1, 2.5]),
    ("theory.finite-size-budget", 0, [-1]),
    ("theory.pooled-budget", 0.0, [-1.0, float("inf")]),
    ("theory.cache", "some/folder", ["", 5, True, [1]]),
    ("store.done-writers", 1, [0]),
    ("batch-system.submit-timeout", 0.5, [0]),
    ("scheduler.connect-timeout", 0.5, [0, "soon"]),
    ("batch-system.status-timeout", 0.5, [0, -1]),
    ("batch-system.query-timeout", 0.5, [0]),
    ("scheduler.probe-timeout", 0.1, [0, float("nan")]),
    ("scheduler.workers-timeout", 1.0, [0]),
    ("scheduler.dashboard-port", 65535, [0, 65536, 80.5, True]),
    ("serve.interval", 0.5, [0.4, 0, float("inf")]),
    ("serve.rate-window", 1.0, [0]),
    ("serve.stall", 1.0, [0, -5]),
    ("compare.limit-budget", 0, [-1, 1.5]),
    ("compare.list-all", 1, [0]),
]


@pytest.mark.parametrize("key, inside, outside", RANGES, ids=[r[0] for r in RANGES])
def test_each_setting_is_checked_against_its_range(key, inside, outside):
    with dask.config.set({f"rmtsweep.{key}": inside}):
        assert config.get(key) == inside
    for value in outside:
        with dask.config.set({f"rmtsweep.{key}": value}):
            with pytest.raises(SettingsError, match=rf"^rmtsweep\.{re.escape(key)} = .*: must be "):
                config.get("run.retries")               # any read checks every setting
            with pytest.raises(SettingsError):
                config.check()
    assert {r[0] for r in RANGES} == set(config.keys())


def test_values_are_typed_whatever_their_source():
    with dask.config.set({"rmtsweep.lock.lease": "60", "rmtsweep.run.retries": 3.0,
                          "rmtsweep.batching.target-task-seconds": "1e-1"}):
        lease, retries, target = config.get("lock.lease"), config.get("run.retries"), \
            config.get("batching.target-task-seconds")
    assert (lease, retries, target) == (60.0, 3, 0.1)
    assert (type(lease), type(retries), type(target)) == (float, int, float)


def test_an_unknown_key_is_refused_with_the_closest_one():
    with dask.config.set({"rmtsweep.run.window.per-threads": 8}):
        with pytest.raises(SettingsError, match=r"^rmtsweep\.run\.window\.per-threads: no such setting; did you mean "
                                                r"rmtsweep\.run\.window\.per-thread\? \(the settings of "
                                                r"rmtsweep\.run\.window: min-in-flight, per-thread, "):
            config.check()
    with dask.config.set({"rmtsweep.lock": 5}):
        with pytest.raises(SettingsError, match=r"^rmtsweep\.lock = 5: must be a mapping of lease, heartbeat$"):
            config.check()


def test_a_stores_record_is_checked_as_the_settings_are():
    shipped = config.defaults()["rmtsweep"]["theory"]
    assert config.recorded("theory", {**shipped, "one-token-budget": 1})["one-token-budget"] == 1
    for record, why in [({**shipped, "finite-size-budget": -1}, r"finite-size-budget is -1, not a whole number >= 0"),
                        ({k: v for k, v in shipped.items() if k != "pooled-budget"}, r"pooled-budget is missing"),
                        ({**shipped, "new-budget": 1}, r"new-budget is not a setting"),
                        ("64", r"rmtsweep\.theory is '64', not a mapping")]:
        with pytest.raises(SettingsError, match=why):
            config.recorded("theory", record)


class _Threads:
    """What :class:`~rmtsweep.run.execute.Window` asks of a client: the worker threads there."""

    def nthreads(self) -> dict[str, int]:
        return {"tcp://a": 1, "tcp://b": 2}


def test_dask_config_set_changes_the_values_read_where_they_are_used(tmp_path):
    from rmtsweep.run.cost import choose_blocking, task_target
    from rmtsweep.run.execute import Window
    from rmtsweep.run.progress import Progress
    from rmtsweep.spec import parse_sweep
    from rmtsweep.store.lock import StoreLock

    assert Window(_Threads()).size() == 4 * 3
    sweep = parse_sweep({**copy.deepcopy(BASE), "replicates": 64, "replicates_per_task": None})
    with dask.config.set({"rmtsweep.run.window.per-thread": 5, "rmtsweep.lock.lease": 0.5,
                          "rmtsweep.lock.heartbeat": 0.1, "rmtsweep.progress.line-seconds": 2.0,
                          "rmtsweep.batching.target-task-seconds": 1e-9,
                          "rmtsweep.batching.progressive-blocks": 64}):
        assert Window(_Threads()).size() == 5 * 3
        lock = StoreLock(tmp_path / "s.zarr")
        assert (lock.lease, lock.heartbeat) == (0.5, 0.1)
        assert Progress("x", 1, 0, enabled=False).every == 2.0
        assert task_target() == 1e-9
        assert choose_blocking(sweep).replicate == 1
    assert Window(_Threads()).size() == 4 * 3
    assert choose_blocking(sweep).replicate > 1


def test_an_environment_variable_changes_a_runs_window(tmp_path):
    """``DASK_RMTSWEEP__RUN__WINDOW__MIN_IN_FLIGHT`` is read by dask at import, and a run's window follows it."""
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(BASE))
    code = textwrap.dedent(f"""
        from distributed import Client
        from rmtsweep import run_sweep
        with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
            report = run_sweep({str(sweep)!r}, {str(tmp_path / "s.zarr")!r}, client, progress=False)
        print(report.in_flight, report.tasks_computed)
    """)
    out = subprocess.run([sys.executable, "-c", code], env=_clean_env(DASK_RMTSWEEP__RUN__WINDOW__MIN_IN_FLIGHT="7",
                                                                   DASK_RMTSWEEP__THEORY__CACHE="none"),
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    in_flight, computed = map(int, out.stdout.split()[-2:])
    assert computed > 0
    assert in_flight == 7                  # one worker thread: the default window would be max(4, 4 x 1) = 4


def test_a_new_store_records_and_obeys_the_theory_budgets(tmp_path):
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile, parse_sweep
    from rmtsweep.store import open_store

    data = {**copy.deepcopy(BASE), "correlation": {"model": "iid"},
            "grid": {**BASE["grid"], "T": [1]}}                    # T = 1: the exact one-token law
    with dask.config.set({"rmtsweep.theory.one-token-budget": 1}):
        prepare_store(SweepFile(parse_sweep(data), "sweep.yaml", yaml.safe_dump(data)), tmp_path / "s.zarr")
    ds = open_store(tmp_path / "s.zarr")
    recorded = ds.attrs["config"]
    shipped = {k: v for k, v in config.defaults()["rmtsweep"]["theory"].items() if k != "cache"}
    assert recorded["theory"] == {**shipped, "one-token-budget": 1}             # not the cache: the machine's
    assert recorded["batching"] == config.defaults()["rmtsweep"]["batching"]
    assert "exceed the budget of 1" in ds["theory_law"].attrs["description"]
    assert int(ds["theory_law"].max()) == 0                    # the cubic stands: 2 (delta, gamma) points > 1


@pytest.mark.parametrize("key", ["run.window.per-thread", "run.window.per_thread"])
def test_get_takes_either_spelling_and_refuses_an_unknown_key(key):
    assert config.get(key) == 4
    with pytest.raises(KeyError):
        config.get("run.window.no-such-key")


def test_cluster_settings_left_null_come_from_dask_jobqueues_config():
    """One schema: a cluster file's null is dask-jobqueue's ``jobqueue.<kind>``; the file and the options win."""
    from rmtsweep.cluster.batch import load_cluster_config
    from rmtsweep.errors import ClusterError

    assert load_cluster_config("slurm").account is None                       # the shipped file: account: null
    with dask.config.set({"jobqueue.slurm.account": "lab", "jobqueue.slurm.queue": "long",
                          "jobqueue.slurm.local-directory": "$TMPDIR"}):
        cfg = load_cluster_config("slurm")
        assert (cfg.account, cfg.queue, cfg.local_directory) == ("lab", "debug", "$TMPDIR")
        assert load_cluster_config("slurm", overrides={"account": "other"}).account == "other"
    with dask.config.set({"jobqueue.pbs.interface": 5}):
        with pytest.raises(ClusterError, match=r"field 'interface' \(jobqueue\.pbs\) = 5"):
            load_cluster_config("pbs")
