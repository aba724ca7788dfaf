"""Cluster configs, job scripts and deployment files, without a batch system (fast)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from rmtsweep.cluster.batch import (
    ClusterConfig,
    driver_script,
    load_cluster_config,
    make_cluster,
    scale_cluster,
    submit_driver,
    worker_job_script,
)
from rmtsweep.errors import ClusterError
from rmtsweep.cluster.batch import rmtsweep_command
from rmtsweep.cluster.jobwatch import JobWatch, watched_job_class
from rmtsweep.shipped import cluster_config

ROOT = Path(__file__).resolve().parents[2]
DEPLOY_DIR = ROOT / "deploy"
KINDS = ["slurm", "pbs"]
SITE = dict(queue="compute", account="proj42", cores=4, memory="8GB", walltime="02:00:00",
            interface="lo", processes=2, job_script_prologue=["source /opt/venv/bin/activate"],
            job_extra_directives=["--qos=normal"])


@pytest.mark.parametrize("kind", KINDS)
def test_shipped_config_explains_every_field(kind):
    path = DEPLOY_DIR / kind / "jobqueue.yaml"
    raw = yaml.safe_load(path.read_text())
    assert set(raw) == set(ClusterConfig.model_fields)
    commented = [line for line in path.read_text().splitlines() if re.match(r"^\w+:", line)]
    assert all("#" in line for line in commented), "every key carries a comment"
    cfg = load_cluster_config(kind)
    assert cfg.interface is None and cfg.cores == 1 and cfg.memory == "1GB" and cfg.processes == 1
    assert 0 < cfg.lifetime_seconds + cfg.lifetime_stagger_seconds < 30 * 60


def test_slurm_defaults_fit_the_local_test_cluster():
    assert load_cluster_config("slurm").queue == "debug"


def test_overrides_replace_fields_and_none_is_ignored():
    cfg = load_cluster_config("slurm", overrides=dict(cores=2, queue=None, interface="lo"))
    assert (cfg.cores, cfg.queue, cfg.interface) == (2, "debug", "lo")
    with pytest.raises(ValidationError, match="frozen"):
        cfg.cores = 3


@pytest.mark.parametrize(
    ("walltime", "lifetime", "stagger"),
    [("00:01:00", 30, 15), ("00:10:00", 300, 60), ("01:00:00", 3240, 60), ("24:00:00", 77760, 60)],
)
def test_default_lifetime_leaves_a_margin_before_the_walltime(walltime, lifetime, stagger):
    cfg = ClusterConfig(walltime=walltime)
    assert (cfg.lifetime_seconds, cfg.lifetime_stagger_seconds) == (lifetime, stagger)


def test_explicit_lifetime_and_stagger():
    cfg = ClusterConfig(walltime="01:00:00", lifetime="50m", lifetime_stagger="00:02:00")
    assert (cfg.lifetime_seconds, cfg.lifetime_stagger_seconds) == (3000, 120)
    assert ClusterConfig(walltime="01:00:00", lifetime="3590s").lifetime_stagger_seconds == 5


FILE = r".*jobqueue\.yaml: "


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (dict(cores=0), FILE + r"field 'cores' \(option --cores\) = 0: .*greater than or equal to 1"),
        (dict(memory="lots"), FILE + r"field 'memory' \(option --memory\) = 'lots': .*such as '4GB'"),
        (dict(walltime="2h"), FILE + r"field 'walltime' \(option --walltime\) = '2h': must be HH:MM:SS"),
        (dict(walltime="00:00:30"), r"field 'walltime' .* = '00:00:30': .*at least 00:01:00"),
        (dict(cores=4, processes=3), r"field 'processes' .* = 3: processes must divide cores \(4\)"),
        (dict(lifetime="2h"), r"field 'lifetime' .* = '2h': .*shorter than the walltime 00:30:00"),
        (dict(lifetime="soon"), r"field 'lifetime' .* = 'soon': must be a duration such as '55m'"),
        (dict(lifetime_stagger="20m"), r"field 'lifetime_stagger' .* = '20m': lifetime \+ lifetime_stagger"),
        (dict(min_jobs=5, max_jobs=2), r"field 'max_jobs' .* = 2: max_jobs must be >= min_jobs \(5\)"),
        (dict(min_jobs=-1), r"field 'min_jobs' .* = -1: .*greater than or equal to 0"),
        (dict(queue_poll=0.1), r"field 'queue_poll' .* = 0.1: .*greater than or equal to 1"),
        (dict(job_script_prologue=[3]), r"field 'job_script_prologue\[0\]' .* = 3: .*valid string"),
        (dict(interface=5), r"field 'interface' \(option --interface\) = 5: .*valid string"),
    ],
)
def test_bad_field_names_file_field_and_value(overrides, match):
    with pytest.raises(ClusterError, match=match) as info:
        load_cluster_config("slurm", overrides=overrides)
    assert "\n" not in str(info.value)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return path


def test_unknown_key_in_a_file_lists_the_valid_ones(tmp_path):
    path = write(tmp_path, "cores: 2\ncorse: 4\n")
    match = r"site\.yaml: field 'corse' = 4: unknown field; valid fields: queue, account, cores"
    with pytest.raises(ClusterError, match=match):
        load_cluster_config("pbs", path)


def test_file_problems(tmp_path):
    with pytest.raises(ClusterError, match=r"cannot read cluster config .*missing\.yaml: No such file"):
        load_cluster_config("slurm", tmp_path / "missing.yaml")
    with pytest.raises(ClusterError, match=r"site\.yaml: not valid YAML: .*line 2"):
        load_cluster_config("slurm", write(tmp_path, "cores: 1\n  memory: [\n"))
    with pytest.raises(ClusterError, match=r"site\.yaml: expected a mapping of settings, got list"):
        load_cluster_config("slurm", write(tmp_path, "- cores\n"))
    with pytest.raises(ClusterError, match=r"unknown cluster kind 'sge'; choose one of: slurm, pbs"):
        load_cluster_config("sge")  # type: ignore[arg-type]
    assert load_cluster_config("slurm", write(tmp_path, "# all defaults\n")) == ClusterConfig()


EXPECTED = {
    "slurm": ["#SBATCH -p compute", "#SBATCH -A proj42", "#SBATCH --cpus-per-task=4",
              "#SBATCH --mem=8G", "#SBATCH -t 02:00:00", "#SBATCH --qos=normal"],
    "pbs": ["#PBS -q compute", "#PBS -A proj42", "#PBS -l select=1:ncpus=4:mem=7630MB",
            "#PBS -l walltime=02:00:00", "#PBS --qos=normal"],
}


@pytest.mark.parametrize("kind", KINDS)
def test_worker_job_script(kind, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch/qsub anywhere: nothing is submitted
    script = worker_job_script(kind, ClusterConfig(**SITE))
    lines = script.splitlines()
    assert lines[0] == "#!/usr/bin/env bash"
    for directive in EXPECTED[kind]:
        assert directive in lines
    prologue = lines.index("source /opt/venv/bin/activate")
    blas = lines.index("export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1")
    command = next(i for i, line in enumerate(lines) if "distributed.cli.dask_worker" in line)
    assert prologue < blas < command
    args = shlex.split(lines[command])
    assert args[0] == sys.executable
    for flag, value in [("--lifetime", "6480s"), ("--lifetime-stagger", "60s"), ("--nthreads", "2"),
                        ("--nworkers", "2"), ("--interface", "lo")]:
        assert args[args.index(flag) + 1] == value
    assert "--no-lifetime-restart" in args and "--nanny" in args


def test_worker_job_script_is_what_the_cluster_submits(tmp_path):
    """TLS by default: the script names the run's credential files (never their contents); --insecure: none."""
    from rmtsweep.cluster.security import CREDENTIALS_PREFIX, temporary_credentials
    cfg = load_cluster_config("slurm", overrides=dict(cores=2, memory="2GB", credentials_directory=str(tmp_path)))
    with temporary_credentials(tmp_path) as creds, make_cluster("slurm", cfg, creds.security()) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        submitted = cluster.job_script().replace(cluster.scheduler_address, "tls://<scheduler-address>:8786")
        assert not cluster.workers
    assert "PRIVATE KEY" not in submitted and "BEGIN CERTIFICATE" not in submitted
    run = f"{tmp_path}/{CREDENTIALS_PREFIX}<run>"
    assert submitted.replace(str(creds.directory), run) == worker_job_script("slurm", cfg)
    args = shlex.split(next(line for line in submitted.splitlines() if "dask_worker" in line))
    assert [args[args.index(f"--tls-{f}") + 1] for f in ("ca-file", "cert", "key")] == \
        [str(creds.directory / name) for name in ("ca.pem", "cert.pem", "key.pem")]
    with make_cluster("slurm", cfg) as cluster:
        assert cluster.scheduler_address.startswith("tcp://")
        submitted = cluster.job_script().replace(cluster.scheduler_address, "tcp://<scheduler-address>:8786")
    assert submitted == worker_job_script("slurm", cfg, insecure=True) and "--tls-" not in submitted


