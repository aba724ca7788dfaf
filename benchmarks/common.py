"""Shared pieces of the benchmarks: the benchmark cell, interleaved timing, agreement, table rows."""

from __future__ import annotations

import resource
import time

import numpy as np

from rmtsweep.model import CellModel, correlation_matrix, make_correlation, make_scheme, pooling_weights

REL_TOL, OVERLAP_FLOOR, ABS_TOL = 1e-8, 1e-6, 1e-14
SNR_A = 3.0


ONE_POINT = ["d=1000", "grid.delta=0.5", "grid.gamma=0.5", "grid.T=16", "grid.weights=mean", "replicates=4",
             "grid.snr={start: 0, stop: 8, num: 32}"]
"""Overrides of the demo sweep: the one point at d = 1000 that start.py and theory_spread.py run."""
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The environment entries that hold a child process's BLAS to one thread, as a run's worker has."""


def children_cpu() -> float:
    """CPU-seconds of every process this one has reaped so far, and of the processes they reaped."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def make_model(d: int, delta: float = 0.5, gamma: float = 0.5, T: int = 16, k: int = 3) -> CellModel:
    """The benchmark cell: prefix(L=4) correlation, mean weights, class-centred table."""
    corr = make_correlation("prefix", L=4)
    w = pooling_weights(make_scheme("mean"), correlation_matrix(corr, T))
    return CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T, w=w, correlation=corr,
                     centering="class", top_k=k)


def rng(seed: int = 1) -> np.random.Generator:
    return np.random.default_rng(seed)


def interleaved(fns: dict, repeats: int, warmup: bool = True) -> tuple[dict[str, float], dict]:
    """Run the callables A B A B ... (after one untimed warm-up round); median seconds, last results."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    last = {name: fn() for name, fn in fns.items()} if warmup else {}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            last[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return {name: float(np.median(t)) for name, t in times.items()}, last


def disagreement(ours: tuple[np.ndarray, np.ndarray], ref: tuple[np.ndarray, np.ndarray]) -> float:
    """Largest relative difference of eigenvalues and alignments (a number <= 1 means agreement)."""
    (lo, oo), (lr, orf) = (np.asarray(x, float) for x in ours), (np.asarray(x, float) for x in ref)
    ev = np.abs(lo - lr) / np.abs(lr).clip(min=1e-300) / REL_TOL
    small = np.abs(orf) < OVERLAP_FLOOR
    ov = np.where(small, np.abs(oo - orf) / ABS_TOL, np.abs(oo - orf) / np.abs(orf).clip(min=1e-300) / REL_TOL)
    return float(max(ev.max(), ov.max()))


def row(case: str, params: str, ours: float, base: float, bad: float | None, ours_label: str = "",
        base_label: str = "") -> dict:
    return {"case": case, "params": params, "ours": ours, "baseline": base, "ratio": base / ours if ours > 0 else float("nan"),
            "agree": "n/a" if bad is None else ("ok" if bad <= 1 else "FAIL"),
            "err": bad, "ours_label": ours_label, "base_label": base_label}


