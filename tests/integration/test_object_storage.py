"""Stores on object storage, read through fsspec, against a real S3 API server on loopback (moto's server mode).

A finished store copied to a bucket reads there as it does on disk: the Python API, plain xarray and every
reading command (status, verify, compare, export, plot, figures), with the endpoint and credentials given as
``--storage-option`` or by the environment. Writing a store there is refused in one line (not yet supported),
and nothing is ever created under a local ``s3:`` directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from rmtsweep.cli import main

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def endpoint():
    """A moto S3 server on a free loopback port for this module; its URL."""
    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)              # no lookup of real credentials (instance metadata) by botocore
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="module")
def bucket(endpoint, tiny_store):
    """The session's tiny store (with its comparison group) copied to ``s3://rmtsweep/tiny.zarr``: (url, options)."""
    fs = s3fs.S3FileSystem(endpoint_url=endpoint, use_listings_cache=False)
    fs.mkdir("rmtsweep")
    fs.put(str(tiny_store), "rmtsweep/tiny.zarr", recursive=True)
    return "s3://rmtsweep/tiny.zarr", {"endpoint_url": endpoint}


def _cli(argv, capsys) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out, err = capsys.readouterr()
    return code, out, err


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
    assert rmtsweep.status(url, storage_options=options)["tasks_done"] == rmtsweep.status(tiny_store)["tasks_done"]


def test_the_reading_commands_answer_from_a_bucket_as_from_the_disk(bucket, tiny_store, tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    url, options = bucket
    opt = ["--storage-option", f"endpoint_url={options['endpoint_url']}"]
    results = {}
    for where, extra in ((url, opt), (str(tiny_store), [])):
        tag = "s3" if where == url else "disk"
        code, out, _ = _cli(["status", where, "--json", *extra], capsys)
        assert code == 0
        st = json.loads(out)
        st.pop("store")
        code, verified, _ = _cli(["verify", where, *extra], capsys)
        assert code == 0 and "every finished task's chunks are present" in verified
        code, summary, err = _cli(["compare", where, "--no-write", *extra], capsys)
        assert code == 0 and not err
        code, _, _ = _cli(["export", where, "--out", f"{tag}.csv", *extra], capsys)
        assert code == 0
        code, _, _ = _cli(["export", where, "--group", "comparison", "--out", f"{tag}-cmp.csv", *extra], capsys)
        assert code == 0
        results[tag] = (st, summary.replace(where, "STORE"))
    assert results["s3"] == results["disk"]
    for name in ("{}.csv", "{}-cmp.csv"):
        assert (tmp_path / name.format("s3")).read_bytes() == (tmp_path / name.format("disk")).read_bytes()
    # compare writes its group by default: on a bucket it says that it did not, and nothing else changes
    code, out, err = _cli(["compare", url, *opt], capsys)
    assert code == 0 and "not written into a store on object storage" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["disk-cmp.csv", "disk.csv", "s3-cmp.csv", "s3.csv"]


def test_maps_and_figures_draw_from_a_bucket(bucket, tmp_path, capsys):
    url, options = bucket
    opt = ["--storage-option", f"endpoint_url={options['endpoint_url']}"]
    code, out, err = _cli(["plot", url, "--x", "snr", "--y", "gamma", "--var", "overlap", "--format", "png",
                           "--out", str(tmp_path / "maps"), *opt], capsys)
    assert code == 0, err
    pngs = sorted((tmp_path / "maps").glob("tiny*.png"))
    assert pngs and all(p.stat().st_size > 10_000 for p in pngs)
    code, out, err = _cli(["figures", url, "--out", str(tmp_path / "figs"), *opt], capsys)
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
    code, out, err = _cli(["verify", broken, *opt], capsys)
    assert code == 1
    lines = out.strip().splitlines()
    assert any("eigenvalues chunk is corrupt" in line for line in lines), out
    assert any("alpha chunk is absent (done without data)" in line for line in lines), out
    assert lines[-1].endswith("--repair` clears them for the next run")
    # repairing writes the store: refused in one line on object storage, the bucket left as it was
    code, out, err = _cli(["verify", broken, "--repair", *opt], capsys)
    assert code == 2 and err.strip().startswith(f"rmtsweep: error: {broken}: writing a store on object storage")
    assert fs.cat_file(chunks[0]) == bytes(raw)


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
                                           ("s3://rmtsweep", "not an rmtsweep store")])
def test_what_is_not_a_store_in_a_bucket_is_one_line(bucket, path, problem, capsys):
    url, options = bucket
    code, out, err = _cli(["status", path, "--storage-option", f"endpoint_url={options['endpoint_url']}"], capsys)
    assert code == 2 and err.strip() == f"rmtsweep: error: {path}: {problem}" + (
        " (no 'rmtsweep-store-1' marker)" if problem.startswith("not") else "")


def test_an_unreachable_endpoint_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    code, out, err = _cli(["status", "s3://rmtsweep/tiny.zarr", "--storage-option", "endpoint_url=http://127.0.0.1:9",
                           "--storage-option", "config_kwargs.retries.max_attempts=1"],
                          capsys)
    assert code == 2
    assert err.strip().startswith("rmtsweep: error: s3://rmtsweep/tiny.zarr: cannot read it (")
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
    code, out, err = _cli(["status", "gs://bucket/run.zarr"], capsys)
    assert code == 2 and err.strip() == ("rmtsweep: error: gs://bucket/run.zarr: stores at gs:// are read through the "
                                         "package gcsfs, which is not installed: pip install gcsfs")
    code, out, err = _cli(["status", "nosuchscheme://bucket/run.zarr"], capsys)
    assert code == 2 and "no filesystem is known for nosuchscheme://" in err
    assert not list(tmp_path.iterdir())


def test_storage_options_parse_as_fsspec_takes_them_and_are_refused_for_a_path(tmp_path, capsys):
    from rmtsweep.store.location import parse_storage_options
    assert parse_storage_options(["anon=true", "client_kwargs.region_name=eu-west-1", "retries=3", "key=abc"]) == \
        {"anon": True, "client_kwargs": {"region_name": "eu-west-1"}, "retries": 3, "key": "abc"}
    code, out, err = _cli(["status", str(tmp_path / "x.zarr"), "--storage-option", "anon=true"], capsys)
    assert code == 2 and "--storage-option is for stores at a URL" in err
    code, out, err = _cli(["status", "s3://b/x.zarr", "--storage-option", "anon"], capsys)
    assert code == 2 and "expected KEY=VALUE" in err
