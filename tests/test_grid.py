"""Grid cells, tasks and seeding: streams depend on coordinate values only."""

from __future__ import annotations

import numpy as np

from pipeline.execute import compute_task
from pipeline.grid import cell_shape, n_tasks, replicate_blocks, replicate_rng, task_memory_bytes, tasks
from pipeline.spec import parse_sweep


def test_task_count_and_blocks(sweep_data):
    s = parse_sweep(sweep_data)
    assert cell_shape(s) == (2, 1, 1, 2)
    assert replicate_blocks(s) == [(0, 2), (2, 4)]
    all_tasks = list(tasks(s))
    assert len(all_tasks) == n_tasks(s) == 8
    assert len({(t.index, t.replicates) for t in all_tasks}) == 8


def test_skip_mask(sweep_data):
    s = parse_sweep(sweep_data)
    skip = np.zeros(cell_shape(s) + (2,), bool)
    skip[1, 0, 0, 1, 0] = True
    left = list(tasks(s, skip=skip))
    assert len(left) == 7 and all(not (t.index == (1, 0, 0, 1) and t.replicates == (0, 2)) for t in left)


def test_streams_are_distinct_and_reproducible():
    a = replicate_rng(1, 0.5, 0.5, 16, 0).standard_normal(4)
    assert np.array_equal(a, replicate_rng(1, 0.5, 0.5, 16, 0).standard_normal(4))
    others = [replicate_rng(2, 0.5, 0.5, 16, 0), replicate_rng(1, 1.0, 0.5, 16, 0),
              replicate_rng(1, 0.5, 1.0, 16, 0), replicate_rng(1, 0.5, 0.5, 8, 0), replicate_rng(1, 0.5, 0.5, 16, 1)]
    for g in others:
        assert not np.allclose(a, g.standard_normal(4))


def test_adding_axis_values_keeps_existing_cells(sweep_data):
    """A cell's result depends on its coordinate values, not on its position on the axes."""
    s1 = parse_sweep(sweep_data)
    sweep_data["grid"]["delta"] = [0.25, 0.5, 1.0]
    s2 = parse_sweep(sweep_data)
    t1 = next(t for t in tasks(s1) if t.delta == 1.0 and t.scheme.label == "optimal" and t.replicates == (2, 4))
    t2 = next(t for t in tasks(s2) if t.delta == 1.0 and t.scheme.label == "optimal" and t.replicates == (2, 4))
    assert t1.index != t2.index
    r1, r2 = compute_task(t1), compute_task(t2)
    assert all(np.array_equal(r1[k], r2[k]) for k in r1)


def test_weights_share_draws_within_a_cell(sweep_data):
    """Common random numbers across weight schemes: same table and tokens, so kappa-free ties show."""
    s = parse_sweep(sweep_data)
    by_w = {t.scheme.label: t for t in tasks(s) if t.index[:3] == (0, 0, 0) and t.replicates == (0, 2)}
    ga, gb = by_w["mean"].rngs()[0], by_w["optimal"].rngs()[0]
    assert np.array_equal(ga.standard_normal(3), gb.standard_normal(3))


def test_memory_estimate_grows_with_d(sweep_data):
    small = task_memory_bytes(parse_sweep(sweep_data))
    sweep_data["d"] = 240
    assert task_memory_bytes(parse_sweep(sweep_data)) > 50 * small
