"""Failures of object storage are one line naming the store, at start-up and mid-run: a mistake the user can fix
(credentials, a bucket missing or with an invalid name, an option the filesystem does not take, a URL that is
not one) exits 2; a storage that does not answer exits 1, and after a run says to rerun, which resumes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from rmtsweep.errors import StorageUnavailableError, StoreError, UserError
from rmtsweep.store.objectstore import storage_error
from rmtsweep.testing import assert_stores_equal
from tests.helpers import MEDIUM, build_store, run_main

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
pytestmark = pytest.mark.usefixtures("in_process_runs")

SWEEP = Path(__file__).resolve().parents[1] / "data" / "partial.yaml"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def bucket(s3_endpoint) -> str:
    s3fs.S3FileSystem(endpoint_url=s3_endpoint).mkdir("failures")
    return s3_endpoint


def _written(fs, prefix: str) -> int:
    """How many chunks are stored under ``prefix`` (0 while it is absent)."""
    try:
        return sum(1 for key in fs.ls(prefix) if not key.endswith((".zarray", ".zattrs")))
    except FileNotFoundError:
        return 0


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("store, options, says", [
    ("s3://Auth_B!/z.zarr", [], "'Auth_B!' is not a valid bucket name"),
    ("s3://nosuchbucket/z.zarr", [], "the bucket nosuchbucket does not exist"),
    ("s3://failures/opt.zarr", ["nosuchoption=1"], "does not take the storage option 'nosuchoption'"),
], ids=["invalid-bucket-name", "missing-bucket", "unknown-option"])
def test_a_users_storage_mistake_at_start_up_is_one_line_and_exit_2(bucket, store, options, says, tmp_path, capsys,
                                                                      monkeypatch):
    monkeypatch.chdir(tmp_path)
    extra = [a for o in [f"endpoint_url={bucket}", *options] for a in ("--storage-option", o)]
    code, _, err = run_main(["run", str(SWEEP), "--store", store, "--no-progress", *extra], capsys)
    line = _one_line(err)
    assert code == 2 and line.startswith(f"rmtsweep: error: {store}: ") and says in line
    assert not list(tmp_path.iterdir())


def test_missing_credentials_are_one_line_and_exit_2(bucket, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    code, _, err = run_main(["run", str(SWEEP), "--store", "s3://failures/creds.zarr", "--no-progress",
                             "--storage-option", f"endpoint_url={bucket}",
                             "--storage-option", "config_kwargs.connect_timeout=7"], capsys)   # a filesystem of its own
    line = _one_line(err)
    assert code == 2 and line.startswith("rmtsweep: error: s3://failures/creds.zarr: no credentials for s3://")


@pytest.mark.parametrize("store", ["s3:/failures/x.zarr", "s3//failures/x.zarr", "gs:bucket/x.zarr"])
@pytest.mark.parametrize("command", ["run", "status"])
def test_a_malformed_url_is_refused_not_run_into_a_local_directory(store, command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["run", str(SWEEP), "--store", store, "--no-progress"] if command == "run" else ["status", store]
    code, _, err = run_main(argv, capsys)
    line = _one_line(err)
    assert code == 2 and line.startswith(f"rmtsweep: error: {store}: not a URL")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("command", ["run", "status", "verify", "export"])
def test_an_endpoint_that_does_not_answer_is_one_line_and_exit_1(command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    store = "s3://failures/down.zarr"
    options = ["--storage-option", f"endpoint_url=http://127.0.0.1:{_free_port()}",
               "--storage-option", "config_kwargs.retries.max_attempts=1"]
    argv = {"run": ["run", str(SWEEP), "--store", store, "--no-progress"],
            "export": ["export", store, "--out", "out.csv"]}.get(command, [command, store])
    code, _, err = run_main([*argv, *options], capsys)
    line = _one_line(err)
    assert code == 1 and line.startswith(f"rmtsweep: error: {store}: the storage does not answer (")
    assert "rerun the same command once it answers" in line


@pytest.mark.slow
def test_the_storage_going_away_mid_run_is_one_line_and_the_rerun_resumes(s3_endpoint, tmp_path):
    """A server of the test's own is stopped while a run writes into it, then started again on the same port (moto
    keeps its buckets in this process): the run stops in one line, exit 1, and the same command finishes the store."""
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    fs.mkdir("midrun")
    sweep = tmp_path / "medium.yaml"
    data = MEDIUM                                       # 64 tasks: the server stops after the 5th, so 59 are left
    sweep.write_text(yaml.safe_dump(data))
    cmd = [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep), "--store", "s3://midrun/m.zarr", "--no-progress",
           "--in-process", "--workers", "1", "--storage-option", f"endpoint_url={endpoint}",
           "--storage-option", "config_kwargs.retries.max_attempts=1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if _written(fs, "midrun/m.zarr/done") > 4:
                break                                   # several tasks marked done
            time.sleep(0.2)
        server.stop()
        _, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]                 # after the run's notes
    assert line.startswith("rmtsweep: error: ") and "s3://midrun/m.zarr" in line and "does not answer" in line
    assert "rerun the same command to resume" in line
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        fresh = build_store(tmp_path / "fresh.zarr", data)
        import rmtsweep
        there = rmtsweep.open_store("s3://midrun/m.zarr", storage_options={"endpoint_url": endpoint})
        assert_stores_equal(there, fresh)
    finally:
        server.stop()


@pytest.mark.parametrize("exc, kind, says", [
    (PermissionError("Forbidden"), StoreError, "access denied (PermissionError: Forbidden)"),
    (FileNotFoundError("The specified bucket does not exist"), StoreError, "the bucket b does not exist"),
    (TypeError("AioSession.__init__() got an unexpected keyword argument 'nosuch'"), UserError,
     "does not take the storage option 'nosuch'"),
    (ConnectionRefusedError(111, "Connection refused"), StorageUnavailableError, "the storage does not answer"),
])
def test_storage_errors_are_classified_by_what_the_user_can_do(exc, kind, says):
    error = storage_error(exc, "s3://b/run.zarr")
    assert isinstance(error, kind) and str(error).startswith("s3://b/run.zarr: ") and says in str(error)
    assert storage_error(KeyError("x"), "s3://b/run.zarr") is None


@pytest.fixture(scope="module")
def checking_endpoint():
    """A moto S3 server (a process of its own) that checks credentials, which the tests' ones are not: its URL."""
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env={**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "0"})
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.parametrize("command", ["run", "status"])
def test_wrong_credentials_are_one_line_and_exit_2(checking_endpoint, command, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    store = "s3://failures/denied.zarr"
    argv = ["run", str(SWEEP), "--store", store, "--no-progress"] if command == "run" else ["status", store]
    code, _, err = run_main([*argv, "--storage-option", f"endpoint_url={checking_endpoint}"], capsys)
    line = _one_line(err)
    assert code == 2 and line.startswith(f"rmtsweep: error: {store}: access denied (")
    assert not list(tmp_path.iterdir())
