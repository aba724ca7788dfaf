"""Every user mistake: one line naming file, field and value; exit status 2; nothing written."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rmtsweep.cli import main
from rmtsweep.errors import RmtsweepError, UserError
from tests.helpers import BASE
from tests.unit.test_spec import BAD


def _without(key: str):
    def mutate(data):
        del data[key]
    return mutate


# Every case of the spec's table (tests/unit/test_spec.py: file, field, value in the message), plus the
# ones only a file can have, each run through the real command line.
SWEEP_CASES = [
    *BAD,
    ("missing key", _without("seed"), r"seed: Field required"),
    ("YAML syntax error", "name: x\ngrid: [1, 2\n", r"YAML syntax error at line \d+, column \d+"),
]


def _expect_exit_2(argv, capsys, message: str) -> None:
    with pytest.raises(SystemExit, match=r"^2$") as exc:             # SystemExit's message is its code
        main(argv)
    assert exc.type is SystemExit and exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "Traceback" not in "\n".join(err)
    assert len([line for line in err if line.startswith("rmtsweep: error:")]) == 1
    import re
    assert re.search(message, err[-1]), err[-1]


@pytest.mark.parametrize("case, mutate, message", SWEEP_CASES, ids=[c[0] for c in SWEEP_CASES])
def test_bad_sweep_file(case, mutate, message, tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    if isinstance(mutate, str):
        path.write_text(mutate)
    else:
        data = copy.deepcopy(BASE)
        mutate(data)
        path.write_text(yaml.safe_dump(data))
    store = tmp_path / "new.zarr"
    _expect_exit_2(["run", str(path), "--store", str(store)], capsys, rf"^rmtsweep: error: {path}: {message}")
    assert not store.exists()


@pytest.fixture
def good(tmp_path) -> Path:
    path = tmp_path / "good.yaml"
    path.write_text(yaml.safe_dump(BASE))
    return path


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "demoo"], r"^rmtsweep: error: demoo: no such sweep file, and not a shipped sweep; did you mean `demo`\? "
                       r"\(shipped: .*demo"),
    (["show", "paper_phase"], r"did you mean `paper-phase`\?"),
    (["run", "zzz", "--dry-run"], r"^rmtsweep: error: zzz: no such sweep file, and not a shipped sweep \(shipped: "),
    (["show", "demo", "grid.weights=mean,harmonc"], r"grid\.weights\[1\]: unknown scheme 'harmonc' \(did you mean "
                                                   r"`harmonic`\?\)"),
])
def test_a_misspelt_sweep_or_scheme_gets_a_suggestion(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _expect_exit_2(argv, capsys, message)
    assert list(tmp_path.iterdir()) == []


def test_a_range_that_breaks_a_bound_is_one_error_naming_its_end(good, capsys):
    _expect_exit_2(["show", str(good), "grid.snr={start: 0, stop: -1, num: 20}"], capsys,
                   r": grid\.snr\.stop: Input should be greater than or equal to 0 \(got -1\)$")


def test_store_path_not_writable(good, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    _expect_exit_2(["run", str(good), "--store", str(blocker / "s.zarr")], capsys,
                   r"cannot create the store: .*a-file is not a directory")


def _no_cluster(monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("a cluster was started for a run that is refused")
    monkeypatch.setattr("rmtsweep.cluster.engine.connect", refuse)


def test_a_store_path_no_directory_can_be_made_in_is_refused_before_the_cluster(good, capsys, monkeypatch):
    """/proc passes every permission check for root, yet holds no new directory: an attempt tells."""
    _no_cluster(monkeypatch)
    _expect_exit_2(["run", str(good), "--store", "/proc/x.zarr"], capsys,
                   r"^rmtsweep: error: /proc/x\.zarr: cannot create the store in /proc: ")
    assert not Path("/proc/x.zarr").exists()


@pytest.mark.parametrize(("override", "message"), [
    ("d=10000000", r"estimated memory per task [\d.]+ GiB exceeds the [\d.]+ GiB a worker thread has \(this "
                   r"machine's memory shared by 1 worker thread\(s\)\); lower d .*--force"),
    ("replicates=1000000000000", r"the store's done mask would hold [\d,.]+ GiB \(1,000,000,000,000 replicates x "
                                 r"\d+ points and schemes\), more than a quarter of this machine's"),
])
def test_a_plan_the_machine_cannot_hold_is_refused_before_anything_starts(override, message, good, tmp_path,
                                                                         capsys, monkeypatch):
    _no_cluster(monkeypatch)
    store = tmp_path / "big.zarr"
    _expect_exit_2(["run", str(good), override, "--store", str(store), "--workers", "1"], capsys, message)
    _expect_exit_2(["run", str(good), override, "--store", str(store), "--workers", "1", "--dry-run"], capsys,
                   "a run would be refused: " + message.split(r" \(this")[0].split(r" \(1,")[0])
    assert not store.exists()


def test_the_dry_run_of_a_huge_sweep_is_bounded_and_says_it_would_take_years(good, tmp_path, capsys):
    """10^9 replicates: the tasks are counted, not listed (this took 5 GB of memory), and the time is named."""
    import resource
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    main(["run", str(good), "replicates=1000000000", "d=400", "--store", str(tmp_path / "s.zarr"), "--dry-run",
          "--workers", "1"])
    out = capsys.readouterr().out
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024 < 2**30, "a GiB more for a dry run"
    assert re.search(r"^note: this run would take about [\d,]+ years on 1 worker threads: lower replicates", out,
                     flags=re.M), out


def test_path_that_is_not_a_store(good, tmp_path, capsys):
    other = tmp_path / "results"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    _expect_exit_2(["run", str(good), "--store", str(other)], capsys, r"exists and is not an rmtsweep store")
    assert [p.name for p in other.iterdir()] == ["notes.txt"]
    _expect_exit_2(["status", str(other)], capsys, r"not an rmtsweep store")


def test_memory_estimate_over_the_workers_limit(tmp_path, capsys):
    path = tmp_path / "huge.yaml"
    path.write_text(yaml.safe_dump({**copy.deepcopy(BASE), "d": 200_000}))
    store = tmp_path / "huge.zarr"
    _expect_exit_2(["run", str(path), "--store", str(store), "--workers", "1"], capsys,
                   r"estimated memory per task \d+\.\d\d GiB exceeds the \d+\.\d\d GiB a worker thread has \(.*\);"
                   r".*--force")
    assert not store.exists()


def test_force_overrides_the_memory_check():
    from distributed import Client, LocalCluster

    from rmtsweep.run.execute import check_memory
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, memory_limit="1GiB",
                      dashboard_address=":0") as c, Client(c) as client:
        assert check_memory(client, 2 * 2**30, force=True).endswith("running anyway (--force)")
        with pytest.raises(RmtsweepError, match=r"estimated memory per task 2\.00 GiB exceeds the 1\.00 GiB a "
                                                r"worker thread has .*; lower d or raise the workers' memory, "
                                                r"or pass --force") as exc:
            check_memory(client, 2 * 2**30)
        assert exc.type is UserError                              # exactly the base user error (exit 2), no subclass
        assert "within 1.00 GiB per thread (the workers' memory limit)" in check_memory(client, 2**29)


def test_memory_check_uses_the_cluster_config_before_workers_join():
    """An adaptive cluster has no worker yet: the check uses the batch config's memory, never skips silently."""
    from distributed import Client, LocalCluster

    from rmtsweep.run.execute import check_memory
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as c, Client(c) as client:
        with pytest.raises(RmtsweepError, match=r"estimated memory per task 1\.00 GiB exceeds the 0\.50 GiB a worker "
                                                r"thread has \(the cluster config") as exc:
            check_memory(client, 2**30, fallback=2**29)
        assert exc.type is UserError
        assert check_memory(client, 2**30).startswith("memory check not made")


