"""Monte Carlo against theory, per grid cell, as an ``xarray.Dataset`` (docs/theory.md §3.7).

For every cell ``(delta, gamma, T, weights, snr)`` the comparison holds the Monte Carlo mean and
standard error over the replicates whose ``done`` flag is set (so it works on a store still being
filled; cells with none done are NaN), the theory value, the error and the z-score of ``lambda_1``
and of the top alignment, the detection rate, the empirical and theoretical phase, and per line
along the SNR axis the empirical transition SNR against ``theory_snr_sample``.

Detection (:mod:`rmtsweep.analysis.detection`): by default a replicate detects an outlier when its
tested eigenvalue exceeds the 0.95 quantile of the predicted null ``lambda_1`` at the store's size
(a false-alarm level of 5 %, ``false_alarm``); the older margin rule stays available by name
(``margin_factor``). Where ``d`` is a grid axis of the store the threshold (and
``theory_detection_rate``) is taken at each ``d`` value (:func:`d_of`), and the comparison has a ``d``
dimension first. The summary counts the detections at ``snr = 0`` against the level (:func:`false_alarm_lines`).

Uncentred tables (``table_centering: none``): the signal outlier is identified as the top-k
eigenvector best aligned with ``u``; its eigenvalue is held against ``theory_signal_outlier``, its
alignment against ``theory_overlap``, and it is the one tested for detection. ``lambda_1`` is held
against ``theory_outlier``, and the paper's uncorrected ``paper_outlier`` / ``paper_overlap`` are
compared too (``paper_*_error``).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import cast

import numpy as np
import xarray as xr
import zarr

from .. import config, theory
from ..errors import SelectionError
from ..dims import D, has_d_axis, store_dims
from ..store import ZARR_FORMAT, Location, locate, metadata_lock, open_store
from ..store.io import edit_consolidated, read_object
from ..store.layout import checksum_encoding
from ..store.location import zarr_target
from ..store.pending import require_theory
from .detection import (FALSE_ALARM, LAW, MARGIN_FACTOR, MONTE_CARLO, NO_NULL, SCHEDULED, Detection, d_of, detected,
                        detection_margin, detection_rule, replicate_hits, signal_pair, theory_detection_rate)
from .limits import MIN_D, TRUST, limit_variables
from .mask import only_done
from .reference import NO_LAW, REFERENCES, SHORT, finite_size_z, hold_against, no_law_cells, reference_text
from .source import GROUP, done_digest, open_source, store_name, with_options
from .stats import mean_sem
from .transition import crossing, transition_snr

__all__ = ["FALSE_ALARM", "GROUP", "MARGIN_FACTOR", "NO_LAW", "REFERENCES", "SHORT", "Detection", "bulk_distance",
           "compare", "crossing", "d_of", "detected", "detection_margin", "detection_rule", "done_digest",
           "false_alarm_lines", "measured", "no_law_cells", "null_caption", "open_source",
           "reference_text", "signal_pair", "summary", "theory_detection_rate", "transition_snr", "write_comparison"]



S_UNITS = "same units as the eigenvalues of S"


def _observed(ds: xr.Dataset, centering: str) -> dict[str, tuple[xr.DataArray, str, str]]:
    """Per replicate (lazy), what the comparison averages: name -> (values, what they are, units)."""
    eig, ov = ds["eigenvalues"], ds["overlap"]     # lazy: dask-chunked as stored, computed chunk by chunk
    out = {"lambda1": (eig.sel(k=1, drop=True), "lambda_1", S_UNITS)}
    if centering == "none":
        sig_lam, sig_ov, best = signal_pair(eig, ov)
        out["signal_lambda"] = (sig_lam, "the signal eigenvalue (top-k eigenvector best aligned with u)", S_UNITS)
        out["signal_rank"] = ((best + 1).astype(float), "rank k of the eigenvector best aligned with u", "1")
        out["overlap"] = (sig_ov, "alignment of the top-k eigenvector best aligned with u", "1")
    else:
        out["overlap"] = (ov.sel(k=1, drop=True), "top alignment |u_hat_1^T u|^2", "1")
    return out


def _averaged(name: str, x: xr.DataArray, done: xr.DataArray, what: str, units: str) -> dict[str, xr.DataArray]:
    """``{name}_mean`` and ``{name}_sem`` over the done replicates (``signal_rank``: its mean alone)."""
    mean, sem = mean_sem(x, done)
    if name == "signal_rank":
        return {name: mean.assign_attrs(long_name=f"mean {what}", units=units)}
    return {f"{name}_mean": mean.assign_attrs(long_name=f"Monte Carlo mean of {what}", units=units),
            f"{name}_sem": sem.assign_attrs(long_name=f"standard error of the mean of {what}", units=units)}


def measured(source: str | Path | Location | xr.Dataset) -> xr.Dataset:
    """The comparison's Monte Carlo side, which needs no theory, lazy: ``lambda1_mean``, ``lambda1_sem``,
    ``overlap_mean``, ``overlap_sem`` and ``n_done`` (on an uncentred table also ``signal_lambda_*`` and
    ``signal_rank``), equal to :func:`compare`'s. It reads a store whose theory at its size is not written yet.

    Examples
    --------
    >>> float(measured("store/demo.zarr")["lambda1_mean"].max())   # doctest: +SKIP
    """
    ds = open_source(source)
    done = ds["done"]
    out: dict[str, xr.DataArray] = {}
    for name, observed in _observed(ds, ds.attrs.get("table_centering", "class")).items():
        out.update(_averaged(name, observed[0], done, *observed[1:]))
    out["n_done"] = done.sum("replicate").assign_attrs(long_name="replicates done", units="1")
    return xr.Dataset(out).transpose(*store_dims(has_d_axis(ds.dims)).cell, ...)


def _held(name: str, averaged: dict[str, xr.DataArray], theory, what: str, units: str) -> dict[str, xr.DataArray]:
    mean, sem = averaged[f"{name}_mean"], averaged[f"{name}_sem"]
    err = mean - theory
    z = xr.where(sem > 0, err / sem.where(sem > 0), np.nan)
    return {f"{name}_mean": mean, f"{name}_sem": sem,
            f"{name}_theory": theory.assign_attrs(long_name=f"theory value of {what}", units=units),
            f"{name}_error": err.assign_attrs(long_name=f"Monte Carlo minus theory, {what}", units=units),
            f"{name}_z": z.assign_attrs(long_name=f"z-score (error / standard error), {what}", units="1")}


def _above(density: xr.DataArray, width: float) -> xr.DataArray:
    """``1 - (mass above each right bin edge)``: the CDF at the right edges, blind to the atom at 0."""
    mass = density * width
    return 1.0 - (mass.sum("bin") - mass.cumsum("bin"))


def bulk_distance(ds: xr.Dataset, done: xr.DataArray, law: str = "theory") -> xr.DataArray:
    """Kolmogorov distance between the replicate-averaged histogram of ``S/kappa`` and a bulk law.

    ``law="theory"``: the store's ``theory_spectrum`` (the finite-T law where it is exact, else the
    cubic; ``theory_spectrum_law``); ``law="paper"``: the cubic ``MP_delta ⊠ MP_gamma``
    (``paper_spectrum``, computed here for stores made before it was stored). Both CDFs are taken at
    the right bin edges as ``1 - (mass above the edge)``: this avoids the density's integrable
    singularity at 0 and does not depend on how many exact zeros (rank deficiency, ``delta`` or
    ``gamma > 1``) the histogram's first bin caught; rounding can make some of them slightly
    negative, and those fall outside the bins.
    """
    width = float(ds["bin"].attrs.get("bin_width", np.diff(ds["bin"].values[:2])[0]))
    emp = _above(only_done(ds["spectrum"], done).mean("replicate"), width)
    name = "theory_spectrum" if law == "theory" else "paper_spectrum"
    if name in ds:
        th = ds[name].load()
    elif law == "theory" and "paper_spectrum" in ds:
        th = ds["paper_spectrum"].load()
    else:                                                 # a store from before the spectra were stored
        edges = np.append(ds["bin"].values - width / 2, ds["bin"].values[-1] + width / 2)
        th = xr.DataArray([[theory.bulk.histogram(edges, dl, g) for g in ds["gamma"].values]
                           for dl in ds["delta"].values], dims=("delta", "gamma", "bin"),
                          coords={"delta": ds["delta"], "gamma": ds["gamma"], "bin": ds["bin"]})
    which = "the store's theory_spectrum" if law == "theory" else "the cubic MP_delta ⊠ MP_gamma"
    return abs(emp - _above(th, width)).max("bin").assign_attrs(
        long_name=f"Kolmogorov distance of the mean eigenvalue histogram of S/kappa to {which}", units="1")


def compare(source: str | Path | Location | xr.Dataset, *, false_alarm: float | None = None,
            margin_factor: float | None = None, lazy: bool = False, reference: str = "best",
            storage_options: dict | None = None) -> xr.Dataset:
    """Hold a store's Monte Carlo against its theory arrays.

    The per-replicate arrays are reduced chunk by chunk with dask (on the cluster of the current
    ``distributed`` client, if there is one), so memory stays bounded by a few chunks whatever the
    store's size; only the ``done`` mask is read whole.

    Parameters
    ----------
    source
        A store path or an already opened store dataset.
    false_alarm
        Detection at this false-alarm level (default 0.05): the tested eigenvalue must exceed the
        ``1 - false_alarm`` quantile of the predicted null ``lambda_1`` (:mod:`.detection`).
    margin_factor
        Instead, the margin rule: a margin of ``margin_factor * kappa lambda_+ d^(-2/3)`` above the edge.
    lazy
        Return the comparison as lazy dask arrays (compute it with ``.compute()``); the ``*_limit``
        variables are computed only by an eager comparison.
    reference
        What ``lambda1_*`` and ``overlap_*`` (``theory``, ``error``, ``z``) hold the Monte Carlo against:
        ``"best"`` (default), the store's prediction at its own size (``finite_size_*``) where it has one and
        the ``d -> infinity`` limit elsewhere (``{name}_reference`` says which per cell); ``"limit"``, the limit
        everywhere. The limit comparison is kept under ``limit_lambda1_*`` and ``limit_overlap_*`` either way.
    storage_options
        For a store at a URL (``s3://bucket/run.zarr``): the options of its filesystem (``endpoint_url``,
        credentials, ...); credentials and endpoint also come from the environment.

    Returns
    -------
    xarray.Dataset
        Dims ``([d,] delta, gamma, T, weights, snr)``: ``lambda1_*`` and ``overlap_*`` (``mean``, ``sem``,
        ``theory``, ``error``, ``z``; eigenvalues in the absolute units of ``S``), ``n_done``,
        ``detection_threshold``, ``detection_rate``, ``empirical_phase``, ``theory_phase``, ``phase_agrees``; per line
        ``transition_snr_empirical``, ``transition_snr_theory``, ``transition_snr_error``. For an
        uncentred table also ``signal_lambda_*``, ``signal_rank`` and ``paper_*_error``.
    """
    if reference not in REFERENCES:
        raise SelectionError(f"reference {reference!r}: unknown (valid: {', '.join(REFERENCES)})")
    rule = detection_rule(false_alarm, margin_factor)
    source = with_options(source, storage_options)
    ds = open_source(source)
    require_theory(ds.attrs, store_name(source), "compare")
    centering = ds.attrs.get("table_centering", "class")
    d = d_of(ds)
    dims = store_dims(has_d_axis(ds.dims))

    def arr(name: str) -> xr.DataArray:              # theory arrays are small: read now unless all must stay lazy
        return ds[name] if lazy else ds[name].load()

    done = ds["done"] if lazy else ds["done"].load()   # a flag per replicate; its count goes in the attrs
    observed = _observed(ds, centering)
    avg: dict[str, xr.DataArray] = {}
    for name, (x, what, units) in observed.items():
        avg.update(_averaged(name, x, done, what, units))
    out: dict[str, xr.DataArray] = {}
    out.update(_held("lambda1", avg, arr("theory_outlier"), *observed["lambda1"][1:]))
    out["lambda1_rel_error"] = (out["lambda1_error"] / out["lambda1_theory"]).assign_attrs(
        long_name="relative error of lambda_1, (MC - theory) / theory", units="1")
    if centering == "none":
        out.update(_held("signal_lambda", avg, arr("theory_signal_outlier"), *observed["signal_lambda"][1:]))
        out["signal_rank"] = avg["signal_rank"]
        out.update(_held("overlap", avg, arr("theory_overlap"), *observed["overlap"][1:]))
        for what, ref in (("lambda1", "paper_outlier"), ("overlap", "paper_overlap")):
            e = out[f"{what}_mean"] - arr(ref)
            out[f"paper_{what}_error"] = e.assign_attrs(
                long_name=f"Monte Carlo minus the paper's uncorrected {ref}", units=out[f"{what}_mean"].attrs["units"])
        tested = observed["signal_lambda"][0]
    else:
        out.update(_held("overlap", avg, arr("theory_overlap"), *observed["overlap"][1:]))
        tested = observed["lambda1"][0]
    hit, limit, null_kind = replicate_hits(
        ds if lazy else ds.assign({k: arr(k) for k in ("theory_edge", "theory_kappa") if k in ds}), tested, done, d,
        rule, lazy)
    uncalibrated = limit.attrs.pop("uncalibrated_cells", 0)
    rate = hit.mean("replicate")
    out["n_done"] = done.sum("replicate").assign_attrs(long_name="replicates done", units="1")
    out["detection_threshold"] = limit
    if null_kind is not None:
        out["detection_null"] = null_kind
    out["detection_rate"] = rate.assign_attrs(
        long_name="fraction of done replicates whose tested eigenvalue exceeds detection_threshold", units="1")
    emp = xr.where(rate > 0.5, 2, 0).where(rate.notnull())
    emp.attrs = {"long_name": "empirical phase: 2 if detection rate > 1/2, else 0", "units": "1",
                 "flag_values": [0, 2], "flag_meanings": "no_outlier_detected outlier_detected"}
    out["empirical_phase"], out["theory_phase"] = emp, (th := arr("theory_phase"))
    agrees = ((emp == 2) == (th == 2)).where(rate.notnull())
    agrees.attrs = {"long_name": "empirical and theoretical phase agree (outlier visible or not)", "units": "1",
                    "flag_values": [0, 1], "flag_meanings": "disagree agree"}      # not theory_phase's flags
    out["phase_agrees"] = agrees
    t_emp = transition_snr(rate).assign_attrs(
        long_name="SNR where the detection rate crosses 1/2 (linear interpolation)", units="snr")
    out["transition_snr_empirical"], out["transition_snr_theory"] = t_emp, (t_th := arr("theory_snr_sample"))
    out["transition_snr_error"] = (t_emp - t_th).assign_attrs(long_name="empirical minus theory", units="snr")
    if null_kind is not None:             # the maps show a variable's caption under it
        caption = null_caption()
        for name in ("detection_rate", "empirical_phase", "phase_agrees", "transition_snr_empirical",
                     "transition_snr_error"):
            out[name].attrs["caption"] = caption
    if centering == "class" and "theory_rho" in ds:
        out["theory_detection_rate"] = theory_detection_rate(ds, d, rule, lazy)
        if null_kind is not None:         # its Tracy-Widom threshold is not the test a cell without a law gets
            p = out["theory_detection_rate"]
            out["theory_detection_rate"] = p.where(null_kind == LAW).assign_attrs(
                p.attrs, long_name=p.attrs["long_name"][:-1] + "; NaN where detection_null != 0)")
    fs = finite_size_z(ds, out, lazy)
    out.update(fs)
    hold_against(out, fs, reference, no_law_cells(ds) if centering == "class" and "T" in ds.dims else None)
    out["lambda1_rel_error"] = (out["lambda1_error"] / out["lambda1_theory"]).assign_attrs(
        long_name=f"relative error of lambda_1, (MC - theory) / theory, against {reference_text(reference, 'lambda1')}",
        units="1")
    if "spectrum" in ds:
        out["bulk_ks"] = bulk_distance(ds, done)
        out["paper_bulk_ks"] = bulk_distance(ds, done, law="paper")
    cmp = xr.Dataset(out).transpose(*dims.cell, "snr")
    signal = ("signal outlier = the top-k eigenvector best aligned with u (uncentred table); detection "
              "tests its eigenvalue" if centering == "none" else "signal outlier = the top eigenpair")
    cmp.attrs = {"title": f"comparison of {ds.attrs.get('sweep_name', 'store')} with theory",
                 "table_centering": centering, **({} if dims.d_axis else {"d": int(d)}),   # a d axis: a coordinate
                 "sweep_hash": ds.attrs.get("sweep_hash", ""),
                 "signal_outlier": signal, **rule.attrs(), "detection_uncalibrated_cells": uncalibrated,
                 "reference": reference, "reference_note": reference_text(reference, "lambda1"),
                 "replicates_counted": "only replicates whose done flag is true"}
    if lazy:
        return cmp
    cmp.attrs.update(done_replicates=int(done.sum()), done_total=int(done.size), done_digest=done_digest(done.values))
    with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)            # means of cells with no replicate done: NaN
        cmp = cmp.compute()
        # the d -> infinity limits, bootstrapped over the per-replicate detections within the budget
        if dims.d_axis and ds.sizes[D] >= MIN_D and tested.size <= config.get("compare.limit-budget"):
            line = {k: ds[k].load() for k in ("theory_T_eff", "theory_law") if k in ds}   # (T, weights)
            cmp = cmp.assign(limit_variables(cmp, hit.load(), rule, t_eff=line.get("theory_T_eff"),
                                             law=line.get("theory_law")))
            cmp.attrs["limits"] = (f"per line over d (>= {MIN_D} values): transition_snr ~ limit + a d^-b (b: the "
                                   "finite-d theory's exponent), lambda1 and overlap ~ limit + c/d "
                                   "(rmtsweep.analysis.limits); transition_snr_limit_trust says where and why the "
                                   "transition's extrapolation is not to be trusted")
    return cmp


def write_comparison(path: str | Path | Location, cmp: xr.Dataset) -> None:
    """Write ``cmp`` as the group ``comparison`` of the store (zarr format 2, consolidated).

    The root group's arrays, ``.zattrs`` and ``.zgroup`` are never rewritten (a sweep may keep
    filling the store meanwhile). The group gets its own ``comparison/.zmetadata``, and its entries
    are merged into the root's consolidated ``.zmetadata`` (atomically replaced; the root entries
    are kept as they are), so ``xr.open_zarr(store, group="comparison")`` reads it.
    """
    path = locate(path)
    open_store(path)  # raises StoreError if it is not a store
    cmp = cmp.assign_coords(weights=np.array([str(w) for w in cmp["weights"].values], dtype=object))
    for v in cmp.variables.values():
        v.encoding = {}
    with metadata_lock(path):              # a run recording itself rewrites .zmetadata too
        _write_group(path, cmp)


def _write_group(path: Location, cmp: xr.Dataset) -> None:
    cmp.to_zarr(zarr_target(path, read_only=False), group=GROUP, mode="w", zarr_format=ZARR_FORMAT,
                consolidated=False, encoding=checksum_encoding(cmp))
    zarr.consolidate_metadata(zarr_target(path, read_only=False), path=GROUP, zarr_format=ZARR_FORMAT)
    sub = json.loads(cast(bytes, read_object(path, f"{GROUP}/.zmetadata")))["metadata"]     # consolidated just now

    def merge(meta: dict) -> None:            # the group's entries replace its old ones in the root's copy
        for key in [k for k in meta if k.startswith(GROUP + "/")]:
            del meta[key]
        meta.update({f"{GROUP}/{k}": v for k, v in sub.items()})

    edit_consolidated(path, merge)


def false_alarm_lines(cmp: xr.Dataset) -> list[str]:
    """The detections at ``snr = 0`` against the rule's level: pooled, and per cell within 3 binomial s.e."""
    if 0.0 not in cmp["snr"].values:
        return _null_lines(cmp)
    rate, n = cmp["detection_rate"].sel(snr=0.0), cmp["n_done"].sel(snr=0.0) if "snr" in cmp["n_done"].dims \
        else cmp["n_done"]
    ok = rate.notnull() & (n > 0)
    if "detection_null" in cmp:               # a Monte Carlo null's snr = 0 rate is at most the level by construction
        ok = ok & (cmp["detection_null"] != MONTE_CARLO)
    notes = _null_lines(cmp)
    if not bool(ok.any()):
        return notes
    hits, total = float((rate * n).where(ok).sum()), int(n.where(ok).sum())
    alpha = cmp.attrs.get("false_alarm")
    if alpha is None:
        return [f"false alarms at snr = 0 (margin rule, no stated level): {hits:.0f}/{total} = {hits / total:.3f}"]
    within = abs(rate - alpha) <= 3 * np.sqrt(alpha * (1 - alpha) / n.where(n > 0))
    out = [f"false alarms at snr = 0: {hits:.0f}/{total} = {hits / total:.3f} (level {alpha:g} ± "
           f"{np.sqrt(alpha * (1 - alpha) / total):.3f}); within 3 binomial s.e. of the level in "
           f"{int(within.where(ok).sum())}/{int(ok.sum())} cells"]
    if cmp.attrs.get("detection_uncalibrated_cells"):
        out.append(f"   {cmp.attrs['detection_uncalibrated_cells']} theory_law = 1 cells have no realised-count null "
                   "in the store (over the finite-size budget, or an older store): the cubic's threshold there")
    return out + notes


