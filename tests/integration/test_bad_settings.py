"""A bad setting, wherever it was set, is one line and exit status 2 before any cluster starts or store is made."""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys

import dask
import pytest
import yaml

from rmtsweep.errors import RunError, SettingsError
from tests.helpers import BASE

# (what is wrong, environment, the one line's pattern after "rmtsweep: error: ").
# The ranges are written out here, not taken from rmtsweep.config: the test holds the code to them.
CASES = [
    ("not a number", {"DASK_RMTSWEEP__LOCK__LEASE": "abc"},
     r"rmtsweep\.lock\.lease = 'abc' \(environment variable DASK_RMTSWEEP__LOCK__LEASE\): must be seconds > 0, finite$"),
    ("a count of zero", {"DASK_RMTSWEEP__BATCHING__PROGRESSIVE_BLOCKS": "0"},
     r"rmtsweep\.batching\.progressive-blocks = 0 \(environment variable DASK_RMTSWEEP__BATCHING__PROGRESSIVE_BLOCKS\): "
     r"must be a whole number >= 1$"),
    ("a heartbeat of zero", {"DASK_RMTSWEEP__LOCK__HEARTBEAT": "0"},
     r"rmtsweep\.lock\.heartbeat = 0 \(.*\): must be seconds > 0, finite; below rmtsweep\.lock\.lease$"),
    ("a heartbeat above the lease", {"DASK_RMTSWEEP__LOCK__HEARTBEAT": "90"},
     r"rmtsweep\.lock\.heartbeat = 90\.0 \(.*\): must be below rmtsweep\.lock\.lease \(60\.0\)"),
    ("no submission", {"DASK_RMTSWEEP__RUN__SUBMIT_BATCH": "0"},
     r"rmtsweep\.run\.submit-batch = 0 \(.*\): must be a whole number >= 1$"),
    ("a zero window", {"DASK_RMTSWEEP__RUN__WINDOW__MIN_IN_FLIGHT": "0", "DASK_RMTSWEEP__RUN__WINDOW__PER_THREAD": "0"},
     r"rmtsweep\.run\.window\.(min-in-flight|per-thread) = 0 \(.*\): must be a whole number >= 1$"),
    ("a negative lease", {"DASK_RMTSWEEP__LOCK__LEASE": "-5"},
     r"rmtsweep\.lock\.lease = -5 \(.*\): must be seconds > 0, finite$"),
    ("an infinite lease", {"DASK_RMTSWEEP__LOCK__LEASE": "inf"},
     r"rmtsweep\.lock\.lease = 'inf' \(.*\): must be seconds > 0, finite$"),
    ("negative retries", {"DASK_RMTSWEEP__RUN__RETRIES": "-1"},
     r"rmtsweep\.run\.retries = -1 \(.*\): must be a whole number >= 0$"),
    ("a fractional count", {"DASK_RMTSWEEP__STORE__DONE_WRITERS": "2.5"},
     r"rmtsweep\.store\.done-writers = 2\.5 \(.*\): must be a whole number >= 1$"),
    ("a negative budget", {"DASK_RMTSWEEP__THEORY__FINITE_SIZE_BUDGET": "-1"},
     r"rmtsweep\.theory\.finite-size-budget = -1 \(.*\): must be a whole number >= 0$"),
    ("an empty cache folder", {"DASK_RMTSWEEP__THEORY__CACHE": ""},
     r"rmtsweep\.theory\.cache = '' \(environment variable DASK_RMTSWEEP__THEORY__CACHE\): must be a folder, default "
     r"\(the user's cache folder\) or none \(off\)$"),
    ("a typo", {"DASK_RMTSWEEP__LOCK__LEASES": "30"},
     r"rmtsweep\.lock\.leases: no such setting \(environment variable DASK_RMTSWEEP__LOCK__LEASES\); did you mean "
     r"rmtsweep\.lock\.lease\? \(the settings of rmtsweep\.lock: lease, heartbeat\)$"),
    ("a section set to a value", {"DASK_RMTSWEEP__LOCK": "5"},       # dask's merge would drop it without a word
     r"rmtsweep\.lock = 5 \(environment variable DASK_RMTSWEEP__LOCK\): must be a mapping of lease, heartbeat$"),
    ("an unknown section", {"DASK_RMTSWEEP__LOCKS__LEASE": "30"},
     r"rmtsweep\.locks: no such setting .*; did you mean rmtsweep\.lock\? \(the settings of rmtsweep: run, batching, "
     r"lock, "),
]


def _env(tmp_path, **extra: str) -> dict[str, str]:
    """This process's environment with no rmtsweep setting but the suite's theory cache, and an empty dask config
    folder, plus ``extra``."""
    folder = tmp_path / "dask-config"
    folder.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_") or k == "DASK_RMTSWEEP__THEORY__CACHE"}
    return {**env, "DASK_CONFIG": str(folder), **extra}


