"""``d`` as a grid axis: the spec's rules, the API the rest uses, tasks, cost, and the seeds' key."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rmtsweep.errors import SweepDefinitionError
from rmtsweep.model import CellModel, correlation_matrix, make_correlation, make_scheme, pooling_weights, \
    simulate_replicate
from rmtsweep.run.cost import Blocking, choose_blocking, point_seconds
from rmtsweep.run.work import compute_task
from rmtsweep.run.grid import Context, grid_shape, n_tasks, task_memory_bytes, tasks, value_key
from rmtsweep.spec import load_sweep, parse_sweep
from rmtsweep.testing import pooled_matrix
from tests.helpers import BASE


def d_axis(values, **grid) -> dict:
    """``BASE`` with ``grid.d`` instead of its top-level ``d``."""
    data = copy.deepcopy(BASE)
    data.pop("d")
    data["grid"].update(d=values if isinstance(values, dict) else list(values), **grid)
    return data


# -- the sweep file ---------------------------------------------------------------------------------------------

def _both(data):
    data["grid"]["d"] = [8, 16]


def _neither(data):
    data.pop("d")


def _axis(values, top_k=None, **grid):
    def mutate(data):
        data.pop("d")
        data["grid"].update(d=values, **grid)
        if top_k is not None:
            data["top_k"] = top_k
    return mutate


BAD = [
    ("both d and grid.d", _both, r"d: give either a top-level `d` or the axis `grid\.d`, not both "
                                 r"\(got d = 24 and grid\.d = \[8, 16\]\)$"),
    ("neither", _neither, r"d: missing; give a top-level `d: 400` \(one dimension\) or the axis "
                          r"`grid\.d: \[100, 200, 400\]`$"),
    ("d value < 2", _axis([8, 1]), r"grid\.d\[1\]: Input should be greater than or equal to 2 \(got 1\)$"),
    ("d value not whole", _axis([8, 12.5]), r"grid\.d\[1\]: Input should be a valid integer, got a number with a "
                                            r"fractional part \(got 12\.5\)$"),
    ("d values repeated", _axis([8, 8]), r"grid\.d: values must be distinct, got \[8, 8\]"),
    ("V < 2 at the smallest d", _axis([16, 2], delta=[0.5, 1.5], top_k=1),
     r"grid\.delta\[1\]: d/delta = 2/1\.5 rounds to V = 1 at d = 2 \(the smallest of grid\.d\); need at least 2$"),
    ("N < 2 at the smallest d", _axis([16, 3], gamma=[4.0], top_k=1),
     r"grid\.gamma\[0\]: d/gamma = 3/4 rounds to N = 1 at d = 3 \(the smallest of grid\.d\); need at least 2$"),
    ("top_k above the rank at the smallest d", _axis([2, 16], delta=[1.0], gamma=[1.0], top_k=3),
     r"top_k: 3 exceeds the rank bound min\(d, V, N\) = 2 at d = 2 \(the smallest of grid\.d\)$"),
]


@pytest.mark.parametrize("case, mutate, message", BAD, ids=[b[0] for b in BAD])
def test_bad_d_is_one_line_naming_the_field(case, mutate, message, sweep_data, write_sweep):
    mutate(sweep_data)
    path = write_sweep(sweep_data)
    with pytest.raises(SweepDefinitionError, match=rf"^{path}: {message}") as exc:
        load_sweep(path)
    assert "\n" not in str(exc.value)


def test_digests_of_existing_sweep_files_do_not_change():
    """Hashes computed before `grid.d` existed: an unset `grid.d` is left out of the canonical form."""
    assert load_sweep("sweeps/demo.yaml").sweep.digest() == \
        "de3e64b1ef0d43c840a00edd6c404ad2f58da8c44716e43b70567c72cf01ffb4"
    assert load_sweep("sweeps/paper-phase.yaml").sweep.digest() == \
        "58d707c1a237c378bb5054c7bf10b6a54a595433fa9d36e97c19d70075e6abc4"
    assert "d" not in load_sweep("sweeps/demo.yaml").sweep.canonical()["grid"]


def test_the_sweeps_d_api():
    top = parse_sweep(copy.deepcopy(BASE))
    assert (top.d_axis, top.d_values, top.sizes(0.5, 1.0)) == (False, (24,), (48, 24))
    axis = parse_sweep(d_axis([16, 8]))
    assert (axis.d_axis, axis.d_values) == (True, (16, 8))               # the order of the file, as for any axis
    assert axis.sizes(0.5, 1.0, d=8) == (16, 8)
    assert axis.dims.replicate[:2] == ("d", "delta") and top.dims.replicate[0] == "delta"
    with pytest.raises(ValueError, match="pass d"):
        axis.sizes(0.5, 1.0)
    canonical = axis.canonical()
    assert canonical["grid"]["d"] == [16, 8] and "d" not in canonical
    assert parse_sweep(canonical) == axis                                # the stored form re-validates
    assert parse_sweep(d_axis({"start": 8, "stop": 16, "num": 2})).d_values == (8, 16)
    assert parse_sweep(d_axis([8])).digest() != top.digest()


def test_the_shipped_finite_d_sweep():
    """The issue's grid: delta = gamma = 0.5, T = 16, prefix(4), mean and optimal, 48 replicates, 19 SNR in [0.2, 2]."""
    a = load_sweep("sweeps/finite-d.yaml").sweep
    assert a.d_axis and a.d_values == (100, 200, 400, 800) and a.name == "finite-d"
    g = a.grid
    assert (g.delta, g.gamma, g.T, a.replicates) == ((0.5,), (0.5,), (16,), 48)
    assert len(g.snr) == 19 and min(g.snr) == pytest.approx(0.2) and max(g.snr) == pytest.approx(2.0)
    assert a.weight_labels() == ["mean", "optimal"] and a.correlation.model == "prefix"