def test_real_process_prints_one_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**copy.deepcopy(BASE), "grid": {**BASE["grid"], "delta": [-1.0]}}))
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "run", str(path)], capture_output=True, text=True,
                          cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"rmtsweep: error: {path}: grid.delta[0]: Input should be greater than 0 "
                                        f"(got -1.0)"]
    assert not (tmp_path / "store").exists()


# --- a URL where a store's path goes ------------------------------------------------------------------------

URL_COMMANDS = [            # the commands that need a file system (`run` and reading: tests/integration/test_object_storage.py)
    ["demo", "--store", "{url}"],
    ["work", "{url}", "--share", "0/2"],
]


@pytest.mark.parametrize("argv", URL_COMMANDS, ids=[a[0] for a in URL_COMMANDS])
@pytest.mark.parametrize("url", ["s3://bucket/run.zarr", "gs://bucket/run.zarr"])
def test_a_url_store_is_one_line_and_creates_no_local_directory(argv, url, tmp_path, capsys, monkeypatch):
    """pathlib folds ``s3://bucket/x`` into the directory ``s3:/bucket/x``: a run used to write there and say done."""
    monkeypatch.chdir(tmp_path)
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(BASE))
    scheme = url.split(":")[0]
    _expect_exit_2([a.format(sweep=sweep, url=url) for a in argv], capsys,
                   rf"^rmtsweep: error: {url}: this command needs a store on a file system; object storage "
                   rf"\({scheme}://\) is for `rmtsweep run`")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.yaml"]


def test_the_python_api_refuses_a_url_store_for_a_job_array_before_starting_anything(tmp_path, monkeypatch):
    from rmtsweep.errors import StoreError
    from rmtsweep.run import ready_store
    from rmtsweep.spec import parse_sweep
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError, match=r"^s3://bucket/run\.zarr: this command needs a store on a file system"):
        ready_store(parse_sweep(copy.deepcopy(BASE)), "s3://bucket/run.zarr", 1, 2)
    assert not list(tmp_path.iterdir())
