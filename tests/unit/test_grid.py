"""Grid points, tasks (blocks of points and replicates) and seeding: streams depend on coordinate values only."""

from __future__ import annotations

import numpy as np
import pytest

from rmtsweep import config
from rmtsweep.run.cost import Blocking, choose_blocking, point_seconds
from rmtsweep.run.work import compute_task
from rmtsweep.run.grid import grid_shape, n_tasks, replicate_rng, task_memory_bytes, tasks
from rmtsweep.spec import parse_sweep


def _assemble(sweep, blocking: Blocking) -> dict[str, np.ndarray]:
    """Every task's results put back on the full grid, as a store would hold them."""
    g = sweep.grid
    full = grid_shape(sweep)
    out: dict[str, np.ndarray] = {}
    for task in tasks(sweep, blocking):
        for name, value in compute_task(task).items():
            if name not in out:
                out[name] = np.full(full[:3] + (len(g.weights), full[3]) + value.shape[5:], np.nan)
            out[name][task.region] = value
    return out


def test_tasks_tile_the_grid_once(sweep_data):
    sweep_data["grid"].update(delta=[0.5, 1.0, 2.0], T=[4, 6])
    s = parse_sweep(sweep_data)
    b = Blocking(delta=2, gamma=1, T=1, replicate=3)
    all_tasks = list(tasks(s, b))
    assert len(all_tasks) == n_tasks(s, b) == 2 * 1 * 2 * 2            # ceil(3/2) * 1 * 2 * ceil(4/3)
    seen = np.zeros(grid_shape(s)[:3] + (grid_shape(s)[3],), int)
    for t in all_tasks:
        r = t.region
        seen[r[0], r[1], r[2], r[4]] += 1
        assert t.shape[3] == 2                                          # every scheme in every task
    assert (seen == 1).all()


def test_done_mask_skips_and_narrows(sweep_data):
    s = parse_sweep(sweep_data)                                        # delta [0.5, 1], 2 schemes, 4 replicates
    b = Blocking(delta=1, gamma=1, T=1, replicate=2)
    done = np.zeros(grid_shape(s)[:3] + (2, 4), bool)                  # (delta, gamma, T, weights, replicate)
    done[1, 0, 0, :, 0:2] = True                                       # a whole chunk done: skipped
    done[0, 0, 0, 0, 2:4] = True                                       # one scheme of a chunk done: narrowed
    left = {t.index: t.todo for t in tasks(s, b, done)}
    assert set(left) == {(0, 0, 0, 0), (0, 0, 0, 1), (1, 0, 0, 1)}
    assert left[(0, 0, 0, 0)] is None and left[(1, 0, 0, 1)] is None
    assert left[(0, 0, 0, 1)][0, 0, 0].tolist() == [[False, False], [True, True]]   # (weights, replicate)


def test_results_do_not_depend_on_the_batching(sweep_data):
    """Seeds are per point and replicate: two batchings give bit-identical results on the grid."""
    sweep_data["grid"].update(delta=[0.5, 1.0, 2.0], T=[4, 6])
    s = parse_sweep(sweep_data)
    a = _assemble(s, Blocking(1, 1, 1, 1))
    b = _assemble(s, Blocking(3, 1, 2, 4))
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name
    assert np.isfinite(a["eigenvalues"]).all()


def test_partial_task_computes_only_todo(sweep_data):
    s = parse_sweep(sweep_data)
    b = Blocking(2, 1, 1, 4)
    full = compute_task(next(tasks(s, b)))
    done = np.zeros(grid_shape(s)[:3] + (2, 4), bool)
    done[:, :, :, 1, :] = True                                          # the second scheme is done everywhere
    (task,) = list(tasks(s, b, done))
    part = compute_task(task)
    assert np.isnan(part["eigenvalues"][:, :, :, 1]).all()
    assert np.array_equal(part["eigenvalues"][:, :, :, 0], full["eigenvalues"][:, :, :, 0])


def test_streams_are_distinct_and_reproducible():
    a = replicate_rng(1, 0.5, 0.5, 16, 0).standard_normal(4)
    assert np.array_equal(a, replicate_rng(1, 0.5, 0.5, 16, 0).standard_normal(4))
    others = [replicate_rng(2, 0.5, 0.5, 16, 0), replicate_rng(1, 1.0, 0.5, 16, 0),
              replicate_rng(1, 0.5, 1.0, 16, 0), replicate_rng(1, 0.5, 0.5, 8, 0), replicate_rng(1, 0.5, 0.5, 16, 1)]
    for g in others:
        assert not np.allclose(a, g.standard_normal(4))


