"""Stores on object storage, through fsspec, against a real S3 API server on loopback (moto's server mode).

A store copied to a bucket reads there as it does on disk: the Python API, plain xarray and every reading
command (status, verify, compare, export, plot, figures), with the endpoint and credentials given as
``--storage-option`` or by the environment. A sweep run into a bucket (its workers writing their chunks
there) is bit-identical to the same sweep on disk, survives SIGKILL and resumes, holds one writer by a lock
object made with a conditional write, and is verified and repaired there. Nothing is ever created under a
local ``s3:`` directory.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas
import pytest
import xarray as xr
import yaml

from rmtsweep.cli import main
from rmtsweep.testing import assert_stores_equal
from tests.helpers import BASE, MEDIUM, build_store, run_main

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")
pytestmark = pytest.mark.usefixtures("in_process_runs")     # runs of the store, not of worker processes

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def endpoint(s3_endpoint):
    """A moto S3 server on a free loopback port for this module; its URL."""
    return s3_endpoint


@pytest.fixture(scope="module")
def bucket(endpoint, tiny_store):
    """The session's tiny store (with its comparison group) copied to ``s3://rmtsweep/tiny.zarr``: (url, options)."""
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    fs.mkdir("rmtsweep")
    fs.put(str(tiny_store), "rmtsweep/tiny.zarr", recursive=True)
    return "s3://rmtsweep/tiny.zarr", {"endpoint_url": endpoint}


def _copy(endpoint: str, src: Path, name: str) -> str:
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    fs.put(str(src), f"rmtsweep/{name}", recursive=True)
    return f"s3://rmtsweep/{name}"


