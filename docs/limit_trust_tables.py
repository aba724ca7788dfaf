"""Print the numbers of docs/results.md on the d -> infinity limit at short effective lengths (T_eff < 3).

    python docs/limit_trust_tables.py [STORE_DIR]    # runs each missing store first (about 8 min on 2 busy cores)

Two d-axis sweeps, ``sweeps/finite-d.yaml`` with overrides (:data:`SWEEPS`): d = 100 ... 800,
``delta = 0.25``, ``gamma = 1``, decay correlation ``r = 0.5``, 64 replicates; T = 4 and 8 with mean and
harmonic weights (``T_eff`` = 4, 1.7, 8, 2.7), and T = 1. Per line:

1. the measured transition per d (± bootstrap s.e.) and the comparison's ``transition_snr_limit``
   (``t_inf + a d^-b``, :mod:`rmtsweep.analysis.limits`), its miss against the store's threshold
   (``theory_snr_sample``: the cubic, or the exact law at T = 1), its ``chi^2`` per dof, edge exponent and
   ``transition_snr_limit_trust``;
2. for T >= 2 and ``T_eff < 8``, the ``d -> infinity`` threshold of the finite-T law over the token-count law
   sampled as the store's ``theory_spectrum`` is (``rmtsweep.theory.spectrum.SAMPLE``), at two sampling seeds:
   how far it moves with the sample says whether the law has an edge to extrapolate to.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from rmtsweep import compare, load_sweep, open_store, run_sweep
from rmtsweep.analysis.limits import TRUST
from rmtsweep.theory import finite_t
from rmtsweep.shipped import default
from rmtsweep.theory.spectrum import SAMPLE

COMMON = ["grid.d=100,200,400,800", "grid.delta=0.25", "grid.gamma=1.0", "correlation.model=decay",
          "correlation.r=0.5", "~correlation.L", "replicates=64"]
SWEEPS = {
    "short": [*COMMON, "grid.T=4,8", "grid.weights=mean,harmonic", "seed=5151"],
    "one-token": [*COMMON, "grid.T=1", "grid.weights=mean", "seed=5152", "grid.snr.start=1.0",
                  "grid.snr.stop=4.0", "grid.snr.num=16"],
}
SEEDS = (0, 1)
FINITE_T_BELOW = float(default("theory.finite-t-below"))   # where the store has a finite-T law


def _why(flag: float) -> str:
    if not np.isfinite(flag):
        return "no fit"
    return ", ".join(w.replace("_", " ") for bit, w in TRUST.items() if int(flag) & bit) or "trusted"


def finite_t_thresholds(store: Path, name: str, T: int, weights: str) -> list[float]:
    """The finite-T law's threshold on the SNR at each of :data:`SEEDS` (empty where the cubic or exact law holds)."""
    ds = open_store(store)
    sweep = load_sweep("finite-d", SWEEPS[name]).sweep
    cell = dict(T=T, weights=weights)
    if T == 1 or float(ds["theory_T_eff"].sel(cell)) >= FINITE_T_BELOW:
        return []
    scheme = next(s for s in sweep.grid.weights if s.label == weights)
    w = scheme.weights(sweep.correlation.matrix(T))
    delta, gamma = float(ds["delta"][0]), float(ds["gamma"][0])
    ratio = float(ds["theory_kappa"].sel(cell) / ds["theory_alpha"].sel(cell))
    return [ratio * finite_t.threshold(finite_t.sample_token_law(w, delta, gamma, **{**SAMPLE, "seed": s}), delta)
            for s in SEEDS]


def main(directory: str) -> None:
    print("| line | T_eff | " + " | ".join(f"d = {d}" for d in (100, 200, 400, 800)) +
          " | limit | store's threshold (miss) | finite-T threshold, 2 samples | chi^2/dof | edge exponent | trust |")
    print("|" + " --- |" * 11)
    for name, overrides in SWEEPS.items():
        path = Path(directory) / f"limit-trust-{name}.zarr"
        if not path.exists():
            print(f"running {name} into {path}", file=sys.stderr)
            run_sweep(load_sweep("finite-d", overrides), path, progress=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cmp = compare(path).squeeze(["delta", "gamma"], drop=True)
        t_eff = open_store(path)["theory_T_eff"]
        for T in cmp["T"].values:
            for w in cmp["weights"].values:
                c = cmp.sel(T=T, weights=w)
                t, se = c["transition_snr_empirical"].values, c["transition_snr_sem"].values
                lim, th = float(c["transition_snr_limit"]), float(c["transition_snr_theory"].max())
                ft = finite_t_thresholds(path, name, int(T), str(w))
                print(f"| T = {T}, {w} | {float(t_eff.sel(T=T, weights=w)):.2f} | " +
                      " | ".join(f"{a:.3f} ± {s:.3f}" for a, s in zip(t, se, strict=True)) +
                      f" | {lim:.3f} ± {float(c['transition_snr_limit_sem']):.3f} | {th:.3f} "
                      f"({100 * (lim / th - 1):+.0f} %) | " + (", ".join(f"{x:.3f}" for x in ft) or "—") +
                      (f" ({100 * (lim / np.mean(ft) - 1):+.0f} %)" if ft else "") +
                      f" | {float(c['transition_snr_limit_chi2']):.1f} | "
                      f"{float(c['transition_snr_limit_edge_exponent']):.2f} | "
                      f"{_why(float(c['transition_snr_limit_trust']))} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "store")