def _rmtsweep(args: list[str], env: dict[str, str], cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rmtsweep.cli", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def _one_line(proc: subprocess.CompletedProcess, pattern: str) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr[-3000:]
    assert re.match(r"rmtsweep: error: " + pattern, lines[0]), lines[0]


@pytest.fixture
def sweep(tmp_path):
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(BASE))
    return path


@pytest.mark.parametrize("case, extra, pattern", CASES, ids=[c[0] for c in CASES])
def test_a_bad_setting_stops_a_run_before_it_starts(case, extra, pattern, sweep, tmp_path):
    store = tmp_path / "s.zarr"
    proc = _rmtsweep(["run", str(sweep), "--store", str(store), "--workers", "1", "--in-process", "--no-progress"],
                     _env(tmp_path, **extra), tmp_path)
    _one_line(proc, pattern)
    assert not store.exists() and not (tmp_path / "store").exists()


def test_a_bad_value_in_a_users_dask_file_names_the_file(sweep, tmp_path):
    env = _env(tmp_path)
    user = tmp_path / "dask-config" / "rmtsweep.yaml"
    user.write_text("rmtsweep:\n  lock:\n    lease: -1.0\n")
    store = tmp_path / "s.zarr"
    proc = _rmtsweep(["run", str(sweep), "--store", str(store), "--workers", "1", "--in-process"], env, tmp_path)
    _one_line(proc, rf"rmtsweep\.lock\.lease = -1\.0 \(in {re.escape(str(user))}\): must be seconds > 0, finite$")
    assert not store.exists()


@pytest.mark.parametrize("command", [["status", "{store}"], ["run", "{sweep}", "--store", "{store}"], ["sweeps"]])
@pytest.mark.parametrize("text, why", [("rmtsweep:\n  lock:\n    lease: [1,\n", r"line \d+, column \d+: .+"),
                                       ("- a list\n- not a mapping\n", r"its top level must be a mapping \(key: value\)")],
                         ids=["syntax", "not a mapping"])
def test_a_malformed_dask_config_file_is_one_line_from_every_command(command, text, why, sweep, tmp_path):
    env = _env(tmp_path)
    broken = tmp_path / "dask-config" / "broken.yaml"
    broken.write_text(text)
    store = tmp_path / "s.zarr"
    args = [a.format(store=store, sweep=sweep) for a in command]
    proc = _rmtsweep(args, env, tmp_path)
    _one_line(proc, rf"{re.escape(str(broken))}: malformed YAML in dask's configuration \({why}\); fix or remove "
                    rf"the file$")
    assert not store.exists()


def test_a_setting_from_the_environment_is_read_typed(tmp_path):
    """An environment variable's "60" (an int to dask) is the float 60.0; "1e2" (a string) the float 100.0."""
    code = "from rmtsweep import config; print(repr(config.get('lock.lease')), repr(config.get('lock.heartbeat')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True,
                         env=_env(tmp_path, DASK_RMTSWEEP__LOCK__LEASE="60", DASK_RMTSWEEP__LOCK__HEARTBEAT="'1e1'"))
    assert out.stdout.split() == ["60.0", "10.0"]


def test_run_sweep_refuses_a_bad_dask_config_set_before_a_cluster_starts(sweep, tmp_path, monkeypatch):
    from rmtsweep import run_sweep

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")
    monkeypatch.setattr("distributed.LocalCluster", no_cluster)
    with dask.config.set({"rmtsweep.run.submit-batch": 0}):
        with pytest.raises(SettingsError, match=r"^rmtsweep\.run\.submit-batch = 0: must be a whole number >= 1$"):
            run_sweep(sweep, tmp_path / "s.zarr")
    assert not (tmp_path / "s.zarr").exists()


def test_a_run_that_can_submit_nothing_is_an_error_not_a_success(tmp_path, monkeypatch):
    """The runner's own guard, behind the settings' check: tasks left and none failed is no success."""
    from distributed import Client

    from rmtsweep import run_sweep
    from rmtsweep.run.execute import Window
    from rmtsweep.store import tasks_done
    from rmtsweep.spec import parse_sweep

    monkeypatch.setattr(Window, "size", lambda self: 0)
    sweep = parse_sweep(copy.deepcopy(BASE))
    with Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=":0") as client:
        with pytest.raises(RunError, match=r"(\d+) of \1 tasks were left uncomputed though none failed") as exc:
            run_sweep(sweep, tmp_path / "s.zarr", client, progress=False)
    done, total = tasks_done(tmp_path / "s.zarr")
    assert done == 0 and f": {total} of {total} tasks" in str(exc.value)