# -- tasks and cost -------------------------------------------------------------------------------------------

def test_tasks_hold_one_d_each_and_say_so():
    s = parse_sweep(d_axis([8, 16]))
    b = Blocking(delta=2, gamma=1, T=1, replicate=2)
    all_tasks = list(tasks(s, b, order="grid"))
    assert len(all_tasks) == n_tasks(s, b) == 2 * 2                      # 2 d values x 2 replicate blocks
    assert [(t.d, t.d_pos) for t in all_tasks] == [(8, 0), (8, 0), (16, 1), (16, 1)]
    # progressive: every d value's first replicate block before any second one
    assert [(t.d, t.index[-1]) for t in tasks(s, b)] == [(8, 0), (16, 0), (8, 1), (16, 1)]
    t = all_tasks[2]
    assert t.name == "d=16 delta=0.5..1 gamma=0.5 T=4 replicates 0-1"
    assert t.key == "1-0-0-0-0" and t.region[0] == 1
    assert t.context.models(0.5, 0.5, 4, [0])[0].d == 16                # the model's V, N and table use the task's d
    top = next(tasks(parse_sweep(copy.deepcopy(BASE)), b))
    assert top.d_pos is None and top.key == "0-0-0-0" and top.name.startswith("delta=")
    with pytest.raises(ValueError, match="pass d"):
        Context.from_sweep(s)


def test_a_done_mask_with_a_d_axis_skips_per_d():
    s = parse_sweep(d_axis([8, 16]))
    b = Blocking(delta=2, gamma=1, T=1, replicate=2)
    done = np.zeros((2,) + grid_shape(s)[:3] + (2, 4), bool)             # (d, delta, gamma, T, weights, replicate)
    done[0] = True                                                       # all of d = 8
    done[1, :, :, :, :, 0:2] = True
    left = list(tasks(s, b, done))
    assert [(t.d, t.start[3]) for t in left] == [(16, 2)]


def test_cost_and_memory_use_the_largest_d():
    axis = parse_sweep(d_axis([8, 40]))
    top = copy.deepcopy(BASE)
    top["d"] = 40
    assert task_memory_bytes(axis) == task_memory_bytes(parse_sweep(top))
    assert np.array_equal(point_seconds(axis), point_seconds(parse_sweep(top)))
    top.pop("replicates_per_task")
    data = d_axis([8, 40])
    data.pop("replicates_per_task")
    assert choose_blocking(parse_sweep(data)) == choose_blocking(parse_sweep(top))


# -- seeds ----------------------------------------------------------------------------------------------------

def _assemble(sweep, blocking: Blocking) -> dict[str, np.ndarray]:
    """Every task's results on the full ``(d, delta, gamma, T, weights, replicate, ...)`` grid."""
    n_d, full = len(sweep.d_values), grid_shape(sweep)
    out: dict[str, np.ndarray] = {}
    for task in tasks(sweep, blocking):
        for name, value in compute_task(task).items():
            if name not in out:
                out[name] = np.full((n_d,) + full[:3] + (len(sweep.grid.weights), full[3]) + value.shape[5:], np.nan)
            out[name][task.region] = value
    return out


def test_results_with_a_d_axis_do_not_depend_on_the_batching():
    s = parse_sweep(d_axis([8, 16], delta=[0.5, 1.0, 2.0], T=[4, 6]))
    a, b = _assemble(s, Blocking(1, 1, 1, 1)), _assemble(s, Blocking(3, 1, 2, 4))
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(a[name], b[name], equal_nan=True), name
    assert np.isfinite(a["eigenvalues"]).all()


