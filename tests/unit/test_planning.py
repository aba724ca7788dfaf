"""Planning and input are bounded: the cost model never holds one value per point, the memory
estimate counts every axis of a task's chunk, and sweep files and descriptions have a size limit."""

from __future__ import annotations

import copy
import tracemalloc

import numpy as np
import pytest

from rmtsweep.run.cost import Blocking, point_cost
from rmtsweep.run.grid import task_memory_bytes, tasks
from rmtsweep.run.plan import plan
from rmtsweep.run.work import compute_task
from rmtsweep.spec import parse_sweep


def _sweep(base: dict, **grid) -> dict:
    data = copy.deepcopy(base)
    data["grid"].update(grid)
    return data


@pytest.mark.parametrize("seed", range(6))
def test_the_separable_cost_reduces_as_every_points_cost_does(sweep_data, seed):
    """max, mean and sum of the separable form equal numpy's reductions over one value per point."""
    rng = np.random.default_rng(seed)
    weights = [["mean"], ["mean", "optimal"], ["mean", "optimal", "harmonic"]][seed % 3]
    data = _sweep(sweep_data, delta=sorted(rng.uniform(0.1, 3, 5).round(3).tolist()),
                  gamma=sorted(rng.uniform(0.1, 3, 4).round(3).tolist()),
                  T=sorted(set(rng.integers(1, 40, 3).tolist())),
                  snr=sorted(rng.uniform(0, 6, int(rng.integers(1, 9))).round(3).tolist()), weights=weights)
    if seed % 2:
        data["observables"] = {"spectrum": {"bins": 8, "max": 6.0}, "ridge": {"test_samples": 20}}
    cost = point_cost(parse_sweep(data))
    every = cost.array()
    assert every.shape == cost.shape and (every > 0).all()
    assert cost.max() == pytest.approx(every.max(), rel=1e-12)
    assert cost.mean() == pytest.approx(every.mean(), rel=1e-12)
    assert cost.total() == pytest.approx(every.sum(), rel=1e-12)


def test_a_billion_point_grid_is_planned_in_the_memory_of_its_axes(sweep_data):
    data = _sweep(sweep_data, delta={"start": 0.1, "stop": 2.0, "num": 10_000},
                  gamma={"start": 0.1, "stop": 2.0, "num": 10_000}, T=list(range(2, 12)))
    sweep = parse_sweep(data)
    tracemalloc.start()
    try:
        the_plan = plan(sweep, threads=1000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert the_plan.points == 10**9
    assert the_plan.tasks >= 10**9 // (the_plan.blocking.cells * 1)
    assert peak < 50 * 2**20, f"planning held {peak / 2**20:.0f} MiB"       # one float per point: 7.5 GiB


def test_the_memory_estimate_holds_what_a_task_returns_and_grows_with_the_snr_axis(sweep_data):
    few = parse_sweep(_sweep(sweep_data, snr=[0.0, 4.0]))
    many = parse_sweep(_sweep(sweep_data, snr=np.linspace(0, 6, 4000).round(6).tolist()))
    blocking = Blocking(2, 1, 1, 2)
    task = next(tasks(many, blocking))
    returned = sum(np.asarray(a).nbytes for a in compute_task(task).values())
    assert task_memory_bytes(many, blocking) >= 2 * returned
    grown = task_memory_bytes(many, blocking) - task_memory_bytes(few, blocking)
    assert grown >= 2 * returned * (4000 - 2) / 4000 * 0.99


def test_the_memory_estimate_holds_a_long_sequences_task(sweep_data):
    from rmtsweep.spec import MAX_T
    data = {**_sweep(sweep_data, T=[512], snr=[0.0], weights=["optimal"]), "d": 8, "replicates": 1, "replicates_per_task": 1,
            "correlation": {"model": "markov", "r": 0.5}}
    sweep = parse_sweep(data)
    task = next(tasks(sweep, Blocking(1, 1, 1, 1)))
    tracemalloc.start()
    try:
        compute_task(task)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak > 8 * 512 * 512                         # the reference: at least R, a T x T float64 array
    assert task_memory_bytes(sweep, Blocking(1, 1, 1, 1)) >= peak
    assert MAX_T >= 1024


def test_a_sequence_too_long_to_factor_is_refused_in_one_line_unless_a_store_holds_it(sweep_data):
    from rmtsweep.errors import SweepDefinitionError
    from rmtsweep.spec import MAX_T
    parse_sweep(_sweep(sweep_data, T=[MAX_T]))
    with pytest.raises(SweepDefinitionError, match=rf"grid\.T: {MAX_T + 1} is longer than {MAX_T:,}, the longest "
                                                   r"sequence a run draws") as err:
        parse_sweep(_sweep(sweep_data, T=[4, MAX_T + 1]))
    assert "\n" not in str(err.value)
    stored = parse_sweep(_sweep(sweep_data, T=[4, MAX_T + 1]), stored=True)    # a store made before the limit
    assert stored.grid.T == (4, MAX_T + 1)


def test_a_sweep_file_over_the_limit_is_refused_in_one_line(tmp_path, sweep_data):
    from rmtsweep.errors import SweepDefinitionError
    from rmtsweep.spec import MAX_SWEEP_FILE, load_sweep
    import yaml
    sweep_data["grid"]["snr"] = [float(i) for i in range(MAX_SWEEP_FILE // 8)]
    path = tmp_path / "large.yaml"
    path.write_text(yaml.safe_dump(sweep_data))
    assert path.stat().st_size > MAX_SWEEP_FILE
    with pytest.raises(SweepDefinitionError, match=r"large\.yaml: [\d,]+ bytes; a sweep file may hold at most") as err:
        load_sweep(path)
    assert "\n" not in str(err.value)


def test_a_description_over_the_limit_is_one_short_line(sweep_data):
    from rmtsweep.errors import SweepDefinitionError
    from rmtsweep.spec import MAX_DESCRIPTION
    parse_sweep({**sweep_data, "description": "x" * MAX_DESCRIPTION})
    with pytest.raises(SweepDefinitionError, match="description: String should have at most") as err:
        parse_sweep({**sweep_data, "description": "x" * (20 * MAX_DESCRIPTION)})
    assert len(str(err.value)) < 200
