"""Measure the false-alarm rate of the Monte Carlo null (docs/theory.md §3.7) on new null draws.

    python docs/mc_null_tables.py [replicates] [seeds]     # defaults 256 and 8; stores under store/mc-null/

Finite-d attention (``tau = 1``, scale ``d``) over ``T = 2, 3, 4, 8`` at ``d = 200``, ``delta = gamma = 0.5``,
under the decay correlation ``r = 0.5``, at ``snr = 0`` only. One store per seed. The thresholds of seed ``i``
are :func:`rmtsweep.analysis.compare`'s ``detection_threshold`` at each level (the order statistic of all its
null replicates, the threshold a new draw faces); the new draws are the replicates of seed ``i + 1`` (cyclic).
Each table row pools the ``seeds`` pairs per ``T``; the last pools every ``T``. The standard error adds
the threshold's own spread (``alpha (1 - alpha) / (n + 2)`` per threshold) to the binomial one of the draws.
The last column holds the same draws against the cubic's Tracy-Widom threshold at 0.05, which these cells got
before (:func:`rmtsweep.analysis.detection.threshold`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import yaml

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.analysis.compare import compare
from rmtsweep.analysis.detection import Detection, d_of, threshold

T_VALUES = (2, 3, 4, 8)
LEVELS = (0.05, 0.01)
ROOT = Path("store/mc-null")


def sweep(seed: int, replicates: int) -> dict:
    return {"name": f"mc-null-{replicates}-{seed}", "d": 200, "replicates": replicates, "replicates_per_task": 16,
            "seed": 90_000 + seed, "top_k": 1, "correlation": {"model": "decay", "r": 0.5},
            "table_centering": "class",
            "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0], "T": list(T_VALUES),
                     "weights": [{"scheme": "attention", "tau": 1.0}]}}


def store(seed: int, replicates: int) -> Path:
    from distributed import Client, LocalCluster

    name = sweep(seed, replicates)["name"]
    path = ROOT / f"{name}.zarr"
    if not path.exists():
        ROOT.mkdir(parents=True, exist_ok=True)
        (ROOT / f"{name}.yaml").write_text(yaml.safe_dump(sweep(seed, replicates)))
        with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
                Client(c) as client:
            run_sweep(load_sweep(ROOT / f"{name}.yaml"), path, client, progress=False)
    return path


def main(replicates: int = 256, seeds: int = 8) -> None:
    paths = [store(s, replicates) for s in range(seeds)]
    lam = [open_store(p)["eigenvalues"].sel(k=1, snr=0.0, drop=True).squeeze(drop=True).load() for p in paths]
    print(f"False alarms of the Monte Carlo null on new seeds: attention(tau=1), d = 200, decay r = 0.5, "
          f"{replicates} null replicates per threshold, {seeds} threshold/new-draw pairs\n")
    print("| T | " + " | ".join(f"level {a:g}: rate (hits/draws) ± s.e." for a in LEVELS) +
          " | the cubic's Tracy-Widom threshold at 0.05 (the rule before) |")
    print("|" + " --- |" * (len(LEVELS) + 2))
    first = open_store(paths[0])
    cubic = threshold(first, d_of(first), Detection(false_alarm=0.05)).squeeze(drop=True)
    limits = {a: [compare(p, false_alarm=a)["detection_threshold"].squeeze(drop=True) for p in paths] for a in LEVELS}
    pooled = {a: [0, 0] for a in LEVELS}
    for T in (*T_VALUES, None):
        cells = []
        for a in LEVELS:
            hits = draws = 0
            if T is not None:
                for i in range(seeds):
                    limit = float(limits[a][i].sel(T=T))
                    new = lam[(i + 1) % seeds].sel(T=T).values
                    hits, draws = hits + int((new > limit).sum()), draws + new.size
                pooled[a][0] += hits
                pooled[a][1] += draws
            else:
                hits, draws = pooled[a]
            thresholds = seeds * (len(T_VALUES) if T is None else 1)
            se = np.sqrt(a * (1 - a) * (1 / draws + 1 / (thresholds * (replicates + 2))))
            cells.append(f"{hits / draws:.4f} ({hits}/{draws}) ± {se:.4f}")
        shown = T_VALUES if T is None else (T,)
        old = np.concatenate([x.sel(T=t).values > float(cubic.sel(T=t)) for x in lam for t in shown])
        print(f"| {'all' if T is None else T} | " + " | ".join(cells) + f" | {old.mean():.4f} ({int(old.sum())}/{old.size}) |")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:3]))
