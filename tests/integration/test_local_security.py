"""Another user of the machine cannot run code through the LocalCluster of a run.

Every user of a shared login node reaches loopback, and a dask scheduler or worker runs whatever a
connected client sends. While a run of each kind goes on (default, ``--workers``, ``--in-process``,
``work``, ``demo``), every port of its processes is probed as the user ``nobody``, with the system's
Python and the standard library alone (the probe holds no credentials): a dask server that talks to it, in
the clear or over TLS, is a way in. HTTP servers (health, metrics, the dashboard) run no code; they must
listen on loopback only, like every other port.
"""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.helpers import MEDIUM

pytestmark = [pytest.mark.slow]

SYSTEM_PYTHON = "/usr/bin/python3"

# Run as nobody by the system's Python: one verdict per port, probed in parallel.
#   "dask": a dask server spoke to us (in the clear, or over TLS without asking for a certificate)
#   "http": an HTTP server answered; "tls-refused": TLS that wants a certificate we lack;
#   "closed": nothing listens; "silent": neither spoke nor answered.
PROBE = r'''
import json, socket, ssl, sys
from concurrent.futures import ThreadPoolExecutor

def plain(port):
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.settimeout(1.5)
        try:
            if s.recv(64):
                return "dask"          # dask's comms speak first; HTTP and TLS servers wait for the client
            return "closed"
        except socket.timeout:
            pass
        s.sendall(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        try:
            return "http" if s.recv(64).startswith(b"HTTP/") else "silent"
        except (socket.timeout, OSError):
            return "silent"

def tls(port):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3) as raw, ctx.wrap_socket(raw) as s:
            s.settimeout(2)
            return "dask" if s.recv(64) else "tls-refused"
    except (ssl.SSLError, ConnectionError, socket.timeout):
        return "tls-refused"

def probe(port):
    try:
        verdict = plain(port)
    except OSError:
        return "closed"
    return tls(port) if verdict == "silent" else verdict

ports = json.loads(sys.argv[1])
with ThreadPoolExecutor(len(ports) or 1) as pool:
    print(json.dumps(dict(zip(map(str, ports), pool.map(probe, ports)))))
'''


def _as_nobody_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("runuser") or not os.access(SYSTEM_PYTHON, os.X_OK):
        return False
    return subprocess.run(["runuser", "-u", "nobody", "--", SYSTEM_PYTHON, "-c", "pass"],
                          capture_output=True).returncode == 0


needs_nobody = pytest.mark.skipif(not _as_nobody_available(),
                                  reason=f"needs root, runuser and {SYSTEM_PYTHON} to act as the user nobody")


def probe_as_nobody(ports: list[int]) -> dict[int, str]:
    proc = subprocess.run(["runuser", "-u", "nobody", "--", SYSTEM_PYTHON, "-c", PROBE, json.dumps(ports)],
                          capture_output=True, text=True, timeout=60, cwd="/")
    assert proc.returncode == 0, proc.stderr
    return {int(port): verdict for port, verdict in json.loads(proc.stdout).items()}


def listening(pid: int) -> list[tuple[str, int]]:
    """Every TCP address the process ``pid`` and its descendants listen on."""
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    found = set()
    for proc in procs:
        try:
            connections = proc.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        found.update((c.laddr.ip, c.laddr.port) for c in connections if c.status == psutil.CONN_LISTEN)
    return sorted(found)


# A sweep that would take minutes: each run is stopped once its ports have been probed.
LONG = {**MEDIUM, "name": "long", "d": 200, "replicates": 64,
        "grid": {**MEDIUM["grid"], "gamma": [0.5, 1.0, 1.5, 2.0]}}


