"""Print the T = 1 alignment numbers of docs/results.md from the store of ``sweeps/finite-t-alignment.yaml``.

    rmtsweep run finite-t-alignment            # store/finite-t-alignment.zarr, about 30 s on 2 cores
    python docs/finite_t_tables.py [STORE]

Per ``d`` and ``delta`` (``gamma = 0.5``, ``T = 1``, iid, mean weights, 32 replicates), at the SNR
values within 1.15-2.05 ``rho_c``: the simulated top alignment, the limit formula (``theory_overlap``,
the exact finite-T law) and the realised-count prediction at the store's size (``finite_size_overlap``,
docs/theory.md §6.1), with z-scores ``(MC - prediction) / s.e.`` (the prediction's own Monte Carlo
error included). Then the counts of cells within 4 s.e. for both, and the same for ``lambda_1``.
"""

from __future__ import annotations

import sys

import numpy as np

from rmtsweep import compare, open_store

STORE = "store/finite-t-alignment.zarr"


def main(path: str) -> None:
    cmp = compare(open_store(path)).squeeze(["T", "weights", "gamma"], drop=True)
    rc = cmp["transition_snr_theory"].isel(d=0, drop=True) if "d" in cmp["transition_snr_theory"].dims \
        else cmp["transition_snr_theory"]
    counts = {}
    for what in ("overlap", "lambda1"):
        sim, sem = cmp[f"{what}_mean"], cmp[f"{what}_sem"]
        z_lim = cmp[f"{what}_z"]
        z_fs = cmp[f"finite_size_{what}_z"]
        if what == "overlap":
            print("\nTop alignment at T = 1 near the threshold: simulation, limit formula, realised counts\n")
            print("| delta | rho/rho_c | " + " | ".join(f"d = {d}" for d in cmp["d"].values) + " |")
            print("|" + " --- |" * (2 + cmp["d"].size))
        for dl in cmp["delta"].values:
            ratio = cmp["snr"].values / float(rc.sel(delta=dl))
            keep = (ratio >= 1.15) & (ratio <= 2.05)
            for s, r in zip(cmp["snr"].values[keep], ratio[keep]):
                at = dict(delta=dl, snr=s)
                if what == "overlap":
                    cells = [f"{float(sim.sel(d=d, **at)):.3f} ± {float(sem.sel(d=d, **at)):.3f} / "
                             f"{float(cmp['overlap_theory'].sel(at)):.3f} ({float(z_lim.sel(d=d, **at)):+.1f}) / "
                             f"{float(cmp['finite_size_overlap'].sel(d=d, **at)):.3f} ({float(z_fs.sel(d=d, **at)):+.1f})"
                             for d in cmp["d"].values]
                    print(f"| {dl:g} | {r:.2f} | " + " | ".join(cells) + " |")
            sel = {"delta": dl, "snr": cmp["snr"].values[keep]}
            for kind, z in (("limit", z_lim), ("finite_size", z_fs)):
                c = counts.setdefault((what, kind), [0, 0])
                c[0] += int((abs(z.sel(sel)) <= 4).sum())
                c[1] += int(z.sel(sel).size)
    print("\n(cells: MC ± s.e. / limit formula (z) / realised counts (z))\n")
    for (what, kind), (ok, n) in counts.items():
        print(f"{what}, {kind}: {ok}/{n} cells within 4 s.e. at 1.15-2.05 rho_c")
    gap = cmp["overlap_mean"] - cmp["overlap_theory"]
    print("\nGap MC - limit formula at the SNR nearest 1.2 rho_c, by d:")
    for dl in cmp["delta"].values:
        s = cmp["snr"].values[np.argmin(abs(cmp["snr"].values / float(rc.sel(delta=dl)) - 1.2))]
        print(f"  delta = {dl:g} (snr {s:g}): " + ", ".join(f"d = {d}: {float(gap.sel(d=d, delta=dl, snr=s)):+.3f}"
                                                         for d in cmp["d"].values))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else STORE)
