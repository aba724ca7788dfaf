"""The Python API as a notebook user meets it: one import, one error root, run_sweep from a path or a Sweep
with no cluster set up, the readers at the top level."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import xarray as xr

import rmtsweep
from rmtsweep.testing import assert_stores_equal


def test_run_sweep_from_a_path_without_a_client_equals_the_reference(reference, tmp_path):
    sweep_path, ref_store = reference
    store = tmp_path / "api.zarr"
    report = rmtsweep.run_sweep(str(sweep_path), store, progress=False)     # a LocalCluster made and closed here
    assert report.tasks_computed == 2
    assert_stores_equal(store, ref_store)
    st = rmtsweep.status(store)
    assert isinstance(st, rmtsweep.StoreStatus) and (st.tasks_done, st.tasks_total) == (2, 2) and st.complete
    with pytest.raises(AttributeError):                              # frozen
        st.tasks_done = 0
    assert json.loads(st.to_json())["replicates_done"] == st.replicates_done == st.replicates_total > 0
    assert rmtsweep.verify(store) == []
    assert bool(rmtsweep.open_store(store)["done"].all())


def test_run_sweep_from_a_sweep_object_uses_the_current_client(reference, tmp_path):
    from distributed import Client, LocalCluster, get_task_stream
    sweep_path, ref_store = reference
    sweep = rmtsweep.load_sweep(sweep_path).sweep
    store = tmp_path / "object.zarr"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster, \
            Client(cluster) as client, get_task_stream(client) as stream:
        rmtsweep.run_sweep(sweep, store, progress=False)
    assert len(stream.data) >= 2                                                   # its tasks ran on that client
    assert_stores_equal(store, ref_store)
    attrs = xr.open_zarr(store).attrs
    assert attrs["sweep_file"] == "<a Sweep made in Python>" and attrs["sweep_hash"] == sweep.digest()


def test_one_error_root_with_two_branches():
    user = (rmtsweep.SweepDefinitionError, rmtsweep.StoreError, rmtsweep.SelectionError, rmtsweep.ClusterError,
            rmtsweep.SettingsError)
    run = (rmtsweep.TaskFailedError, rmtsweep.StoreWriteError, rmtsweep.BatchSystemError)
    assert all(issubclass(e, rmtsweep.UserError) and not issubclass(e, rmtsweep.RunError) for e in user)
    assert all(issubclass(e, rmtsweep.RunError) and not issubclass(e, rmtsweep.UserError) for e in run)
    assert issubclass(rmtsweep.UserError, rmtsweep.RmtsweepError) and issubclass(rmtsweep.RunError,
                                                                                 rmtsweep.RmtsweepError)
    assert issubclass(rmtsweep.UserError, ValueError) and issubclass(rmtsweep.RunError, RuntimeError)
    with pytest.raises(rmtsweep.RmtsweepError, match="does not exist"):
        rmtsweep.open_store("no-such.zarr")


def test_the_api_names_resolve_and_modules_stay_modules():
    import types

    import rmtsweep.analysis.compare as compare_module
    for name in rmtsweep.__all__:
        assert getattr(rmtsweep, name) is not None, name
    assert callable(rmtsweep.compare) and rmtsweep.compare is compare_module.compare
    assert isinstance(rmtsweep.theory, types.ModuleType)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rmtsweep.nope  # noqa: B018


_HEAVY = ("xarray", "pandas", "hvplot", "holoviews", "matplotlib")
_DRIVERS = ("scipy.stats", "rmtsweep.theory", "rmtsweep.analysis", "rmtsweep.store.io", "rmtsweep.run.runner",
            "rmtsweep.cli")


def test_the_task_code_imports_nothing_of_the_drivers():
    """A worker a batch system starts imports the task code alone (``--preload rmtsweep.run.work``): what a task
    needs (numpy, scipy's linear algebra, the model, zarr), not the driver's side: no xarray or pandas, theory,
    analysis or scipy.stats."""
    from rmtsweep.run.forkserver import TASK_CODE
    listing = f"import json, sys, {TASK_CODE}; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, timeout=300, check=True)
    modules = json.loads(proc.stdout)
    assert {"rmtsweep.run.work", "rmtsweep.model", "zarr", "scipy.sparse"} <= set(modules)
    assert [m for m in modules if m.split(".")[0] in _HEAVY or m.startswith(_DRIVERS)] == []


def test_a_local_worker_starts_with_the_task_and_theory_code_imported():
    """A LocalCluster worker is forked from a server that imported the task code, dask's worker and the theory's
    task: none of them is imported after the worker starts, before its first task or theory task."""
    from rmtsweep.cluster.engine import connect, make_engine
    from rmtsweep.run.cost import Blocking
    from rmtsweep.run.grid import tasks
    from rmtsweep.run.work import compute_task
    from tests.helpers import BASE

    task = next(tasks(rmtsweep.parse_sweep(BASE), Blocking(1, 1, 1, 2)))
    with connect(make_engine("local", workers=1)) as (client, _):
        modules = next(iter(client.run(eval, "sorted(__import__('sys').modules)").values()))
        values = client.submit(compute_task, task, pure=False).result()
    assert {"rmtsweep.run.work", "distributed.worker", "rmtsweep.run.runner", "xarray"} <= set(modules)
    assert values["eigenvalues"].shape == compute_task(task)["eigenvalues"].shape


_ENV_PROBE = ("{k: __import__('os').environ.get(k) for k in ('RMTSWEEP_PROBE_OLD', 'RMTSWEEP_PROBE_NEW')}, "
              "__import__('os').getppid(), open(f'/proc/{__import__(\"os\").getppid()}/cmdline', 'rb').read()")


def test_the_workers_are_forked_from_one_server_with_the_environment_their_maker_has_now(monkeypatch):
    """A local run's workers are forks of one server a process starts once; each has the environment of the
    process that makes its cluster as it is then, not as it was when the server started."""
    from rmtsweep.cluster.engine import connect, make_engine
    from rmtsweep.run import forkserver
    forkserver.stop()                                   # one another test started: this one starts it afresh
    monkeypatch.setenv("RMTSWEEP_PROBE_OLD", "as the server started")
    forkserver.start()
    monkeypatch.delenv("RMTSWEEP_PROBE_OLD")
    monkeypatch.setenv("RMTSWEEP_PROBE_NEW", "set since")
    parents = set()
    for _ in range(2):                                  # the second cluster's workers come from the same server
        with connect(make_engine("local", workers=1)) as (client, _):
            ((env, parent, command),) = client.run(eval, _ENV_PROBE).values()
        assert env == {"RMTSWEEP_PROBE_OLD": None, "RMTSWEEP_PROBE_NEW": "set since"}
        assert b"multiprocessing.forkserver" in command, command
        parents.add(parent)
    assert len(parents) == 1


_FRESH_COMMAND = """
from rmtsweep.run import forkserver
forkserver.start()                 # first, as the command line starts it: nothing of dask imported yet
from rmtsweep.cluster.engine import connect, make_engine
probe = ("__import__('threadpoolctl').threadpool_info(), "
         "len(__import__('os').listdir(f'/proc/{__import__(\\"os\\").getppid()}/task'))")
with connect(make_engine("local", workers=1)) as (client, _):
    (pools, server_threads), = client.run(eval, probe).values()
print(__import__("json").dumps([[pool["num_threads"] for pool in pools], server_threads]))
"""


def test_a_fork_server_started_first_gives_its_workers_one_blas_thread_and_forks_with_one_thread():
    """dask's pre-spawn variables (one BLAS thread) are in the server's environment before it imports numpy,
    even when the process had not imported dask's distributed settings; the server then forks with no other
    thread than its own (a thread's lock held at a fork can stay held in the child)."""
    proc = subprocess.run([sys.executable, "-c", _FRESH_COMMAND], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if "NUM_THREADS" not in k})
    assert proc.returncode == 0, proc.stderr[-3000:]
    threads, server = json.loads(proc.stdout)
    assert threads and set(threads) == {1}, threads
    assert server == 1


def test_a_fork_server_no_cluster_used_is_killed_not_waited_for(monkeypatch):
    """A command refused before its cluster (a bad sweep) ends at once: stopping a server that forked nothing
    does not wait for its imports, which here never end."""
    import threading

    from rmtsweep.run import forkserver
    forkserver.stop()
    monkeypatch.setattr(forkserver, "SERVED", ("tests.integration.endless_import",))
    forkserver.start()
    stopping = threading.Thread(target=forkserver.stop, daemon=True)
    stopping.start()
    stopping.join(timeout=120)
    assert not stopping.is_alive(), "stop() waited for the server's imports"


_WORKER_CPU_COMMAND = """
import json, resource, time
from rmtsweep.cluster.engine import connect, make_engine
from rmtsweep.run import forkserver
def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    return time.process_time()
with connect(make_engine("local", workers=1)) as (client, _):
    spent = client.submit(burn, 1.0, pure=False).result()
forkserver.stop()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([spent, usage.ru_utime + usage.ru_stime]))
"""


def test_a_stopped_fork_server_leaves_its_workers_cpu_time_counted_by_the_command():
    """The command's children's CPU time counts its workers' once it stopped the server (which is killed, not
    left to tear its modules down): a benchmark's CPU-seconds miss no worker."""
    proc = subprocess.run([sys.executable, "-c", _WORKER_CPU_COMMAND], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    worker, children = json.loads(proc.stdout)
    assert worker >= 1.0
    assert children >= worker, (children, worker)


def _faults_of_fresh_arrays(count: int = 100, size: int = 1 << 17) -> int:
    """Minor page faults of ``count`` arrays of ``size`` float64 (1 MiB) made and freed in turn, in this process."""
    import resource

    import numpy as np
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(count):
        np.ones(size).sum()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_the_workers_rmtsweep_starts_reuse_freed_memory_as_the_driver_does(monkeypatch):
    """dask spawns workers with ``MALLOC_TRIM_THRESHOLD_`` set, which makes glibc serve every array over 128 KiB
    from fresh pages: 256 page faults per MiB, on each allocation. rmtsweep's workers start without it."""
    import dask
    import distributed  # noqa: F401 - dask's settings for it load as it is imported

    from rmtsweep.cluster.engine import connect, make_engine
    from rmtsweep.run import forkserver
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)   # a fresh command's environment
    # glibc reads it as a process starts: a server started while another test's cluster had set it keeps it
    forkserver.stop()
    assert "MALLOC_TRIM_THRESHOLD_" in dask.config.get("distributed.nanny.pre-spawn-environ")    # dask's default
    with connect(make_engine("local", workers=1)) as (client, _):
        env = next(iter(client.run(eval, "__import__('os').environ.get('MALLOC_TRIM_THRESHOLD_')").values()))
        faults = client.submit(_faults_of_fresh_arrays, pure=False).result()
    assert env is None
    assert faults < 100 * 256 / 4, faults         # fresh pages every time: 256 faults per array
    # the same arrays in a process started as dask's default starts a worker: fresh pages every time
    script = f"import sys; sys.path.insert(0, {os.getcwd()!r}); " \
             "from tests.integration.test_api import _faults_of_fresh_arrays as f; print(f())"
    trimmed = subprocess.run([sys.executable, "-c", script], env={**os.environ, "MALLOC_TRIM_THRESHOLD_": "65536"},
                             capture_output=True, text=True, check=True)
    assert int(trimmed.stdout) > 100 * 256 / 2, trimmed.stdout

def test_theory_dataset_takes_what_run_sweep_takes_and_equals_the_stores_theory(reference):
    sweep_path, ref_store = reference
    stored = rmtsweep.open_store(ref_store)
    for given in (str(sweep_path), sweep_path, rmtsweep.load_sweep(sweep_path), rmtsweep.load_sweep(sweep_path).sweep):
        th = rmtsweep.theory_dataset(given)
        for name in ("theory_edge", "theory_snr_sample", "theory_overlap", "theory_law"):
            assert th[name].equals(stored[name].load()), (type(given).__name__, name)     # what the run stored
    with pytest.raises(rmtsweep.UserError, match="nope"):
        rmtsweep.theory_dataset("nope")


def test_plan_takes_what_load_sweep_returns_and_what_run_sweep_takes(reference):
    sweep_path, _ = reference
    loaded = rmtsweep.load_sweep(sweep_path)
    expected = rmtsweep.plan(loaded.sweep)
    for given in (loaded, str(sweep_path), sweep_path):
        assert rmtsweep.plan(given) == expected, type(given).__name__
    assert (expected.points, expected.cells, expected.replicates) == (2, 8, 4)
    with pytest.raises(rmtsweep.UserError, match="nope"):
        rmtsweep.plan("nope")
