"""Measure the false-alarm rate of the scheduled Monte Carlo null (docs/theory.md §3.7) on new seeds.

    python docs/mc_null_tables.py [replicates] [seeds] [null_replicates]   # defaults 256, 8, 99; store/mc-null/

Finite-d attention (``tau = 1``, scale ``d``) over ``T = 2, 3, 4, 8`` at ``d = 200``, ``delta = gamma = 0.5``,
under the decay correlation ``r = 0.5``, at ``snr = 0`` only, one store per seed (seeds new to this table).
Each run schedules ``null_replicates`` null replicates per point; :func:`rmtsweep.analysis.compare` tests the
store's regular ``snr = 0`` replicates (draws independent of them) against their order statistic, and its
``detection_rate`` at ``snr = 0`` is the false-alarm rate. Each row pools the seeds per ``T``; the last pools
every ``T``. Exchangeability predicts ``(m + 1 - k) / (m + 1)`` with ``k = ceil((m + 1)(1 - alpha))``. The
standard error adds the thresholds' own spread (``p (1 - p) / (m + 2)`` per threshold) to the binomial one.
Beside: the previous rule's rates at 0.05 (the order statistic of another seed's ``snr = 0`` replicates, 256
per threshold, 8 seeds) and the cubic's Tracy-Widom threshold, which these cells got before that.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from rmtsweep import load_sweep, run_sweep
from rmtsweep.analysis.compare import compare

T_VALUES = (2, 3, 4, 8)
LEVELS = (0.05, 0.01)
ROOT = Path("store/mc-null")
# docs/theory.md §3.7 before the run scheduled its null: per T, the snr = 0 replicates of the next seed
PREVIOUS = {2: "0.0449 ± 0.0068", 3: "0.0454 ± 0.0068", 4: "0.0479 ± 0.0068", 8: "0.0439 ± 0.0068",
            None: "0.0455 ± 0.0034"}
CUBIC = {2: "0.1592", 3: "0.1187", 4: "0.0962", 8: "0.0713", None: "0.1113"}


def sweep(seed: int, replicates: int, null_replicates: int) -> dict:
    return {"name": f"mc-null-run-{replicates}-{null_replicates}-{seed}", "d": 200, "replicates": replicates,
            "replicates_per_task": min(16, replicates), "null_replicates": null_replicates, "seed": 91_000 + seed, "top_k": 1,
            "correlation": {"model": "decay", "r": 0.5}, "table_centering": "class",
            "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0], "T": list(T_VALUES),
                     "weights": [{"scheme": "attention", "tau": 1.0}]}}


def store(seed: int, replicates: int, null_replicates: int) -> Path:
    from distributed import Client, LocalCluster

    data = sweep(seed, replicates, null_replicates)
    path = ROOT / f"{data['name']}.zarr"
    if not path.exists():
        ROOT.mkdir(parents=True, exist_ok=True)
        (ROOT / f"{data['name']}.yaml").write_text(yaml.safe_dump(data))
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
                Client(c) as client:
            run_sweep(load_sweep(ROOT / f"{data['name']}.yaml"), path, client, progress=False)
    return path


def exact_level(m: int, alpha: float) -> float:
    """The order statistic's level for an exchangeable draw: ``(m + 1 - k) / (m + 1)``."""
    return (m + 1 - math.ceil((m + 1) * (1 - alpha) - 1e-9)) / (m + 1)


def main(replicates: int = 256, seeds: int = 8, null_replicates: int = 99) -> None:
    start = time.process_time()
    paths = [store(s, replicates, null_replicates) for s in range(seeds)]
    rates = {a: [compare(p, false_alarm=a) for p in paths] for a in LEVELS}
    usable = {a: all(bool((c["detection_null"] == 3).all()) for c in rates[a]) for a in LEVELS}   # scheduled null
    print(f"False alarms of the scheduled Monte Carlo null on new seeds: attention(tau=1), d = 200, decay r = 0.5, "
          f"{null_replicates} scheduled null replicates per threshold, {replicates} new null draws per store, "
          f"{seeds} seeds; exact levels {', '.join(f'{exact_level(null_replicates, a):.4f}' for a in LEVELS)}; "
          f"{time.process_time() - start:.0f} CPU-s in this process\n")
    print("| T | " + " | ".join(f"level {a:g}: rate (hits/draws) ± s.e." for a in LEVELS) +
          " | previous rule at 0.05 (another seed's snr = 0 replicates) | the cubic's at 0.05 (before) |")
    print("|" + " --- |" * (len(LEVELS) + 3))
    for T in (*T_VALUES, None):
        cells = []
        for a in LEVELS:
            if not usable[a]:
                cells.append("no threshold: too few null replicates for the level")
                continue
            hit = np.concatenate([(c["detection_rate"] * c["n_done"]).sel(snr=0.0).values.ravel() if T is None else
                                  [float((c["detection_rate"] * c["n_done"]).sel(snr=0.0, T=T).squeeze())]
                                  for c in rates[a]])
            n = np.concatenate([c["n_done"].values.ravel() if T is None else
                                [float(c["n_done"].sel(T=T).squeeze())] for c in rates[a]])
            hits, draws, p = int(round(hit.sum())), int(n.sum()), exact_level(null_replicates, a)
            se = np.sqrt(p * (1 - p) * (1 / draws + 1 / (n.size * (null_replicates + 2))))
            cells.append(f"{hits / draws:.4f} ({hits}/{draws}) ± {se:.4f}")
        print(f"| {'all' if T is None else T} | " + " | ".join(cells) + f" | {PREVIOUS[T]} | {CUBIC[T]} |")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:4]))
