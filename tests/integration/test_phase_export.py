"""`rmtsweep export --phase-diagram` on a real store, and `--out` mistakes as one-line errors."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from rmtsweep import open_store
from rmtsweep.analysis.compare import compare
from rmtsweep.cli import main


def test_phase_diagram_csv_holds_every_line_with_the_comparisons_transition(tiny_store, tmp_path, capsys):
    out = tmp_path / "new" / "dir" / "phase.csv"                  # parents created as mkdir -p would
    main(["export", str(tiny_store), "--phase-diagram", "--out", str(out), "--bootstrap", "200"])
    assert "transition SNR per line (percentile bootstrap over replicates, 200 resamples" in capsys.readouterr().out
    table = pd.read_csv(out)
    ds, cmp = open_store(tiny_store), compare(tiny_store)
    assert len(table) == ds.sizes["delta"] * ds.sizes["gamma"] * ds.sizes["T"] * ds.sizes["weights"]
    for row in table.itertuples():
        at = dict(delta=row.delta, gamma=row.gamma, T=row.T, weights=row.weights)
        assert np.isclose(row.transition_snr, float(cmp["transition_snr_empirical"].sel(at)), equal_nan=True)
        assert row.theory_snr_sample == pytest.approx(float(ds["theory_snr_sample"].sel(at)))
        assert row.theory_snr_population == pytest.approx(float(ds["theory_snr_population"].sel(at)))
        if np.isfinite(row.ci_low) and np.isfinite(row.ci_high):
            assert row.ci_low <= row.ci_high


@pytest.mark.parametrize("target, message", [
    ("dir", r"^rmtsweep: error: --out \S+dir: is a directory; give a file name"),
    ("file/x.csv", r"^rmtsweep: error: --out \S+file/x\.csv: \S+file is a file, not a directory$"),
])
@pytest.mark.parametrize("phase", [False, True])
def test_a_bad_out_path_is_one_line_and_exit_2(tiny_store, tmp_path, capsys, target, message, phase):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tiny_store), "--out", str(tmp_path / target), *(["--phase-diagram"] if phase else [])])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]), err


def test_phase_diagram_refuses_options_it_does_not_use(tiny_store, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["export", str(tiny_store), "--phase-diagram", "--format", "netcdf", "--out", str(tmp_path / "p.nc")])
    assert exc.value.code == 2
    assert "--phase-diagram writes one CSV table" in capsys.readouterr().err
    assert not (tmp_path / "p.nc").exists()


def test_the_accessor_gives_the_same_table(tiny_store):
    from rmtsweep.analysis.phase import phase_diagram
    table = open_store(tiny_store).rmt.phase_diagram(n_boot=100, seed=3)
    assert table.equals(phase_diagram(tiny_store, n_boot=100, seed=3))
    assert table.transition_snr.notna().any()                       # the tiny store has crossings to find


def test_lines_with_different_numbers_of_done_replicates(tiny_store):
    """An interrupted store: each line's transition and interval come from its own done replicates only,
    whatever the others have (the lines are bootstrapped in groups of equal counts)."""
    from rmtsweep.analysis.compare import detected
    from rmtsweep.analysis.phase import phase_diagram
    from rmtsweep.analysis.transition import crossing

    ds = open_store(tiny_store).load()
    done = ds["done"].transpose("delta", "gamma", "T", "weights", "replicate").values.copy()
    done[0, 0, 0, :, [0, 1, 3]] = False                       # the lines at (0.5, 0.5): replicate 2 done
    done[1, 0, 0, :, [0, 2]] = False                          # (1.0, 0.5): replicates 1 and 3
    done[0, 1, 0, :, :] = False                               # (0.5, 1.0): none
    ds["done"] = (("delta", "gamma", "T", "weights", "replicate"), done)
    table = phase_diagram(ds, n_boot=300, seed=5)
    hits = detected(ds)
    for row in table.itertuples():
        at = dict(delta=row.delta, gamma=row.gamma, T=row.T, weights=row.weights)
        keep = ds["done"].sel(at).values
        assert row.n_replicates == keep.sum()
        line = hits.sel(at).transpose("replicate", "snr").values[keep]
        expected = crossing(line.mean(axis=0), hits["snr"].values) if keep.any() else np.nan
        assert np.isclose(row.transition_snr, expected, equal_nan=True)
        if not keep.any():
            assert np.isnan([row.ci_low, row.ci_high, row.censored_fraction]).all()
        elif keep.sum() == 1 and np.isfinite(expected):        # one replicate: every resample is the line itself
            assert row.censored_fraction == 0.0 and row.ci_low <= expected <= row.ci_high


def test_phase_diagram_at_a_stated_level_equals_the_comparison_at_that_level(tiny_store, tmp_path, capsys):
    out = tmp_path / "phase.csv"
    main(["export", str(tiny_store), "--phase-diagram", "--out", str(out), "--bootstrap", "50", "--false-alarm", "0.2"])
    assert "; detection at false-alarm level 0.2" in capsys.readouterr().out
    table, cmp = pd.read_csv(out), compare(tiny_store, false_alarm=0.2)
    default = compare(tiny_store)["transition_snr_empirical"]
    assert not default.equals(cmp["transition_snr_empirical"])          # the level changes some transition here
    for row in table.itertuples():
        at = dict(delta=row.delta, gamma=row.gamma, T=row.T, weights=row.weights)
        assert np.isclose(row.transition_snr, float(cmp["transition_snr_empirical"].sel(at)), equal_nan=True)
    with pytest.raises(SystemExit) as exc:                                # the rule of a plain export is the store's
        main(["export", str(tiny_store), "--out", str(tmp_path / "t.csv"), "--margin-factor", "1"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "choose the detection rule of --phase-diagram" in err[0]
    assert not (tmp_path / "t.csv").exists()