def test_the_dashboard_listens_on_loopback_unless_told():
    import dask
    cfg = load_cluster_config("slurm")
    with make_cluster("slurm", cfg) as cluster:
        hosts = {s.getsockname()[0] for s in cluster.scheduler.http_server._sockets.values()}
    assert hosts <= {"127.0.0.1", "::1"}, hosts
    with dask.config.set({"jobqueue.slurm.scheduler-options": {}}), \
            make_cluster("slurm", cfg, dashboard_address="0.0.0.0:0") as cluster:
        hosts = {s.getsockname()[0] for s in cluster.scheduler.http_server._sockets.values()}
    assert hosts == {"0.0.0.0"}, hosts


def test_dashboard_address_none_serves_no_dashboard():
    cfg = load_cluster_config("slurm")
    import urllib.error
    import urllib.request

    def answer(port: int, path: str) -> int:
        try:
            return urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10).status
        except urllib.error.HTTPError as exc:
            return exc.code

    with make_cluster("slurm", cfg, dashboard_address="none") as cluster:
        hosts = {s.getsockname()[0] for s in cluster.scheduler.http_server._sockets.values()}
        port = cluster.scheduler.http_server.port
        assert (answer(port, "/health"), answer(port, "/status")) == (200, 404)      # the scheduler, no dashboard
    assert hosts <= {"127.0.0.1", "::1"}, hosts           # and its HTTP server on loopback only