def _reference(seed: int, d: int, delta: float, gamma: float, T: int, r: int, key_d: bool):
    """One replicate drawn by hand: its own model, its own SeedSequence, and the literal pooled matrix."""
    corr = make_correlation("prefix", L=2)
    model = CellModel(d=d, V=round(d / delta), N=round(d / gamma), T=T,
                      w=pooling_weights(make_scheme("mean"), correlation_matrix(corr, T)), correlation=corr,
                      centering="class", top_k=2)
    key = ((d,) if key_d else ()) + (value_key(delta), value_key(gamma), T, r)
    rng = lambda: np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))  # noqa: E731
    return model, rng


@pytest.mark.parametrize("d", [8, 16])
def test_a_d_axis_replicate_is_the_one_keyed_by_d(d):
    """The values at each d equal a replicate drawn from SeedSequence(seed, spawn_key=(d, key(delta), ...))."""
    s = parse_sweep(d_axis([8, 16]))
    res = _assemble(s, Blocking(2, 1, 1, 2))
    i = s.d_values.index(d)
    for r in range(4):
        model, rng = _reference(BASE["seed"], d, 1.0, 0.5, 4, r, key_d=True)
        snr = np.asarray(BASE["grid"]["snr"])
        ref = simulate_replicate(model, snr, rng())
        assert np.array_equal(res["eigenvalues"][i, 1, 0, 0, 0, r], ref.eigenvalues)     # delta = 1, mean weights
        assert np.array_equal(res["overlap"][i, 1, 0, 0, 0, r], ref.overlap)
        C, u = pooled_matrix(model, snr[-1], rng())                                     # the literal definition
        vals, vecs = np.linalg.eigh(C @ C.T / model.N)
        assert np.allclose(res["eigenvalues"][i, 1, 0, 0, 0, r, -1], vals[::-1][:2], rtol=1e-10)
        assert np.allclose(res["overlap"][i, 1, 0, 0, 0, r, -1], (u @ vecs[:, ::-1][:, :2]) ** 2, atol=1e-10)


def test_a_one_valued_d_axis_is_keyed_by_d_too():
    top = _assemble_top(parse_sweep(copy.deepcopy(BASE)))
    one = _assemble(parse_sweep(d_axis([24])), Blocking(2, 1, 1, 2))["eigenvalues"][0]
    assert not np.allclose(top, one)
    model, rng = _reference(BASE["seed"], 24, 0.5, 0.5, 4, 0, key_d=True)
    ref = simulate_replicate(model, np.asarray(BASE["grid"]["snr"]), rng())
    assert np.array_equal(one[0, 0, 0, 0, 0], ref.eigenvalues)


def _assemble_top(sweep) -> np.ndarray:
    out = np.full(grid_shape(sweep)[:3] + (2, 4, 2, 2), np.nan)
    for task in tasks(sweep, Blocking(2, 1, 1, 2)):
        out[task.region] = compute_task(task)["eigenvalues"]
    return out


def test_a_top_level_d_agrees_with_earlier_versions_to_1e_12():
    """Numbers of the tiny sweep (BASE) computed before `grid.d` existed, with the key (bits(delta), ...).

    Recorded on one machine: another CPU or BLAS may round the eigensolver differently in the last bits
    (1 ulp seen with OpenBLAS on AVX2), so they are held to rtol 1e-12, far below what a change of seeding
    or of the model moves. Same-process bit-identity with the replicate drawn by hand is checked below.
    """
    s = parse_sweep(copy.deepcopy(BASE))
    res = {}
    for task in tasks(s, Blocking(2, 1, 1, 2)):
        for name, value in compute_task(task).items():
            res.setdefault(name, np.full(grid_shape(s)[:3] + (2, 4) + value.shape[5:], np.nan))[task.region] = value
    # (delta, gamma, T, weights, replicate, snr, k) positions: delta 0.5 / 1, mean / optimal, snr 0 / 4
    got = [res["eigenvalues"][0, 0, 0, 0, 0, 1, 0], res["eigenvalues"][1, 0, 0, 1, 3, 0, 1],
           res["overlap"][0, 0, 0, 0, 2, 1, 0], res["alpha"][1, 0, 0, 0, 1]]
    np.testing.assert_allclose(got, [1.7310166422212232, 2.8633503404225285, 0.9071476547011798, 0.3697916666666667],
                               rtol=1e-12, atol=0)
    model, rng = _reference(BASE["seed"], 24, 0.5, 0.5, 4, 0, key_d=False)
    assert np.array_equal(res["eigenvalues"][0, 0, 0, 0, 0],
                          simulate_replicate(model, np.asarray(BASE["grid"]["snr"]), rng()).eigenvalues)
