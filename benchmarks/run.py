"""Benchmarks: the pipeline's fast path against the plain numpy loop, interleaved, as ratios.

Run from the repository root::

    python benchmarks/run.py            # full sizes (several minutes on 2 cores)
    python benchmarks/run.py --quick    # tiny sizes, the pipeline's workers as threads (< 60 s; run by the tests)
    python benchmarks/run.py --ideas    # also time the alternatives we tried (solvers, pooling, float32)

Every timing is a median over repeats run A B A B ... in one process, so load from other jobs on
the machine hits both sides alike. Single-core cases pin BLAS to one thread for both sides. Each
case checks that our top-k eigenvalues and alignments agree with the baseline's to 1e-8 relative
(alignments below 1e-6 are compared absolutely, at 1e-14) and prints ``ok`` or ``FAIL``; the
exit status is 1 if any check fails. See benchmarks/README.md for what each case measures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from baseline import naive_cell, naive_replicate  # noqa: E402
from common import REL_TOL, SNR_A, disagreement, interleaved, make_model, rng, row  # noqa: E402
from sweep_cases import c_sweep_file, pipeline_cases, serial_sweep  # noqa: E402

from rmtsweep.model import simulate_replicate  # noqa: E402
from rmtsweep.model import replicate as rep  # noqa: E402
from rmtsweep.model import topk  # noqa: E402

# -- case a: one replicate, top 3, one SNR -------------------------------------------------------
def case_a(sizes: list[int], repeats: dict[int, int]) -> list[dict]:
    rows = []
    with threadpool_limits(limits=1):
        for d in sizes:
            m = make_model(d)
            t, last = interleaved({"ours": lambda: simulate_replicate(m, np.array([SNR_A]), rng()),
                                   "base": lambda: naive_replicate(m, SNR_A, rng())}, repeats.get(d, 3))
            res = last["ours"]
            bad = disagreement((res.eigenvalues[0], res.overlap[0]), last["base"])
            rows.append(row("a", f"d={d} V=N={m.V} T=16 k=3 snr={SNR_A:g}, 1 core", t["ours"], t["base"], bad))
    return rows


# -- case b: one cell, 32 SNR values (common random numbers) --------------------------------------
def case_b(d: int, repeats: int) -> list[dict]:
    m = make_model(d)
    snr = np.linspace(0.0, 8.0, 32)
    with threadpool_limits(limits=1):
        t, last = interleaved({"ours": lambda: simulate_replicate(m, snr, rng()),
                               "base": lambda: naive_cell(m, snr, rng)}, repeats)
    res = last["ours"]
    bad = disagreement((res.eigenvalues, res.overlap), last["base"])
    return [row("b", f"d={d} V=N={m.V} T=16 k=3, 32 snr in [0, 8] vs 32 runs, 1 core",
                t["ours"], t["base"], bad)]


# -- case f: finite-d attention weights over an SNR line ------------------------------------------
def case_f(d: int, repeat: int) -> list[dict]:
    """Attention weights for 16 SNR values: scores split as G0 + sqrt(snr) G1 + snr G2 vs the per-SNR einsum."""
    from rmtsweep.model.attention_benchmark import benchmark_attention
    with threadpool_limits(limits=1):
        b = benchmark_attention(d=d, n_snr=16, repeat=repeat)
    # agreement: the largest absolute difference of the weights, against 1e-8 (REL_TOL)
    return [row("f", f"d={d} V=N={2 * d} T=16, attention weights at 16 snr, 1 core", b["fast_s"], b["loop_s"],
                b["max_abs_diff"] / REL_TOL, "scores split", "einsum per snr")]


# -- case e: peak memory -------------------------------------------------------------------------
def memory_probe(which: str, d: int, mode: str) -> dict:
    """Run one replicate of case a in this (fresh) process and report its peak memory."""
    m = make_model(d)
    fn = ((lambda: simulate_replicate(m, np.array([SNR_A]), rng())) if which == "ours"
          else (lambda: naive_replicate(m, SNR_A, rng())))
    with threadpool_limits(limits=1):
        if mode == "tracemalloc":
            tracemalloc.start()
            fn()
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            return {"peak_bytes": peak}
        before = _rss_high_water()
        fn()
        return {"peak_bytes": _rss_high_water() - before}


def _rss_high_water() -> int:
    """This process's RSS high-water mark in bytes (``VmHWM``; ``ru_maxrss`` where /proc is missing).

    ``ru_maxrss`` alone is wrong here: Linux carries it over from the parent through fork and exec,
    so a child of a big parent starts at the parent's peak.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return 1024 * int(line.split()[1])
    except OSError:
        pass
    return 1024 * resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def case_e(d: int) -> tuple[list[dict], dict]:
    m = make_model(d)
    ref = 8 * (m.d * m.V + m.d * m.N)            # table + pooled matrix, float64
    out = {}
    for mode in ("tracemalloc", "rss"):
        for which in ("ours", "base"):
            cmd = [sys.executable, str(Path(__file__).resolve()), "--memory-probe", which, str(d), mode]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            out[(mode, which)] = json.loads(proc.stdout.strip().splitlines()[-1])["peak_bytes"]
    rows = []
    for mode in ("tracemalloc", "rss"):
        o, b = out[(mode, "ours")], out[(mode, "base")]
        r = row("e", f"d={d} V=N={m.V}, peak {'numpy allocations (tracemalloc)' if mode == 'tracemalloc' else 'RSS high-water increase (VmHWM)'}",
                o, b, None, "MB", "MB")
        r["note"] = f"ours {o / ref:.2f}x table+pooled ({ref / 2**20:.0f} MB); baseline {b / ref:.2f}x"
        rows.append(r)
    return rows, {"e_peak_over_ref": out[("tracemalloc", "ours")] / ref, "e_rss_over_ref": out[("rss", "ours")] / ref,
                  "e_reference_bytes": ref}


