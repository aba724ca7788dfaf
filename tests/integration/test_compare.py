"""The comparison on a synthetic store with known answers: z-scores, detection rates, transitions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from rmtsweep.analysis.compare import MARGIN_FACTOR, compare, open_source, summary, write_comparison
from rmtsweep.errors import SelectionError
from rmtsweep.errors import StoreError
from rmtsweep.store import FORMAT, ZARR_FORMAT

D = 64
SNR = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
EDGE = 4.0                                         # absolute units (kappa lambda_+)
MARGIN = MARGIN_FACTOR * EDGE * D ** (-2 / 3)
OFFSETS = np.array([-1.5, -0.5, 0.5, 1.5])         # per-replicate deviations: SE = std(ddof=1) / 2
# detection pattern per SNR (4 replicates): rates 0, 1/4, 3/4, 1, 1 -> the 1/2 crossing is at snr 1.5
DETECTED = np.array([[0, 0, 0, 0], [0, 0, 0, 1], [0, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]], bool)


def synthetic(centering: str = "class") -> xr.Dataset:
    """A store-shaped dataset (same variables and dims as a real store) with known answers."""
    weights = np.array(["mean", "optimal", "harmonic"], dtype=object)
    shape = (1, 1, 1, 3, 4, SNR.size, 2)
    eig = np.empty(shape)
    ov = np.empty(shape)
    for r in range(4):
        for i in range(SNR.size):
            top = EDGE + (2 * MARGIN if DETECTED[i, r] else -0.5)
            eig[..., r, i, 0] = top + 0.01 * OFFSETS[r]
            eig[..., r, i, 1] = EDGE - 1.0
            ov[..., r, i, 0] = 0.5 + 0.02 * OFFSETS[r]
            ov[..., r, i, 1] = 0.01
    if centering == "none":                        # the signal eigenvector is the second one
        eig, ov = eig[..., ::-1].copy(), ov[..., ::-1].copy()
    done = np.ones(shape[:5], bool)
    done[0, 0, 0, 1, 3] = False                    # optimal: replicate 3 not written yet
    done[0, 0, 0, 2, :] = False                    # harmonic: nothing done
    theory_lam = np.full((1, 1, SNR.size, 1, 3), EDGE + 2 * MARGIN)
    cell = ("delta", "gamma", "T", "weights")
    ds = xr.Dataset(
        {"eigenvalues": (cell + ("replicate", "snr", "k"), eig), "overlap": (cell + ("replicate", "snr", "k"), ov),
         "alpha": (cell + ("replicate",), np.ones(shape[:5])), "kappa": (cell + ("replicate",), np.ones(shape[:5])),
         "done": (cell + ("replicate",), done),
         "theory_outlier": (("delta", "gamma", "snr", "T", "weights"), theory_lam),
         "theory_overlap": (("delta", "gamma", "snr", "T", "weights"), np.full(theory_lam.shape, 0.49)),
         "theory_edge": (cell, np.full((1, 1, 1, 3), EDGE)),
         "theory_phase": (("delta", "gamma", "snr", "T", "weights"),
                          np.broadcast_to(np.array([0, 0, 2, 2, 2], np.int8)[:, None, None], theory_lam.shape)),
         "theory_snr_sample": (cell, np.full((1, 1, 1, 3), 1.25)),
         "theory_alpha": (("T", "weights"), np.ones((1, 3))), "theory_kappa": (("T", "weights"), np.ones((1, 3)))},
        coords={"delta": [0.5], "gamma": [0.5], "T": [16], "weights": weights, "replicate": np.arange(4),
                "snr": SNR, "k": [1, 2]},
        attrs={"rmtsweep_format": FORMAT, "d": D, "table_centering": centering, "sweep_name": "synthetic"})
    if centering == "none":
        ds["theory_signal_outlier"] = ds["theory_outlier"]
        ds["paper_outlier"] = ds["theory_outlier"] + 1.0
        ds["paper_overlap"] = ds["theory_overlap"] + 0.1
    return ds


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "synthetic.zarr"
    synthetic().to_zarr(path, zarr_format=ZARR_FORMAT, consolidated=True)
    return path


def test_means_standard_errors_and_z_scores(store):
    cmp = compare(store)
    mean = cmp.sel(weights="mean")
    sem = 0.01 * np.std(OFFSETS, ddof=1) / 2
    uniform = DETECTED.all(1) | ~DETECTED.any(1)       # snr rows where every replicate is on one side
    assert np.allclose(mean["lambda1_sem"].squeeze()[uniform], sem)
    expected = np.where(DETECTED.all(1), EDGE + 2 * MARGIN, EDGE + np.where(DETECTED, 2 * MARGIN, -0.5).mean(1))
    assert np.allclose(mean["lambda1_mean"].squeeze(), expected)
    assert np.allclose(mean["overlap_z"], (0.5 - 0.49) / (0.02 * np.std(OFFSETS, ddof=1) / 2))
    assert np.allclose(mean["lambda1_z"].squeeze()[3:], 0.0)


def test_only_done_replicates_count(store):
    cmp = compare(store).squeeze()
    opt = cmp.sel(weights="optimal")
    assert int(opt["n_done"]) == 3
    assert np.allclose(opt["overlap_mean"], 0.5 + 0.02 * OFFSETS[:3].mean())
    assert np.allclose(opt["overlap_sem"], 0.02 * np.std(OFFSETS[:3], ddof=1) / np.sqrt(3))
    harm = cmp.sel(weights="harmonic")
    assert int(harm["n_done"]) == 0
    for name in ("lambda1_mean", "overlap_z", "detection_rate", "transition_snr_empirical", "phase_agrees"):
        assert np.isnan(harm[name].values).all(), name


@pytest.mark.parametrize("rule", [{}, {"margin_factor": MARGIN_FACTOR}], ids=["false-alarm", "margin"])
def test_detection_rate_phase_and_transition(store, rule):
    cmp = compare(store, **rule).squeeze()
    mean = cmp.sel(weights="mean")
    assert np.allclose(mean["detection_rate"].squeeze(), [0, 0.25, 0.75, 1, 1])
    assert np.allclose(mean["empirical_phase"].squeeze(), [0, 0, 2, 2, 2])
    assert bool(mean["phase_agrees"].all())
    assert float(mean["transition_snr_empirical"]) == pytest.approx(1.5)
    assert float(mean["transition_snr_error"]) == pytest.approx(0.25)
    # optimal has replicate 3 missing: rates 0, 0, 2/3, 1, 1 -> crossing at 1 + 0.5 / (2/3) = 1.75
    assert float(cmp.sel(weights="optimal")["transition_snr_empirical"]) == pytest.approx(1.75)
    if rule:
        assert "d^(-2/3)" in cmp.attrs["detection"] and cmp.attrs["margin_factor"] == MARGIN_FACTOR
    else:
        assert "0.95 quantile" in cmp.attrs["detection"] and cmp.attrs["false_alarm"] == 0.05
        # the cubic's threshold: the store's edge plus sigma_d q_0.95 (Johnstone 2001: q_0.95 of TW_1 = 0.9793)
        from rmtsweep.theory.finite_d import tw_scale
        expected = EDGE * (1 + float(tw_scale(0.5, 0.5, D)) * 0.9793 / 4.40915)
        assert float(cmp["detection_threshold"].sel(weights="mean")) == pytest.approx(expected, rel=2e-4)


def test_censored_transitions_are_nan():
    from rmtsweep.analysis.compare import transition_snr
    rate = xr.DataArray([[0.6, 0.8, 1.0], [0.0, 0.1, 0.2], [0.0, 0.5, 1.0]], dims=("line", "snr"),
                        coords={"snr": [0.0, 1.0, 2.0]})
    out = transition_snr(rate).values
    assert np.isnan(out[0]) and np.isnan(out[1]) and out[2] == pytest.approx(1.0)


def test_uncentred_store_uses_best_aligned_eigenvector(tmp_path):
    path = tmp_path / "none.zarr"
    synthetic("none").to_zarr(path, zarr_format=ZARR_FORMAT, consolidated=True)
    cmp = compare(path)
    mean = cmp.sel(weights="mean")
    assert np.allclose(mean["signal_rank"], 2.0)
    assert np.allclose(mean["overlap_mean"], 0.5)
    assert np.allclose(mean["detection_rate"].squeeze(), [0, 0.25, 0.75, 1, 1])
    assert np.allclose(mean["paper_overlap_error"], mean["overlap_error"] - 0.1)
    assert "best aligned with u" in cmp.attrs["signal_outlier"]
    assert "paper's uncorrected" in summary(cmp)


def test_written_group_leaves_root_untouched(store):
    before = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file() and p.name != ".zmetadata"}
    cmp = compare(store)
    write_comparison(store, cmp)
    write_comparison(store, cmp)                       # rewriting is fine
    after = {p.relative_to(store): p.read_bytes() for p in store.rglob("*")
             if p.is_file() and p.name != ".zmetadata" and "comparison" not in p.parts}
    assert after == before
    back = xr.open_zarr(store, group="comparison")
    assert list(back["weights"].values) == ["mean", "optimal", "harmonic"]
    xr.testing.assert_allclose(back["overlap_z"].load(), cmp["overlap_z"])
    assert back.attrs["detection"] == cmp.attrs["detection"]
    assert "eigenvalues" in xr.open_zarr(store).data_vars and "comparison" not in xr.open_zarr(store).attrs


def test_summary_lines(store):
    text = summary(compare(store))
    assert "cells within 3 standard errors" in text
    assert "transition SNR" in text and "empirical 1.5" in text
    assert "worst:" in text


def test_errors_name_the_bad_value(tmp_path, store):
    with pytest.raises(StoreError, match=r"missing\.zarr: does not exist$"):
        compare(tmp_path / "missing.zarr")
    with pytest.raises(SelectionError, match="no group 'nope'"):
        open_source(store, "nope")


def test_cli_compare(store, capsys):
    from rmtsweep.cli import main
    main(["compare", str(store)])
    out = capsys.readouterr().out
    assert "cells within 3 standard errors" in out and "group='comparison'" in out
    assert "detection_rate" in xr.open_zarr(store, group="comparison")
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(store.parent / "nowhere.zarr")])
    assert exc.value.code == 2
    # the level is stated, and the false alarms measured at snr 0 are counted against it (0 of 4 + 3 done)
    main(["compare", str(store), "--no-write", "--false-alarm", "0.1"])
    out = capsys.readouterr().out
    assert "the 0.9 quantile of the predicted null" in out
    assert "false alarms at snr = 0: 0/7 = 0.000 (level 0.1 ± 0.113); within 3 binomial s.e. of the level in 2/2" in out
    main(["compare", str(store), "--no-write", "--margin-factor", "1"])
    assert "false alarms at snr = 0 (margin rule, no stated level): 0/7" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(store), "--false-alarm", "0.1", "--margin-factor", "1"])
    assert exc.value.code == 2 and "give --false-alarm or --margin-factor, not both" in capsys.readouterr().err


def test_a_stale_comparison_is_refused_not_reused(reference, tmp_path):
    """Written on a half-done store, the comparison group no longer describes it once the run moves on."""
    import shutil

    import zarr
    _, small = reference
    store = tmp_path / "moving.zarr"
    shutil.copytree(small, store)
    g = zarr.open_group(str(store), mode="r+")
    g["done"][:, :, :, :, 2:] = False                                  # half done
    cmp = compare(store)
    assert "incomplete store: computed from 8 of 16 replicates done" in summary(cmp)
    write_comparison(store, cmp)
    assert open_source(store, "comparison").attrs["done_replicates"] == 8          # fresh: opens
    g["done"][...] = True                                              # the run finished
    with pytest.raises(SelectionError, match=r"computed from 8 of 16 replicates done and the store now has 16: "
                                             r"rerun `rmtsweep compare"):
        open_source(store, "comparison")
    write_comparison(store, compare(store))
    assert open_source(store, "comparison").attrs["done_replicates"] == 16


def test_theory_detection_rate_is_a_monotone_probability(reference):
    _, store = reference
    cmp = compare(store)
    p = cmp["theory_detection_rate"]
    assert set(p.dims) == set(cmp["detection_rate"].dims)
    assert float(p.min()) >= 0 and float(p.max()) <= 1
    assert bool((p.diff("snr") >= -1e-12).all())                     # more signal, more detection
    assert "derived, not fitted" in p.attrs["long_name"]


def test_each_phase_variable_carries_its_own_category_names(tiny_store):
    """phase_agrees is 0/1 (disagree/agree), not theory_phase's three phases (xarray would copy those)."""
    cmp = compare(tiny_store)
    assert cmp["phase_agrees"].attrs["flag_meanings"] == "disagree agree"
    assert set(np.unique(cmp["phase_agrees"].values[np.isfinite(cmp["phase_agrees"].values)])) <= {0.0, 1.0}
    assert cmp["empirical_phase"].attrs["flag_values"] == [0, 2]
    assert cmp["theory_phase"].attrs["flag_values"] == [0, 1, 2]


