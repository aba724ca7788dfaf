"""rmtsweep against its peers on the same work: pipefunc's ``map`` and Hydra's multirun (joblib launcher).

Run from the repository root::

    python benchmarks/peers.py            # theory-check at d = 300, 48 replicates: 1,296 units (about 15 minutes)
    python benchmarks/peers.py --quick    # d = 16, 4 replicates, rmtsweep's workers as threads (run by the tests)
    pip install -e '.[bench]'             # the peers; one not installed is skipped with a line saying so

The work is the shipped sweep ``theory-check`` with ``d`` and ``replicates`` overridden: 9 points x 3 weights
x 4 SNR values. A *unit* is one (point, weights, replicate). A peer's element is one (point, replicate): it calls
rmtsweep's own ``simulate_schemes`` for the point's three weights, with the replicate's own generator
(``rmtsweep.run.grid.replicate_rng``) and BLAS on one thread, as an rmtsweep task does. Every tool's arrays
must equal rmtsweep's bit for bit before any number is printed (exit 1 otherwise).

Each tool runs as a process in a session of its own, with 2 worker processes, in an empty folder (its working
directory) that holds everything it writes; rmtsweep's theory cache is put there too, empty (a new store's
full work). This process polls the results on disk: rmtsweep's journal (``write`` lines), pipefunc's
element files, Hydra's result files. Columns: seconds to the first result and to the end; CPU-seconds of
the process and every worker it reaped (``wait4``); files and bytes in the folder. Then each tool runs again
into a new folder, gets SIGKILL on its process group at half of its results, and runs once more with the same
command: the rerun's CPU against the full run's, and the units still wrong or missing after it.

``--quick`` shows that the script runs and prints its tables: the same tools, runs, kills and checks on
less work, with rmtsweep's workers as threads (``--in-process``), which spares each run the start of two processes.

The profile (not with ``--quick``) says where rmtsweep's CPU goes: the units alone as one loop in this
process (the floor of any tool), the store's theory alone (cold and warm cache), and ``rmtsweep run`` with a
warm cache, on worker processes and with ``--in-process`` workers.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
NAMES = ("eigenvalues", "overlap", "alpha", "kappa")
INSTALL = "pip install -e '.[bench]'"
_CONTEXT: dict[tuple[str, ...], object] = {}


def overrides(d: int, replicates: int) -> list[str]:
    return [f"d={d}", f"replicates={replicates}"]


def sweep_of(over: list[str]):
    from rmtsweep.spec import load_sweep
    return load_sweep("theory-check", over).sweep


def unit(delta: float, gamma: float, replicate: int, over: tuple[str, ...]) -> dict[str, np.ndarray]:
    """One (point, replicate) under every weights scheme: rmtsweep's computation, as a peer's element calls it."""
    from threadpoolctl import threadpool_limits

    from rmtsweep.model import simulate_schemes
    from rmtsweep.run.grid import Context, replicate_rng
    if over not in _CONTEXT:
        _CONTEXT[over] = Context.from_sweep(sweep_of(list(over)))
    c = _CONTEXT[over]
    assert isinstance(c, Context)
    T = 16                                            # the sweep's one T
    models = c.models(delta, gamma, T, list(range(len(c.schemes))))
    with threadpool_limits(limits=1):
        results = simulate_schemes(models, np.asarray(c.snr, float), replicate_rng(c.seed, delta, gamma, T, replicate))
    return {name: np.stack([np.asarray(getattr(r, name)) for r in results]) for name in NAMES}


# ---------------------------------------------------------------- the tools, each as a process


@dataclass
class Tool:
    """How to run one tool in a folder, count its results there and read them back."""

    name: str
    version: str
    command: Callable[[Path], list[str]]
    results: Callable[[Path], int]                  # units finished so far, from what is on disk
    read: Callable[[Path], dict[str, np.ndarray]]   # (delta, gamma, weights, replicate, ...) arrays, NaN if missing
    env: Callable[[Path], dict[str, str]] = field(default=lambda folder: {})
    repair: Callable[[Path], int] | None = None     # a user's fix when a rerun fails: files removed


def rmtsweep_tool(over: list[str], workers: int, extra: tuple[str, ...] = (), cache: Path | None = None,
                  name: str = "rmtsweep") -> Tool:
    from rmtsweep import __version__

    def command(folder: Path) -> list[str]:
        return [sys.executable, "-m", "rmtsweep.cli", "run", "theory-check", *over, "--store", str(folder / "s.zarr"),
                "--workers", str(workers), "--no-progress", *extra]

    def results(folder: Path) -> int:
        # units of the tasks journaled as written: a task key is its chunk's index, the chunking that of `done`
        try:
            meta = json.loads((folder / "s.zarr" / "done" / ".zarray").read_text())
            lines = (folder / "s.zarr.journal").read_text().splitlines()
        except (FileNotFoundError, ValueError):
            return 0
        shape, chunks = meta["shape"], meta["chunks"]        # (delta, gamma, T, weights, replicate)
        units = 0
        for line in lines:
            if " write " in line:
                index = [int(x) for x in line.split()[-1].split("-")]
                at = dict(zip((0, 1, 2, 4), index, strict=True))
                units += shape[3] * int(np.prod([min(chunks[a], shape[a] - at[a] * chunks[a]) for a in at]))
        return units

    def read(folder: Path) -> dict[str, np.ndarray]:
        import xarray as xr
        with xr.open_zarr(folder / "s.zarr") as ds:
            done = ds["done"].isel(T=0).transpose("delta", "gamma", "weights", "replicate").values
            out = {}
            for n in NAMES:
                v = ds[n].isel(T=0)
                rest = [x for x in v.dims if x not in ("delta", "gamma", "weights", "replicate")]
                a = v.transpose("delta", "gamma", "weights", "replicate", *rest).values
                a[~done] = np.nan                     # a unit not marked done is missing, whatever its chunk holds
                out[n] = a
        return out

    def env(folder: Path) -> dict[str, str]:
        return {"DASK_RMTSWEEP__THEORY__CACHE": str(cache or folder / "theory-cache")}
    return Tool(name, __version__, command, results, read, env=env)


def pipefunc_tool(over: list[str], workers: int) -> Tool | None:
    try:
        v = version("pipefunc")
    except PackageNotFoundError:
        return None

    def command(folder: Path) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "_pipefunc", str(folder), str(workers), *over]

    def results(folder: Path) -> int:
        out = folder / "run" / "outputs" / "result"
        try:
            return 3 * sum(1 for e in os.scandir(out) if e.name.endswith(".pickle"))
        except FileNotFoundError:
            return 0

    def read(folder: Path) -> dict[str, np.ndarray]:
        sweep = sweep_of(over)
        shape = (len(sweep.grid.delta), len(sweep.grid.gamma), sweep.replicates)
        return _assemble(lambda i, j, r: _pickled(_element_file(folder, shape, (i, j, r))), shape)

    def repair(folder: Path) -> int:
        # what a user does after the rerun's EOFError: delete the element files that do not load
        broken = [f for f in (folder / "run" / "outputs" / "result").glob("*.pickle") if _pickled(f) is None]
        for f in broken:
            f.unlink()
        return len(broken)
    return Tool("pipefunc", v, command, results, read, repair=repair)


def _element_file(folder: Path, shape: tuple[int, ...], index: tuple[int, ...]) -> Path:
    """pipefunc's file of one element (``FileArray``: ``__<linear index>__.pickle``)."""
    return folder / "run" / "outputs" / "result" / f"__{int(np.ravel_multi_index(index, shape))}__.pickle"