def test_the_dashboard_takes_a_free_port_without_a_warning_when_8787_is_taken():
    """On a shared login node another scheduler may hold 8787: the run's dashboard goes elsewhere, silently."""
    import socket
    import warnings
    cfg = load_cluster_config("slurm")
    with socket.socket() as other:
        try:
            other.bind(("127.0.0.1", 8787))
        except OSError:
            pytest.skip("port 8787 is in use on this host; the test holds it itself")
        other.listen()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with make_cluster("slurm", cfg) as cluster:
                ports = {s.getsockname()[1] for s in cluster.scheduler.http_server._sockets.values()}
    assert 8787 not in ports and ports, ports
    assert not [w for w in caught if "already in use" in str(w.message)], [str(w.message) for w in caught]
    with make_cluster("slurm", cfg) as cluster:                      # free again: the usual port
        ports = {s.getsockname()[1] for s in cluster.scheduler.http_server._sockets.values()}
    assert ports == {8787}, ports


def test_make_cluster_reports_a_bad_interface():
    cfg = load_cluster_config("slurm", overrides=dict(interface="no-such-nic0"))
    with pytest.raises(ClusterError, match=r"cannot start a slurm cluster: .*no-such-nic0"):
        make_cluster("slurm", cfg)


class FakeCluster:
    def adapt(self, **kwargs):
        self.kwargs = kwargs
        return "adaptive"