def null_caption() -> str:
    """One line for a map of detection: which cells use a Monte Carlo null, and which have none (blank)."""
    return ("cells without a null law at the store's size (data-dependent weights over T >= 2): detection against "
            "the order statistic of the null replicates the run scheduled (detection_null = 3) or of their other "
            "snr = 0 replicates (detection_null = 1); blank where too few null replicates (detection_null = 2: no "
            "detection, no transition)")


def _null_lines(cmp: xr.Dataset) -> list[str]:
    """How many cells take their detection threshold from each null (``detection_null``)."""
    if "detection_null" not in cmp:
        return []
    kind = cmp["detection_null"]
    mc, none = int((kind == MONTE_CARLO).sum()), int((kind == NO_NULL).sum())
    run = int((kind == SCHEDULED).sum())
    out = [f"detection null: {int(kind.size) - mc - none - run} cells a law at the store's size, {mc} a Monte Carlo "
           f"null from their snr = 0 replicates, {run} from the null replicates the run scheduled, {none} none"]
    if run:
        out.append(f"   {run} cells without a law are tested against the order statistic of the null replicates the "
                   "run scheduled (null_eigenvalue): independent draws, so their snr = 0 rate is a check of the level")
    if mc:
        out.append(f"   {mc} cells without a law (data-dependent weights over T >= 2) are tested against the order "
                   "statistic of their other snr = 0 replicates; their snr = 0 rate is at most the level by "
                   "construction (leave-one-out), so it is left out of the false-alarm count")
    if none:
        out.append(f"   {none} cells without a law have too few null replicates for the level (scheduled or at "
                   "snr = 0) for a Monte Carlo null: detection rate, phase and transition are NaN there")
    return out


