"""Print the finite-d attention numbers of docs/results.md from the stores of the shipped attention sweeps.

    for f in sweeps/attention/d*.yaml sweeps/paper-attention*.yaml; do rmtsweep run "$f"; done
    python docs/attention_tables.py          # stores are read from store/<sweep name>.zarr

1. Convergence in d (``sweeps/attention/``, d = 100 ... 1600): per tau, the distance of the
   per-sequence weights to causal(tau) and the bias of lambda_1 against the causal(tau) theory, with
   the exponent of a power-law fit ``c d^-b`` (weighted least squares on the logs, weights from the
   standard errors; the exponent's standard error from the fit's covariance, scaled by the reduced
   chi-square when that exceeds 1).
2. ``scale: sqrt_d``: lambda_1 against the mean-pooling limit and against causal(tau), over d.
3. The ranking at d = 400 (``sweeps/paper-attention*.yaml``): transition SNR (bootstrap 95 % interval)
   and top alignment per scheme, on the prefix and the decay correlation, and the finite-d gap of
   the realised alpha/kappa against the limit's, paired on the same draws as causal(tau).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import xarray as xr

from rmtsweep import open_store
from rmtsweep.analysis import mean_sem, phase_diagram

D_VALUES = (100, 200, 400, 800, 1600)
TAUS = (0.5, 1.0, 2.0, 4.0)
STORE = Path("store")


def _mc(x: xr.DataArray, done: xr.DataArray) -> tuple[float, float]:
    mean, sem = mean_sem(x, done)
    return float(mean), float(sem)


def power_law(d: np.ndarray, y: np.ndarray, se: np.ndarray) -> tuple[float, float, float]:
    """Fit ``y = c d^-b``: returns (b, its standard error, c), weighted by the standard errors of ``y``."""
    x, ly, sl = np.log(d), np.log(y), se / y
    A = np.stack([np.ones_like(x), -x], axis=1) / sl[:, None]
    coef, res, *_ = np.linalg.lstsq(A, ly / sl, rcond=None)
    cov = np.linalg.inv(A.T @ A)
    dof = len(x) - 2
    chi2 = float(res[0]) / dof if res.size and dof > 0 else 1.0
    return float(coef[1]), float(np.sqrt(cov[1, 1] * max(chi2, 1.0))), float(np.exp(coef[0]))


def convergence() -> None:
    stores = {d: open_store(STORE / f"attention-d{d}.zarr").sel(delta=0.5, gamma=0.5, T=16)
              for d in D_VALUES}
    for snr in (1.5, 3.0):
        print(f"\nConvergence to causal(tau), scale: d, snr = {snr} (mean ± s.e. over 16 replicates; prefix L = 4)\n")
        print("| tau | " + " | ".join(f"d = {d}" for d in D_VALUES) + " | fitted exponent b (d^-b) |")
        print("|" + " --- |" * (len(D_VALUES) + 2))
        for tau in TAUS:
            w = f"attention(tau={tau:g})"
            vals = [_mc(ds["attention_distance"].sel(weights=w, snr=snr), ds["done"].sel(weights=w))
                    for ds in stores.values()]
            b, bse, _ = power_law(np.array(D_VALUES, float), *map(np.array, zip(*vals)))
            print(f"| {tau:g} | " + " | ".join(f"{m:.4f} ± {s:.4f}" for m, s in vals) + f" | {b:.3f} ± {bse:.3f} |")
        print(f"\nlambda_1 bias against the causal(tau) theory, (mean lambda_1 - theory) / kappa, snr = {snr}\n")
        print("| tau | " + " | ".join(f"d = {d}" for d in D_VALUES) + " |")
        print("|" + " --- |" * (len(D_VALUES) + 1))
        for tau in TAUS:
            w = f"attention(tau={tau:g})"
            cells = []
            for ds in stores.values():
                c = ds.sel(weights=w, snr=snr)
                k = float(c["theory_kappa"])
                m, s = _mc((c["eigenvalues"].sel(k=1) - c["theory_outlier"]) / k, c["done"])
                cells.append(f"{m:+.3f} ± {s:.3f}")
            print(f"| {tau:g} | " + " | ".join(cells) + " |")


def sqrt_d() -> None:
    print("\nscale: sqrt_d (tau = 1): lambda_1 / kappa against the mean-pooling limit and against causal(1)\n")
    print("| d | lambda_1/kappa MC | mean-pooling theory | causal(1) theory | distance of w to causal(1) |")
    print("| --- | --- | --- | --- | --- |")
    for d in D_VALUES:
        ds = open_store(STORE / f"attention-d{d}.zarr").sel(delta=0.5, gamma=0.5, T=16, snr=3.0)
        c, ref = ds.sel(weights="attention(tau=1, scale=sqrt_d)"), ds.sel(weights="attention(tau=1)")
        k = float(c["theory_kappa"])
        m, s = _mc(c["eigenvalues"].sel(k=1) / k, c["done"])
        dist, dse = _mc(c["attention_distance"], c["done"])
        print(f"| {d} | {m:.3f} ± {s:.3f} | {float(c['theory_outlier']) / k:.3f} | "
              f"{float(ref['theory_outlier']) / float(ref['theory_kappa']):.3f} | {dist:.3f} ± {dse:.3f} |")


def ranking() -> None:
    for name in ("paper-attention", "paper-attention-decay"):
        ds = open_store(STORE / f"{name}.zarr")
        table = phase_diagram(ds, n_boot=1000, seed=0).set_index("weights")
        c = ds.sel(delta=0.5, gamma=0.5, T=16)
        print(f"\n{name} ({ds.attrs['correlation']}, d = {ds.attrs['d']}, {ds.sizes['replicate']} replicates)\n")
        print("| weights | transition SNR (95 % CI) | theory (sample) | top alignment at snr 1 | theory | "
              "alpha/kappa at snr 0 / 3 | limit |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for w in ds["weights"].values:
            cw, row = c.sel(weights=w), table.loc[w]
            o, ose = _mc(cw["overlap"].sel(k=1, snr=1.0), cw["done"])
            if "kappa_snr" in cw and np.isfinite(cw["kappa_snr"].values).any():
                ratio = cw["alpha_snr"] / cw["kappa_snr"]
                ak = " / ".join("{:.3f} ± {:.3f}".format(*_mc(ratio.sel(snr=s), cw["done"])) for s in (0.0, 3.0))
            else:
                ak = "{:.3f} ± {:.3f}".format(*_mc(cw["alpha"] / cw["kappa"], cw["done"]))
            print(f"| {w} | {row.transition_snr:.3f} ({row.ci_low:.3f}-{row.ci_high:.3f}) | "
                  f"{row.theory_snr_sample:.3f} | {o:.3f} ± {ose:.3f} | {float(cw['theory_overlap'].sel(snr=1.0)):.3f} | "
                  f"{ak} | {float(cw['theory_alpha'] / cw['theory_kappa']):.3f} |")
        tau = [w for w in ds["weights"].values if w.startswith("causal")][0]
        att = tau.replace("causal", "attention")
        gap = (c.sel(weights=att)["alpha_snr"] / c.sel(weights=att)["kappa_snr"]
               - (c.sel(weights=tau)["alpha"] / c.sel(weights=tau)["kappa"]))
        cells = ", ".join("snr {:g}: {:+.4f} ± {:.4f}".format(s, *_mc(gap.sel(snr=s), c.sel(weights=att)["done"]))
                          for s in (0.0, 1.5, 3.0))
        print(f"\nfinite-d gap of alpha/kappa, {att} minus {tau} on the same draws: {cells}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        STORE = Path(sys.argv[1])
    convergence()
    sqrt_d()
    ranking()