def test_a_store_in_a_bucket_opens_as_on_disk_and_with_plain_xarray(bucket, tiny_store):
    import rmtsweep
    url, options = bucket
    on_disk = rmtsweep.open_store(tiny_store).load()
    there = rmtsweep.open_store(url, storage_options=options).load()
    xr.testing.assert_identical(there, on_disk)
    assert there["run"].dtype == np.int16                   # opened as open_store opens a path (no NaN masking)
    plain = xr.open_zarr(url, storage_options=options)       # no rmtsweep needed to read it
    assert plain.attrs["rmtsweep_format"] == on_disk.attrs["rmtsweep_format"]
    np.testing.assert_array_equal(plain["eigenvalues"].values, on_disk["eigenvalues"].values)
    assert rmtsweep.status(url, storage_options=options).tasks_done == rmtsweep.status(tiny_store).tasks_done
    a, b = there.rmt.compare(), on_disk.rmt.compare()            # the accessor on the bucket's dataset
    for name in ("lambda1_z", "overlap_mean", "detection_rate"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    # the readers of the Python API take the bucket's options as open_store does
    c, d = rmtsweep.compare(url, storage_options=options), rmtsweep.compare(tiny_store)
    np.testing.assert_allclose(c["lambda1_z"].values, d["lambda1_z"].values, rtol=1e-12)
    pandas.testing.assert_frame_equal(rmtsweep.phase_diagram(url, n_boot=50, storage_options=options),
                                      rmtsweep.phase_diagram(tiny_store, n_boot=50))


def test_the_reading_commands_answer_from_a_bucket_as_from_the_disk(bucket, tiny_store, tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    url, options = bucket
    opt = ["--storage-option", f"endpoint_url={options['endpoint_url']}"]
    results = {}
    for where, extra in ((url, opt), (str(tiny_store), [])):
        tag = "s3" if where == url else "disk"
        code, out, _ = run_main(["status", where, "--json", *extra], capsys)
        assert code == 0
        st = json.loads(out)
        st.pop("store")
        code, verified, _ = run_main(["verify", where, *extra], capsys)
        assert code == 0 and "every finished task's chunks are present" in verified
        code, summary, err = run_main(["compare", where, "--no-write", *extra], capsys)
        assert code == 0 and not err
        code, _, _ = run_main(["export", where, "--out", f"{tag}.csv", *extra], capsys)
        assert code == 0
        code, _, _ = run_main(["export", where, "--group", "comparison", "--out", f"{tag}-cmp.csv", *extra], capsys)
        assert code == 0
        results[tag] = (st, summary.replace(where, "STORE"))
    assert results["s3"] == results["disk"]
    for name in ("{}.csv", "{}-cmp.csv"):
        assert (tmp_path / name.format("s3")).read_bytes() == (tmp_path / name.format("disk")).read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["disk-cmp.csv", "disk.csv", "s3-cmp.csv", "s3.csv"]


def test_maps_and_figures_draw_from_a_bucket(bucket, tmp_path, capsys):
    url, options = bucket
    opt = ["--storage-option", f"endpoint_url={options['endpoint_url']}"]
    code, out, err = run_main(["plot", url, "--x", "snr", "--y", "gamma", "--var", "overlap", "--format", "png",
                               "--out", str(tmp_path / "maps"), *opt], capsys)
    assert code == 0, err
    pngs = sorted((tmp_path / "maps").glob("tiny*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)
    code, out, err = run_main(["figures", url, "--out", str(tmp_path / "figs"), *opt], capsys)
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "figs" / "tiny").glob("fig-*.png"))


def test_verify_finds_a_corrupt_and_an_absent_object_in_the_bucket(bucket, tiny_store, capsys):
    url, options = bucket
    endpoint = options["endpoint_url"]
    broken = _copy(endpoint, tiny_store, "broken.zarr")
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    chunks = sorted(k for k in fs.find("rmtsweep/broken.zarr/eigenvalues") if not k.rsplit("/", 1)[-1].startswith("."))
    alpha = sorted(k for k in fs.find("rmtsweep/broken.zarr/alpha") if not k.rsplit("/", 1)[-1].startswith("."))
    raw = bytearray(fs.cat_file(chunks[0]))
    raw[len(raw) // 2] ^= 0xFF                                  # one flipped byte in the middle of a chunk
    fs.pipe_file(chunks[0], bytes(raw))
    fs.rm_file(alpha[-1])                                       # another task's chunk lost
    opt = ["--storage-option", f"endpoint_url={endpoint}"]
    code, out, err = run_main(["verify", broken, *opt], capsys)
    assert code == 1
    lines = out.strip().splitlines()
    assert any("eigenvalues chunk is corrupt" in line for line in lines), out
    assert any("alpha chunk is absent (done without data)" in line for line in lines), out
    assert lines[-1].endswith("--repair` clears them for the next run")


def test_the_environment_gives_the_endpoint_to_a_fresh_process(bucket, tiny_store):
    """The standard variables of the S3 tools (AWS_ENDPOINT_URL and the credentials) reach the filesystem."""
    url, options = bucket
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": options["endpoint_url"]}
    done = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", url], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{url}: sweep tiny-maps")
    assert "complete" in done.stdout.splitlines()[1]


@pytest.mark.parametrize("path, problem", [("s3://rmtsweep/absent.zarr", "does not exist"),
                                           ("s3://no-such-bucket/run.zarr", "does not exist"),
                                           ("s3://rmtsweep/tiny.zarr/T", "not an rmtsweep store (no 'rmtsweep-store-1' "
                                                                         "marker)"),
                                           ("s3://rmtsweep", "a store is a prefix inside a bucket, e.g. "
                                                             "s3://rmtsweep/run.zarr (its lock object goes beside it)")])
def test_what_is_not_a_store_in_a_bucket_is_one_line(bucket, path, problem, capsys):
    url, options = bucket
    code, out, err = run_main(["status", path, "--storage-option", f"endpoint_url={options['endpoint_url']}"], capsys)
    assert code == 2 and err.strip() == f"rmtsweep: error: {path}: {problem}"


def test_an_unreachable_endpoint_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code, out, err = run_main(["status", "s3://rmtsweep/tiny.zarr", "--storage-option", "endpoint_url=http://127.0.0.1:9",
                               "--storage-option", "config_kwargs.retries.max_attempts=1"], capsys)
    assert code == 1                                        # an outage, not the user's mistake
    assert err.strip().startswith("rmtsweep: error: s3://rmtsweep/tiny.zarr: the storage does not answer (")
    assert "Could not connect to the endpoint URL" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_a_scheme_without_its_filesystem_names_the_package(tmp_path, capsys, monkeypatch):
    import fsspec
    real = fsspec.get_filesystem_class

    def without_gcsfs(protocol):
        if protocol in ("gs", "gcs"):
            raise ImportError("Please install gcsfs to access Google Storage")
        return real(protocol)

    monkeypatch.setattr(fsspec, "get_filesystem_class", without_gcsfs)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main(["status", "gs://bucket/run.zarr"], capsys)
    assert code == 2 and err.strip() == ("rmtsweep: error: gs://bucket/run.zarr: stores at gs:// are read through the "
                                         "package gcsfs, which is not installed: pip install gcsfs")
    code, out, err = run_main(["status", "nosuchscheme://bucket/run.zarr"], capsys)
    assert code == 2 and "no filesystem is known for nosuchscheme://" in err
    assert not list(tmp_path.iterdir())


def test_an_object_is_read_in_one_request_unless_the_options_say_otherwise(bucket, endpoint):
    """s3fs asks an object's size (HEAD) before reading it (GET) when it may split large reads; a store's objects
    are small, so rmtsweep reads each in one request, and an absent one too (no HEAD, no listing)."""
    from rmtsweep.store import locate
    where = locate(bucket[0], {"endpoint_url": endpoint})
    assert where.child(".zattrs").read()                              # connected
    sent: list[str] = []

    def count(request, **_):
        sent.append(request.method)

    events = where.fs.s3.meta.events                                  # the module's other tests share this client
    events.register("before-send.s3", count)
    try:
        assert json.loads(where.child(".zattrs").read())["rmtsweep_format"] == "rmtsweep-store-1"
        assert where.child("absent").read() is None
    finally:
        events.unregister("before-send.s3", count)
    assert sent == ["GET", "GET"]
    assert where.open_options["max_concurrency"] == 1                 # what xarray and zarr are given too
    assert locate(bucket[0], {"endpoint_url": endpoint, "max_concurrency": 4}).fs.max_concurrency == 4


def test_storage_options_parse_as_fsspec_takes_them_and_are_refused_for_a_path(tmp_path, capsys):
    from rmtsweep.store.location import parse_storage_options
    assert parse_storage_options(["anon=true", "client_kwargs.region_name=eu-west-1", "retries=3", "key=abc"]) == \
        {"anon": True, "client_kwargs": {"region_name": "eu-west-1"}, "retries": 3, "key": "abc"}
    code, out, err = run_main(["status", str(tmp_path / "x.zarr"), "--storage-option", "anon=true"], capsys)
    assert code == 2 and "--storage-option is for stores at a URL" in err
    code, out, err = run_main(["status", "s3://b/x.zarr", "--storage-option", "anon"], capsys)
    assert code == 2 and "expected KEY=VALUE" in err


@pytest.mark.parametrize("options", [{"anon": True, "endpoint_url": "http://127.0.0.1:9000"},
                                     {"client_kwargs": {"region_name": "eu-west-1"}, "retries": 3, "key": "5",
                                      "profile": "lab account", "config_kwargs": {"retries": {"max_attempts": 1}}}])
def test_a_driver_job_for_a_bucket_runs_the_same_store_with_the_same_options(options, base_sweep, tmp_path, capsys,
                                                                             monkeypatch):
    """submit's driver script names the URL and gives back every storage option, each as the command line
    reads it (text that looks like JSON kept as text); job arrays on a bucket are one line."""
    import shlex

    from rmtsweep.store.location import format_storage_options, parse_storage_options
    assert parse_storage_options(format_storage_options(options)) == options
    monkeypatch.chdir(tmp_path)
    items = [a for item in format_storage_options(options) for a in ("--storage-option", item)]
    argv = ["submit", str(base_sweep), "--store", "s3://lab/runs/tiny.zarr", *items, "--cluster", "slurm", "--dry-run"]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    command = shlex.split(next(line for line in out.splitlines() if line.startswith("exec ")))
    assert command[command.index("--store") + 1] == "s3://lab/runs/tiny.zarr"
    given = [command[i + 1] for i, a in enumerate(command) if a == "--storage-option"]
    assert parse_storage_options(given) == options
    assert not list(tmp_path.iterdir())                               # a dry run: nothing here, no `s3:` directory
    code, out, err = run_main([*argv, "--array", "4"], capsys)
    assert code == 2 and "job arrays on it are not supported yet" in err and len(err.strip().splitlines()) == 1


# --- writing a store into the bucket -------------------------------------------------------------------------


def _opened(url: str, endpoint: str) -> xr.Dataset:
    import rmtsweep
    return rmtsweep.open_store(url, storage_options={"endpoint_url": endpoint}).load()


def _run_argv(sweep: Path, url: str, endpoint: str) -> list[str]:
    return ["run", str(sweep), "--store", url, "--storage-option", f"endpoint_url={endpoint}", "--workers", "1",
            "--no-progress"]


@pytest.fixture(scope="module")
def base_sweep(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sweeps") / "tiny.yaml"
    path.write_text(yaml.safe_dump(BASE))
    return path


def test_a_sweep_run_into_a_bucket_equals_the_same_sweep_on_disk(endpoint, bucket, base_sweep, reference, tmp_path,
                                                                  capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = "s3://rmtsweep/run.zarr"
    code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)
    assert code == 0, err
    assert f"{url}: 2/2 tasks done (2 computed now)" in out
    assert_stores_equal(_opened(url, endpoint), reference[1])             # bit for bit, as the same sweep on disk
    plain = xr.open_zarr(url, storage_options={"endpoint_url": endpoint})  # a plain zarr, read without rmtsweep
    assert plain.attrs["rmtsweep_format"] == "rmtsweep-store-1" and len(plain.attrs["runs"]) == 1
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    assert not fs.exists("rmtsweep/run.zarr.lock")                        # the lock object released
    code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)   # a rerun: nothing left to do
    assert code == 0 and "(0 computed now)" in out
    # compare writes its group into the bucket; xarray reads it there
    code, out, err = run_main(["compare", url, "--storage-option", f"endpoint_url={endpoint}"], capsys)
    assert code == 0, err
    group = xr.open_zarr(url, group="comparison", storage_options={"endpoint_url": endpoint})
    assert "lambda1_z" in group and int(group.attrs["done_replicates"]) == int(_opened(url, endpoint)["done"].sum())
    assert not list(tmp_path.iterdir())                                   # nothing local, no `s3:` directory


@pytest.mark.slow
def test_sigkill_twice_then_resume_in_the_bucket_is_identical(endpoint, bucket, tmp_path, capsys):
    """Two runs killed (SIGKILL to the group) mid-sweep, the second after taking over the first's stale lock; the
    third finishes, equal to a run on disk. (Three kills at random points on disk: test_resume.py.)"""
    sweep = tmp_path / "medium.yaml"
    data = {**MEDIUM, "name": "killed", "replicates": 8}   # 32 tasks: the kills below land before the 17th is done
    sweep.write_text(yaml.safe_dump(data))
    clean = build_store(tmp_path / "clean.zarr", data)
    url = "s3://rmtsweep/killed.zarr"
    env = {**os.environ, **CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}
    cmd = [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep), "--store", url, "--workers", "1", "--no-progress"]
    rng = np.random.default_rng(20261203)
    targets = sorted(rng.choice(np.arange(3, 17), size=2, replace=False))

    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)

    def state() -> tuple[int, int]:
        """(tasks done, runs recorded) as the bucket holds them now: the objects of `done` (one per task, written
        once the task's data are) and the root's attributes; two requests, so the look does not slow the run."""
        try:
            runs = len(json.loads(fs.cat_file("rmtsweep/killed.zarr/.zattrs")).get("runs", []))
            done = [k for k in fs.ls("rmtsweep/killed.zarr/done", detail=False) if k.rsplit("/", 1)[-1][0].isdigit()]
        except FileNotFoundError:                       # not created yet
            return 0, 0
        return len(done), runs

    for k, target in enumerate(targets):                # kill run k once `target` tasks are done in all and it
        before = state()[0]                             # has recorded itself and finished one of its own
        proc = subprocess.Popen(cmd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while proc.poll() is None and time.monotonic() < deadline:
            done, runs = state()
            if runs > k and done >= max(target, before + 1):
                break
            time.sleep(0.2)
        assert proc.poll() is None, f"the run ended before the kill at {target}: {proc.stderr.read()[-2000:]}"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        assert state()[0] < 32, "the kill landed after the sweep had finished"
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)   # the lock judged stale: its
    assert done.returncode == 0, done.stderr[-3000:]                                   # pid is gone on this host
    assert_stores_equal(_opened(url, endpoint), clean)
    assert len(_opened(url, endpoint).attrs["runs"]) == 3
    # verified in this process (a fresh process finding the endpoint in its environment has its own test above)
    code, out, err = run_main(["verify", url, "--storage-option", f"endpoint_url={endpoint}"], capsys)
    assert code == 0, out + err