@pytest.mark.slow
def test_at_short_sequences_the_bulk_follows_the_finite_t_law_not_the_cubic(tmp_path):
    """T = 1 and 2: the Monte Carlo histogram is within 0.008 of theory_spectrum (exact Poisson-count law
    at T = 1, the sampled token-count law at T = 2) and closer than to the cubic on average; at T = 16
    the store keeps the cubic (T_eff >= 8) and both distances are the same.

    Over seeds 1-4 at T = 1 the finite-T distances were 0.0026-0.0070 and the cubic's 0.0089-0.031
    (mean ratio 4.2-5.3); on sweeps/paper-finite-t.yaml (d = 300) every T <= 2 cell was at most
    0.0055. Eigenvalue rigidity makes the Kolmogorov distance of an averaged histogram O(1/d), so
    0.008 is a margin, not a pin.
    """
    from tests.helpers import BASE, build_store
    data = {**BASE, "name": "ft", "d": 400, "replicates": 8, "correlation": {"model": "iid"},
            "grid": {"delta": [0.5, 1.0], "gamma": [0.5, 1.0], "snr": [0.0], "T": [1, 2, 16], "weights": ["mean"]},
            "observables": {"spectrum": {"bins": 80, "max": 10.0}}}
    path = build_store(tmp_path / "ft.zarr", data)
    law = open_source(path)["theory_spectrum_law"].sel(weights="mean")
    assert law.values.tolist() == [1, 2, 0]                     # exact, sampled, cubic
    cmp = compare(path).sel(snr=0.0, weights="mean")
    for T, ratio in ((1, 3.0), (2, 1.3)):
        ks, cubic = cmp["bulk_ks"].sel(T=T), cmp["paper_bulk_ks"].sel(T=T)
        assert (ks < 0.008).all(), (T, ks.values, cubic.values)
        assert float(cubic.mean()) > ratio * float(ks.mean()), (T, ks.values, cubic.values)
    assert np.array_equal(cmp["bulk_ks"].sel(T=16), cmp["paper_bulk_ks"].sel(T=16))
    assert (cmp["bulk_ks"].sel(T=16) < 0.008).all()
