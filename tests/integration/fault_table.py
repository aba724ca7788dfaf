"""The fault table: each way a run can be stopped or its store damaged, what the user sees, and the resume.

Every row runs the same 64-task sweep (``tests.helpers.MEDIUM``) through the real command line, does
the fault to it, reads what was printed, recovers as the message says, and compares the final store
bit for bit with an uninterrupted run. ``test_fault_table.py`` asserts every row; to print the
table of docs/explanation/store-protocol.md, "Faults, tested" (two to three minutes on 2 cores)::

    python tests/integration/fault_table.py             # every row
    python tests/integration/fault_table.py disk_full   # some rows

The disk, read-only and permission rows need Linux namespaces (``unshare``): a small tmpfs for the
full disk, a read-only bind mount, and a user namespace in which even root obeys file permissions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.helpers import MEDIUM, MEDIUM_TASKS, writes  # noqa: E402

RMTSWEEP = [sys.executable, "-m", "rmtsweep.cli"]
# what a run prints on stderr before any fault: the cluster, the memory check, the plan
START_LINES = ("dask LocalCluster:", "memory check", f"{MEDIUM_TASKS} tasks of up to")


@dataclass
class Row:
    """One fault: what the user saw, and whether following the message recovered the store."""

    fault: str
    exit_code: int | None
    message: str                    # the last line on stderr ('' when the process could not say anything)
    noise: list[str] = field(default_factory=list)    # other stderr lines that are not the run's start-up
    identical: bool = False         # the recovered store equals an uninterrupted run (same machine: bit for bit)
    recovery: str = ""              # what was done to recover
    without_data: list[str] = field(default_factory=list)   # done tasks lacking data right after the fault

    @property
    def one_line(self) -> bool:
        """Nothing on stderr but the run's start-up and the one line: no traceback, no ``Exception ignored``."""
        return not self.noise and not any(word in self.message for word in ("Traceback", "Exception ignored"))

    def markdown(self) -> str:
        said = f"`{self.message}`" if self.message else "(nothing)"
        ok = "recovered, identical store" if self.identical else "**store differs**"
        lines = "one line" if self.one_line else f"**{len(self.noise) + 1} lines**"
        data = "none" if not self.without_data else f"**{len(self.without_data)} task(s)**"
        return f"| {self.fault} | {self.exit_code} | {said} | {lines} | {data} | {self.recovery} | {ok} |"


def _without_data(store: Path) -> list[str]:
    """The done tasks of ``store`` whose chunks are absent or corrupt (``rmtsweep verify``), as lines."""
    from rmtsweep.store import verify, is_store
    return [str(c) for c in verify(store)] if is_store(store) else []