@pytest.mark.slow
def test_one_writer_a_live_lock_refuses_a_second_run_and_a_stale_one_is_taken_over(endpoint, bucket, base_sweep,
                                                                                   tmp_path, capsys):
    from rmtsweep.store import locate
    from rmtsweep.store.lock import StoreLock, lock_file
    url = "s3://rmtsweep/locked.zarr"
    where = locate(url, {"endpoint_url": endpoint})
    with StoreLock(where) as held:                      # another run holds the store (alive, on this host)
        code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)
        assert code == 2 and "another rmtsweep run is writing this store" in err, err
        assert json.loads(lock_file(where).read())["token"] == held.token        # the live lock untouched
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    assert not fs.exists("rmtsweep/locked.zarr.lock")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = {"token": "gone", "host": socket.gethostname(), "pid": int(dead.stdout), "started": "earlier", "beat": 3}
    fs.pipe_file("rmtsweep/locked.zarr.lock", json.dumps(stale).encode())       # a run killed on this host
    code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)
    assert code == 0, err
    assert "2/2 tasks done" in out and not fs.exists("rmtsweep/locked.zarr.lock")
    with StoreLock(where):                              # status names who holds the store, from the bucket
        code, out, err = run_main(["status", url, "--json", "--storage-option", f"endpoint_url={endpoint}"], capsys)
        assert code == 0 and [(w["pid"], w["alive"]) for w in json.loads(out)["writers"]] == [(os.getpid(), True)]


