"""The fault table: each way a run can be stopped or its store damaged, what the user sees, and the resume.

Every row runs the same 64-task sweep (``tests.helpers.MEDIUM``) through the real command line, does
the fault to it, reads what was printed, recovers as the message says, and compares the final store
bit for bit with an uninterrupted run. ``test_fault_table.py`` asserts every row; to print the
table of the README's "Crashes and resuming" (about two minutes on 2 cores)::

    python tests/integration/fault_table.py             # every row
    python tests/integration/fault_table.py disk_full   # some rows

The disk, read-only and permission rows need Linux namespaces (``unshare``): a small tmpfs for the
full disk, a read-only bind mount, and a user namespace in which even root obeys file permissions.
"""

from __future__ import annotations

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
    identical: bool = False         # the recovered store equals an uninterrupted run, bit for bit
    recovery: str = ""              # what was done to recover

    @property
    def one_line(self) -> bool:
        return not self.noise and "Traceback" not in self.message

    def markdown(self) -> str:
        said = f"`{self.message}`" if self.message else "(nothing)"
        ok = "recovered, identical store" if self.identical else "**store differs**"
        lines = "one line" if self.one_line else f"**{len(self.noise) + 1} lines**"
        return f"| {self.fault} | {self.exit_code} | {said} | {lines} | {self.recovery} | {ok} |"


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
    """A scratch directory with the sweep file and one uninterrupted store to compare against."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sweep = root / "medium.yaml"
        self.sweep.write_text(yaml.safe_dump(MEDIUM))
        self.clean = root / "clean.zarr"
        if not self.clean.exists():
            self.run(self.clean, check=True)
        template = root / "template.zarr"
        if not template.exists():
            from rmtsweep.run.runner import prepare_store
            from rmtsweep.spec import load_sweep
            prepare_store(load_sweep(self.sweep), template)
        self.clean_k, self.template_k = _disk_k(self.clean), _disk_k(template)    # as a tmpfs counts them

    def cmd(self, store: Path) -> list[str]:
        return [*RMTSWEEP, "run", str(self.sweep), "--store", str(store), "--workers", "2", "--no-progress"]

    def run(self, store: Path, check: bool = False, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
        proc = subprocess.run([*prefix, *self.cmd(store)], capture_output=True, text=True, timeout=600)
        if check and proc.returncode != 0:
            raise RuntimeError(f"the run failed: {proc.stderr[-2000:]}")
        return proc

    def same(self, store: Path) -> bool:
        from rmtsweep.testing import assert_stores_equal
        try:
            assert_stores_equal(store, self.clean)
        except AssertionError:
            return False
        return True

    def start(self, store: Path, after: int) -> subprocess.Popen:
        """A run in its own process group, returned once ``after`` tasks are written."""
        proc = subprocess.Popen(self.cmd(store), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
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
        """A copy of the clean store with every other task's ``done`` cleared (data left as they are)."""
        import zarr
        store = self.fresh(name)
        shutil.copytree(self.clean, store)
        done = zarr.open_group(str(store), mode="r+")["done"]
        flags = done[...]
        flags.reshape(-1)[::2] = False
        done[...] = flags
        return store


def _signal(bench: Bench, name: str, sig: int, group: bool, fault: str) -> Row:
    store = bench.fresh(name)
    proc = bench.start(store, after=5)
    (os.killpg if group else os.kill)(proc.pid, sig)
    _, err = proc.communicate(timeout=60)
    message, noise = _stderr_lines(err)
    bench.run(store, check=True)
    return Row(fault, proc.returncode, message, noise, bench.same(store), "rerun the same command")


def sigkill_three_times(bench: Bench) -> Row:
    """SIGKILL to the whole process group at three points, then the same command."""
    store = bench.fresh("killed.zarr")
    for target in (6, 20, 40):
        proc = bench.start(store, after=target)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    code = proc.returncode
    bench.run(store, check=True)
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
    bench.run(store, check=True)
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
    run = " ".join(bench.cmd(store))
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
    run = " ".join(bench.cmd(store))
    script = (f"mount --bind {store} {store} && mount -o remount,ro,bind {store} && {run}")
    proc = _namespaced(bench, script)
    message, noise = _stderr_lines(proc.stderr)
    bench.run(store, check=True)
    return Row("read-only file system", proc.returncode, message, noise, bench.same(store), "remount rw, rerun")


def permission_denied(bench: Bench) -> Row:
    """The data arrays not writable by the user (a user namespace, so root obeys the mode bits too)."""
    store = bench.half_done("denied.zarr")
    subprocess.run(["chmod", "-R", "a-w", str(store / "eigenvalues")], check=True)
    proc = bench.run(store, prefix=("unshare", "-U"))
    message, noise = _stderr_lines(proc.stderr)
    subprocess.run(["chmod", "-R", "u+w", str(store / "eigenvalues")], check=True)
    bench.run(store, check=True)
    return Row("permission denied on the store", proc.returncode, message, noise, bench.same(store),
               "fix the mode, rerun")


def vanished_store(bench: Bench) -> Row:
    """The store directory removed while the run writes (a scratch purge)."""
    store = bench.fresh("vanished.zarr")
    proc = bench.start(store, after=5)
    shutil.rmtree(store, ignore_errors=True)
    _, err = proc.communicate(timeout=120)
    message, noise = _stderr_lines(err)
    shutil.rmtree(store, ignore_errors=True)
    bench.run(store, check=True)
    return Row("the store directory removed during a run", proc.returncode, message, noise, bench.same(store),
               "rerun (starts again)")


def reader_while_writing(bench: Bench) -> Row:
    """A reader opening the store again and again while a run writes: every done replicate has its data."""
    from rmtsweep import open_store
    store = bench.fresh("read.zarr")
    proc = bench.start(store, after=1)
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


ROWS: dict[str, Callable[[Bench], Row]] = {f.__name__: f for f in (
    sigkill_three_times, sigterm_driver, sigint_group, corrupt_chunk, disk_full, read_only, permission_denied,
    vanished_store, reader_while_writing)}


def main(names: list[str]) -> int:
    """Run the named rows (all by default) and print the Markdown table; exit 1 if a row did not recover."""
    unknown = sorted(set(names) - set(ROWS))
    if unknown:
        print(f"unknown rows {unknown}; choose from {sorted(ROWS)}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rmtsweep-faults-") as tmp:
        bench = Bench(Path(tmp))
        print("| fault | exit | what the user sees (last stderr line) | lines | recovery | store |")
        print("|---|---|---|---|---|---|")
        failed = 0
        for name in names or list(ROWS):
            start = time.monotonic()
            row = ROWS[name](bench)
            failed += not (row.identical and row.one_line)
            print(row.markdown(), flush=True)
            print(f"    ({name}: {time.monotonic() - start:.0f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