def test_adding_axis_values_keeps_existing_cells(sweep_data):
    """A point's result depends on its coordinate values, not on its position on the axes."""
    b = Blocking(1, 1, 1, 2)
    s1 = parse_sweep(sweep_data)
    sweep_data["grid"]["delta"] = [0.25, 0.5, 1.0]
    s2 = parse_sweep(sweep_data)
    t1 = next(t for t in tasks(s1, b) if t.delta == (1.0,) and t.start[3] == 2)
    t2 = next(t for t in tasks(s2, b) if t.delta == (1.0,) and t.start[3] == 2)
    assert t1.index != t2.index
    r1, r2 = compute_task(t1), compute_task(t2)
    assert all(np.array_equal(r1[k], r2[k]) for k in r1)


def test_schemes_of_a_point_share_draws(sweep_data):
    """Common random numbers across weight schemes: the stream does not depend on the scheme."""
    s = parse_sweep(sweep_data)
    task = next(tasks(s, Blocking(1, 1, 1, 2)))
    assert [sch.label for sch in task.context.schemes] == ["mean", "optimal"]
    res = compute_task(task)
    assert res["eigenvalues"].shape == (1, 1, 1, 2, 2, 2, 2)         # (delta, gamma, T, weights, replicate, snr, k)
    # mean and optimal weights of prefix(L=2) at T=4 differ, so the spectra differ on the same draws
    assert not np.allclose(res["eigenvalues"][..., 0, :, :, :], res["eigenvalues"][..., 1, :, :, :])


def test_memory_estimate_grows_with_d(sweep_data):
    small = task_memory_bytes(parse_sweep(sweep_data))
    sweep_data["d"] = 240
    assert task_memory_bytes(parse_sweep(sweep_data)) > 50 * small


def test_cost_model_grows_with_the_work(sweep_data):
    sweep_data["grid"].update(delta=[0.25, 1.0], gamma=[0.25, 1.0], T=[4, 64])
    c = point_seconds(parse_sweep(sweep_data))
    assert c.shape == (2, 2, 2) and (c > 0).all()
    assert c[0, 0, 1] > c[1, 1, 0]                       # larger V, N and T cost more
    sweep_data["d"] = 400
    assert (point_seconds(parse_sweep(sweep_data)) > 20 * c).all()


@pytest.mark.parametrize("d", [8, 60, 400])
def test_blocking_targets_a_second(sweep_data, d):
    """Tasks of the chosen blocking take about ``rmtsweep.batching.target-task-seconds`` by the cost model, whatever
    d is."""
    target = config.get("batching.target-task-seconds")
    sweep_data.pop("replicates_per_task")
    sweep_data.update(d=d, replicates=16)
    sweep_data["grid"].update(delta=list(np.linspace(0.5, 2, 20)), gamma=list(np.linspace(0.5, 2, 20)), T=[4, 8, 16])
    s = parse_sweep(sweep_data)
    b = choose_blocking(s)
    per_task = point_seconds(s).mean() * b.cells * b.replicate
    if b.cells == 1 and b.replicate == 1:
        assert point_seconds(s).mean() >= target / 2
    else:
        assert target / 3 <= per_task <= 2 * target


def test_blocking_follows_the_sweep_file(sweep_data):
    sweep_data.update(replicates_per_task=3, cells_per_task=2)
    sweep_data["grid"].update(T=[4, 6, 8])
    b = choose_blocking(parse_sweep(sweep_data))
    assert (b.replicate, b.cells, b.T) == (3, 2, 2)


def test_a_task_runs_numpys_own_blas_on_one_thread(sweep_data, monkeypatch):
    """A task's results must not depend on the BLAS's threads, so it computes under ``threadpool_limits(1)``: that
    needs threadpoolctl to find the BLAS numpy itself uses (versions before 3.5 missed the scipy-openblas builds that
    numpy 2's wheels ship, and left numpy's BLAS on every core). Told apart from scipy's by numpy's own build
    information; the test raises the limit to 2 around the task, so only the task's own limit can bring it to 1."""
    import threadpoolctl
    from rmtsweep.run import block
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    api = next((a for a in ("openblas", "mkl", "blis") if a in blas.get("name", "").lower()), None)
    if api is None or not blas.get("version"):
        pytest.skip(f"numpy's BLAS {blas.get('name')!r} is not one threadpoolctl controls")

    def numpys(info: list[dict]) -> list[dict]:
        return [lib for lib in info if lib["internal_api"] == api and lib.get("version")
                and (lib["version"].startswith(blas["version"]) or blas["version"].startswith(lib["version"]))]

    seen, real = [], block.simulate_schemes
    monkeypatch.setattr(block, "simulate_schemes", lambda *a: seen.append(threadpoolctl.threadpool_info()) or real(*a))
    s = parse_sweep(sweep_data)
    with threadpoolctl.threadpool_limits(limits=2):
        assert numpys(threadpoolctl.threadpool_info()), (blas, threadpoolctl.__version__,
                                                         threadpoolctl.threadpool_info())
        compute_task(next(tasks(s, choose_blocking(s))))
    assert seen and all(lib["num_threads"] == 1 for info in seen for lib in numpys(info)), seen[:1]