@pytest.fixture(scope="module")
def long_sweep(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("long") / "long.yaml"
    path.write_text(yaml.safe_dump(LONG))
    return path


def _prepared_store(sweep: Path, store: Path) -> None:
    from rmtsweep.run.runner import prepare_store
    from rmtsweep.spec import SweepFile, parse_sweep
    prepare_store(SweepFile(parse_sweep(LONG), str(sweep), sweep.read_text()), store)


MODES = {
    "default": lambda sweep, store: ["run", str(sweep), "--store", str(store)],
    "workers": lambda sweep, store: ["run", str(sweep), "--store", str(store), "--workers", "1"],
    "in-process": lambda sweep, store: ["run", str(sweep), "--store", str(store), "--in-process", "--workers", "2"],
    "work": lambda sweep, store: ["work", str(store), "--share", "0/1", "--workers", "1"],
    "demo": lambda sweep, store: ["demo", "--workers", "1"],
}

WITH_DASHBOARD = ("default", "in-process")     # asked for one on loopback; the others run with none, the default


def _started(proc: subprocess.Popen, lines: list[str]) -> None:
    """Read the run's standard error until its cluster is up (the line naming the LocalCluster)."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        if line.startswith("dask LocalCluster:"):
            return
    proc.kill()
    pytest.fail("the run's cluster did not come up:\n" + "".join(lines))


def _assert_closed_to_others(argv: list[str], cwd: Path, dashboard: bool = False) -> None:
    """Start ``argv``, wait for its cluster, probe every port of it and its children as nobody, then stop it."""
    env = {k: v for k, v in os.environ.items() if k != "RMTSWEEP_IN_PROCESS"}
    env.pop("RMTSWEEP_DASHBOARD_ADDRESS", None)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    lines: list[str] = []
    try:
        _started(proc, lines)
        addresses = listening(proc.pid)
        verdicts = probe_as_nobody(sorted({port for _, port in addresses}))
        assert proc.poll() is None, "the run ended before its ports were probed: " + "".join(lines)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=120)
    assert addresses, "the run listens on no port at all"
    assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in addresses), addresses
    assert "dask" not in verdicts.values(), verdicts
    assert set(verdicts.values()) <= {"http", "tls-refused", "closed"}, verdicts
    if dashboard:                                 # the link printed is where the dashboard listens: loopback
        line = next(text for text in lines if text.startswith("dask LocalCluster:"))
        assert "http://127.0.0.1:" in line, line


@needs_nobody
@pytest.mark.parametrize("mode", list(MODES))
def test_another_user_cannot_run_code_through_a_runs_cluster(mode, long_sweep, tmp_path):
    store = tmp_path / "s.zarr"
    if mode == "work":
        _prepared_store(long_sweep, store)
    dashboard = ["--dashboard-address", "127.0.0.1:0"] if mode in WITH_DASHBOARD else []
    _assert_closed_to_others([sys.executable, "-m", "rmtsweep.cli", *MODES[mode](long_sweep, store), "--no-progress",
                              *dashboard], tmp_path, dashboard=mode in WITH_DASHBOARD)


# run_sweep with no client makes its own LocalCluster; the line _started waits for is printed once a task is out
_API_RUN = """
import sys, threading, time
from pathlib import Path
import rmtsweep
from rmtsweep.store import journal_file

def announce(journal):
    while not (journal.exists() and " submit " in journal.read_text()):
        time.sleep(0.05)
    print("dask LocalCluster: run_sweep's own", file=sys.stderr, flush=True)

threading.Thread(target=announce, args=(journal_file(Path(sys.argv[2])),), daemon=True).start()
rmtsweep.run_sweep(sys.argv[1], sys.argv[2], progress=False)
"""


@needs_nobody
def test_another_user_cannot_run_code_through_the_cluster_run_sweep_makes(long_sweep, tmp_path):
    """The Python API's own LocalCluster (``run_sweep`` with no client) is closed to others as the command's is."""
    _assert_closed_to_others([sys.executable, "-c", _API_RUN, str(long_sweep), str(tmp_path / "s.zarr")], tmp_path)


@needs_nobody
def test_the_probe_finds_a_cluster_open_to_anyone():
    """The probe's own check: a LocalCluster on plain tcp (dask's default) lets nobody in."""
    from distributed import LocalCluster
    with LocalCluster(n_workers=1, processes=False, protocol="tcp://", dashboard_address=None) as cluster:
        port = int(cluster.scheduler_address.rsplit(":", 1)[1])
        assert probe_as_nobody([port]) == {port: "dask"}
