"""Print the theory-vs-simulation tables of docs/results.md from the stores of the shipped sweeps.

    for f in sweeps/theory-check.yaml sweeps/theory-check-uncentred.yaml sweeps/convergence/d*.yaml; do
        rmtsweep run "$f"; done
    python docs/theory_tables.py
"""

from __future__ import annotations

import xarray as xr

from rmtsweep import open_store
from rmtsweep.analysis import mean_sem


def _mc(x: xr.DataArray, done: xr.DataArray) -> tuple[float, float]:
    """Mean ± standard error over the done replicates (the comparison's estimator)."""
    mean, sem = mean_sem(x, done)
    return float(mean), float(sem)


def rows(path: str, points: list[tuple[float, float, str, float]], signal_best: bool) -> None:
    ds = open_store(path)
    uncentred = ds.attrs["table_centering"] == "none"
    print(f"\n{path}  (lambda_1 in units of kappa; mean ± standard error over {ds.sizes['replicate']} replicates)\n")
    head = "| delta, gamma | weights | snr | rho | lambda_1/kappa MC | theory |"
    head += (" paper | signal alignment MC | theory | paper |" if uncentred else " top alignment MC | theory |")
    print(head)
    print("|" + " --- |" * (head.count("|") - 1))
    for delta, gamma, w, snr in points:
        c = ds.sel(delta=delta, gamma=gamma, weights=w, snr=snr, T=16)
        k = float(c.theory_kappa)
        lam, lse = _mc(c.eigenvalues.sel(k=1) / k, c.done)
        ov = c.overlap.max("k") if signal_best else c.overlap.sel(k=1)
        o, ose = _mc(ov, c.done)
        line = (f"| {delta:g}, {gamma:g} | {w} | {snr:g} | {float(c.theory_rho):.3g} | {lam:.3f} ± {lse:.3f} | "
                f"{float(c.theory_outlier) / k:.3f} |")
        if uncentred:
            line += f" {float(c.paper_outlier) / k:.3f} | {o:.3f} ± {ose:.3f} | {float(c.theory_overlap):.3f} | " \
                    f"{float(c.paper_overlap):.3f} |"
        else:
            line += f" {o:.3f} ± {ose:.3f} | {float(c.theory_overlap):.3f} |"
        print(line)


def convergence() -> None:
    print("\n| d | lambda_1/kappa at SNR 6 | theory | rel. error | alignment | theory | "
          "largest bulk eigenvalue at SNR 0 | theory |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for d in (400, 800, 1600):
        c = open_store(f"store/convergence-d{d}.zarr").sel(delta=0.25, gamma=1.0, T=16, weights="optimal")
        k = float(c.theory_kappa)
        lam, lse = _mc(c.eigenvalues.sel(k=1, snr=6.0) / k, c.done)
        th = float(c.theory_outlier.sel(snr=6.0)) / k
        o, ose = _mc(c.overlap.sel(k=1, snr=6.0), c.done)
        edge, ese = _mc(c.eigenvalues.sel(k=1, snr=0.0) / k, c.done)
        print(f"| {d} | {lam:.3f} ± {lse:.3f} | {th:.3f} | {100 * (lam / th - 1):+.2f} % | {o:.4f} ± {ose:.4f} | "
              f"{float(c.theory_overlap.sel(snr=6.0)):.4f} | {edge:.3f} ± {ese:.3f} | "
              f"{float(c.theory_edge) / k:.3f} |")


if __name__ == "__main__":
    rows("store/theory-check.zarr", [(0.5, 0.5, "mean", 0.0), (0.5, 0.5, "mean", 6.0), (0.5, 0.5, "optimal", 1.5),
                                     (0.5, 0.5, "harmonic", 3.0), (1.0, 0.25, "optimal", 6.0),
                                     (0.25, 1.0, "mean", 6.0), (0.25, 1.0, "optimal", 6.0)], signal_best=False)
    rows("store/theory-check-uncentred.zarr", [(0.5, 0.5, "mean", 0.0), (0.5, 0.5, "mean", 6.0),
                                               (0.5, 0.5, "optimal", 6.0), (1.0, 0.25, "mean", 6.0),
                                               (1.0, 0.25, "optimal", 0.0)], signal_best=True)
    convergence()