def _trust_text(row) -> str:
    """``not trusted: <reasons>`` for a line whose ``transition_snr_limit_trust`` has bits set (:data:`TRUST`)."""
    flag = getattr(row, "transition_snr_limit_trust", np.nan)
    if not np.isfinite(flag) or flag == 0:
        return ""
    return "  not trusted: " + ", ".join(why.replace("_", " ") for bit, why in TRUST.items() if int(flag) & bit)


def summary(cmp: xr.Dataset, worst: int = 5) -> str:
    """A printable summary: agreement within 3 standard errors, worst cells, transition-SNR errors."""
    lines = [f"{cmp.attrs['title']}: {cmp.attrs['signal_outlier']}", f"detection: {cmp.attrs['detection']}"]
    if "reference_note" in cmp.attrs:
        lines.append(f"lambda1 and overlap are held against {cmp.attrs['reference_note'].replace('_lambda1', '_*')}")
    lines += false_alarm_lines(cmp)
    if cmp.attrs.get("done_replicates", 0) < cmp.attrs.get("done_total", 0):
        lines.append(f"incomplete store: computed from {cmp.attrs['done_replicates']} of {cmp.attrs['done_total']} "
                     f"replicates done (cells with none done are NaN); rerun compare when the run has finished")
    clear = (cmp["theory_phase"] == 2) & (cmp["detection_rate"] == 1)
    for name in ("lambda1", "signal_lambda", "overlap"):
        if f"{name}_z" not in cmp:
            continue
        z = cmp[f"{name}_z"]
        if f"{name}_reference" in cmp and bool((cmp[f"{name}_reference"] == NO_LAW).any()):
            lost = int((np.isfinite(z) & (cmp[f"{name}_reference"] == NO_LAW)).sum())
            lines.append(f"{name}: {lost} cells have no law at the store's size (finite-d attention over T >= 2): "
                         f"left out of the counts below (their z against the limit: limit_{name}_z)")
            z = z.where(cmp[f"{name}_reference"] != NO_LAW)
        ok = np.isfinite(z)
        agree = (abs(z) <= 3) & ok
        lines.append(f"{name}: {int(agree.sum())}/{int(ok.sum())} cells within 3 standard errors; "
                     f"with a clear outlier (theory phase 2, detection rate 1): "
                     f"{int((agree & clear).sum())}/{int((ok & clear).sum())}")
        flat = abs(z).where(ok).stack(cell=cmp[f"{name}_z"].dims).dropna("cell")
        for cell in flat.sortby(flat, ascending=False)[:worst]["cell"].values:
            c = dict(zip(z.dims, cell, strict=True))
            row = cmp.sel(c)
            lines.append("   worst: " + " ".join(f"{k}={v}" for k, v in c.items()) +
                         f"  MC {float(row[f'{name}_mean']):.4g} ± {float(row[f'{name}_sem']):.2g}"
                         f"  theory {float(row[f'{name}_theory']):.4g}  z {float(row[f'{name}_z']):+.1f}")
    if "paper_lambda1_error" in cmp:
        th, paper = cmp["lambda1_theory"], cmp["lambda1_mean"] - cmp["paper_lambda1_error"]
        lines.append(f"lambda1 mean |relative error|: paper's uncorrected "
                     f"{float(abs(cmp['paper_lambda1_error'] / paper).mean()):.3f}, corrected theory "
                     f"{float(abs(cmp['lambda1_error'] / th).mean()):.3f}")
        lines.append(f"overlap mean |error|: paper's uncorrected {float(abs(cmp['paper_overlap_error']).mean()):.3f}, "
                     f"corrected theory {float(abs(cmp['overlap_error']).mean()):.3f}")
    agree = cmp["phase_agrees"]
    lines.append(f"phase agrees in {int(agree.sum())}/{int(agree.count())} cells")
    if "theory_detection_rate" in cmp:
        p, rate, n = cmp["theory_detection_rate"], cmp["detection_rate"], cmp["n_done"]
        close = abs(rate - p) <= 3 * np.sqrt(p * (1 - p) / n.where(n > 0)) + 0.03
        held = rate.notnull() & p.notnull()                   # p is NaN where theory_law = 1
        if bool(held.any()):
            lines.append(f"detection rate within 3 binomial sigma + 0.03 of the finite-d prediction in "
                         f"{int(close.where(held).sum())}/{int(held.sum())} cells")
    for name in ("lambda1", "overlap") if "finite_size_lambda1_z" in cmp else ():
        z = cmp[f"finite_size_{name}_z"]
        lines.append(f"{name} at the store's size (finite_size_{name}: T = 1 cells and fixed weights over T >= 2): "
                     f"{int((abs(z) <= 3).sum())}/{int(np.isfinite(z).sum())} cells within 3 standard errors")
    if "transition_snr_limit" in cmp:
        names = ["transition_snr_limit", "transition_snr_limit_sem", "transition_snr_limit_z"]
        lim = cmp[names + [n for n in ("transition_snr_limit_trust",) if n in cmp]].to_dataframe()
        lines.append(f"d -> infinity ({cmp.sizes[D]} d values; {cmp.attrs.get('limits', '')}):")
        for idx, row in lim.dropna(subset=names).iterrows():
            at = zip(lim.index.names, np.atleast_1d(idx), strict=True)
            lines.append("   " + " ".join(f"{k}={v}" for k, v in at) +
                         f"  transition_snr_limit {row.transition_snr_limit:.3f} ± {row.transition_snr_limit_sem:.3f}"
                         f"  z {row.transition_snr_limit_z:+.1f}" + _trust_text(row))
    lines.append("transition SNR (detection rate crosses 1/2) vs theory_snr_sample:")
    t = cmp[["transition_snr_empirical", "transition_snr_theory", "transition_snr_error"]].to_dataframe()
    if len(t) > config.get("compare.list-all"):
        shown = max(worst, 1)
        lines[-1] = (f"transition SNR vs theory_snr_sample on {len(t)} lines "
                     f"({int(t.transition_snr_error.notna().sum())} with a crossing); the {shown} largest |error| "
                     f"(all in transition_snr_*):")
        t = t.reindex(t.transition_snr_error.abs().sort_values(ascending=False, na_position="last").index[:shown])
    for idx, row in t.iterrows():
        lines.append("   " + " ".join(f"{k}={v}" for k, v in zip(t.index.names, idx, strict=True)) +
                     f"  empirical {row.transition_snr_empirical:.3g}  theory {row.transition_snr_theory:.3g}"
                     f"  error {row.transition_snr_error:+.3g}")
    return "\n".join(lines)