@pytest.mark.slow
def test_a_creation_cut_short_is_made_again_and_verify_repairs_in_the_bucket(endpoint, bucket, base_sweep,
                                                                             reference, tmp_path, capsys):
    url = "s3://rmtsweep/cut.zarr"
    opt = ["--storage-option", f"endpoint_url={endpoint}"]
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    fs.put(str(reference[1] / ".zattrs"), "rmtsweep/cut.zarr/.zattrs")        # a template cut after its first object
    fs.put(str(reference[1] / ".zgroup"), "rmtsweep/cut.zarr/.zgroup")
    code, out, err = run_main(["status", url, *opt], capsys)
    assert code == 2 and "its creation or extension was cut before the end" in err
    code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)
    assert code == 0, err
    assert_stores_equal(_opened(url, endpoint), reference[1])
    # a finished chunk overwritten in the bucket: verify names it, --repair clears its done, a rerun recomputes it
    chunk = sorted(k for k in fs.find("rmtsweep/cut.zarr/overlap") if not k.rsplit("/", 1)[-1].startswith("."))[0]
    raw = bytearray(fs.cat_file(chunk))
    raw[len(raw) // 2] ^= 0xFF
    fs.pipe_file(chunk, bytes(raw))
    code, out, err = run_main(["verify", url, *opt], capsys)
    assert code == 1 and "overlap chunk is corrupt" in out
    code, out, err = run_main(["verify", url, "--repair", *opt], capsys)
    assert code == 0 and "cleared the done flags of 1 task(s)" in out
    code, out, err = run_main(_run_argv(base_sweep, url, endpoint), capsys)
    assert code == 0 and "(1 computed now)" in out, out + err
    assert_stores_equal(_opened(url, endpoint), reference[1])


@pytest.mark.slow
def test_writes_the_bucket_refuses_mark_nothing_done_without_data(endpoint, bucket, tmp_path, monkeypatch):
    """The bucket refuses some tasks' chunks (access denied): the run stops with a run failure, every done task
    has all its objects, none of the refused tasks is done, and a rerun completes the same store."""
    from distributed import Client, LocalCluster

    import rmtsweep
    from rmtsweep.spec import parse_sweep
    from rmtsweep.store import verify
    from rmtsweep.store.io import chunk_done
    data = {**BASE, "name": "denied", "replicates": 8, "cells_per_task": 1}
    clean = build_store(tmp_path / "clean.zarr", data)
    keys = sorted(p.name for p in (clean / "overlap").iterdir() if p.name[0].isdigit())
    denied = {keys[-3], keys[-1]}                                  # two of the last tasks cannot write their overlap
    url, options = "s3://rmtsweep/denied.zarr", {"endpoint_url": endpoint}
    original = s3fs.S3FileSystem._pipe_file

    async def refusing(self, path, data, *args, **kwargs):
        head, _, key = path.rpartition("/")
        if head.endswith("denied.zarr/overlap") and key in denied:
            raise PermissionError(f"Access Denied: {path}")
        return await original(self, path, data, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_pipe_file", refusing)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        with pytest.raises(rmtsweep.RunError):
            rmtsweep.run_sweep(parse_sweep(data), url, client, progress=False, storage_options=options)
        remote = rmtsweep.store.locate(url, options)
        assert verify(remote) == []                  # every done task has every object
        group = rmtsweep.store.open_group(remote)
        done = group["done"]
        for key in denied:
            coords = tuple(int(c) for c in key.split("."))[:done.ndim]
            region = tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, done.chunks))
            assert not done[region].any(), key
        assert done[...].any()                                     # the others were written and are done
        left = int((~chunk_done(done[...], done.chunks)).sum())
        monkeypatch.undo()
        report = rmtsweep.run_sweep(parse_sweep(data), url, client, progress=False, storage_options=options)
        assert report.tasks_computed == left                      # exactly what was not done
    assert_stores_equal(_opened(url, endpoint), clean)


