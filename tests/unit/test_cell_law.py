"""One source of theory: the transition lines a map draws are the store's arrays, for every shipped sweep."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import yaml

from rmtsweep.analysis.maps.plot import snr_transition, transition_curves
from rmtsweep.run.runner import make_template
from rmtsweep.shipped import sweeps
from rmtsweep.spec import SweepFile, parse_sweep

SHIPPED = sorted(sweeps())


def _frame(name: str, monkeypatch):
    """The store's frame (coordinates, theory arrays, attrs) as ``rmtsweep run`` writes it, without a run.

    The spectrum observable is dropped (its law takes 27 s on paper-finite-t) and so are the detection
    nulls over the realised pooling matrix (about 50 s over the shipped sweeps): neither draws a transition.
    """
    import rmtsweep.theory.on_grid as on_grid
    monkeypatch.setattr(on_grid, "pooled_arrays", lambda *args: {})
    path = sweeps()[name][0]
    data = yaml.safe_load(path.read_text())
    data.pop("observables", None)
    sweep = parse_sweep(data, str(path))
    return make_template(SweepFile(sweep, str(path), yaml.safe_dump(data)), (1, 1, 1, 1)).frame


def _vertex(path: np.ndarray, column: int, value: float) -> np.ndarray:
    return path[path[:, column] == value]


@pytest.mark.slow                      # the finite-T sweeps' theory: 10-20 s each
@pytest.mark.parametrize("name", SHIPPED)
def test_every_transition_a_map_draws_is_the_stores_array(name, monkeypatch):
    ds = _frame(name, monkeypatch)
    first = {a: ds[a].values[0] for a in ("delta", "gamma", "snr")}
    for (T, w), kind in itertools.product(itertools.product(ds["T"].values, ds["weights"].values),
                                          ("population", "sample")):
        cell = {"T": T, "weights": w}
        stored = ds[f"theory_snr_{kind}"].sel(cell).transpose("delta", "gamma").values
        # the field a (delta, gamma) contour is drawn from, at the grid's points
        D, G = np.meshgrid(ds["delta"].values, ds["gamma"].values, indexing="ij")
        assert np.array_equal(snr_transition(ds, kind, D, G, T, w), stored, equal_nan=True), (kind, cell)
        # the lines in the (snr, gamma) and (snr, delta) planes pass through the stored values
        for (i, dl), (j, g) in itertools.product(enumerate(ds["delta"].values), enumerate(ds["gamma"].values)):
            for axis, value in (("gamma", g), ("delta", dl)):
                at = {**first, "delta": dl, "gamma": g, **cell}
                path = transition_curves(ds, "snr", axis, at)[kind][0]
                hit = _vertex(path, 1, value)
                if np.isfinite(stored[i, j]):
                    assert hit.size and np.all(hit[:, 0] == stored[i, j]), (kind, cell, axis, value)
                else:
                    assert not hit.size


def test_attention_at_one_position_takes_the_exact_law():
    """At T = 1 every scheme pools w = [1] (attention too): the same law and the same numbers."""
    from rmtsweep.theory.on_grid import theory_dataset
    data = {"name": "t1", "d": 40, "replicates": 2, "seed": 1, "correlation": {"model": "iid"},
            "table_centering": "class", "top_k": 2,
            "grid": {"delta": [0.5], "gamma": [1.0], "snr": [0.0, 2.0, 4.0], "T": [1, 4],
                     "weights": ["mean", {"scheme": "attention", "tau": 1.0, "scale": "sqrt_d"},
                                 {"scheme": "attention", "tau": 2.0}]}}
    ds = theory_dataset(parse_sweep(data))
    assert ds["theory_law"].sel(T=1).values.tolist() == [1, 1, 1]
    assert ds["theory_law"].sel(T=4).values.tolist() == [0, 0, 0]
    one = ds.sel(T=1)
    for name in ("theory_edge", "theory_outlier", "theory_overlap", "theory_phase", "theory_snr_sample",
                 "finite_size_lambda1", "finite_size_overlap"):
        for j in (1, 2):
            assert np.array_equal(one[name].isel(weights=0), one[name].isel(weights=j)), name
