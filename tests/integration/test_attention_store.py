"""Finite-d attention as a weights scheme of a sweep: the store holds what the literal definition gives."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from distributed import Client, LocalCluster

from rmtsweep import load_sweep, open_store, run_sweep
from rmtsweep.model.attention import literal_attention_weights
from rmtsweep.model.weights import causal_weights
from rmtsweep.run.grid import Context, replicate_rng
from rmtsweep.model.replicate import draw_replicate

SWEEP = {"name": "att", "d": 40, "replicates": 3, "seed": 17, "top_k": 2, "correlation": {"model": "prefix", "L": 2},
         "grid": {"delta": [0.5], "gamma": [1.0], "snr": [0.0, 3.0], "T": [4],
                  "weights": ["mean", {"scheme": "attention", "tau": 1.5}, {"scheme": "attention", "tau": 1.0,
                                                                          "scale": "sqrt_d"}]}}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("att")
    (root / "att.yaml").write_text(yaml.safe_dump(SWEEP))
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as c, \
            Client(c) as client:
        run_sweep(load_sweep(root / "att.yaml"), root / "att.zarr", client, progress=False)
    return load_sweep(root / "att.yaml").sweep, open_store(root / "att.zarr")


def test_realised_weights_match_the_literal_definition(store):
    sweep, ds = store
    context = Context.from_sweep(sweep)
    snr = np.asarray(SWEEP["grid"]["snr"])
    for w, (tau, scale) in ((1, (1.5, "d")), (2, (1.0, "sqrt_d"))):
        model = context.models(0.5, 1.0, 4, [w])[0]
        for r in range(SWEEP["replicates"]):
            draws = draw_replicate(model, replicate_rng(SWEEP["seed"], 0.5, 1.0, 4, r))
            xi, _, tokens = draws.train
            W = literal_attention_weights(draws.Z, draws.u, tokens, model.n_pos, snr, tau, scale)   # (snr, N, T)
            cell = ds.isel(delta=0, gamma=0, T=0, weights=w, replicate=r)
            assert np.allclose(cell["kappa_snr"].values, (W ** 2).sum(axis=2).mean(axis=1), rtol=1e-10)
            assert np.allclose(cell["alpha_snr"].values, ((W * xi).sum(axis=2) ** 2).mean(axis=1), rtol=1e-10)
            dist = np.abs(W - causal_weights(4, tau)).sum(axis=2).mean(axis=1)
            assert np.allclose(cell["attention_distance"].values, dist, rtol=1e-10)
            assert np.isnan(cell["kappa"].values) and np.isnan(cell["alpha"].values)


def test_fixed_schemes_keep_their_meaning(store):
    _, ds = store
    mean = ds.sel(weights="mean")
    assert np.isnan(mean["attention_distance"].values).all()
    assert np.array_equal(mean["kappa_snr"].values, np.broadcast_to(mean["kappa"].values[..., None],
                                                                    mean["kappa_snr"].shape))
    assert np.allclose(mean["kappa"].values, 1 / 4)


def test_theory_uses_the_large_d_limit(store):
    _, ds = store
    w = causal_weights(4, 1.5)
    assert float(ds["theory_kappa"].sel(T=4, weights="attention(tau=1.5)")) == pytest.approx(w @ w, rel=1e-12)
    assert float(ds["theory_kappa"].sel(T=4, weights="attention(tau=1, scale=sqrt_d)")) == pytest.approx(1 / 4)
    assert bool(ds["done"].all())


def test_the_attention_figure_and_its_ranking(tmp_path):
    """`rmtsweep figures` on a store with attention: figure (f), and a ranking that follows the comparison."""
    import re

    from rmtsweep.analysis.compare import compare
    from rmtsweep.analysis.figures import figures
    from tests.helpers import build_store
    data = {**SWEEP, "name": "att-fig", "d": 60, "replicates": 6,
            "grid": {**SWEEP["grid"], "snr": [0.0, 1.0, 2.0, 3.0, 4.0],
                     "weights": ["mean", "optimal", {"scheme": "attention", "tau": 2.0}]}}
    path = build_store(tmp_path / "att-fig.zarr", data)
    files, notes = figures([path], tmp_path / "figs")
    png = tmp_path / "figs" / "att-fig" / "fig-f-attention.png"
    assert png in files and png.stat().st_size > 20_000
    (note,) = [n for n in notes if "ranking by transition SNR" in n]
    t = compare(path)["transition_snr_empirical"].isel(delta=0, gamma=0, T=0)
    finite = t.dropna("weights")
    listed = re.findall(r"(\w+(?:\(tau=2\))?) \((\d+\.\d+)\)", note.splitlines()[0])
    expected = sorted((str(w), float(v)) for w, v in zip(finite["weights"].values, finite.values))
    assert sorted((w, float(v)) for w, v in listed if v != "nan") == [(w, round(v, 3)) for w, v in expected]
    values = [float(v) for _, v in listed]
    assert values == sorted(values)                                   # listed from the lowest transition