def _objects(endpoint: str, url: str) -> dict[str, bytes]:
    """Every object under the store's prefix, by its name inside the store."""
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    base = url.split("://", 1)[1] + "/"
    return {k[len(base):]: fs.cat_file(k) for k in fs.find(url)}


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and not p.name.startswith(".rmtsweep")}


@pytest.fixture(scope="module")
def bigger(tmp_path_factory) -> tuple[Path, Path]:
    """A larger sweep than BASE (replicates doubled, a delta value added between the two) and its store on
    disk, made by one fresh run: (sweep file, store)."""
    data = {**BASE, "replicates": 2 * BASE["replicates"], "grid": {**BASE["grid"], "delta": [0.5, 0.75, 1.0]}}
    root = tmp_path_factory.mktemp("bigger")
    (root / "bigger.yaml").write_text(yaml.safe_dump(data))
    return root / "bigger.yaml", build_store(root / "fresh.zarr", data)


@pytest.fixture(scope="module")
def extended_on_disk(reference, bigger, tmp_path_factory) -> Path:
    """The smaller store extended to the larger sweep on disk (its objects are what the bucket's should be:
    an extended store keeps the smaller store's chunks, so its files are not a fresh run's)."""
    import shutil

    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep
    path = tmp_path_factory.mktemp("extended") / "smaller.zarr"
    shutil.copytree(reference[1], path)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(bigger[0]), path, client, progress=False)
    return path