def _disk_k(path: Path) -> int:
    """KiB a directory takes on a page-granular filesystem (each file rounded up to 4 KiB)."""
    return sum(-(-f.stat().st_size // 4096) * 4 for f in path.rglob("*") if f.is_file())


def _stderr_lines(text: str) -> tuple[str, list[str]]:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "", []
    message, rest = lines[-1], lines[:-1]
    if message.startswith(START_LINES):      # the run said nothing after starting (it finished, or was killed)
        message, rest = "", lines
    return message, [line for line in rest if not line.startswith(START_LINES)]


class Bench:
    """A scratch directory with the sweep file and one uninterrupted store to compare against.

    The faults happen to real ``rmtsweep run`` processes (one worker: more prove nothing here; a thread of the run
    for the store's faults, a process for the signals'). The
    uninterrupted store and each recovery ("rerun the same command") run the same sweep through
    :func:`rmtsweep.run_sweep` in this process, on a cluster the bench starts once and keeps: a command's
    own start-up, repeated for every row, would be most of the table's time. Close the bench when done.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sweep = root / "medium.yaml"
        self.sweep.write_text(yaml.safe_dump(MEDIUM))
        self._cluster = self._client = None
        self.clean = root / "clean.zarr"
        if not self.clean.exists():
            self.resume(self.clean)
        template = root / "template.zarr"
        if not template.exists():
            from rmtsweep.run.runner import prepare_store
            from rmtsweep.spec import load_sweep
            prepare_store(load_sweep(self.sweep), template)
        self.clean_k, self.template_k = _disk_k(self.clean), _disk_k(template)    # as a tmpfs counts them

    def cmd(self, store: Path, in_process: bool = False) -> list[str]:
        """The run's command line; ``in_process``: its worker a thread of the run (``--in-process``), for the rows
        of the store's faults (disk, mounts, modes, a reader), which a worker process would not change: the signals'
        rows keep the worker process (a Ctrl-C reaches it too), and a worker process that cannot write is the
        read-only workers' row."""
        return [*RMTSWEEP, "run", str(self.sweep), "--store", str(store), "--workers", "1", "--no-progress",
                *(["--in-process"] if in_process else [])]

    def run(self, store: Path, prefix: tuple[str, ...] = (), in_process: bool = False) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *self.cmd(store, in_process)], capture_output=True, text=True, timeout=600)

    def resume(self, store: Path) -> None:
        """Run the sweep into ``store`` to the end (the recovery every message asks for), on the bench's cluster."""
        from rmtsweep import run_sweep
        if self._client is None:
            from distributed import Client, LocalCluster
            self._cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
            self._client = Client(self._cluster)
        run_sweep(self.sweep, store, self._client, progress=False)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._cluster.close()
            self._client = self._cluster = None

    def same(self, store: Path) -> bool:
        from rmtsweep.testing import assert_stores_equal
        try:
            assert_stores_equal(store, self.clean)
        except AssertionError:
            return False
        return True

    def start(self, store: Path, after: int, in_process: bool = False) -> subprocess.Popen:
        """A run in its own process group, returned once ``after`` tasks are written."""
        proc = subprocess.Popen(self.cmd(store, in_process), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)
        deadline = time.monotonic() + 120
        while writes(store) < after and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended before {after} tasks were written: {proc.stderr.read()[-2000:]}")
        return proc

    def fresh(self, name: str) -> Path:
        """A store path in the scratch directory with nothing left there from an earlier row."""
        store = self.root / name
        shutil.rmtree(store, ignore_errors=True)
        return store

    def half_done(self, name: str) -> Path:
        """A copy of the clean store with every other task undone: its ``done`` cleared and its data chunks
        deleted, so a run that marked it done without writing its data would leave it visibly without data."""
        import zarr
        from rmtsweep.store.writer import per_replicate_arrays
        store = self.fresh(name)
        shutil.copytree(self.clean, store)
        group = zarr.open_group(str(store), mode="r+")
        done = group["done"]
        keys = sorted(p.name for p in (store / "done").iterdir() if p.name[0].isdigit())[::2]
        for key in keys:
            coords = [int(c) for c in key.split(".")]
            done[tuple(slice(c * n, (c + 1) * n) for c, n in zip(coords, done.chunks))] = False
            for name_ in per_replicate_arrays(group):
                if name_ != "done":
                    for chunk in [*(store / name_).glob(key), *(store / name_).glob(key + ".*")]:
                        chunk.unlink()
        return store


