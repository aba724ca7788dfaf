"""One sweep end to end: validated sweep -> store template -> remaining tasks -> dask -> store.

This is the Python entry point behind ``rmtsweep run``::

    from distributed import Client, LocalCluster
    from pipeline import load_sweep, run_sweep
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster) as client:
        run_sweep(load_sweep("sweeps/demo.yaml"), "store/demo.zarr", client)
"""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path

from distributed import Client
from tqdm.auto import tqdm

from . import store
from .errors import StoreError
from .execute import RunReport, run_tasks
from .grid import n_tasks, replicate_blocks, tasks
from .predict import theory_dataset
from .spec import SweepFile


def package_version() -> str:
    """The installed rmtsweep version."""
    try:
        return metadata.version("rmtsweep")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def git_revision() -> str | None:
    """``git describe --always --dirty`` of the source checkout, if the package runs from one."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=12"], cwd=here,
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.strip()


def prepare_store(sweep_file: SweepFile, path: Path) -> None:
    """Create the store's template, or check that an existing store holds this same sweep."""
    if path.exists():
        if not store.is_store(path):
            raise StoreError(f"{path}: exists and is not an rmtsweep store; choose another --store path")
        stored = store.open_dataset(path).attrs.get("sweep_hash")
        if stored != sweep_file.sweep.digest():
            raise StoreError(f"{path}: holds a different sweep (hash {stored[:12]}, this file "
                             f"{sweep_file.sweep.digest()[:12]}); use a new --store path")
        return
    ds = store.template(sweep_file, theory_dataset(sweep_file.sweep),
                        store.provenance(sweep_file, package_version(), git_revision()))
    store.create(path, ds)


def run_sweep(sweep_file: SweepFile, path: str | Path, client: Client, progress: bool = True) -> RunReport:
    """Run (or resume) a sweep into the store at ``path``; only tasks not yet done are computed.

    Parameters
    ----------
    sweep_file
        From :func:`pipeline.load_sweep`.
    path
        The zarr store (created if missing).
    client
        A connected dask client; its workers do the computing, this process writes.
    progress
        Show a progress bar (tasks done, rate, ETA) on stderr.
    """
    path = Path(path)
    sweep = sweep_file.sweep
    prepare_store(sweep_file, path)
    writer = store.Writer(path)
    skip = writer.done_tasks(replicate_blocks(sweep))
    total = n_tasks(sweep)
    with tqdm(total=total, initial=int(skip.sum()), desc=f"{sweep.name}: tasks", unit="task",
              disable=not progress, dynamic_ncols=True) as bar:
        return run_tasks(client, tasks(sweep, skip=skip), write=lambda t, v: writer.write(t.index, t.replicates, v),
                         on_done=lambda t: bar.update())
