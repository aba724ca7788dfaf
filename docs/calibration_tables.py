"""Print docs/results.md's calibration table: per shipped sweep, false alarms at snr = 0 and |z| > 3 rates.

    python docs/calibration_tables.py [STORE_DIR]     # runs each missing store first (about 10 min on 2 cores)

For every shipped sweep with ``snr = 0`` on its grid (the store ``STORE_DIR/<name>.zarr``, default
``store/``, made with ``rmtsweep run`` when absent), at the default detection level 0.05:

- **false alarms**: detections at ``snr = 0`` pooled over the sweep's cells (expected 0.05), and the
  fraction of cells within 3 binomial standard errors of 0.05 (the goal: at least 95 %);
- **|z| > 3** for ``lambda_1`` and the top alignment over the cells where theory applies (a finite
  z against the store's best prediction, ``compare``'s default: at ``T = 1`` cells and fixed weights over
  ``T >= 2`` the theory at the store's size, ``finite_size_*``, else the limit), beside the fraction expected
  if theory were exact: ``z`` is a Student t with ``n - 1`` degrees of
  freedom over ``n`` replicates, so each cell contributes ``2 P(t_{n-1} > 3)`` (0.3 % as ``n -> inf``,
  2.0 % at ``n = 8``);
- **no law at this size**: cells of finite-d attention over ``T >= 2``, whose weights depend on the table:
  no prediction at the store's size exists, so they are left out of the two |z| columns;
- **detection rate**: cells where ``theory_detection_rate`` is defined and the measured rate is more
  than 3 binomial standard errors from it (plus 0.03, the prediction's window bias, docs/theory.md §6.2).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import t as student_t

from rmtsweep import compare, load_sweep, run_sweep
from rmtsweep.analysis.compare import NO_LAW
from rmtsweep.shipped import sweeps as shipped_sweeps

ALPHA = 0.05


def _fraction(flags, ok) -> str:
    n = int(ok.sum())
    return f"{int((flags & ok).sum())}/{n} ({100 * float((flags & ok).sum()) / max(n, 1):.1f} %)"


def row(name: str, path: Path) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cmp = compare(path)
    rate0, n0 = cmp["detection_rate"].sel(snr=0.0), cmp["n_done"]        # n_done has no snr dimension
    ok = rate0.notnull() & (n0 > 0)
    pooled = float((rate0 * n0).where(ok).sum()) / float(n0.where(ok).sum())
    within = abs(rate0 - ALPHA) <= 3 * np.sqrt(ALPHA * (1 - ALPHA) / n0.where(n0 > 0))
    cells = [name, f"{pooled:.3f} ± {np.sqrt(ALPHA * (1 - ALPHA) / float(n0.where(ok).sum())):.3f}",
             _fraction(within, ok)]
    for what in ("lambda1", "overlap"):
        z = cmp[f"{what}_z"]                        # against the store's best prediction (finite size where stored)
        if f"{what}_reference" in cmp:              # attention over T >= 2: no law at this size, not counted
            z = z.where(cmp[f"{what}_reference"] != NO_LAW)
        n = cmp["n_done"].broadcast_like(z)
        fin = np.isfinite(z)
        expected = float(np.nanmean(np.where(fin, 2 * student_t.sf(3, np.maximum(n.values - 1, 1)), np.nan)))
        cells.append(f"{_fraction(abs(z) > 3, fin)}, expected {100 * expected:.1f} %")
    nolaw = int((cmp["lambda1_reference"] == NO_LAW).sum()) if "lambda1_reference" in cmp else 0
    cells.append(str(nolaw) if nolaw else "-")
    if "theory_detection_rate" in cmp:
        p, rate, n = cmp["theory_detection_rate"], cmp["detection_rate"], cmp["n_done"]
        held = p.notnull() & rate.notnull() & (n > 0)
        off = abs(rate - p) > 3 * np.sqrt(p * (1 - p) / n.where(n > 0)) + 0.03
        cells.append(_fraction(off, held))
    else:
        cells.append("-")
    return "| " + " | ".join(cells) + " |"


def main(directory: str) -> None:
    print("| sweep | false alarms at snr = 0 (level 0.05) | cells within 3 s.e. of 0.05 | lambda_1 abs(z) > 3 "
          "| alignment abs(z) > 3 | cells with no law at this size | detection rate off its prediction |")
    print("|---|---|---|---|---|---|---|")
    for name in sorted(shipped_sweeps()):
        sweep = load_sweep(name)
        if 0.0 not in [float(s) for s in sweep.sweep.grid.snr]:
            continue
        path = Path(directory) / f"{name.replace('/', '-')}.zarr"
        if not path.exists():
            print(f"running {name} into {path}", file=sys.stderr)
            run_sweep(sweep, path)
        print(row(name, path), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "store")
