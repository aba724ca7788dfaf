"""The Monte Carlo null's order-statistic threshold, against independent continuous draws."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep.analysis.detection import _leave_one_out, min_null_replicates, null_rank


@pytest.mark.parametrize(("m", "alpha"), [(19, 0.05), (30, 0.05), (63, 0.05), (99, 0.01), (150, 0.01)])
def test_the_order_statistic_keeps_the_false_alarm_rate_at_most_the_level(m, alpha):
    """A new draw exceeds the order statistic of m earlier ones in at most alpha of many repetitions."""
    rng = np.random.default_rng(1000 + m)
    reps = 20_000
    null = rng.standard_normal((reps, m))
    new = rng.standard_normal(reps)
    limit = np.sort(null, axis=1)[:, null_rank(m, alpha) - 1]
    rate = float(np.mean(new > limit))
    se = np.sqrt(alpha * (1 - alpha) / reps)
    assert rate <= alpha + 3 * se
    assert rate >= alpha - 3 * se - 1 / (m + 1)         # not needlessly strict: within one rank of the level


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1, 0.2])
def test_fewer_null_draws_than_one_over_alpha_minus_one_cannot_keep_the_level(alpha):
    """With m draws the smallest possible false-alarm rate is 1/(m+1): at most alpha iff m >= 1/alpha - 1."""
    m = min_null_replicates(alpha)
    assert 1 / (m + 1) <= alpha + 1e-12 < 1 / m
    assert null_rank(m, alpha) <= m and null_rank(m - 1, alpha) > m - 1


def test_leave_one_out_is_the_order_statistic_of_the_others():
    rng = np.random.default_rng(5)
    x = rng.exponential(size=40)
    ok = np.ones(40, bool)
    ok[[3, 17]] = False
    got = _leave_one_out(x, ok, 0.05)
    for i in range(40):
        others = np.sort(x[ok & (np.arange(40) != i)])
        if ok[i]:
            assert got[i] == others[null_rank(others.size, 0.05) - 1]
        else:
            assert np.isnan(got[i])
    assert np.isnan(_leave_one_out(x[:19], ok[:19], 0.05)).all()     # 18 others < 19


def test_leave_one_out_on_fresh_null_replicates_keeps_the_level():
    """Each replicate against the others' order statistic: its false-alarm rate over many cells is <= alpha."""
    rng = np.random.default_rng(11)
    n, cells, alpha = 24, 4000, 0.05
    x = rng.gamma(3.0, size=(cells, n))
    ok = np.ones(n, bool)
    rate = float(np.mean([np.mean(row > _leave_one_out(row, ok, alpha)) for row in x]))
    assert rate <= alpha + 3 * np.sqrt(alpha * (1 - alpha) / (n * cells))


def test_a_data_dependent_scheme_under_any_name_has_no_law_over_two_positions():
    """The stored sweep says which schemes are data-dependent: a renamed attention scheme has no law at T >= 2."""
    import json

    import xarray as xr

    from rmtsweep.analysis.reference import no_law_cells
    from rmtsweep.spec import parse_sweep

    sweep = parse_sweep({"name": "renamed", "d": 20, "replicates": 2, "seed": 1, "correlation": {"model": "prefix", "L": 1},
                         "grid": {"delta": [0.5], "gamma": [0.5], "snr": [0.0], "T": [1, 2],
                                  "weights": ["mean", {"scheme": "attention", "tau": 1.0, "name": "learned"}]}})
    labels = sweep.weight_labels()
    assert labels == ["mean", "learned"]
    ds = xr.Dataset(coords={"T": [1, 2], "weights": labels},
                    attrs={"sweep_canonical": json.dumps(sweep.canonical(), sort_keys=True)})
    assert no_law_cells(ds).values.tolist() == [[False, False], [False, True]]