def test_extending_a_store_in_a_bucket_equals_a_fresh_run_of_the_larger_sweep(endpoint, bucket, reference, bigger,
                                                                             extended_on_disk, tmp_path, capsys,
                                                                             monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = _copy(endpoint, reference[1], "smaller.zarr")
    code, out, err = run_main(_run_argv(bigger[0], url, endpoint), capsys)
    assert code == 0, err
    assert f"{url}: extended; 16 finished replicate(s) carried over" in err, err   # 2 delta x 2 weights x 4
    assert_stores_equal(_opened(url, endpoint), bigger[1])             # bit for bit, as one fresh run on disk
    assert set(_objects(endpoint, url)) == _files(extended_on_disk)      # no object of the smaller store is left
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    assert not fs.glob("rmtsweep/smaller.zarr.*")                      # nor the extension's prefix, marker or lock
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("cut", ["before the marker", "in the copy"])
def test_an_extension_cut_in_the_bucket_is_finished_or_undone_by_the_next_run(endpoint, bucket, reference, bigger,
                                                                             extended_on_disk, cut, tmp_path, capsys,
                                                                             monkeypatch):
    """Killed while the extended store is made beside the store (the next run drops it and extends again),
    or while its objects are copied over the store's (the next run finishes the copy): either way the store
    then equals one fresh run of the larger sweep."""
    from rmtsweep.store import migrate, objectstore
    monkeypatch.chdir(tmp_path)
    name = "cut-" + cut.split()[-1] + ".zarr"
    url = _copy(endpoint, reference[1], name)
    module = migrate if cut == "before the marker" else objectstore        # the backend copies over the store
    original = migrate.copy_finished if cut == "before the marker" else objectstore._copy_over

    def cut_short(src, dst, *rest):
        if cut == "before the marker":
            original(src, dst, *rest)
        else:                                          # half of the objects copied, the metadata not
            fs = dst.fs
            dst.child(".zmetadata").remove()
            dst.remove(recursive=True)
            keys = [k for k in sorted(fs.find(src.url)) if not k.endswith(".zmetadata")][::2]
            fs.copy(keys, [dst.url + k[len(fs._strip_protocol(src.url)):] for k in keys])
        raise RuntimeError("killed")

    monkeypatch.setattr(module, "copy_finished" if cut == "before the marker" else "_copy_over", cut_short)
    with pytest.raises(RuntimeError, match="killed"):
        main(_run_argv(bigger[0], url, endpoint))
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    assert fs.exists(f"rmtsweep/{name}.rmtsweep-new/.zmetadata")
    assert fs.exists(f"rmtsweep/{name}.rmtsweep-swap") == (cut == "in the copy")
    code, out, err = run_main(["status", url, "--storage-option", f"endpoint_url={endpoint}"], capsys)
    if cut == "in the copy":                           # what a reader sees meanwhile: not a whole store
        assert code == 2 and "its creation or extension was cut before the end" in err, err
    else:                                              # the store itself untouched
        assert code == 0 and _objects(endpoint, url) == {str(f.relative_to(reference[1])): f.read_bytes()
                                                         for f in reference[1].rglob("*") if f.is_file()}
    code, out, err = run_main(_run_argv(bigger[0], url, endpoint), capsys)
    assert code == 0, err
    assert_stores_equal(_opened(url, endpoint), bigger[1])
    assert set(_objects(endpoint, url)) == _files(extended_on_disk)
    assert not fs.glob(f"rmtsweep/{name}.*")