@pytest.mark.parametrize(
    ("min_jobs", "max_jobs", "jobs", "expected"),
    [(0, 10, None, (1, 10)), (2, 10, 5, (2, 5)), (3, 10, 2, (2, 2)), (0, 10, 20, (1, 20))],
)
def test_scale_cluster_is_adaptive_up_to_jobs(min_jobs, max_jobs, jobs, expected):
    """One job at least from the start (even with min_jobs 0): its submission checks the batch system."""
    cluster = FakeCluster()
    cfg = ClusterConfig(min_jobs=min_jobs, max_jobs=max_jobs)
    assert scale_cluster(cluster, cfg, jobs) == "adaptive"
    assert (cluster.kwargs["minimum_jobs"], cluster.kwargs["maximum_jobs"]) == expected
    with pytest.raises(ClusterError, match="--jobs must be at least 1, got 0"):
        scale_cluster(cluster, cfg, 0)


@pytest.mark.parametrize("kind", KINDS)
def test_driver_script_runs_rmtsweep(kind, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = ClusterConfig(**{**SITE, "driver_walltime": "12:00:00"})
    script = driver_script(kind, cfg, Path("sweeps/big.yaml"), Path("store/big.zarr"), Path("site.yaml"), 20)
    lines = script.splitlines()
    prefix = "#SBATCH" if kind == "slurm" else "#PBS"
    assert lines[0] == "#!/usr/bin/env bash" and "source /opt/venv/bin/activate" in lines
    assert any(line.startswith(prefix) and "rmtsweep-driver" in line for line in lines)
    assert any(line.startswith(prefix) and "12:00:00" in line for line in lines)
    args = shlex.split(lines[-1])
    assert args[0] == "exec"
    if kind == "pbs":        # no warning signal to ask PBS for: timeout sends SIGTERM 120 s before 12 h
        assert args[1:7] == ["timeout", "--foreground", "--signal=TERM", "--kill-after=60", "--preserve-status",
                             f"{12 * 3600 - 120}s"]
        args = args[6:]
    else:
        assert "#SBATCH --signal=B:TERM@120" in lines
    args = args[1:]
    assert args[:3] == [rmtsweep_command(), "run", str(tmp_path / "sweeps/big.yaml")]
    options = dict(zip(args[3::2], args[4::2], strict=True))
    assert options == {
        "--store": str(tmp_path / "store/big.zarr"), "--cluster": kind, "--jobs": "20",
        "--cluster-config": str(tmp_path / "site.yaml"), "--queue": "compute", "--account": "proj42",
        "--cores": "4", "--memory": "8GB", "--walltime": "02:00:00", "--interface": "lo",
    }


def test_a_stop_warning_longer_than_the_driver_walltime_is_refused():
    cfg = ClusterConfig(walltime="00:01:00", driver_stop_warning=120)
    with pytest.raises(ClusterError, match=r"driver_stop_warning 120 s must be shorter than the driver's walltime "
                                           r"00:01:00"):
        driver_script("slurm", cfg, Path("s.yaml"), Path("s.zarr"), None, None)


def test_driver_script_defaults_to_the_shipped_config():
    script = driver_script("slurm", load_cluster_config("slurm"), Path("s.yaml"), Path("s.zarr"), None, None)
    assert f"--cluster-config {cluster_config('slurm').resolve()}" in script
    assert cluster_config("slurm").read_text() == (DEPLOY_DIR / "slurm" / "jobqueue.yaml").read_text()
    assert "--jobs" not in script and "--account" not in script
    assert "#SBATCH --signal=B:TERM@120" in script          # a clean stop before the walltime, then resume
    assert script.splitlines()[-1].startswith(f"exec {rmtsweep_command()} run ")
    assert rmtsweep_command() == str(Path(sys.executable).parent / "rmtsweep")     # this interpreter's script


def fake_command(tmp_path: Path, name: str, body: str, monkeypatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (bindir / name).write_text(f"#!/bin/sh\n{body}\n")
    (bindir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))


def test_submit_driver_returns_the_job_id(tmp_path, monkeypatch):
    fake_command(tmp_path, "sbatch", 'echo "$@" > "${0%/*}/args"; echo "4242;local"', monkeypatch)
    assert submit_driver("slurm", "#!/bin/sh\n", tmp_path / "jobs") == "4242"
    args = (tmp_path / "bin" / "args").read_text().split()
    assert args[0] == "--parsable" and Path(args[1]).parent == tmp_path / "jobs"
    assert Path(args[1]).read_text() == "#!/bin/sh\n"
    fake_command(tmp_path, "qsub", "echo 17.pbs-server", monkeypatch)
    assert submit_driver("pbs", "#!/bin/sh\n", tmp_path / "jobs") == "17.pbs-server"


def test_submit_driver_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match="sbatch not found on PATH: submit from a login node"):
        submit_driver("slurm", "#!/bin/sh\n", tmp_path)
    fake_command(tmp_path, "qsub", "echo 'qsub: Unknown queue' >&2; echo 'MSG=x' >&2; exit 3", monkeypatch)
    with pytest.raises(ClusterError, match=r"qsub .*\.sh failed with exit 3: qsub: Unknown queue MSG=x$"):
        submit_driver("pbs", "#!/bin/sh\n", tmp_path)


