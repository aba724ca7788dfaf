"""Print the README's finite-d numbers from the stores of ``sweeps/finite_d/`` (d = 100, 200, 400, 800).

    for f in sweeps/finite_d/d*.yaml; do rmtsweep run "$f"; done     # stores in store/finite-d-<d>.zarr
    python docs/finite_d_tables.py [STORE_DIR]

1. The finite-d prediction of the detection rate (``theory_detection_rate``, docs/theory.md §6.2,
   derived, not fitted) against the measured rate: the fraction of cells within
   ``3 sqrt(p (1 - p) / n) + 0.03`` (binomial error of ``n`` replicates at the predicted ``p``).
2. The transition SNR per d (bootstrap 95 % interval) and its d -> infinity limit from a
   finite-size-scaling fit ``t(d) = t_inf + a d^(-b)``: with ``b = 1/3`` fixed (the detection margin
   is ``O(d^-2/3)`` and the outlier leaves the bulk quadratically, so the crossing moves by
   ``O(d^-1/3)``), and with ``b`` free as a check. Weights from the bootstrap intervals.
3. ``lambda_1`` and the top alignment at a fixed SNR above the transition, extrapolated with
   ``y(d) = y_inf + c / d`` (the O(1/d) bias of a mean; fluctuations are in the standard errors), and
   held against the limit theory with z-scores.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.optimize import curve_fit

from rmtsweep import compare, open_store
from rmtsweep.analysis import mean_sem, phase_diagram

D_VALUES = (100, 200, 400, 800)
STORE = Path("store")
SNR_FIXED = 1.5


def _fit(d: np.ndarray, y: np.ndarray, se: np.ndarray, exponent: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Weighted fit of ``y_inf + a d^-b`` (``b`` fixed when given); returns (parameters, standard errors)."""
    if exponent is None:
        f = lambda x, y0, a, b: y0 + a * x ** (-b)                  # noqa: E731
        p0 = (y[-1], (y[0] - y[-1]) * d[0] ** 0.33, 0.33)
    else:
        f = lambda x, y0, a: y0 + a * x ** (-exponent)              # noqa: E731
        p0 = (y[-1], (y[0] - y[-1]) * d[0] ** exponent)
    p, cov = curve_fit(f, d, y, p0=p0, sigma=se, absolute_sigma=True, maxfev=20000)
    return p, np.sqrt(np.diag(cov))


def detection(stores: dict) -> None:
    print("\nFinite-d detection rate: cells where |measured - theory_detection_rate| <= 3 binomial s.e. + 0.03\n")
    print("| d | mean | optimal | all |")
    print("| --- | --- | --- | --- |")
    total = [0, 0]
    for d, ds in stores.items():
        cmp = compare(ds)
        p, n = cmp["theory_detection_rate"], cmp["n_done"]
        ok = abs(cmp["detection_rate"] - p) <= 3 * np.sqrt(p * (1 - p) / n) + 0.03
        cells = [f"{int(ok.sel(weights=w).sum())}/{ok.sel(weights=w).size}" for w in ("mean", "optimal")]
        total[0] += int(ok.sum())
        total[1] += ok.size
        print(f"| {d} | {cells[0]} | {cells[1]} | {int(ok.sum())}/{ok.size} ({100 * float(ok.mean()):.0f} %) |")
    print(f"\nall d: {total[0]}/{total[1]} ({100 * total[0] / total[1]:.1f} %)")


def transitions(stores: dict) -> None:
    tables = {d: phase_diagram(ds, n_boot=2000, seed=1).set_index("weights") for d, ds in stores.items()}
    print("\nTransition SNR (bootstrap 95 % interval) and its d -> infinity limit\n")
    print("| weights | " + " | ".join(f"d = {d}" for d in D_VALUES) +
          " | limit, b = 1/3 | free b: limit, b | theory_snr_sample |")
    print("|" + " --- |" * (len(D_VALUES) + 4))
    for w in ("mean", "optimal"):
        rows = [tables[d].loc[w] for d in D_VALUES]
        t = np.array([r.transition_snr for r in rows])
        se = np.array([(r.ci_high - r.ci_low) / (2 * 1.96) for r in rows])
        se = np.where(se > 0, se, np.nanmax(se))                       # a zero-width interval: the largest
        (t_inf, _), (t_se, _) = _fit(np.array(D_VALUES, float), t, se, 1 / 3)
        try:
            (f_inf, _, b), (f_se, _, b_se) = _fit(np.array(D_VALUES, float), t, se, None)
            free = f"{f_inf:.3f} ± {f_se:.3f}, b = {b:.2f} ± {b_se:.2f}"
        except RuntimeError:
            free = "no fit"
        theory = rows[0].theory_snr_sample
        print(f"| {w} | " + " | ".join(f"{r.transition_snr:.3f} ({r.ci_low:.3f}-{r.ci_high:.3f})" for r in rows) +
              f" | {t_inf:.3f} ± {t_se:.3f} ({100 * (t_inf / theory - 1):+.1f} %) | {free} | {theory:.3f} |")


def limits(stores: dict) -> None:
    print(f"\nlambda_1 / kappa and top alignment at snr {SNR_FIXED}, extrapolated as y_inf + c/d\n")
    print("| weights | quantity | " + " | ".join(f"d = {d}" for d in D_VALUES) + " | limit | theory | z |")
    print("|" + " --- |" * (len(D_VALUES) + 5))
    for w in ("mean", "optimal"):
        for name, what in (("lambda1", "lambda_1/kappa"), ("overlap", "alignment")):
            ys, ses, theory = [], [], None
            for ds in stores.values():
                c = ds.sel(delta=0.5, gamma=0.5, T=16, weights=w, snr=SNR_FIXED)
                k = float(c["theory_kappa"])
                x = c["eigenvalues"].sel(k=1) / k if name == "lambda1" else c["overlap"].sel(k=1)
                m, s = mean_sem(x, c["done"])
                ys.append(float(m))
                ses.append(float(s))
                theory = float(c["theory_outlier"]) / k if name == "lambda1" else float(c["theory_overlap"])
            (y_inf, _), (y_se, _) = _fit(np.array(D_VALUES, float), np.array(ys), np.array(ses), 1.0)
            print(f"| {w} | {what} | " + " | ".join(f"{y:.4f} ± {s:.4f}" for y, s in zip(ys, ses)) +
                  f" | {y_inf:.4f} ± {y_se:.4f} | {theory:.4f} | {(y_inf - theory) / y_se:+.1f} |")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        STORE = Path(sys.argv[1])
    stores = {d: open_store(STORE / f"finite-d-{d}.zarr") for d in D_VALUES}
    detection(stores)
    transitions(stores)
    limits(stores)
