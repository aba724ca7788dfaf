"""Shared fixtures and the environment markers.

``requires_slurm`` and ``requires_chromium`` skip a test, with the command that provides the service,
when the machine lacks it; ``.ci/run`` installs and starts both, so CI runs every test.
"""

from __future__ import annotations

import atexit
import copy
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import pytest
import scipy.linalg  # noqa: F401 - numpy's and scipy's BLAS loaded, so that the limit below reaches both
import yaml
from threadpoolctl import threadpool_limits

from tests.helpers import BASE, CHROMIUM_HOW, SLURM_HOW, build_store, chromium, slurm_problem

# One BLAS thread in each test process (the commands and clusters the tests start keep their own settings): the
# tests' own subprocesses (or pytest-xdist's processes) fill the cores, and the small matrices of these tests only get slower
# on more threads (tests/property/test_batching.py alone, 2 cores: 31-39 s on one thread, 54 s on two).
threadpool_limits(limits=1)

# A suite started in the background of a non-interactive shell (`bash .ci/run &`) inherits SIGINT ignored, and so
# would every run it starts: their Ctrl-C tests would then test nothing. A terminal's foreground process has the
# default disposition; give it to the runs the tests start (a Python handler resets to the default on exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# The runs the tests start serve no dashboard (`--dashboard-address none`): bokeh's import and server cost a run about
# half a CPU-second, and the suite is CPU-bound. tests/integration/test_cli_conveniences.py runs one with the default.
os.environ["RMTSWEEP_DASHBOARD_ADDRESS"] = "none"

# The theory cache (rmtsweep.theory.cache) of every run the tests start, here or as commands: a folder of the session,
# never the user's. The process that made it removes it; pytest-xdist's processes inherit it from the controller.
# dask reads a DASK_ variable with ast.literal_eval first: a random name such as "cache-5jand" would make every
# command print a SyntaxWarning ("5j" is a number), so the random part follows a letter, as one identifier.
if "DASK_RMTSWEEP__THEORY__CACHE" not in os.environ:
    os.environ["DASK_RMTSWEEP__THEORY__CACHE"] = THEORY_CACHE = tempfile.mkdtemp(prefix="rmtsweep_theory_cache_")
    atexit.register(shutil.rmtree, THEORY_CACHE, ignore_errors=True)
    if "dask.config" in sys.modules:         # dask reads the environment when it is imported
        import dask.config
        dask.config.refresh()

# Under pytest-xdist (`pytest -n auto`; pyproject.toml sets --dist loadgroup) each module's tests run in one process, so a
# module-scoped fixture (a demo run, a cluster, a pip install) is built once; the tests of these modules share
# nothing costly and take long, so they are spread over every process.
SPREAD = {"test_fault_table.py", "test_startup_failures.py", "test_object_storage.py"}

# The order in which pytest-xdist hands the work out (pyproject.toml sets --no-loadscope-reorder, so it takes the
# groups in the order of the collection): the longest first, so that the short ones fill both processes at the end.
# The SLURM tests come first since they mostly wait on the batch system (about two minutes, while the other process
# and the minimum versions' tests of .ci/run use the cores); then the modules by their time on 2 cores (`--durations`,
# seconds: plots 62, job arrays 42, README 26, resume 25, faults 24, local security 25, ..., the notebook 14, the benchmarks 13, elastic
# 12, d axis 11), the spread modules' tests (each a unit of its own, 1-20 s) after the modules of over 20 s; every
# other module (unit tests, under 10 s each) after these, in the collection's order. Only the suite's time depends
# on this order.
LONGEST_FIRST = ("test_slurm.py", "test_serve.py", "test_plots.py", "test_job_array.py", "test_readme.py", "test_resume.py",
                 "test_faults.py", "test_local_security.py", *sorted(SPREAD), "test_statistical.py", "test_pipeline.py", "test_lock.py",
                 "test_store_protocol.py", "analysis.ipynb", "test_benchmarks.py", "test_browser.py", "test_elastic.py",
                 "test_docs.py", "test_compare.py", "test_d_axis_store.py", "test_batching.py")


@pytest.hookimpl(tryfirst=True)            # before xdist reads the groups
def pytest_collection_modifyitems(config, items) -> None:
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))       # stable: each module's order is kept
    for item in items:
        if item.path.name not in SPREAD and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
        if item.nodeid.endswith(".ipynb"):               # a notebook run end to end (nbmake) is a slow test
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("requires_slurm") and (why := slurm_problem()):
            item.add_marker(pytest.mark.skip(reason=f"{why}; {SLURM_HOW}"))
        if item.get_closest_marker("requires_chromium") and chromium() is None:
            item.add_marker(pytest.mark.skip(reason=f"chromium is not installed ({CHROMIUM_HOW})"))


@pytest.fixture
def in_process_runs(monkeypatch) -> None:
    """The runs the test starts (in this process or as commands) put their workers in threads (`--in-process`,
    by RMTSWEEP_IN_PROCESS): 1.5 CPU-seconds less per run, for tests of the store, not of worker processes
    (those of signals, lost workers and what a worker imports keep the processes)."""
    monkeypatch.setenv("RMTSWEEP_IN_PROCESS", "1")


@pytest.fixture
def sweep_data() -> dict:
    """A fresh copy of a tiny valid sweep definition (mutate freely)."""
    return copy.deepcopy(BASE)


@pytest.fixture(scope="session")
def reference(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny sweep (``BASE``) run once on a 1-worker LocalCluster: (sweep file, store)."""
    from distributed import Client, LocalCluster

    from rmtsweep import load_sweep, run_sweep

    root = tmp_path_factory.mktemp("reference")
    sweep_path, store_path = root / "tiny.yaml", root / "reference.zarr"
    sweep_path.write_text(yaml.safe_dump(BASE))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(sweep_path), store_path, client, progress=False)
    return sweep_path, store_path


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory) -> Path:
    """A real (tiny) store with every optional observable and its comparison group written (read only: tests that
    change a store copy it). Built once per session: under pytest-xdist the first process to ask builds it in the
    session's directory, under a lock, and the others wait for it (3.5 CPU-s a build, most of it the finite-T
    spectrum law's theory)."""
    import fcntl
    import shutil

    from rmtsweep.analysis.compare import compare, write_comparison
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base      # the session's own directory
    path = shared / "tiny-store" / "tiny.zarr"
    path.parent.mkdir(exist_ok=True)
    with open(shared / "tiny-store.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            shutil.rmtree(path.parent / "draft", ignore_errors=True)     # what a process that failed to build left
            draft = build_store(path.parent / "draft" / "tiny.zarr")
            write_comparison(draft, compare(draft))
            draft.rename(path)                                   # whole or not there
            shutil.rmtree(draft.parent)
    return path


@pytest.fixture
def write_sweep(tmp_path: Path):
    """Write a sweep definition (dict or raw text) to a YAML file and return its path."""
    def _write(data, name: str = "sweep.yaml") -> Path:
        path = tmp_path / name
        path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
        return path
    return _write


S3_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def s3_endpoint():
    """A moto S3 server on a free loopback port for the module, with test credentials in the environment; its URL."""
    moto_server = pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    saved = {k: os.environ.get(k) for k in S3_CREDENTIALS}
    os.environ.update(S3_CREDENTIALS)           # no lookup of real credentials (instance metadata) by botocore
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
