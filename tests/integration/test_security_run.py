"""Joining a scheduler started elsewhere: ``--scheduler tls://... --security FILE`` runs the sweep; the
same address without the credentials is one line; a ``tcp://`` address off loopback is warned about."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rmtsweep.cluster.engine import make_engine
from rmtsweep.errors import ClusterError
from rmtsweep.cluster.security import temporary_credentials
from rmtsweep.testing import assert_stores_equal
from tests.helpers import BASE, build_store


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rmtsweep.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def tls_scheduler(tmp_path):
    """A TLS dask scheduler with two workers (threads of this process: they speak TLS to it all the same) and the
    file of a client's credentials."""
    from distributed import LocalCluster
    with temporary_credentials(tmp_path) as creds:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, protocol="tls://", host="127.0.0.1",
                          security=creds.security(), dashboard_address="127.0.0.1:0") as cluster:
            sec = tmp_path / "security.yaml"
            sec.write_text(yaml.safe_dump({"ca_file": str(creds.ca_file), "cert": str(creds.cert),
                                           "key": str(creds.key)}))
            yield cluster.scheduler_address, sec


def test_a_sweep_through_a_tls_scheduler_equals_a_local_run(tls_scheduler, tmp_path):
    address, sec = tls_scheduler
    sweep = tmp_path / "tiny.yaml"
    sweep.write_text(yaml.safe_dump(BASE))
    proc = cli("run", str(sweep), "--store", str(tmp_path / "tls.zarr"), "--scheduler", address, "--security",
               str(sec), "--no-progress", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr
    assert_stores_equal(tmp_path / "tls.zarr", build_store(tmp_path / "local.zarr", BASE))

    refused = cli("run", str(sweep), "--store", str(tmp_path / "no.zarr"), "--scheduler", address, "--no-progress",
                  cwd=tmp_path)
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert refused.stderr.strip().splitlines()[-1].startswith(f"rmtsweep: error: --scheduler {address}: tls:// needs "
                                                              "the client's TLS certificates: --security FILE")
    assert "Traceback" not in refused.stderr and not (tmp_path / "no.zarr").exists()


def test_an_unencrypted_scheduler_off_loopback_is_warned_about(monkeypatch, capsys):
    """One line on stderr once connected; none for loopback or TLS. (The connection is faked: 192.0.2.1 is a
    documentation address, never contacted.)"""
    from contextlib import contextmanager

    import rmtsweep.cluster.engine as engine

    @contextmanager
    def connected(address, security=None):
        yield "a client"

    monkeypatch.setattr(engine, "scheduler_client", connected)
    for address, warned in [("tcp://192.0.2.1:8786", True), ("tcp://127.0.0.1:8786", False),
                            ("tls://192.0.2.1:8786", False)]:
        said: list[str] = []
        with engine.connect(make_engine("local", scheduler=address), notes=said.append) as (client, _):
            assert client == "a client"
        err = "\n".join(said)
        assert err.startswith(f"warning: --scheduler {address} is unencrypted and reachable from the network: "
                              "anyone who can reach it can run code as you") if warned else err == "", err


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(cluster="local", insecure=True), r"--insecure and the batch options need --cluster slurm or pbs"),
        (dict(cluster="slurm", security="sec.yaml"), r"--security FILE is for joining a scheduler started elsewhere"),
        (dict(cluster="local", security="sec.yaml"), r"--security FILE is for joining"),
        (dict(cluster="local", scheduler="tls://h:1", dashboard_address=":0"),
         r"^--dashboard-address :0 \(or RMTSWEEP_DASHBOARD_ADDRESS\) is for a scheduler that rmtsweep starts"),
    ],
)
def test_options_that_mean_nothing_together_are_refused(options, message):
    with pytest.raises(ClusterError, match=message):
        make_engine(**options)


def test_no_dashboard_goes_with_any_scheduler():
    """``none`` (as the environment may set it for every run) starts nothing, so a --scheduler run takes it."""
    assert make_engine("local", scheduler="tls://h:1", dashboard_address="none").scheduler == "tls://h:1"


def test_the_options_reach_the_engine():
    eng = make_engine("slurm", insecure=True, dashboard_address="0.0.0.0:8787")
    assert eng.insecure and eng.dashboard_address == "0.0.0.0:8787" and eng.security is None
    eng = make_engine("local", scheduler="tls://h:1", security="sec.yaml")
    assert eng.security == Path("sec.yaml") and not eng.insecure
