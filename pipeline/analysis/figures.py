"""The paper's figure set, from the shipped ``sweeps/paper-*.yaml`` stores (static PNGs, matplotlib).

Each store yields the figures its content supports:

- (a) ``spectrum``: eigenvalue histogram of ``S/kappa`` against the ``MP_delta ⊠ MP_gamma`` density
  (:func:`rmtsweep.theory.density`; the point mass :func:`rmtsweep.theory.atom` at 0 is annotated)
  and, where the store's ``theory_spectrum`` is the finite-T law, that law per bin,
  with the predicted and the simulated outlier marked;
- (b) ``alignment``: top alignment against SNR per weight scheme, Monte Carlo mean ± standard error
  over the theory curve (``theory_overlap``'s function under the store's ``theory_law``);
- (c) ``phase``: detection rate over (SNR, gamma) per delta with the theory's transition curves;
- (d) ``accuracy``: downstream ridge test accuracy against SNR per weight scheme, with the ranking
  checked against the ranking of ``alpha/kappa``;
- (f) ``attention``: finite-d attention beside mean, optimal and its limit ``causal(tau)``:
  detection rate and realised ``alpha/kappa`` against SNR, and the ranking (``sweeps/paper-attention*.yaml``);
- (g) ``finite-d``: on a store with a ``d`` axis of >= 3 values (``sweeps/finite-d.yaml``), the measured
  detection rate against SNR at every d with the finite-d prediction ``theory_detection_rate`` over
  it, and the transition SNR against ``d^(-b)`` with its extrapolation ``transition_snr_limit``
  beside the limit theory ``theory_snr_sample``;
- (e) ``finite-T`` maps (through :mod:`rmtsweep.analysis.maps.plot`): the bulk's Kolmogorov distance to the
  cubic law at snr = 0 (``paper_bulk_ks``; the relative error of ``lambda_1`` at the largest SNR when the
  store has no spectrum) over (T, weights) and over (delta, gamma) for harmonic weights: where the
  theory holds and where it fails.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .. import theory
from ..dims import ALL_AXES, D
from ..errors import SelectionError
from ..results import RESULTS
from ..store.pending import require_theory
from ..theory import cell_law
from .compare import compare, d_of, open_source
from .limits import fit_line
from .mask import only_done
from .source import store_name
from .stats import mean_sem

__all__ = ["accuracy_figure", "alignment_figure", "attention_figure", "figures", "finite_d_figure", "phase_figure",
           "spectrum_figure"]


def figure_cell(ds: xr.Dataset) -> dict:
    """The cell a one-cell figure shows: the largest ``T`` (nearest the theory's large-T limit), the first
    delta, gamma and weights; ``--select`` narrows ``ds`` first, so the figure shows the selected values."""
    return {"delta": ds["delta"].values[0], "gamma": ds["gamma"].values[0], "T": ds["T"].values.max(),
            "weights": ds["weights"].values[0]}


def _where(cell: dict) -> str:
    """``T=16, weights=mean`` (``delta`` and ``gamma`` as δ and γ)."""
    names = {"delta": "δ", "gamma": "γ"}
    return ", ".join(f"{names.get(a, a)}={v:g}" if isinstance(v, (float, np.floating)) else f"{names.get(a, a)}={v}"
                     for a, v in cell.items())


def select_cells(ds: xr.Dataset, select: dict | None, source) -> xr.Dataset:
    """``ds`` narrowed to the ``--select DIM=VALUE`` values (each axis keeps its dimension, of length 1)."""
    for dim, value in (select or {}).items():
        if dim not in ds.dims or dim not in ALL_AXES:
            raise SelectionError(f"--select {dim}: not a grid axis of {source} (valid: "
                                 f"{', '.join(a for a in ALL_AXES if a in ds.dims)})")
        kind = ds[dim].dtype.kind
        cast = float if kind == "f" else int if kind in "iu" else str
        try:
            ds = ds.sel({dim: [cast(value)]})
        except (KeyError, ValueError):
            raise SelectionError(f"--select {dim}={value}: not on the axis of {source} (valid: "
                                 f"{', '.join(map(str, ds[dim].values))})") from None
    return ds


def _subplots(nrows: int = 1, ncols: int = 1, **kwargs):
    """An explicit Agg figure and its axes: no pyplot, no change to matplotlib's global backend."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=kwargs.pop("figsize", None), layout=kwargs.pop("layout", None))
    axes = fig.subplots(nrows, ncols, **kwargs)
    return fig, axes


def spectrum_figure(ds: xr.Dataset, out: Path, snr: float | None = None, cell: dict | None = None) -> Path:
    """(a) Histogram of ``S/kappa`` (averaged over done replicates) with the bulk density and outlier,
    one panel per (delta, gamma), at the ``T`` and ``weights`` of ``cell`` (default: :func:`figure_cell`)."""
    snr = float(ds["snr"].values[-1] if snr is None else snr)
    cells = [(dl, g) for dl in ds["delta"].values for g in ds["gamma"].values]
    fig, axes = _subplots(1, len(cells), figsize=(4.2 * len(cells), 3.4), squeeze=False)
    width = float(ds["bin"].attrs.get("bin_width", np.diff(ds["bin"].values[:2])[0]))
    cell = cell or figure_cell(ds)
    sel = {"T": cell["T"], "weights": cell["weights"], "snr": snr}
    for ax, (dl, g) in zip(axes[0], cells, strict=True):
        c = ds.sel(delta=dl, gamma=g, **sel)
        hist = only_done(c["spectrum"], c["done"]).mean("replicate").values
        x = ds["bin"].values
        ax.bar(x, hist, width=width, color="0.75", label="Monte Carlo")
        fine = np.linspace(1e-3, x[-1], 800)
        ax.plot(fine, theory.density(fine, dl, g), "k", lw=1.2, label="MP$_\\delta$ ⊠ MP$_\\gamma$")
        if "theory_spectrum_law" in c and int(c["theory_spectrum_law"]) > 0:      # the finite-T law differs here
            law = "exact" if int(c["theory_spectrum_law"]) == 1 else "sampled ν"
            ax.step(x, c["theory_spectrum"].values, where="mid", color="C2", lw=1.2,
                    label=f"finite-T law ({law}), per bin")
        kappa = float(c["theory_kappa"])
        ax.axvline(float(c["theory_outlier"]) / kappa, color="C3", ls="--", label="theory λ₁/κ")
        lam = only_done(c["eigenvalues"].sel(k=1), c["done"]).mean("replicate") / kappa
        ax.axvline(float(lam), color="C0", ls=":", label="simulated λ₁/κ")
        top = 1.3 * float(np.nanmax(theory.density(fine[fine > 0.25], dl, g)))   # the density may blow up at 0
        ax.set_ylim(0, top)
        mass = float(theory.atom(dl, g))
        if mass > 0:
            ax.annotate(f"atom at 0: mass {mass:.2f}", xy=(0, 0.97 * top), xytext=(0.25 * x[-1], 0.85 * top),
                        arrowprops={"arrowstyle": "->"})
        ax.set_title(f"δ={dl:g}, γ={g:g}, snr={snr:g}, T={sel['T']}, {sel['weights']} weights", fontsize=9)
        ax.set_xlabel("eigenvalue of S/κ")
        ax.set_ylabel(RESULTS["spectrum"].axis_label)
    axes[0][0].legend(fontsize=8)
    return _save(fig, out / "fig-a-spectrum.png")


def alignment_figure(ds: xr.Dataset, cmp: xr.Dataset, out: Path, cell: dict | None = None) -> Path:
    """(b) Top alignment against SNR, one line per weight scheme, at the (delta, gamma, T) of ``cell``
    (default: :func:`figure_cell`)."""
    cell = {a: (cell or figure_cell(ds))[a] for a in ("delta", "gamma", "T")}
    fig, ax = _subplots(figsize=(5.2, 3.8))
    fine = np.linspace(0, float(ds["snr"].max()), 400)
    for i, w in enumerate(ds["weights"].values):
        c = cmp.sel(weights=w, **cell)
        ratio = float((ds["theory_alpha"] / ds["theory_kappa"]).sel(T=cell["T"], weights=w))
        if ds.attrs.get("table_centering") == "class":       # theory_overlap's function, under its theory_law
            law = cell_law.law_at(ds, cell["T"], w)
            curve = cell_law.limit_spike(ratio * fine, cell["delta"], cell["gamma"], law)[1]
            ax.plot(fine, curve, color=f"C{i}", lw=1.2)
        else:
            ax.plot(c["snr"], c["overlap_theory"], color=f"C{i}", lw=1.2)
        ax.errorbar(c["snr"], c["overlap_mean"], yerr=c["overlap_sem"], fmt="o", ms=3.5, color=f"C{i}",
                    capsize=2, label=f"{w} (α/κ = {ratio:.2f})")
    ax.set_xlabel("snr = ||μ||²")
    ax.set_ylabel("top alignment |û₁ᵀu|²")
    ax.set_title(f"δ={cell['delta']:g}, γ={cell['gamma']:g}, T={cell['T']}, d={int(d_of(ds))}: "
                 "points Monte Carlo, lines theory", fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, out / "fig-b-alignment.png")


def phase_figure(ds: xr.Dataset, cmp: xr.Dataset, out: Path, at: dict | None = None) -> Path:
    """(c) Detection rate over (snr, gamma), one panel per delta, with the theory's transitions.

    Cells are centred on the grid's values: gamma on a log2 axis with geometric edges, SNR cells
    never below 0 (:func:`rmtsweep.analysis.maps.axes.cell_edges`). The transitions are black lines
    on a pale halo; their legend sits below the panels, off the data.
    """
    from matplotlib.lines import Line2D

    from .maps.axes import axis_scale, cell_edges
    from .maps.plot import transition_curves
    deltas = ds["delta"].values
    fig, axes = _subplots(1, len(deltas), figsize=(2.6 * len(deltas) + 1.0, 3.4), squeeze=False, sharey=True,
                          layout="constrained")
    at = at or {"T": ds["T"].values[-1], "weights": ds["weights"].values[0]}
    styles = {"population": "--", "sample": "-"}
    drawn = set()
    for ax, dl in zip(axes[0], deltas, strict=True):
        rate = cmp["detection_rate"].sel(delta=dl, **at).sortby(["snr", "gamma"])
        gamma_scale = axis_scale(rate["gamma"].values)
        mesh = ax.pcolormesh(cell_edges(rate["snr"].values, "linear", 0.0),
                             cell_edges(rate["gamma"].values, gamma_scale, 0.0),
                             rate.transpose("gamma", "snr").values, cmap="viridis", vmin=0, vmax=1, shading="flat")
        curves = transition_curves(ds, "snr", "gamma", {"delta": dl, "snr": 0.0, **at})
        for kind, style in styles.items():
            for p in curves[kind]:
                if len(p):
                    drawn.add(kind)
                    ax.plot(p[:, 0], p[:, 1], color="white", alpha=0.6, lw=3.0, solid_capstyle="round")
                    ax.plot(p[:, 0], p[:, 1], color="black", ls=style, lw=1.4)
        if gamma_scale == "log":
            ax.set_yscale("log", base=2)
            ax.set_yticks(rate["gamma"].values, [f"{g:g}" for g in rate["gamma"].values])
            ax.set_yticks([], minor=True)
        ax.set_xlim(mesh.get_coordinates()[0, [0, -1], 0])
        ax.set_ylim(mesh.get_coordinates()[[0, -1], 0, 1])
        ax.set_title(f"δ = {dl:g}", fontsize=9)
        ax.set_xlabel("snr")
    axes[0][0].set_ylabel("γ = d/N")
    fig.colorbar(mesh, ax=axes[0].tolist(), label="detection rate")
    handles = [Line2D([], [], color="black", ls=styles[k], lw=1.4, label=f"theory {k} transition")
               for k in styles if k in drawn]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    fig.suptitle(f"detection rate at {_where(at)}", fontsize=10)
    return _save(fig, out / "fig-c-phase.png", tight=False)


def accuracy_figure(ds: xr.Dataset, out: Path, cell: dict | None = None) -> tuple[Path, str]:
    """(d) Ridge test accuracy vs SNR per weight scheme at the (delta, gamma, T) of ``cell`` (default:
    :func:`figure_cell`); returns the figure and the ranking check."""
    cell = {a: (cell or figure_cell(ds))[a] for a in ("delta", "gamma", "T")}
    acc, sem = mean_sem(ds["accuracy"].sel(**cell), ds["done"].sel(**cell))
    ratio = (ds["theory_alpha"] / ds["theory_kappa"]).sel(T=cell["T"])
    fig, ax = _subplots(figsize=(5.2, 3.8))
    for i, w in enumerate(ds["weights"].values):
        ax.errorbar(acc["snr"], acc.sel(weights=w), yerr=sem.sel(weights=w), fmt="o-", ms=3.5, capsize=2,
                    color=f"C{i}", label=f"{w} (α/κ = {float(ratio.sel(weights=w)):.2f})")
    ax.set_xlabel("snr = ||μ||²")
    ax.set_ylabel(RESULTS["accuracy"].axis_label)
    ax.set_title(f"downstream task, δ={cell['delta']:g}, γ={cell['gamma']:g}, T={cell['T']}", fontsize=9)
    ax.legend(fontsize=8)
    score = acc.where(acc["snr"] > 0).mean("snr")
    by_ratio = [str(w) for w in ratio.sortby(ratio, ascending=False)["weights"].values]
    by_acc = [str(w) for w in score.sortby(score, ascending=False)["weights"].values]
    verdict = "matches" if by_ratio == by_acc else "DOES NOT match"
    text = (f"ranking by alpha/kappa: {' > '.join(f'{w} ({float(ratio.sel(weights=w)):.2f})' for w in by_ratio)}\n"
            f"ranking by accuracy (mean over snr > 0): "
            f"{' > '.join(f'{w} ({float(score.sel(weights=w)):.3f})' for w in by_acc)}: {verdict}")
    return _save(fig, out / "fig-d-accuracy.png"), text


def attention_figure(ds: xr.Dataset, cmp: xr.Dataset, out: Path, cell: dict | None = None) -> tuple[Path, str]:
    """(f) Finite-d attention beside the fixed schemes: detection rate and realised alpha/kappa against SNR.

    Left: the detection rate per scheme, with its theory's sample threshold (dotted; an attention
    scheme uses its large-d limit's). Right: ``alpha/kappa`` realised on the store's draws (per SNR
    value for attention, whose weights see the signal) relative to each scheme's limit value; all
    schemes share the draws, so attention against ``causal(tau)`` is a paired difference.
    At the (delta, gamma, T) of ``cell`` (default: :func:`figure_cell`); the legend below the panels.
    Returns the figure and the ranking by transition SNR and by mean alignment over ``snr > 0``.
    """
    cell = {a: (cell or figure_cell(ds))[a] for a in ("delta", "gamma", "T")}
    fig, (left, right) = _subplots(1, 2, figsize=(11, 4.6), layout="constrained")
    weights = [str(w) for w in ds["weights"].values]
    snr = ds["snr"].values
    for i, w in enumerate(weights):
        c, colour = ds.sel(weights=w, **cell), f"C{i}"
        left.plot(snr, cmp["detection_rate"].sel(weights=w, **cell), "o-", ms=3, color=colour, label=w)
        left.axvline(float(cmp["transition_snr_theory"].sel(weights=w, **cell)), color=colour, ls=":", lw=1)
        if "kappa_snr" in c and np.isfinite(c["kappa_snr"].values).any():
            m, se = mean_sem(c["alpha_snr"] / c["kappa_snr"], c["done"])
        else:
            m, se = mean_sem(c["alpha"] / c["kappa"], c["done"])
            m, se = m.expand_dims(snr=snr), se.expand_dims(snr=snr)
        limit = float(c["theory_alpha"] / c["theory_kappa"])
        right.errorbar(snr, 100 * (m / limit - 1), yerr=100 * se / limit, fmt="o-", ms=3, capsize=2, color=colour,
                       label=f"{w} (limit {limit:.2f})")
    left.set(xlabel="snr = ||μ||²", ylabel="detection rate", ylim=(-0.03, 1.03),
             title=f"δ={cell['delta']:g}, γ={cell['gamma']:g}, T={cell['T']}, d={int(d_of(ds))}; dotted: theory")
    right.axhline(0, color="0.5", lw=0.8)
    right.set(xlabel="snr = ||μ||²", ylabel="realised α/κ over its limit − 1 (%)",
              title="α/κ on the shared draws, against each limit")
    left.title.set_fontsize(9)
    right.title.set_fontsize(9)
    fig.legend(*right.get_legend_handles_labels(), loc="outside lower center", ncols=3, fontsize=7, frameon=False)
    t = cmp["transition_snr_empirical"].sel(**cell)
    ov = cmp["overlap_mean"].sel(**cell).where(cmp["snr"] > 0).mean("snr")
    def order(values: xr.DataArray, sign: float) -> list[str]:      # lines with no crossing (NaN) last
        return sorted(weights, key=lambda w: (np.isnan(float(values.sel(weights=w))),
                                              sign * float(values.sel(weights=w))))
    by_t, by_ov = order(t, 1.0), order(ov, -1.0)
    text = (f"ranking by transition SNR: {' < '.join(f'{w} ({float(t.sel(weights=w)):.3f})' for w in by_t)}\n"
            "ranking by mean alignment (snr > 0): "
            f"{' > '.join(f'{w} ({float(ov.sel(weights=w)):.3f})' for w in by_ov)}")
    return _save(fig, out / "fig-f-attention.png", tight=False), text


def finite_d_figure(cmp: xr.Dataset, out: Path, cell: dict | None = None) -> tuple[Path, str]:
    """(g) Detection rate over SNR at every d against ``theory_detection_rate``, and the transition's limit.

    One panel per weights scheme (first delta, gamma, T): measured rate with binomial error bars and
    the finite-d prediction (lines) per d, the limit theory's sample threshold dotted. Last panel: the
    measured transition SNR (± its bootstrap s.e.) against ``d^(-b)`` (``transition_snr_limit_exponent``),
    the weighted fit and its
    ``d -> infinity`` limit (± s.e.) at 0, and ``theory_snr_sample`` (star). Returns the figure and a
    line per scheme with the limit and its z.
    """
    cell = {a: (cell or figure_cell(cmp))[a] for a in ("delta", "gamma", "T")}
    c = cmp.sel(**cell)
    weights = [str(w) for w in c["weights"].values]
    ds_ = c["d"].values
    fig, axes = _subplots(1, len(weights) + 1, figsize=(4.3 * (len(weights) + 1), 3.8), squeeze=False)
    snr = c["snr"].values
    lines = []
    for ax, w in zip(axes[0], weights, strict=False):
        for j, d in enumerate(ds_):
            at = c.sel(weights=w, d=d)
            p, n = at["detection_rate"].values, at["n_done"].values
            ax.errorbar(snr, p, yerr=np.sqrt(np.clip(p * (1 - p), 0, None) / np.maximum(n, 1)), fmt="o", ms=3,
                        capsize=1.5, color=f"C{j}", label=f"d = {d}")
            ax.plot(snr, at["theory_detection_rate"].values, "-", color=f"C{j}", lw=1)
        ax.axvline(float(c["transition_snr_theory"].sel(weights=w).max()), color="k", ls=":", lw=1)
        ax.set(xlabel="snr = ||μ||²", ylabel="detection rate", ylim=(-0.03, 1.03),
               title=f"{w}: points measured, lines theory_detection_rate;\ndotted: d → ∞ threshold")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=7, loc="lower right")
    ax = axes[0][-1]
    x_max = 0.0
    for i, w in enumerate(weights):
        at = c.sel(weights=w)
        b = float(at["transition_snr_limit_exponent"])          # each scheme's own prediction's exponent
        x = ds_.astype(float) ** (-b)
        x_max = max(x_max, float(x.max()))
        t, se = at["transition_snr_empirical"].values, at["transition_snr_sem"].values
        ax.errorbar(x, t, yerr=se, fmt="o", ms=4, capsize=2, color=f"C{i}", label=f"{w}: measured (b = {b:.2f})")
        lim, lim_se = float(at["transition_snr_limit"]), float(at["transition_snr_limit_sem"])
        th = float(at["transition_snr_theory"].max())
        if np.isfinite(lim):                          # the comparison's own fit, drawn (same x = d^-b)
            slope = fit_line(t, se, x)[3]
            xx = np.linspace(0, x.max(), 20)
            ax.plot(xx, lim + slope * xx, "-", color=f"C{i}", lw=0.8)
            ax.errorbar([0], [lim], yerr=[lim_se], fmt="s", ms=5, capsize=3, color=f"C{i}",
                        label=f"{w}: limit {lim:.3f} ± {lim_se:.3f}")
        ax.plot([0], [th], "*", ms=11, color=f"C{i}", mec="k", label=f"{w}: theory {th:.3f}")
        lines.append(f"{w}: transition limit {lim:.3f} ± {lim_se:.3f} against theory_snr_sample {th:.3f} "
                     f"({100 * (lim / th - 1):+.1f} %, z = {float(at['transition_snr_limit_z']):+.1f})")
    ax.set(xlabel="d^(-b), b from each scheme's finite-d prediction", ylabel="transition SNR",
           xlim=(-0.01, x_max * 1.08), title="transition SNR over d and its d → ∞ limit; star: limit theory")
    ax.title.set_fontsize(8)
    ax.legend(fontsize=6, loc="best")
    fig.suptitle(f"at {_where(cell)}", fontsize=9)
    return _save(fig, out / "fig-g-finite-d.png"), "; ".join(lines)