# --- what the batch system says of the run's worker jobs (the run stops in one line, never waits for ever) ---

def test_importing_dask_jobqueue_keeps_the_sigint_handler():
    """dask_jobqueue.runner sets SIGINT to sys.exit() on import: Ctrl-C would exit 0 through tracebacks."""
    code = ("import signal; from rmtsweep.cluster.jobwatch import watched_job_class; watched_job_class('slurm'); "
            "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


@pytest.mark.parametrize(
    ("kind", "body", "expected"),
    [
        ("slurm", None, r"^sbatch: command not found \(run where the slurm commands are, e.g. a login node, or use "
                        r"--scheduler\)$"),
        ("slurm", "echo 'sbatch: error: Batch job submission failed: Invalid account or account/partition' >&2; "
                  "exit 1", r"^sbatch: error: Batch job submission failed: Invalid account or account/partition$"),
        ("pbs", "echo 'qsub: Unauthorized Request ' >&2; echo 'MSG=x' >&2; exit 159",
         r"^qsub: Unauthorized Request MSG=x$"),
        ("pbs", "exit 3", r"^qsub exited with status 3 and no message$"),
        ("slurm", "echo 'sbatch: queued, no number'", r"^sbatch: Could not parse job id .*queued, no number$"),
    ],
)
def test_a_failed_submission_keeps_the_batch_systems_message(kind, body, expected, tmp_path, monkeypatch):
    import asyncio
    command = "sbatch" if kind == "slurm" else "qsub"
    if body is None:
        monkeypatch.setenv("PATH", str(tmp_path))
    else:
        fake_command(tmp_path, command, body, monkeypatch)
    job = watched_job_class(kind)("tcp://127.0.0.1:1", name="w", cores=1, memory="1GB")
    asyncio.run(job.start())                               # no exception into the cluster's event loop
    assert job.job_id is None and re.search(expected, job.failure), job.failure


def _states(kind, ids):
    import asyncio
    return asyncio.run(watched_job_class(kind).job_states(ids))


GONE = "no longer in the queue"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('echo "11 PENDING"; echo "12 FAILED"', {"11": "PENDING", "12": "FAILED", "13": GONE}),
        # squeue asked about one forgotten job fails; asked about several, it lists those it knows
        ('case "$*" in *--jobs=11,*) exit 0;; *) echo "slurm_load_jobs error: Invalid job id specified" >&2; '
         'exit 1;; esac', {"11": GONE, "12": GONE, "13": GONE}),
        ('echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1', {"11": GONE, "12": GONE, "13": GONE}),
        ('echo "slurm_load_jobs error: Unable to contact slurm controller (connect failure)" >&2; exit 1', {}),
    ],
)
def test_squeue_states(body, expected, tmp_path, monkeypatch):
    fake_command(tmp_path, "squeue", body, monkeypatch)
    assert _states("slurm", ["11", "12", "13"]) == expected