def _signal(bench: Bench, name: str, sig: int, group: bool, fault: str, after: int = 5, delay: float = 0.0) -> Row:
    """Send ``sig`` once ``after`` tasks are written and ``delay`` seconds more have passed; then resume."""
    store = bench.fresh(name)
    proc = bench.start(store, after=after)
    time.sleep(delay)
    (os.killpg if group else os.kill)(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    message, noise = _stderr_lines(err)
    lacking = _without_data(store)
    bench.resume(store)
    return Row(fault, proc.returncode, message, noise, bench.same(store), "rerun the same command", lacking)


def sigkill_three_times(bench: Bench) -> Row:
    """SIGKILL to the whole process group at three points, then the same command."""
    store = bench.fresh("killed.zarr")
    for target in (6, 20, 40):
        proc = bench.start(store, after=target)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    code = proc.returncode
    bench.resume(store)
    return Row("SIGKILL x3 (process group), then resume", code, "", [], bench.same(store), "rerun the same command")


def sigterm_driver(bench: Bench) -> Row:
    """SIGTERM to the driver only, as a batch system does at walltime."""
    return _signal(bench, "term.zarr", signal.SIGTERM, False, "SIGTERM to the driver (walltime)")


def sigint_group(bench: Bench) -> Row:
    """SIGINT to the whole process group, as Ctrl-C in a terminal does."""
    return _signal(bench, "int.zarr", signal.SIGINT, True, "Ctrl-C (SIGINT to the process group)")


def corrupt_chunk(bench: Bench) -> Row:
    """Overwrite the middle of a finished chunk; ``compare`` names it, ``verify --repair`` and ``run`` recover."""
    store = bench.fresh("corrupt.zarr")
    shutil.copytree(bench.clean, store)
    chunk = sorted(p for p in (store / "eigenvalues").iterdir() if p.name[0].isdigit())[5]
    data = bytearray(chunk.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 8] = bytes(8)
    chunk.write_bytes(bytes(data))
    seen = subprocess.run([*RMTSWEEP, "compare", str(store), "--no-write"], capture_output=True, text=True)
    message, noise = _stderr_lines(seen.stderr)
    verify = subprocess.run([*RMTSWEEP, "verify", str(store)], capture_output=True, text=True)
    repair = subprocess.run([*RMTSWEEP, "verify", str(store), "--repair"], capture_output=True, text=True)
    bench.resume(store)
    ok = verify.returncode == 1 and repair.returncode == 0 and bench.same(store)
    return Row("a finished chunk overwritten in the middle (`compare`)", seen.returncode, message, noise, ok,
               "`verify --repair`, then rerun")


def _namespaced(bench: Bench, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=600)


def disk_full(bench: Bench) -> Row:
    """The store on a tmpfs with room for its template and half its data, then the space grows to 64 MB."""
    size_k = bench.template_k + (bench.clean_k - bench.template_k) // 2
    mnt = bench.root / "small-disk"
    mnt.mkdir(exist_ok=True)
    store, saved = mnt / "full.zarr", bench.fresh("full.zarr")
    run = " ".join(bench.cmd(store, in_process=True))
    script = (f"mount -t tmpfs -o size={size_k}k none {mnt} && "
              f"{{ {run} 2> {bench.root}/full.err; echo $? > {bench.root}/full.code; }}; "
              f"mount -o remount,size=64m {mnt} && {run} 2>/dev/null && cp -a {store} {saved}")
    outer = _namespaced(bench, script)
    if outer.returncode != 0:
        raise RuntimeError(f"the tmpfs scenario failed: {outer.stderr[-2000:]}")
    message, noise = _stderr_lines((bench.root / "full.err").read_text())
    return Row("the disk fills during a run", int((bench.root / "full.code").read_text()), message, noise,
               bench.same(saved), "free space, rerun")


def read_only(bench: Bench) -> Row:
    """The store's filesystem read-only (a bind mount remounted ``ro``), then writable again."""
    store = bench.half_done("readonly.zarr")
    run = " ".join(bench.cmd(store, in_process=True))
    script = (f"mount --bind {store} {store} && mount -o remount,ro,bind {store} && {run}")
    proc = _namespaced(bench, script)
    message, noise = _stderr_lines(proc.stderr)
    lacking = _without_data(store)
    bench.resume(store)
    return Row("read-only file system", proc.returncode, message, noise, bench.same(store), "remount rw, rerun",
               lacking)


def permission_denied(bench: Bench) -> Row:
    """The data arrays not writable by the user (a user namespace, so root obeys the mode bits too)."""
    store = bench.half_done("denied.zarr")
    subprocess.run(["chmod", "-R", "a-w", str(store / "eigenvalues")], check=True)
    proc = bench.run(store, prefix=("unshare", "-U"), in_process=True)
    message, noise = _stderr_lines(proc.stderr)
    subprocess.run(["chmod", "-R", "u+w", str(store / "eigenvalues")], check=True)
    lacking = _without_data(store)
    bench.resume(store)
    return Row("permission denied on the store", proc.returncode, message, noise, bench.same(store),
               "fix the mode, rerun", lacking)


def vanished_store(bench: Bench) -> Row:
    """The store directory removed while the run writes (a scratch purge)."""
    store = bench.fresh("vanished.zarr")
    proc = bench.start(store, after=5, in_process=True)
    shutil.rmtree(store, ignore_errors=True)
    _, err = proc.communicate(timeout=120)
    message, noise = _stderr_lines(err)
    shutil.rmtree(store, ignore_errors=True)
    bench.resume(store)
    return Row("the store directory removed during a run", proc.returncode, message, noise, bench.same(store),
               "rerun (starts again)")


def reader_while_writing(bench: Bench) -> Row:
    """A reader opening the store again and again while a run writes: every done replicate has its data."""
    from rmtsweep import open_store
    store = bench.fresh("read.zarr")
    proc = bench.start(store, after=1, in_process=True)
    bad, reads = [], 0
    while proc.poll() is None:
        try:
            ds = open_store(store)
            done = ds["done"].values
            ev = ds["eigenvalues"].values
        except Exception as exc:  # noqa: BLE001 - a reader must never fail; recorded as a finding
            bad.append(f"{type(exc).__name__}: {exc}")
            continue
        reads += 1
        finite = np.isfinite(ev).all(axis=(-2, -1))
        if (done & ~finite).any():
            bad.append("a done replicate without its data")
    _, err = proc.communicate()
    message, noise = _stderr_lines(err)
    return Row(f"a reader while a run writes ({reads} consistent reads)", proc.returncode,
               bad[0] if bad else message, noise, not bad and bench.same(store), "none needed")


def absent_chunk(bench: Bench) -> Row:
    """A finished task's chunk file deleted: it reads back as the fill value, so only ``verify`` can tell."""
    store = bench.fresh("absent.zarr")
    shutil.copytree(bench.clean, store)
    chunk = sorted(p for p in (store / "overlap").iterdir() if p.name[0].isdigit())[7]
    chunk.unlink()
    seen = subprocess.run([*RMTSWEEP, "verify", str(store)], capture_output=True, text=True)
    lines = seen.stdout.strip().splitlines()
    lacking = _without_data(store)
    repair = subprocess.run([*RMTSWEEP, "verify", str(store), "--repair"], capture_output=True, text=True)
    bench.resume(store)
    ok = repair.returncode == 0 and not _without_data(store) and bench.same(store)
    return Row("a finished task's chunk file deleted (`verify`)", seen.returncode, lines[0] if lines else "",
               lines[1:-1], ok, "`verify --repair`, then rerun", [] if len(lacking) == 1 else lacking)


def _same_frame(store: Path, clean: Path) -> bool:
    """Whether the coordinates and theory arrays of ``store`` equal those of ``clean`` (floats bit for bit)."""
    import xarray as xr
    a, b = xr.open_zarr(store, chunks=None), xr.open_zarr(clean, chunks=None)
    names = [n for n in b.variables if str(n).startswith(("theory_", "paper_", "finite_size_")) or n in b.coords]
    return all(np.array_equal(a[n].values, b[n].values, equal_nan=b[n].dtype.kind == "f") for n in names)


def corrupt_theory(bench: Bench) -> Row:
    """A byte of a theory array's chunk flipped: ``compare`` refuses, ``verify --repair`` computes it again."""
    store = bench.fresh("theory.zarr")
    shutil.copytree(bench.clean, store)
    chunk = next(p for p in (store / "theory_edge").iterdir() if p.name[0].isdigit())
    data = bytearray(chunk.read_bytes())
    data[len(data) // 2] ^= 0x01
    chunk.write_bytes(bytes(data))
    seen = subprocess.run([*RMTSWEEP, "compare", str(store), "--no-write"], capture_output=True, text=True)
    message, noise = _stderr_lines(seen.stderr)
    verify = subprocess.run([*RMTSWEEP, "verify", str(store)], capture_output=True, text=True)
    repair = subprocess.run([*RMTSWEEP, "verify", str(store), "--repair"], capture_output=True, text=True)
    ok = verify.returncode == 1 and repair.returncode == 0 and bench.same(store) and _same_frame(store, bench.clean)
    return Row("a byte of a theory array's chunk flipped (`compare`)", seen.returncode, message, noise, ok,
               "`verify --repair` (no rerun)")


def damaged_array_metadata(bench: Bench) -> Row:
    """An array's own ``.zarray`` emptied behind its consolidated copy, then the same command resumes the store."""
    store = bench.half_done("zarray.zarr")
    (store / "overlap" / ".zarray").write_bytes(b"")
    proc = bench.run(store, in_process=True)
    message, noise = _stderr_lines(proc.stderr)
    computed = writes(store, run=1)
    repair = subprocess.run([*RMTSWEEP, "verify", str(store), "--repair"], capture_output=True, text=True)
    bench.resume(store)
    ok = repair.returncode == 0 and computed == 0 and bench.same(store)
    return Row("an array's own `.zarray` emptied, then `run` resumes", proc.returncode, message, noise, ok,
               "`verify --repair`, rerun")


def stray_document(bench: Bench) -> Row:
    """``.zmetadata`` emptied beside a stray ``junk/.zarray``: the rebuilt copy leaves the stray out."""
    store = bench.fresh("stray.zarr")
    shutil.copytree(bench.clean, store)
    (store / "junk").mkdir()
    (store / "junk" / ".zarray").write_text('{"zarr_format": 2, "shape": [1]}')
    (store / ".zmetadata").write_bytes(b"")
    seen = subprocess.run([*RMTSWEEP, "status", str(store)], capture_output=True, text=True)
    message, noise = _stderr_lines(seen.stderr)
    repair = subprocess.run([*RMTSWEEP, "verify", str(store), "--repair"], capture_output=True, text=True)
    after = subprocess.run([*RMTSWEEP, "compare", str(store), "--no-write"], capture_output=True, text=True)
    ok = repair.returncode == 0 and after.returncode == 0 and bench.same(store)
    return Row("`.zmetadata` emptied beside a stray `junk/.zarray` (`status`)", seen.returncode, message, noise, ok,
               "`verify --repair`")


def sigint_while_starting(bench: Bench) -> Row:
    """Ctrl-C to the process group 2 s after the start, while the cluster starts."""
    return _signal(bench, "starting.zarr", signal.SIGINT, True, "Ctrl-C 2 s after the start (the cluster starting)",
                   after=0, delay=2.0)


def bad_scheduler(bench: Bench) -> Row:
    """``--scheduler localhost`` (no port): one line, nothing created; the run then goes as usual."""
    store = bench.fresh("address.zarr")
    cmd = [*RMTSWEEP, "run", str(bench.sweep), "--store", str(store), "--no-progress", "--scheduler", "localhost"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    message, noise = _stderr_lines(proc.stderr)
    created = store.exists()
    bench.resume(store)
    return Row("`--scheduler localhost` (no port)", proc.returncode, message, noise, bench.same(store) and not created,
               "fix the address, rerun")


def batch_system_down(bench: Bench) -> Row:
    """``--cluster slurm`` whose controller does not answer (``sbatch`` fails): one line, the store with no task
    done (made before the cluster); then a run."""
    store = bench.fresh("batch.zarr")
    bindir = bench.root / "down-bin"
    bindir.mkdir(exist_ok=True)
    sbatch = bindir / "sbatch"
    sbatch.write_text('#!/bin/sh\necho "sbatch: error: Batch job submission failed: Unable to contact slurm '
                      'controller (connect failure)" >&2\nexit 1\n')
    sbatch.chmod(0o755)
    env = {**os.environ, "PATH": str(bindir), "DASK_JOBQUEUE__SLURM__SCHEDULER_OPTIONS": '{"dashboard_address": ":0"}'}
    cmd = [*RMTSWEEP, "run", str(bench.sweep), "--store", str(store), "--no-progress", "--cluster", "slurm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=bench.root)
    message, noise = _stderr_lines(proc.stderr)
    noise = [line for line in noise if not line.startswith("dask-jobqueue slurm cluster:")]
    from rmtsweep.store import tasks_done
    untouched = tasks_done(store) == (0, MEDIUM_TASKS)       # made before the cluster: a template, no task done
    bench.resume(store)
    return Row("`--cluster slurm` with the controller down (`sbatch` fails)", proc.returncode, message, noise,
               bench.same(store) and untouched, "start the controller (here: run locally), rerun")


def read_only_workers(bench: Bench) -> Row:
    """Two workers that can write the store and one whose view of it is read-only (a node with a stale or
    read-only mount), on a scheduler started apart (``--scheduler``); then that one leaves and the run resumes."""
    from distributed import Client
    home = bench.root / "shared-scratch"
    home.mkdir(exist_ok=True)
    store = home / "mixed.zarr"
    shutil.rmtree(store, ignore_errors=True)
    sched_file = bench.root / "scheduler.json"
    sched_file.unlink(missing_ok=True)
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                               "--no-dashboard", "--scheduler-file", str(sched_file)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker", "--scheduler-file", str(sched_file),
              "--nthreads", "1", "--no-dashboard"]
    try:
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        good = [subprocess.Popen(worker, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
                for _ in range(2)]
        ro = " ".join(worker)
        bad = [subprocess.Popen(["unshare", "-m", "sh", "-c", f"mount --bind {home} {home} && "
                                 f"mount -o remount,ro,bind {home} && exec {ro}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
               for _ in range(1)]
        procs += good + bad
        with Client(scheduler_file=str(sched_file), timeout="60s") as client:
            client.wait_for_workers(3, timeout=120)
            address = client.scheduler.address
        run = [*RMTSWEEP, "run", str(bench.sweep), "--store", str(store), "--scheduler", address, "--no-progress"]
        proc = subprocess.run(run, capture_output=True, text=True, timeout=600)
        message, noise = _stderr_lines(proc.stderr)
        lacking = _without_data(store)
        for p in bad:
            os.killpg(p.pid, signal.SIGTERM)
            p.wait(timeout=60)
        with Client(address, timeout="60s") as client:
            deadline = time.monotonic() + 60
            while len(client.scheduler_info(n_workers=-1)["workers"]) > 2 and time.monotonic() < deadline:
                time.sleep(0.2)
        again = subprocess.run(run, capture_output=True, text=True, timeout=600)
        ok = again.returncode == 0 and bench.same(store)
    finally:
        for p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=60)
    return Row("1 of 3 workers sees the store read-only (`--scheduler`)", proc.returncode, message, noise, ok,
               "rerun without them", lacking)


ROWS: dict[str, Callable[[Bench], Row]] = {f.__name__: f for f in (
    sigkill_three_times, sigterm_driver, sigint_group, sigint_while_starting, bad_scheduler, batch_system_down,
    corrupt_chunk, absent_chunk, corrupt_theory, damaged_array_metadata, stray_document, disk_full, read_only, read_only_workers, permission_denied, vanished_store,
    reader_while_writing)}


def main(names: list[str]) -> int:
    """Run the named rows (all by default) and print the Markdown table; exit 1 if a row did not recover."""
    rows = ROWS
    unknown = sorted(set(names) - set(rows))
    if unknown:
        print(f"unknown rows {unknown}; choose from {sorted(rows)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rmtsweep-faults-") as tmp, \
            contextlib.closing(Bench(Path(tmp))) as bench:
        print("| fault | exit | what the user sees (last stderr line) | lines | done without data | recovery | store |")
        print("|---|---|---|---|---|---|---|")
        failed = 0
        for name in names or list(ROWS):
            start = time.monotonic()
            row = rows[name](bench)
            failed += not (row.identical and row.one_line and not row.without_data)
            print(row.markdown(), flush=True)
            print(f"    ({name}: {time.monotonic() - start:.0f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