def _save(fig, path: Path, tight: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    fig.savefig(path, dpi=90)
    return path


def figures(paths: list[str | Path], out: str | Path, select: dict | None = None
            ) -> tuple[list[Path], list[str]]:
    """Every figure the given stores support, written under ``out``; returns (files, messages).

    ``select`` (``{axis: value}``, the CLI's ``--select``) narrows each store first. A figure of one
    cell shows :func:`figure_cell` of what remains (the largest T); its title and a message say which.
    """
    from .maps.plot import plot
    out = Path(out)
    files, notes = [], []
    for path in paths:
        ds = open_source(path)
        require_theory(ds.attrs, store_name(path), "draw its figures")
        ds = select_cells(ds, select, path)
        cmp = compare(ds)
        at_d = {}
        sub = out / Path(str(path)).stem
        chosen = {a: str(v) for a, v in (select or {}).items()}
        if "transition_snr_limit" in cmp:              # (g) needs every d; the others are drawn at one d
            f, text = finite_d_figure(cmp, sub)
            files.append(f)
            notes.append(f"{path}: {text}")
        if D in ds.dims:                               # the paper's figures are at one d: the largest
            at_d = {D: int(ds[D].max())}
            ds, cmp = ds.sel(at_d), cmp.sel(at_d)
            notes.append(f"{path}: d is a grid axis; the figures are drawn at d = {at_d[D]}")
        cell = figure_cell(ds)
        several = [a for a in ("delta", "gamma", "T", "weights") if ds.sizes[a] > 1]
        shown = []
        if "spectrum" in ds:
            files.append(spectrum_figure(ds, sub, cell=cell))
            shown.append((files[-1], {a: cell[a] for a in ("T", "weights")}))
        if "accuracy" in ds:
            f, text = accuracy_figure(ds, sub, cell)
            files.append(f)
            notes.append(f"{path}: {text}")
            shown.append((f, {a: cell[a] for a in ("delta", "gamma", "T")}))
        if ds.sizes["weights"] > 1 and ds.sizes["snr"] >= 4:
            files.append(alignment_figure(ds, cmp, sub, cell))
            shown.append((files[-1], {a: cell[a] for a in ("delta", "gamma", "T")}))
        if any(str(w).startswith("attention") for w in ds["weights"].values) and ds.sizes["snr"] >= 4:
            f, text = attention_figure(ds, cmp, sub, cell)
            files.append(f)
            notes.append(f"{path}: {text}")
            shown.append((f, {a: cell[a] for a in ("delta", "gamma", "T")}))
        if ds.sizes["delta"] > 1 and ds.sizes["gamma"] > 1 and ds.sizes["T"] == 1:
            files.append(phase_figure(ds, cmp, sub, {a: cell[a] for a in ("T", "weights")}))
            shown.append((files[-1], {a: cell[a] for a in ("T", "weights")}))
        for f, at in shown:
            if set(at) & (set(several) | set(chosen)):  # a cell chosen among several, or selected: say which
                notes.append(f"{path}: {f.name} shows {', '.join(f'{a}={_fmt(v)}' for a, v in at.items())} "
                             f"(another cell: --select AXIS=VALUE)")
        if ds.sizes["T"] > 1 and ds.sizes["weights"] > 1:
            var, snr_at = (("paper_bulk_ks", 0.0) if "paper_bulk_ks" in cmp
                           else ("lambda1_rel_error", float(ds["snr"].values[-1])))
            weights = "harmonic" if "harmonic" in ds["weights"].values else str(ds["weights"].values[-1])
            same = (0.0, 0.04) if var == "paper_bulk_ks" else None     # the two laws on one scale
            fixed = {**chosen, "snr": snr_at, **at_d}
            files += plot(path, "T", "weights", var, fixed, same).save(sub)
            if var == "paper_bulk_ks":                 # and against the store's finite-T law, on the same axes
                files += plot(path, "T", "weights", "bulk_ks", fixed, (0.0, 0.04)).save(sub)
            if ds.sizes["delta"] > 1 and ds.sizes["gamma"] > 1:        # a plane of more than one cell
                files += plot(path, "delta", "gamma", var, {**fixed, "weights": weights}).save(sub)
    return files, notes


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)