def test_qstat_states_and_a_missing_command(tmp_path, monkeypatch):
    out = "Job Id: 11.server\n    Job_Name = rmtsweep-worker\n    job_state = Q\nJob Id: 12.server\n    job_state = F\n"
    err = ("qstat: Unknown Job Id 13.server\n"
           "qstat: 14.server Job has finished, use -x or -H to obtain historical job information\n")
    fake_command(tmp_path, "qstat", f"printf '{out}'; printf '{err}' >&2; exit 35", monkeypatch)
    assert _states("pbs", ["11", "12", "13", "14", "15"]) == {"11": "Q", "12": "F", "13": GONE, "14": GONE}
    monkeypatch.setenv("PATH", str(tmp_path / "none"))
    assert _states("pbs", ["11"]) == _states("slurm", ["11"]) == {}       # unknown: never a failure


class FakeJob:
    failure = None
    states: dict[str, str] = {}

    def __init__(self, job_id=None, failure=None):
        self.job_id, self.failure = job_id, failure

    @classmethod
    async def job_states(cls, ids):
        return {i: cls.states[i] for i in ids if i in cls.states}


class JobCluster:
    def __init__(self, **jobs):
        self.workers, self.worker_spec = jobs, {name: {} for name in jobs}
        self.scheduler = types.SimpleNamespace(workers={})         # the workers connected now
        for name, job in jobs.items():
            job.name = name


@pytest.mark.parametrize(
    ("jobs", "states", "expected"),
    [
        ({"a": FakeJob("7")}, {"7": "PENDING"}, None),                # clusters queue for hours
        ({"a": FakeJob("7")}, {}, None),                              # the batch system did not answer
        ({"a": FakeJob("7")}, {"7": "COMPLETING"}, None),
        ({"a": FakeJob("7")}, {"7": GONE}, r"^slurm job 7 ended \(no longer in the queue\) before any worker joined "
                                           r"the scheduler; its output: .*/slurm-7\.out$"),
        ({"a": FakeJob("7"), "b": FakeJob("8")}, {"7": "PENDING", "8": "BOOT_FAIL"}, None),     # 7 may still start
        ({"a": FakeJob("7"), "b": FakeJob("8")}, {"7": "FAILED", "8": "BOOT_FAIL"}, r"^slurm job 7 ended \(FAILED\)"),
        ({"a": FakeJob(failure="sbatch: error: x")}, {}, r"^slurm worker job not submitted: sbatch: error: x$"),
        ({"a": FakeJob(failure="sbatch: error: x"), "b": FakeJob("8")}, {"8": GONE},
         r"^slurm worker job not submitted: sbatch: error: x$"),
    ],
)
def test_job_watch_stops_the_run_when_no_job_can_give_a_worker(jobs, states, expected, monkeypatch):
    import asyncio

    monkeypatch.setattr(FakeJob, "states", states)
    watch = JobWatch(JobCluster(**jobs), "slurm")
    found = asyncio.run(watch.check())
    assert found is None if expected is None else re.search(expected, found), found