# -- the ideas we tried --------------------------------------------------------------------------
def ideas(d: int, repeats: int) -> list[dict]:
    """Alternatives for each stage, timed interleaved on case a's data (1 core)."""
    m = make_model(d)
    rows = []
    with threadpool_limits(limits=1):
        g = rng()
        u = g.standard_normal(m.d)
        u /= np.linalg.norm(u)
        Z = rep.draw_table_noise(m, g)
        xi, _ = rep.draw_signs(m.correlation, m.T, m.N, g)
        tokens = rep.draw_tokens(m, xi, g)
        ZTc = np.ascontiguousarray(Z.T)                       # the table as drawn: V x d row-major
        ZF = np.ascontiguousarray(Z)                          # the old layout: d x V row-major
        A = rep.token_weight_matrix(tokens, m.w, m.V)
        flat = tokens.ravel()

        def bincount_pool():
            out = np.empty((m.N, m.d))
            rows_ = np.repeat(np.arange(m.N), m.T)
            for j in range(m.d):
                out[:, j] = np.bincount(rows_, weights=ZF[j, flat] * np.tile(m.w, m.N), minlength=m.N)
            return out

        def addat_pool():
            out = np.zeros((m.N, m.d))
            np.add.at(out, np.repeat(np.arange(m.N), m.T), ZTc[flat] * np.tile(m.w, m.N)[:, None])
            return out

        def gather_pool():
            out = np.zeros((m.N, m.d))
            for t in range(m.T):
                out += m.w[t] * ZTc[tokens[:, t]]
            return out
        ref_pool = A @ ZTc
        t, last = interleaved({"sparse": lambda: A @ ZTc, "sparse_old_layout": lambda: A @ ZF.T,
                               "gather": gather_pool, "add.at": addat_pool,
                               "bincount": bincount_pool}, repeats)
        for name in ("sparse_old_layout", "gather", "add.at", "bincount"):
            err = np.abs(last[name] - ref_pool).max() / np.abs(ref_pool).max()
            label = {"sparse_old_layout": "sparse on a d x V row-major table (old draw layout)"}.get(name, name)
            rows.append(row("idea: pooling", f"d={d}: sparse A @ Z^T (V x d table) vs {label} (rel. diff {err:.0e})",
                            t["sparse"], t[name], None, "sparse", name))
        C0T = ref_pool
        a = xi @ m.w
        K = C0T.T @ C0T / m.N
        k = 3
        t, last = interleaved({
            "eigsh": lambda: scipy.sparse.linalg.eigsh(K, k=k, which="LA", tol=0, v0=np.ones(m.d)),
            "evr": lambda: scipy.linalg.eigh(K, subset_by_index=[m.d - k, m.d - 1], driver="evr"),
            "eigh": lambda: np.linalg.eigh(K),
            "gram": lambda: C0T.T @ C0T,
            "gram32": lambda: C0T.astype(np.float32).T @ C0T.astype(np.float32),
            "lanczos_op": lambda: scipy.sparse.linalg.eigsh(
                scipy.sparse.linalg.LinearOperator((m.d, m.d), matvec=lambda x: C0T.T @ (C0T @ x) / m.N,
                                                   dtype=float), k=k, which="LA", tol=0, v0=np.ones(m.d)),
        }, repeats)
        ref = np.sort(last["eigh"][0])[::-1][:k]
        for name, label in (("evr", "LAPACK syevr top-3"), ("eigh", "full numpy eigh")):
            rows.append(row("idea: top-k", f"d={d}: Lanczos on Gram vs {label}", t["eigsh"], t[name], None,
                            "eigsh", name))
        rows.append(row("idea: top-k", f"d={d}: Gram (syrk) + Lanczos vs Lanczos on C0 (no Gram)",
                        t["gram"] + t["eigsh"], t["lanczos_op"], None, "gram+eigsh", "operator"))
        K32 = last["gram32"] / m.N
        v32 = np.sort(scipy.linalg.eigvalsh(K32.astype(float)))[::-1][:k]
        err32 = float(np.abs(v32 - ref).max() / ref[0])
        rows.append(row("idea: float32", f"d={d}: float64 Gram vs float32 Gram incl. casts (top-3 eigenvalue "
                        f"rel. error {err32:.0e} vs the 1e-8 budget; eigenvectors worse)", t["gram"], t["gram32"],
                        None, "float64", "float32"))
        snr = np.linspace(0.0, 8.0, 32)
        t, last = interleaved({"rank2": lambda: topk.spectrum_top_k(C0T, a, u, snr, k, method="rank2"),
                               "direct": lambda: topk.spectrum_top_k(C0T, a, u, snr, k, method="direct")}, repeats)
        bad = disagreement(last["rank2"], last["direct"])
        rows.append(row("idea: snr axis", f"d={d}, 32 snr: eigh + rank-2 updates vs a top-k solve per snr",
                        t["rank2"], t["direct"], bad, "rank2", "direct"))
        for n_snr in (2, 4, 8):
            s_ = np.linspace(0.5, 8.0, n_snr)
            t, _ = interleaved({"rank2": lambda: topk.spectrum_top_k(C0T, a, u, s_, k, method="rank2"),
                                "direct": lambda: topk.spectrum_top_k(C0T, a, u, s_, k, method="direct")}, repeats)
            rows.append(row("idea: snr axis", f"d={d}, {n_snr} snr (the auto switch)", t["rank2"], t["direct"], None,
                            "rank2", "direct"))
    return rows


