"""Grid cells, tasks and seeding: streams depend on coordinate values only."""

from __future__ import annotations

import numpy as np

from rmtsweep.run.execute import compute_task
from rmtsweep.run.grid import n_tasks, replicate_blocks, replicate_rng, task_memory_bytes, task_shape, tasks
from rmtsweep.spec import parse_sweep


def test_task_count_and_blocks(sweep_data):
    s = parse_sweep(sweep_data)
    assert task_shape(s) == (2, 1, 1)
    assert replicate_blocks(s) == [(0, 2), (2, 4)]
    all_tasks = list(tasks(s))
    assert len(all_tasks) == n_tasks(s) == 4
    assert len({(t.index, t.replicates) for t in all_tasks}) == 4
    assert all([m.w.size for m in t.models()] == [4, 4] for t in all_tasks)   # every scheme in every task


def test_skip_mask(sweep_data):
    s = parse_sweep(sweep_data)
    skip = np.zeros(task_shape(s) + (2, 2), bool)                     # (..., weights, blocks)
    skip[1, 0, 0, :, 0] = True                                         # both schemes of a block done
    skip[0, 0, 0, 0, 1] = True                                         # one scheme of another block done
    left = {(t.index, t.replicates): t.weights for t in tasks(s, skip=skip)}
    assert left == {((0, 0, 0), (0, 2)): (0, 1), ((0, 0, 0), (2, 4)): (1,), ((1, 0, 0), (2, 4)): (0, 1)}


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
    t1 = next(t for t in tasks(s1) if t.point[0] == 1.0 and t.replicates == (2, 4))
    t2 = next(t for t in tasks(s2) if t.point[0] == 1.0 and t.replicates == (2, 4))
    assert t1.index != t2.index
    r1, r2 = compute_task(t1), compute_task(t2)
    assert all(np.array_equal(r1[k], r2[k]) for k in r1)


def test_schemes_of_a_task_share_draws(sweep_data):
    """Common random numbers across weight schemes: the stream does not depend on the scheme."""
    s = parse_sweep(sweep_data)
    task = next(tasks(s))
    assert [sch.label for sch in task.schemes] == ["mean", "optimal"]
    res = compute_task(task)
    assert res["eigenvalues"].shape == (2, 2, 2, 2)                 # (weights, replicates, snr, k)
    # mean and optimal weights of prefix(L=2) at T=4 differ, so the spectra differ on the same draws
    assert not np.allclose(res["eigenvalues"][0], res["eigenvalues"][1])


def test_memory_estimate_grows_with_d(sweep_data):
    small = task_memory_bytes(parse_sweep(sweep_data))
    sweep_data["d"] = 240
    assert task_memory_bytes(parse_sweep(sweep_data)) > 50 * small
