"""The front door: how long a user waits before rmtsweep answers, and the analysis of a large store.

Run from the repository root::

    python benchmarks/front_door.py            # a 100,000-point store (about 2 minutes on 2 cores)
    python benchmarks/front_door.py --quick    # a 10,000-point store, same code paths

Prints one Markdown table (what, ours, baseline, ratio) and a JSON line of the raw numbers. Each
process-level time is the median of five runs; the baselines are what the same answer costs without
rmtsweep's work (a bare interpreter, importing xarray) or the previous algorithm (the phase
diagram's per-line bootstrap loop, kept here as the baseline). Nothing here is a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from scale import trivial_sweep  # noqa: E402


def wall(cmd: list[str], repeats: int = 5, cwd: Path | None = None) -> float:
    """Median wall seconds of ``cmd`` as a whole process."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_line_loop(hits: np.ndarray, snr: np.ndarray, n_boot: int, level: float, seed: int) -> np.ndarray:
    """The phase diagram's bootstrap as it was: one line at a time (replicates drawn with replacement)."""
    from rmtsweep.analysis.transition import crossing, crossing_step
    rng = np.random.default_rng(seed)
    out = np.empty((hits.shape[0], 4))
    for i, h in enumerate(hits):
        point = float(crossing(h.mean(axis=0), snr))
        rates = h[rng.integers(0, h.shape[0], size=(n_boot, h.shape[0]))].mean(axis=1)
        boot = crossing(rates, snr)
        censored = np.isnan(boot)
        ordered = np.where(censored, np.where(rates[:, 0] >= 0.5, -np.inf, np.inf), boot)
        tail = (1 - level) / 2
        lo, hi = np.quantile(ordered, [tail, 1 - tail], method="inverted_cdf")
        lo, hi = (v if np.isfinite(v) else np.nan for v in (lo, hi))
        if np.isfinite(point):
            left, right = (float(v) for v in crossing_step(h.mean(axis=0), snr))
            lo, hi = min(lo, left), max(hi, right)
        out[i] = point, lo, hi, censored.mean()
    return out


def bootstrap(lines: int, replicates: int, n_snr: int, n_boot: int = 1000) -> dict:
    """Ours (all lines at once) against the per-line loop on the same synthetic lines; the point estimates
    must agree exactly (they use no resampling), the intervals in law."""
    from rmtsweep.analysis.transition import bootstrap_intervals
    rng = np.random.default_rng(1)
    snr = np.linspace(0, 4, n_snr)
    t = rng.uniform(1, 3, size=(lines, 1, 1))
    hits = (rng.random((lines, replicates, n_snr)) < 1 / (1 + np.exp(-(snr - t) / 0.3))).astype(float)
    t0 = time.perf_counter()
    ours = np.column_stack(bootstrap_intervals(hits, snr, n_boot, 0.95, np.random.default_rng(0)))
    t_ours = time.perf_counter() - t0
    sample = min(lines, 2000)                        # the loop on a sample of lines, scaled to all of them
    t0 = time.perf_counter()
    loop = per_line_loop(hits[:sample], snr, n_boot, 0.95, 0)
    t_loop = (time.perf_counter() - t0) * lines / sample
    same_points = bool(np.array_equal(ours[:sample, 0], loop[:, 0], equal_nan=True))
    width = np.nanmean(ours[:sample, 2] - ours[:sample, 1]), np.nanmean(loop[:, 2] - loop[:, 1])
    return {"lines": lines, "replicates": replicates, "ours": t_ours, "loop": t_loop, "loop_sampled_lines": sample,
            "same_points": same_points, "mean_width_ours": float(width[0]), "mean_width_loop": float(width[1])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    q = p.parse_args(argv).quick
    py, cli = sys.executable, [sys.executable, "-m", "rmtsweep.cli"]
    out: dict = {}
    out["bare_python"] = wall([py, "-c", "pass"])
    out["help"] = wall([*cli, "--help"])
    out["import_xarray"] = wall([py, "-c", "import xarray"])
    out["import_rmtsweep"] = wall([py, "-c", "import rmtsweep"])
    out["import_everything"] = wall([py, "-c", "import rmtsweep.run, rmtsweep.analysis.compare"])
    out["bootstrap"] = bootstrap(10_000 if q else 100_000, 1, 20)            # one replicate: no draws needed
    out["bootstrap_48"] = bootstrap(1_000 if q else 5_000, 48, 20)
    grid = (10, 10, 100) if q else (20, 50, 100)                    # delta x gamma x T points
    with tempfile.TemporaryDirectory(prefix="rmtsweep-front-") as tmp:
        tmp = Path(tmp)
        sweep = trivial_sweep("front", *grid)
        (tmp / "front.yaml").write_text(yaml.safe_dump(sweep))
        store = tmp / "front.zarr"
        subprocess.run([*cli, "run", str(tmp / "front.yaml"), "--store", str(store), "--workers", "2",
                        "--no-progress"], check=True, capture_output=True)
        out["points"] = int(np.prod(grid))
        out["status"] = wall([*cli, "status", str(store)], repeats=3)
        out["phase_export"] = wall([*cli, "export", str(store), "--phase-diagram", "--out", str(tmp / "p.csv")],
                                   repeats=1)
    b, b48 = out["bootstrap"], out["bootstrap_48"]
    rows = [
        ("`rmtsweep --help`", out["help"], out["bare_python"], "a bare `python -c pass`"),
        ("`import rmtsweep`", out["import_rmtsweep"], out["import_everything"],
         "the whole package, as the eager `import rmtsweep` did: `import rmtsweep.run, rmtsweep.analysis.compare`"),
        ("`import rmtsweep`", out["import_rmtsweep"], out["import_xarray"], "`import xarray`, which it needs for ds.rmt"),
        (f"phase-diagram bootstrap, {b['lines']:,} lines x 1 replicate, 1000 resamples", b["ours"], b["loop"],
         f"the per-line loop (timed on {b['loop_sampled_lines']} lines, scaled)"),
        (f"phase-diagram bootstrap, {b48['lines']:,} lines x 48 replicates", b48["ours"], b48["loop"],
         f"the per-line loop (timed on {b48['loop_sampled_lines']} lines, scaled)"),
        (f"`rmtsweep status`, {out['points']:,}-point store", out["status"], None, ""),
        (f"`rmtsweep export --phase-diagram`, {out['points']:,}-point store (1 replicate)", out["phase_export"],
         None, ""),
    ]
    print(f"Command: `python benchmarks/front_door.py{' --quick' if q else ''}`  (machine: {os.cpu_count()} cores)\n")
    print("| what | ours | baseline | ratio |")
    print("|---|---|---|---|")
    for what, ours, base, label in rows:
        ratio = f"{base / ours:.1f}x faster" if base and base > ours else (f"{ours / base:.1f}x the baseline" if base
                                                                          else "n/a")
        print(f"| {what} | {ours:.2f} s | {f'{base:.2f} s ({label})' if base else 'n/a'} | {ratio} |")
    print(f"\npoint estimates identical to the loop's: {b['same_points'] and b48['same_points']}; mean interval width "
          f"ours/loop: {b48['mean_width_ours']:.3f}/{b48['mean_width_loop']:.3f} (48 replicates)")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
