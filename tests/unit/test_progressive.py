"""Progressive order: every point gets a first block of replicates before any point gets a second, so a
sweep stopped early covers its whole grid; the order changes which tasks exist in no way."""

from __future__ import annotations

import copy
import glob
import math

import numpy as np
import pytest
import xarray as xr

from rmtsweep.analysis.stats import mean_sem
from rmtsweep.run.cost import choose_blocking
from rmtsweep.run.grid import n_tasks, tasks
from rmtsweep.spec import load_sweep, parse_sweep
from tests.helpers import BASE

SHIPPED = sorted(glob.glob("sweeps/**/*.yaml", recursive=True))


def covered_after(sweep, fraction: float) -> float:
    """The share of points with at least one replicate among the first ``fraction`` of the tasks."""
    blocking = choose_blocking(sweep)
    first = math.ceil(fraction * n_tasks(sweep, blocking))
    seen = set()
    for _, task in zip(range(first), tasks(sweep, blocking)):
        for i in range(task.start[0], task.stop[0]):
            for j in range(task.start[1], task.stop[1]):
                for k in range(task.start[2], task.stop[2]):
                    seen.add((task.d_pos, i, j, k))
    points = len(sweep.d_values) * len(sweep.grid.delta) * len(sweep.grid.gamma) * len(sweep.grid.T)
    return len(seen) / points


def random_sweeps(n: int):
    rng = np.random.default_rng(2026)
    for _ in range(n):
        data = copy.deepcopy(BASE)
        data.pop("replicates_per_task")
        data["replicates"] = int(rng.integers(3, 65))
        data["d"] = int(rng.choice([16, 60, 200]))
        data["grid"].update(delta=sorted(rng.uniform(0.2, 2, rng.integers(1, 6)).round(3).tolist()),
                            gamma=sorted(rng.uniform(0.2, 2, rng.integers(1, 6)).round(3).tolist()),
                            T=sorted(set(rng.integers(2, 20, rng.integers(1, 4)).tolist())))
        yield parse_sweep(data)


@pytest.mark.parametrize("path", SHIPPED)
def test_a_third_of_a_shipped_sweeps_tasks_covers_its_grid(path):
    assert covered_after(load_sweep(path).sweep, 1 / 3) >= 0.9


def test_a_third_of_any_sweeps_tasks_covers_its_grid():
    coverage = [covered_after(sweep, 1 / 3) for sweep in random_sweeps(40)]
    assert min(coverage) >= 0.9, coverage


@pytest.mark.parametrize("sweep", list(random_sweeps(8)), ids=range(8))
def test_both_orders_make_the_same_tasks(sweep):
    blocking = choose_blocking(sweep)
    keys = {order: [t.key for t in tasks(sweep, blocking, order=order)] for order in ("progressive", "grid")}
    assert sorted(keys["progressive"]) == sorted(keys["grid"])
    assert len(set(keys["grid"])) == len(keys["grid"]) == n_tasks(sweep, blocking)
    firsts = [t.index[-1] for t in tasks(sweep, blocking)]      # replicate blocks never go back
    assert firsts == sorted(firsts)


def test_an_unknown_order_is_refused():
    with pytest.raises(ValueError, match="order must be"):
        next(tasks(parse_sweep(BASE), choose_blocking(parse_sweep(BASE)), order="random"))


def test_uneven_replicate_counts_give_each_point_its_own_standard_error():
    """A partly done store has a different number of done replicates at each point."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(6, 4, 12))
    done = rng.random((6, 4, 12)) < rng.uniform(0.1, 1.0, (6, 4, 1))
    m, s = mean_sem(xr.DataArray(x, dims=("a", "b", "replicate")), xr.DataArray(done, dims=("a", "b", "replicate")))
    for i in range(6):
        for j in range(4):
            kept = x[i, j][done[i, j]]
            if len(kept) == 0:
                assert np.isnan(m[i, j])
                continue
            assert float(m[i, j]) == pytest.approx(kept.mean(), rel=1e-12)
            if len(kept) > 1:
                assert float(s[i, j]) == pytest.approx(kept.std(ddof=1) / np.sqrt(len(kept)), rel=1e-12)
            else:
                assert np.isnan(s[i, j])