def test_job_watch_lets_the_run_go_on_while_a_worker_is_there(monkeypatch):
    import asyncio

    monkeypatch.setattr(FakeJob, "states", {"7": "FAILED"})
    cluster = JobCluster(a=FakeJob("7"), b=FakeJob(failure="sbatch: error: QOSMaxSubmitJobPerUserLimit"))
    notes = []
    watch = JobWatch(cluster, "slurm", "logs", notes.append)
    cluster.scheduler.workers["tcp://10.0.0.1:4000"] = "a worker of another job"
    assert asyncio.run(watch.check()) is None and asyncio.run(watch.check()) is None
    assert notes == ["slurm worker job not submitted: sbatch: error: QOSMaxSubmitJobPerUserLimit; the run goes on "
                     "with the jobs it has"]                                # once
    cluster.scheduler.workers.clear()
    assert asyncio.run(watch.check()) == "slurm worker job not submitted: sbatch: error: QOSMaxSubmitJobPerUserLimit"
    del cluster.worker_spec["b"]                                         # adaptive scaled it away
    assert asyncio.run(watch.check()).endswith(f"its output: {Path('logs') / 'rmtsweep-worker-7.err'}")
    del cluster.worker_spec["a"]
    assert asyncio.run(watch.check()) is None                            # nothing wanted: nothing lost


def test_a_job_whose_worker_joined_is_not_lost(monkeypatch):
    import asyncio

    monkeypatch.setattr(FakeJob, "states", {"7": "COMPLETED"})
    cluster = JobCluster(**{"SLURMCluster-3": FakeJob("7")})
    watch = JobWatch(cluster, "slurm")
    scheduler = types.SimpleNamespace(workers={"tcp://w": types.SimpleNamespace(name="SLURMCluster-3-0")})
    watch._joined.add_worker(scheduler, "tcp://w")            # joined, then left (its lifetime): not lost
    assert asyncio.run(watch.check()) is None
    watch._joined.names = {"SLURMCluster-30-0"}
    assert asyncio.run(watch.check()).startswith("slurm job 7 ended (COMPLETED)")


def test_kubernetes_manifest_and_image():
    manifest = yaml.safe_load((DEPLOY_DIR / "kubernetes" / "daskcluster.yaml").read_text())
    assert manifest["apiVersion"] == "kubernetes.dask.org/v1" and manifest["kind"] == "DaskCluster"
    spec, name = manifest["spec"], manifest["metadata"]["name"]
    worker = spec["worker"]["spec"]["containers"][0]
    scheduler = spec["scheduler"]["spec"]["containers"][0]
    version = re.search(r'^fallback_version = "(.+)"', (ROOT / "pyproject.toml").read_text(), re.M)[1]   # the release
    assert worker["image"] == scheduler["image"] == f"rmtsweep:{version}"
    assert worker["args"][:3] == ["worker", "--name", "$(DASK_WORKER_NAME)"]
    assert worker["args"][worker["args"].index("--nthreads") + 1] == "1"
    assert scheduler["args"] == ["scheduler"]
    assert worker["resources"]["requests"]["cpu"] == worker["resources"]["limits"]["cpu"] == "1"
    env = {e["name"]: e["value"] for e in worker["env"]}
    assert env == {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    service = spec["scheduler"]["service"]
    assert service["selector"]["dask.org/cluster-name"] == name
    assert {p["port"] for p in service["ports"]} == {8786, 8787}
    assert {p["containerPort"] for p in scheduler["ports"]} == {8786, 8787}

    dockerfile = (DEPLOY_DIR / "kubernetes" / "Dockerfile").read_text()
    instructions = [line for line in dockerfile.splitlines() if line and not line.startswith("#")]
    assert instructions[0] == "FROM python:3.11-slim"
    assert "COPY pipeline ./pipeline" in instructions
    assert any(line.startswith("RUN pip install '.[s3]'") for line in instructions)    # s3fs: stores in a bucket
    assert 'ENTRYPOINT ["dask"]' in instructions
    assert f"-t rmtsweep:{version}" in dockerfile


def test_local_slurm_script_is_valid_bash():
    script = DEPLOY_DIR / "slurm" / "local-slurm.sh"
    subprocess.run(["bash", "-n", str(script)], check=True)
    usage = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage:" in usage.stderr
    assert "apt-get install" not in [line.strip().split(" ")[0] for line in script.read_text().splitlines()]