# -- output --------------------------------------------------------------------------------------
def fmt_time(r: dict, key: str) -> str:
    v = r[key]
    if r["case"] == "e":
        return f"{v / 2**20:.0f} MB"
    return f"{v * 1e3:.1f} ms" if v < 1 else f"{v:.2f} s"


def table(rows: list[dict]) -> str:
    lines = ["| case | parameters | ours | baseline | ratio | agreement |", "|---|---|---|---|---|---|"]
    for r in rows:
        ours = fmt_time(r, "ours") + (f" ({r['ours_label']})" if r["ours_label"] and r["case"] != "e" else "")
        base = fmt_time(r, "baseline") + (f" ({r['base_label']})" if r["base_label"] and r["case"] != "e" else "")
        ratio = f"{r['ratio']:.1f}x" + (f"; {r['note']}" if r.get("note") else "")
        agree = r["agree"] if r["err"] is None else f"{r['agree']} ({r['err'] * REL_TOL:.0e})"
        lines.append(f"| {r['case']} | {r['params']} | {ours} | {base} | {ratio} | {agree} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes, the pipeline's workers as threads (CI)")
    p.add_argument("--ideas", action="store_true", help="also time the alternatives tried for each stage")
    p.add_argument("--skip-pipeline", action="store_true", help="skip cases c and d (no dask cluster)")
    p.add_argument("--memory-probe", nargs=3, metavar=("WHICH", "D", "MODE"), help=argparse.SUPPRESS)
    p.add_argument("--serial-loop", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.serial_loop:
        sf = c_sweep_file(args.quick)
        with threadpool_limits(limits=1):
            t0 = time.perf_counter()
            serial_sweep(sf)
            print(time.perf_counter() - t0)
        return 0
    if args.memory_probe:
        which, d, mode = args.memory_probe
        print(json.dumps(memory_probe(which, int(d), mode)))
        return 0
    start = time.perf_counter()
    if args.quick:
        rows = case_a([50, 100], {50: 3, 100: 3}) + case_b(40, 2) + case_f(60, 1)
    else:
        rows = case_a([250, 500, 1000, 2000], {250: 9, 500: 7, 1000: 5, 2000: 3}) + case_b(500, 3) + case_f(500, 3)
    erow, info = case_e(100 if args.quick else 2000)      # before any dask cluster touches the environment
    if not args.skip_pipeline:
        prow, pinfo = pipeline_cases(args.quick, 1 if args.quick else 3)
        rows += prow
        info.update(pinfo)
    rows += erow
    if args.ideas:
        rows += ideas(100 if args.quick else 1000, 2 if args.quick else 5)
    cmd = "python benchmarks/run.py" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    print(f"command: `{cmd}`  (machine: {os.cpu_count()} cores; medians of interleaved repeats)\n")
    print(table(rows))
    if info:
        print("\n" + json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in info.items()}, default=str))
    failed = [r for r in rows if r["agree"] == "FAIL"]
    print(f"\nagreement: {'ALL OK' if not failed else f'{len(failed)} FAILED'} "
          f"(top-k eigenvalues and alignments to {REL_TOL:g} relative)")
    print(f"wall time: {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
