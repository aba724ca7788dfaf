"""Dask workers as real SLURM jobs (needs a SLURM controller; see deploy/slurm/local-slurm.sh).

    bash deploy/slurm/local-slurm.sh start /tmp/slurm && export SLURM_CONF=/tmp/slurm/slurm.conf
    python -m pytest tests/integration/test_slurm.py -m slurm
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from distributed import Client

from rmtsweep.testing import assert_stores_equal

from rmtsweep.cluster.batch import load_cluster_config, make_cluster, scale_cluster

# one test process runs them all, one after another: they share the single node and its job slots
pytestmark = [pytest.mark.slurm, pytest.mark.requires_slurm, pytest.mark.xdist_group("slurm")]

@pytest.fixture(scope="module")
def slurm() -> None:
    """The tests below need a SLURM controller with an idle node (the marker skips them otherwise)."""


def queued_jobs() -> set[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def config(tmp_path: Path, **extra):
    overrides = dict(interface="lo", queue="debug", cores=1, memory="1GB", python=sys.executable,
                     walltime="00:10:00", log_directory=str(tmp_path / "logs"), **extra)
    return load_cluster_config("slurm", overrides=overrides)


def job_ids(client: Client) -> set[str]:
    return set(client.run(lambda: os.environ.get("SLURM_JOB_ID", "not a SLURM job")).values())


def test_workers_run_as_slurm_jobs(slurm, tmp_path):
    cfg = config(tmp_path, min_jobs=2)
    with make_cluster("slurm", cfg) as cluster, Client(cluster) as client:
        scale_cluster(cluster, cfg, jobs=2)
        client.wait_for_workers(2, timeout=120)
        submitted = {job.job_id for job in cluster.workers.values()}
        assert len(submitted) == 2
        assert job_ids(client) == submitted
        assert submitted <= queued_jobs()
        assert set(client.run(lambda: os.environ.get("OMP_NUM_THREADS")).values()) == {"1"}
        assert all(w["nthreads"] == 1 for w in client.scheduler_info()["workers"].values())
        assert sum(client.gather(client.map(lambda x: x * x, range(20)))) == sum(x * x for x in range(20))
    wait_until(lambda: not submitted & queued_jobs(), 60, f"jobs {sorted(submitted)} to leave squeue")


def test_retired_jobs_are_replaced(slurm, tmp_path):
    """A worker retires at its lifetime, its job ends, and adaptive scaling submits a new job."""
    cfg = config(tmp_path, min_jobs=1, lifetime="10s", lifetime_stagger="0s")
    with make_cluster("slurm", cfg) as cluster, Client(cluster) as client:
        scale_cluster(cluster, cfg, jobs=1)
        client.wait_for_workers(1, timeout=120)
        (first,) = job_ids(client)
        wait_until(lambda: first not in queued_jobs(), 90, f"job {first} to end at its lifetime")
        wait_until(lambda: job_ids(client) - {first}, 120, "a replacement job's worker")
        assert client.submit(sum, [1, 2, 3]).result() == 6


def test_sweep_on_slurm_equals_local_cluster(slurm, reference, tmp_path):
    """`rmtsweep run --cluster slurm`: workers are SLURM jobs, the store equals the LocalCluster one."""
    sweep_path, local_store = reference
    store_path = tmp_path / "slurm.zarr"
    before = queued_jobs()
    proc = subprocess.run(
        [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep_path), "--store", str(store_path),
         "--cluster", "slurm", "--jobs", "2", "--queue", "debug", "--cores", "1", "--memory", "1GB",
         "--walltime", "00:10:00", "--interface", "lo", "--no-progress"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "dask-jobqueue slurm cluster" in proc.stderr
    assert_stores_equal(store_path, local_store)
    assert not list(tmp_path.glob(".rmtsweep-tls-*"))                # the run's credentials are gone
    wait_until(lambda: not (queued_jobs() - before), 60, "the sweep's worker jobs to leave squeue")


def running_jobs() -> set[str]:
    out = subprocess.run(["squeue", "-h", "-t", "R", "-o", "%i"], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_run_with_four_jobs_reaches_four_running_jobs(slurm, sweep_data, write_sweep, tmp_path):
    """The in-flight window is sized for the adaptive maximum before any worker joins: --jobs 4 gets 4 jobs.

    Dask's adaptive target is the queued work over its ``target-duration`` (5 s): these tasks take milliseconds,
    so once a worker has measured them the target is one job. On a loaded machine the first job's worker joined
    before the store's template was written and the tasks submitted (CI, twice), and one job ran the sweep;
    with ``unknown-task-duration`` 1 ms the test fails so 2 of 2 times. The run here takes 10 ms as its target
    duration, so tasks of milliseconds are worth a worker each and the test holds whichever comes first."""
    sweep_data.update(d=60, replicates=24, replicates_per_task=1, cells_per_task=1, table_centering="none")
    sweep_data["grid"].update(delta=[0.5, 0.75, 1.0, 1.5], gamma=[0.5, 1.0], T=[4, 8])    # 16 points x 24 = 384 tasks
    before = queued_jobs()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmtsweep.cli", "run", str(write_sweep(sweep_data)), "--store", str(tmp_path / "s.zarr"),
         "--cluster", "slurm", "--jobs", "4", "--queue", "debug", "--cores", "1", "--memory", "500MB",
         "--walltime", "00:10:00", "--interface", "lo", "--no-progress"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "DASK_DISTRIBUTED__ADAPTIVE__TARGET_DURATION": "10ms"})
    peak = 0
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, len(running_jobs() - before))
        if peak >= 4:
            break
        time.sleep(0.5)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    assert peak == 4, f"at most {peak} worker jobs ran at once"
    wait_until(lambda: not (queued_jobs() - before), 60, "the sweep's worker jobs to leave squeue")


def test_submit_runs_the_sweep_as_a_driver_job(slurm, reference, tmp_path):
    """`rmtsweep submit`: a driver job that starts its own worker jobs and writes the store."""
    sweep_path, local_store = reference
    store_path = tmp_path / "submitted.zarr"
    proc = subprocess.run(
        [sys.executable, "-m", "rmtsweep.cli", "submit", str(sweep_path), "--store", str(store_path),
         "--cluster", "slurm", "--jobs", "1", "--queue", "debug", "--cores", "1", "--memory", "1GB",
         "--walltime", "00:10:00", "--interface", "lo"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    match = re.search(r"submitted driver job (\d+)", proc.stdout)
    assert match, proc.stdout
    job = match.group(1)
    wait_until(lambda: job not in queued_jobs(), 240, f"driver job {job} to finish")
    log = tmp_path / f"slurm-{job}.out"
    assert store_path.exists(), log.read_text()[-3000:] if log.exists() else "no driver log"
    assert_stores_equal(store_path, local_store)


def test_a_driver_job_at_its_walltime_stops_cleanly_and_resumes(slurm, tmp_path):
    """The driver job is sent SIGTERM before its walltime (``--signal=B:TERM@``) and stops with one line.

    A 1-minute driver walltime with a 10 s warning: slurmctld looks at time limits every 30 s and signals at
    its first look within 30 s + 10 s of the end, so 20-50 s after the start (measured: the drivers stopped
    17-24 s after the start with a 15 s warning), at least 10 s before the walltime, and well before the sweep
    (~4 minutes on one worker) is done. A 2-minute walltime with a 30 s warning took 60-90 s.

    Once the worker job has written its first task it is suspended (``scontrol suspend``: SIGSTOP; allowed to root
    and SLURM's administrators, elsewhere the worker computes on), so that it spends no CPU in the wait for the
    signal (it computed for 20-50 s before); the driver then stops with a task in flight on a worker that does
    not answer, and what was done is whole.
    """
    import yaml

    from rmtsweep.store.lock import lock_file
    from tests.helpers import MEDIUM, writes
    sweep = tmp_path / "long.yaml"
    sweep.write_text(yaml.safe_dump({**MEDIUM, "name": "long", "replicates": 4096, "replicates_per_task": 16}))
    cfg = tmp_path / "slurm.yaml"
    cfg.write_text(yaml.safe_dump({"queue": "debug", "cores": 1, "memory": "1GB", "walltime": "00:10:00",
                                   "driver_walltime": "00:01:00", "driver_stop_warning": 10, "interface": "lo",
                                   "python": sys.executable}))
    store = tmp_path / "walltime.zarr"
    before = queued_jobs()
    proc = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "submit", str(sweep), "--store", str(store),
                           "--cluster", "slurm", "--cluster-config", str(cfg), "--jobs", "1"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job = re.search(r"submitted driver job (\d+)", proc.stdout).group(1)
    wait_until(lambda: writes(store) > 0 or job not in queued_jobs(), 120, "the first task written")
    for worker in queued_jobs() - before - {job}:
        subprocess.run(["scontrol", "suspend", worker], capture_output=True)
    wait_until(lambda: job not in queued_jobs(), 200, f"driver job {job} to end")
    log = (tmp_path / f"slurm-{job}.out").read_text()
    assert log.strip().splitlines()[-1] == "rmtsweep: stopped by SIGTERM; rerun the same command to resume", log[-3000:]
    ours = [line for line in log.splitlines() if not line.startswith("slurmstepd")]   # SLURM's own notices
    assert not [line for line in ours if not line.startswith(("dask-jobqueue", "memory check", "2048 tasks", "long: "))
                ][:-1], log[-3000:]                                  # nothing but start-up, progress and the line
    assert "DUE TO TIME LIMIT" not in log, log[-3000:]               # stopped before the walltime's SIGKILL
    job_info = subprocess.run(["scontrol", "show", "job", job], capture_output=True, text=True).stdout
    assert "ExitCode=143:0" in job_info or not job_info, job_info   # (the controller may have forgotten it)
    assert not lock_file(store).exists()
    status = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True,
                            text=True, check=True).stdout
    done, total = map(int, re.search(r"tasks done: (\d+) / (\d+)", status).groups())
    assert 0 < done < total == 8 * 4096 // 16, status
    verify = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "verify", str(store)], capture_output=True, text=True)
    assert verify.returncode == 0, verify.stdout + verify.stderr           # what was done is whole


def _worker_command(log_directory: Path) -> list[str] | None:
    """The command line of a dask worker started by a SLURM job of this test (on this node), as ``ps`` shows it."""
    for entry in Path("/proc").iterdir():
        try:
            args = (entry / "cmdline").read_bytes().decode().split("\0")
            cwd = (entry / "cwd").resolve()
        except (OSError, ValueError):
            continue
        if any("dask_worker" in a for a in args[:3]) and cwd == log_directory.resolve():
            return args
    return None


def _refused(address: str, security=None) -> bool:
    try:
        with Client(address, security=security, timeout="5s") as client:
            client.run(os.getuid)
    except Exception:  # noqa: BLE001 - refused at the handshake, or never answered
        return True
    return False


def test_a_slurm_run_serves_only_its_own_credentials(slurm, tmp_path):
    """TLS by default: a client without the run's credentials is refused, one with them is served; the
    worker jobs get the files by path; the credentials are gone after a SIGTERM."""
    import signal
    import stat

    import yaml
    from distributed.security import Security

    from tests.helpers import MEDIUM, writes
    sweep = tmp_path / "long.yaml"
    sweep.write_text(yaml.safe_dump({**MEDIUM, "name": "long", "replicates": 4096, "replicates_per_task": 16}))
    store = tmp_path / "tls.zarr"
    before = queued_jobs()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmtsweep.cli", "run", str(sweep), "--store", str(store), "--cluster", "slurm",
         "--jobs", "1", "--queue", "debug", "--cores", "1", "--memory", "1GB", "--walltime", "00:10:00",
         "--interface", "lo", "--no-progress"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: writes(store) > 0 or proc.poll() is not None, 180, "a task written by a SLURM worker")
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        args = _worker_command(tmp_path)
        assert args is not None, "no worker of this run found"
        address = next(a for a in args if a.startswith(("tls://", "tcp://")))   # the scheduler, as `ps` shows it
        host_port = address.partition("://")[2]
        assert _refused(f"tcp://{host_port}"), f"a client without credentials was served by {address}"
        other = Security.temporary()                                       # a certificate of somebody else's
        assert _refused(f"tls://{host_port}", Security(tls_ca_file=other.tls_ca_file,
                                                       tls_client_cert=other.tls_client_cert,
                                                       tls_client_key=other.tls_client_key, require_encryption=True))
        (creds,) = tmp_path.glob(".rmtsweep-tls-*")
        assert stat.S_IMODE(creds.stat().st_mode) == 0o700
        assert [args[args.index(f"--tls-{f}") + 1] for f in ("ca-file", "cert", "key")] == \
            [str(creds / name) for name in ("ca.pem", "cert.pem", "key.pem")]
        ours = Security(tls_ca_file=str(creds / "ca.pem"), tls_client_cert=str(creds / "cert.pem"),
                        tls_client_key=str(creds / "key.pem"), require_encryption=True)
        with Client(address, security=ours, timeout="20s") as client:
            assert set(client.run(os.getuid).values()) == {os.getuid()}
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, err[-3000:]
    assert not list(tmp_path.glob(".rmtsweep-tls-*"))
    wait_until(lambda: not (queued_jobs() - before), 60, "the run's worker jobs to leave squeue")


def test_an_array_job_fills_the_store_and_a_resubmission_finishes_it(slurm, tmp_path):
    """`rmtsweep submit --array 4 --max-running 2`: no driver, no scheduler; one element cancelled mid-sweep
    (scancel: it stops with the one line), the same command again computes exactly what is missing; the
    store equals a local run's."""
    import yaml

    from tests.helpers import MEDIUM, build_store, writes
    # the 64 tasks of MEDIUM, each long enough (~0.15 s: d = 200, 4 replicates) that element 0's share of 16 lasts
    # seconds: at d = 100 it took under one, and the cancel could land after the share was done
    data = {**MEDIUM, "d": 200, "replicates": 32, "replicates_per_task": 4}
    sweep = tmp_path / "medium.yaml"
    sweep.write_text(yaml.safe_dump(data))
    store = tmp_path / "array.zarr"
    command = [sys.executable, "-m", "rmtsweep.cli", "submit", str(sweep), "--store", str(store), "--cluster", "slurm",
               "--array", "4", "--max-running", "2", "--queue", "debug", "--cores", "1", "--memory", "1GB",
               "--walltime", "00:10:00"]

    def submit() -> tuple[str, int]:
        # the elements run their worker as a thread (sbatch hands them this environment): the test is of the array
        # and the store; worker processes are the other tests' (a process each would cost 8 x 1.4 CPU-s here)
        proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "RMTSWEEP_IN_PROCESS": "1"})
        assert proc.returncode == 0, proc.stderr[-3000:]
        m = re.search(r"(\d+) of 64 tasks to compute; submitted job array (\d+) of 4 elements", proc.stdout)
        return m.group(2), int(m.group(1))

    def in_queue(job: str) -> bool:
        return any(i == job or i.startswith(f"{job}_") for i in queued_jobs())

    job, left = submit()
    assert left == 64
    wait_until(lambda: writes(store, run=0) >= 1, 120, "element 0's first task")   # run 0: element 0's record
    subprocess.run(["scancel", f"{job}_0"], check=True)
    wait_until(lambda: not in_queue(job), 300, f"job array {job} to finish")
    cancelled = (tmp_path / f"slurm-{job}_0.out").read_text()
    assert cancelled.strip().splitlines()[-1] == "rmtsweep: stopped by SIGTERM; rerun the same command to resume", \
        cancelled[-3000:]
    done = subprocess.run([sys.executable, "-m", "rmtsweep.cli", "status", str(store)], capture_output=True, text=True)
    assert "incomplete" in done.stdout, done.stdout                     # element 0's share was cut short
    again, missing = submit()
    assert 0 < missing < 64
    wait_until(lambda: not in_queue(again), 300, f"job array {again} to finish")
    assert_stores_equal(store, build_store(tmp_path / "reference.zarr", data))
    logs = [log.read_text() for log in sorted(tmp_path.glob(f"slurm-{again}_*.out"))]
    computed = [re.search(r"tasks done \((\d+) computed now\)", log) for log in logs]
    assert len(logs) == 4 and all(computed), logs
    assert sum(int(m.group(1)) for m in computed) == missing               # exactly what was missing, once