def _pickled(path: Path) -> object:
    """The object in a pickle file, or None if it is absent or does not load (a write cut short)."""
    import cloudpickle
    try:
        with path.open("rb") as f:
            return cloudpickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def hydra_tool(over: list[str], workers: int) -> Tool | None:
    try:
        v = f"{version('hydra-core')}, hydra-joblib-launcher {version('hydra-joblib-launcher')}"
    except PackageNotFoundError:
        return None

    def command(folder: Path) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "_hydra", str(folder), str(workers), *over]

    def results(folder: Path) -> int:
        try:
            return 3 * sum(1 for e in os.scandir(folder / "results") if e.name.endswith(".npz"))
        except FileNotFoundError:
            return 0

    def read(folder: Path) -> dict[str, np.ndarray]:
        sweep = sweep_of(over)
        g = sweep.grid

        def element(i: int, j: int, r: int):
            path = folder / "results" / f"{i}-{j}-{r}.npz"
            if not path.exists():
                return None
            with np.load(path) as z:
                return {n: z[n] for n in NAMES}
        return _assemble(element, (len(g.delta), len(g.gamma), sweep.replicates))
    return Tool("Hydra multirun, joblib launcher", v, command, results, read)


def _assemble(element: Callable[[int, int, int], object], shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """Arrays ``(delta, gamma, weights, replicate, ...)`` from per-(point, replicate) dicts (None or masked: NaN)."""
    out: dict[str, np.ndarray] = {}
    for i, j, r in np.ndindex(*shape):
        e = element(i, j, r)
        if not isinstance(e, dict):                   # pipefunc's file array masks an element not computed
            continue
        for n in NAMES:
            if n not in out:
                a = np.asarray(e[n])
                out[n] = np.full((shape[0], shape[1], a.shape[0], shape[2], *a.shape[1:]), np.nan)
            out[n][i, j, :, r] = e[n]
    return out


# ---------------------------------------------------------------- the peers' entry points (child processes)


def run_pipefunc(folder: Path, workers: int, over: list[str]) -> None:
    """pipefunc's ``map``: one element per (point, replicate), a process pool, file storage, resume on."""
    from concurrent.futures import ProcessPoolExecutor

    from pipefunc import Pipeline, pipefunc

    sweep = sweep_of(over)

    @pipefunc(output_name="result", mapspec="delta[i], gamma[j], replicate[r] -> result[i, j, r]")
    def element(delta: float, gamma: float, replicate: int, over: tuple[str, ...]) -> dict:
        return unit(delta, gamma, replicate, over)

    inputs = {"delta": list(sweep.grid.delta), "gamma": list(sweep.grid.gamma),
              "replicate": list(range(sweep.replicates)), "over": tuple(over)}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        Pipeline([element]).map(inputs, run_folder=folder / "run", parallel=True, executor=pool,
                                storage="file_array", resume=True, show_progress=False, return_results=False)


def run_hydra(folder: Path, workers: int, over: list[str]) -> None:
    """Hydra's multirun over (point, replicate), its joblib launcher with ``workers`` jobs; one npz per job."""
    import hydra
    from hydra.core.config_store import ConfigStore

    sweep = sweep_of(over)
    g = sweep.grid
    ConfigStore.instance().store(name="peers", node={"i": 0, "j": 0, "r": 0})

    @hydra.main(version_base="1.3", config_path=None, config_name="peers")
    def job(cfg) -> None:
        e = unit(g.delta[cfg.i], g.gamma[cfg.j], cfg.r, tuple(over))
        out = folder / "results"
        out.mkdir(exist_ok=True)
        tmp = out / f".{cfg.i}-{cfg.j}-{cfg.r}.npz"
        np.savez(tmp, **e)
        tmp.rename(out / f"{cfg.i}-{cfg.j}-{cfg.r}.npz")    # whole or absent, as the other tools' results

    sys.argv = [sys.argv[0], "--multirun", f"i=range({len(g.delta)})", f"j=range({len(g.gamma)})",
                f"r=range({sweep.replicates})", "hydra/launcher=joblib", f"hydra.launcher.n_jobs={workers}",
                f"hydra.sweep.dir={folder / 'multirun'}", "hydra/hydra_logging=disabled", "hydra/job_logging=disabled"]
    job()


# ---------------------------------------------------------------- measuring


def _group_gone(pgid: int, ceiling: float = 120.0) -> None:
    """Wait until no process of group ``pgid`` is left (a killed run's workers)."""
    end = time.monotonic() + ceiling
    while time.monotonic() < end:
        left = False
        for p in Path("/proc").iterdir():
            if not p.name.isdigit():
                continue
            try:
                stat = (p / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                left = True
                break
        if not left:
            return
        time.sleep(0.05)
    raise SystemExit(f"processes of group {pgid} still alive {ceiling:.0f} s after SIGKILL")


def launch(tool: Tool, folder: Path, total: int, kill_at: float | None = None, may_fail: bool = False) -> dict:
    """Run ``tool`` in ``folder`` once; seconds to the first result and to the end, CPU-seconds.

    With ``kill_at``, SIGKILL its process group once that fraction of ``total`` units is on disk.
    """
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **tool.env(folder)}
    with open(folder.parent / f"{folder.name}.log", "w") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(tool.command(folder), cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        first = None
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            n = tool.results(folder)
            if n and first is None:
                first = time.perf_counter() - t0
            if kill_at is not None and n >= kill_at * total:
                os.killpg(proc.pid, signal.SIGKILL)
                pid, status, usage = os.wait4(proc.pid, 0)
                killed = True
                break
            time.sleep(0.01)
        end = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
    _group_gone(proc.pid)
    log_text = (folder.parent / f"{folder.name}.log").read_text()
    failed = not killed and proc.returncode != 0
    if failed and not may_fail:
        raise SystemExit(f"{tool.name} failed ({proc.returncode}); see {folder.parent / folder.name}.log:\n"
                                      + log_text[-3000:])
    n = tool.results(folder)
    lines = log_text.strip().splitlines()
    return {"first": first if first is not None else end, "end": end, "cpu": usage.ru_utime + usage.ru_stime,
            "units": n, "killed": killed, "failed": (lines[-1] if lines else "no output") if failed else ""}


def disk(folder: Path) -> tuple[int, int, int]:
    """Files, bytes and bytes allocated (``du``: many small files take a block each) under ``folder``."""
    files = size = blocks = 0
    for root, _, names in os.walk(folder):
        for name in names:
            st = os.lstat(os.path.join(root, name))
            files, size, blocks = files + 1, size + st.st_size, blocks + 512 * st.st_blocks
    return files, size, blocks


def compare(ours: dict[str, np.ndarray], ref: dict[str, np.ndarray]) -> tuple[int, int]:
    """Units of ``ours`` that are missing (NaN where ``ref`` has a value) and that differ from ``ref``."""
    if not ours:
        return int(np.prod(ref["alpha"].shape)), 0
    missing = wrong = np.zeros(ref["alpha"].shape, bool)
    for n in NAMES:
        a, b = ours[n], ref[n]
        axes = tuple(range(4, a.ndim))
        miss = np.isnan(a) & ~np.isnan(b)
        missing = missing | (miss.any(axis=axes) if axes else miss)
        diff = ~((a == b) | (np.isnan(a) & np.isnan(b))) & ~miss
        wrong = wrong | (diff.any(axis=axes) if axes else diff)
    return int(missing.sum()), int(wrong.sum())


def measure(tool: Tool, base: Path, total: int, reference: dict | None, kill: bool) -> tuple[dict, dict]:
    """One full run and (with ``kill``) a kill at half and a rerun; the numbers and the full run's arrays."""
    full = launch(tool, base / "full", total)
    files, size, allocated = disk(base / "full")
    arrays = tool.read(base / "full")
    row = {**full, "files": files, "bytes": size, "allocated": allocated}
    if reference is not None:
        row["missing"], row["wrong"] = compare(arrays, reference)
    if kill:
        cut = launch(tool, base / "kill", total, kill_at=0.5)
        kept = tool.results(base / "kill")
        again = launch(tool, base / "kill", total, may_fail=True)
        rerun_cpu, failure = again["cpu"], again["failed"]
        if failure and tool.repair is not None:
            removed = tool.repair(base / "kill")
            rerun_cpu += launch(tool, base / "kill", total)["cpu"]
            failure = f"{failure} (then {removed} unreadable file(s) deleted and run again)"
        missing, wrong = compare(tool.read(base / "kill"), reference if reference is not None else arrays)
        row["kill"] = {"killed": cut["killed"], "kept": kept, "rerun_cpu": rerun_cpu, "rerun_end": again["end"],
                       "rerun_share": rerun_cpu / full["cpu"], "missing": missing, "wrong": wrong,
                       "rerun_failed": failure}
    return row, arrays


def profile(over: list[str], workers: int, base: Path, total: int, reference: dict) -> list[tuple[str, float, str]]:
    """Where rmtsweep's CPU goes: the units alone, the store's theory alone, and runs with a warm cache."""
    from rmtsweep.run.plan import theory_budgets
    from rmtsweep.run.theory_cache import FolderCache
    from rmtsweep.theory.on_grid import sized_theory

    sweep = sweep_of(over)
    rows = []
    t = time.process_time()
    for delta in sweep.grid.delta:
        for gamma in sweep.grid.gamma:
            for r in range(sweep.replicates):
                unit(delta, gamma, r, tuple(over))
    rows.append(("the units alone, one loop in one process", time.process_time() - t, ""))
    cache = base / "theory-cache"
    for label in ("cold cache", "warm cache"):
        t = time.process_time()
        sized_theory(sweep, theory_budgets(), lambda fn, items: list(map(fn, items)), FolderCache(cache))
        rows.append((f"the store's theory at its size alone, in one process, {label}", time.process_time() - t, ""))
    for extra in ((), ("--in-process",)):
        tool = rmtsweep_tool(over, workers, extra, cache=cache)
        got = launch(tool, base / ("warm" + "".join(extra).replace("-", "")), total)
        missing, wrong = compare(tool.read(base / ("warm" + "".join(extra).replace("-", ""))), reference)
        if missing or wrong:
            raise SystemExit(f"rmtsweep {' '.join(extra)}: {missing} units missing, {wrong} differ")
        rows.append((" ".join(["rmtsweep run --workers", str(workers), *extra]) + ", warm theory cache",
                     got["cpu"], f"{got['end']:.1f} s to the end"))
    return rows


def print_table(tools: list[Tool], rows: dict[str, dict], total: int, n_snr: int) -> None:
    """The table of the tools' runs, and a line for each kill that did not go as planned."""
    print(f"agreement: every tool's arrays equal rmtsweep's bit for bit ({total:,} units x {n_snr} SNR)")
    print("\n| tool | version | first result | all results | CPU-s | files | disk | SIGKILL at half: results kept "
          "| rerun CPU / full run | wrong or missing after rerun |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tool in tools:
        r = rows[tool.name]
        k = r.get("kill")
        kill = (f"{k['kept']:,} of {total:,} | {100 * k['rerun_share']:.0f} % ({k['rerun_cpu']:.1f} CPU-s) | "
                f"{k['wrong']} / {k['missing']}") if k else "n/a | n/a | n/a"
        print(f"| {tool.name} | {tool.version} | {r['first']:.2f} s | {r['end']:.1f} s | {r['cpu']:.1f} | "
              f"{r['files']:,} | {r['bytes'] / 2**20:.1f} MiB ({r['allocated'] / 2**20:.1f} allocated) | {kill} |")
    for tool in tools:
        k = rows[tool.name].get("kill")
        if k and not k["killed"]:
            print(f"{tool.name}: finished before half its results were on disk: nothing was killed")
        if k and k["rerun_failed"]:
            print(f"{tool.name}: the rerun after the kill failed: {k['rerun_failed']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="d = 16, 4 replicates, rmtsweep's workers as threads, no profile")
    parser.add_argument("--d", type=int, default=None)
    parser.add_argument("--replicates", type=int, default=None)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--no-kill", action="store_true", help="skip the kill-and-rerun runs")
    args = parser.parse_args()
    d = args.d or (16 if args.quick else 300)
    replicates = args.replicates or (4 if args.quick else 48)
    over = overrides(d, replicates)
    sweep = sweep_of(over)
    g = sweep.grid
    total = len(g.delta) * len(g.gamma) * len(g.T) * len(g.weights) * replicates
    print(f"command: `python benchmarks/peers.py{''.join(' ' + a for a in sys.argv[1:])}`")
    print(f"work: theory-check {' '.join(over)}: {total:,} units (point x weights x replicate), "
          f"{args.workers} workers per tool ({'threads for rmtsweep, processes for the peers' if args.quick else 'processes'})")
    print(f"load before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    tools = [rmtsweep_tool(over, args.workers, ("--in-process",) if args.quick else ())]
    for make, name in ((pipefunc_tool, "pipefunc"), (hydra_tool, "Hydra (hydra-core, hydra-joblib-launcher)")):
        peer = make(over, args.workers)
        if peer is None:
            print(f"{name}: not installed, skipped ({INSTALL})")
        else:
            tools.append(peer)
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="peers-") as tmp:
        reference = None
        for n, tool in enumerate(tools):
            row, arrays = measure(tool, Path(tmp) / str(n), total, reference, kill=not args.no_kill)
            if reference is None:
                reference = arrays
                row["missing"], row["wrong"] = compare(arrays, reference)
            rows[tool.name] = row
        bad = {name: (r["missing"], r["wrong"]) for name, r in rows.items() if r["missing"] or r["wrong"]}
        if bad:
            raise SystemExit(f"the tools did different work (units missing, differing from rmtsweep's): {bad}")
        assert reference is not None
        print_table(tools, rows, total, len(g.snr))
        prof = [] if args.quick else profile(over, args.workers, Path(tmp) / "profile", total, reference)
    if prof:
        print("\n| where rmtsweep's CPU goes | CPU-s | note |\n|---|---|---|")
        for label, cpu, note in prof:
            print(f"| {label} | {cpu:.1f} | {note} |")
    load = os.getloadavg()
    print(f"\nload after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
    print(json.dumps({name: {k: v for k, v in r.items() if k != "killed"} for name, r in rows.items()}
                     | {"profile": {label: round(cpu, 2) for label, cpu, _ in prof}}, default=float))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("_pipefunc", "_hydra"):
        entry = run_pipefunc if sys.argv[1] == "_pipefunc" else run_hydra
        entry(Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
    else:
        main()
