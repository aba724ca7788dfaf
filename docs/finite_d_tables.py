"""Print the finite-d numbers of docs/results.md from the store of ``sweeps/finite-d.yaml`` (d = 100, 200, 400, 800).

    rmtsweep run finite-d                      # store/finite-d.zarr, about 15 s on 2 cores
    python docs/finite_d_tables.py [STORE]

1. The finite-d prediction of the detection rate (``theory_detection_rate``, docs/theory.md §6.2,
   derived, not fitted) against the measured rate: the fraction of cells within
   ``3 sqrt(p (1 - p) / n) + 0.03`` (binomial error of ``n`` replicates at the predicted ``p``).
2. The transition SNR per d (± bootstrap s.e.) and the comparison's ``transition_snr_limit``: a fit
   ``t(d) = t_inf + a d^(-b)`` with ``b`` the exponent of the store's own prediction over these d
   (``transition_snr_limit_exponent``; :mod:`rmtsweep.analysis.limits`), and with ``b = 1/3`` (the
   asymptotic exponent) and ``b`` free as checks.
3. ``lambda_1`` and the top alignment at a fixed SNR above the transition: ``lambda1_limit`` and
   ``overlap_limit`` (``y_inf + c/d``), held against the limit theory with z-scores.
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.optimize import curve_fit

from rmtsweep import compare, open_store
from rmtsweep.analysis.limits import fit_line

STORE = "store/finite-d.zarr"
SNR_FIXED = 1.5


def _free_exponent_fit(d: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[float, float]:
    """Limit and its standard error of a weighted fit ``y_inf + a d^-b`` with ``b`` free (a check)."""
    f = lambda x, y0, a, b: y0 + a * x ** (-b)                      # noqa: E731
    p, cov = curve_fit(f, d, y, p0=(y[-1], (y[0] - y[-1]) * d[0] ** 0.33, 0.33), sigma=se, absolute_sigma=True,
                       maxfev=20000)
    return p[0], float(np.sqrt(cov[0, 0]))


def main(path: str) -> None:
    cmp = compare(open_store(path)).squeeze(["delta", "gamma", "T"], drop=True)
    d = cmp["d"].values
    weights = [str(w) for w in cmp["weights"].values]
    print("\nFinite-d detection rate: cells where |measured - theory_detection_rate| <= 3 binomial s.e. + 0.03\n")
    print("| d | " + " | ".join(weights) + " | all |")
    print("|" + " --- |" * (len(weights) + 2))
    p, n = cmp["theory_detection_rate"], cmp["n_done"]
    ok = abs(cmp["detection_rate"] - p) <= 3 * np.sqrt(p * (1 - p) / n) + 0.03
    for x in d:
        o = ok.sel(d=x)
        cells = [f"{int(o.sel(weights=w).sum())}/{o.sel(weights=w).size}" for w in weights]
        print(f"| {x} | " + " | ".join(cells) + f" | {int(o.sum())}/{o.size} ({100 * float(o.mean()):.0f} %) |")
    print(f"\nall d: {int(ok.sum())}/{ok.size} ({100 * float(ok.mean()):.1f} %)")

    print("\nTransition SNR (± bootstrap s.e.) and its d -> infinity limit\n")
    print("| weights | " + " | ".join(f"d = {x}" for x in d) +
          " | limit (b from theory) | b = 1/3 | free b | theory_snr_sample |")
    print("|" + " --- |" * (len(d) + 5))
    for w in weights:
        c = cmp.sel(weights=w)
        t, se = c["transition_snr_empirical"].values, c["transition_snr_sem"].values
        th, b = float(c["transition_snr_theory"].max()), float(c["transition_snr_limit_exponent"])
        lim, lim_se = float(c["transition_snr_limit"]), float(c["transition_snr_limit_sem"])
        third = fit_line(t, se, d.astype(float) ** (-1 / 3))
        try:
            free = "{:.3f} ± {:.3f}".format(*_free_exponent_fit(d.astype(float), t, se))
        except RuntimeError:
            free = "no fit"
        print(f"| {w} | " + " | ".join(f"{a:.3f} ± {s:.3f}" for a, s in zip(t, se)) +
              f" | {lim:.3f} ± {lim_se:.3f} (b = {b:.2f}; {100 * (lim / th - 1):+.1f} %, z = "
              f"{float(c['transition_snr_limit_z']):+.1f}) | {third[0]:.3f} ± {third[1]:.3f} "
              f"({100 * (third[0] / th - 1):+.1f} %) | {free} | {th:.3f} |")

    print(f"\nlambda_1 / kappa and top alignment at snr {SNR_FIXED}: lambda1_limit, overlap_limit (y_inf + c/d)\n")
    print("| weights | quantity | " + " | ".join(f"d = {x}" for x in d) + " | limit | theory | z |")
    print("|" + " --- |" * (len(d) + 5))
    kappa = open_store(path)["theory_kappa"].squeeze(drop=True)
    for w in weights:
        c = cmp.sel(weights=w, snr=SNR_FIXED)
        for name, what in (("lambda1", "lambda_1/kappa"), ("overlap", "alignment")):
            k = float(kappa.sel(weights=w)) if name == "lambda1" else 1.0
            ys = " | ".join(f"{float(c[f'{name}_mean'].sel(d=x)) / k:.4f} ± {float(c[f'{name}_sem'].sel(d=x)) / k:.4f}"
                            for x in d)
            print(f"| {w} | {what} | {ys} | {float(c[f'{name}_limit']) / k:.4f} ± {float(c[f'{name}_limit_sem']) / k:.4f}"
                  f" | {float(c[f'limit_{name}_theory']) / k:.4f} | {float(c[f'{name}_limit_z']):+.1f} |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else STORE)
