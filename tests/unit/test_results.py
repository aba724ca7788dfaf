"""The table of per-replicate variables (rmtsweep.results) and the stores built from it agree."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pytest
import xarray as xr
import zarr

from rmtsweep.results import RESULTS, Result, present
from rmtsweep.spec import parse_sweep
from tests.helpers import TINY, build_store

ATTENTION = {**copy.deepcopy(TINY), "name": "tiny-attention", "table_centering": "none", "observables": {},
             "grid": {**TINY["grid"], "weights": ["mean", {"scheme": "attention", "tau": 2.0}]}}
D_AXIS = {**{k: v for k, v in copy.deepcopy(TINY).items() if k != "d"}, "name": "tiny-d", "table_centering": "none",
          "observables": {}, "grid": {**TINY["grid"], "d": [12, 20]}}

# written by hand from docs/user-guide/stores.md: the variables of each sweep's store and their trailing dims
EXPECTED = {
    "tiny-maps": {"eigenvalues": ("snr", "k"), "overlap": ("snr", "k"), "alpha": (), "kappa": (), "done": (),
                  "run": (), "spectrum": ("snr", "bin"), "accuracy": ("snr",)},
    "tiny-attention": {"eigenvalues": ("snr", "k"), "overlap": ("snr", "k"), "alpha": (), "kappa": (), "done": (),
                       "run": (), "kappa_snr": ("snr",), "alpha_snr": ("snr",), "attention_distance": ("snr",)},
    "tiny-d": {"eigenvalues": ("snr", "k"), "overlap": ("snr", "k"), "alpha": (), "kappa": (), "done": (),
               "run": ()},
}


@pytest.mark.parametrize("data", [TINY, ATTENTION, D_AXIS], ids=lambda d: d["name"])
def test_every_entry_is_in_the_store_as_declared(tmp_path, request, data):
    """Each entry a sweep has is in its store with the declared dims, dtype, fill value and attrs; no other is."""
    sweep = parse_sweep(data)
    path = request.getfixturevalue("tiny_store") if data is TINY else build_store(tmp_path / "store.zarr", data)
    ds = xr.open_zarr(path, mask_and_scale=False)
    group = zarr.open_group(str(path), mode="r")
    lead = ("d",) if "d" in data["grid"] else ()
    cell = lead + ("delta", "gamma", "T", "weights", "replicate")
    expected = EXPECTED[data["name"]]
    assert {r.name for r in present(sweep)} == set(expected)
    for name, r in RESULTS.items():
        if name not in expected:
            assert name not in ds, name
            continue
        var = ds[name]
        assert var.dims == cell + expected[name] == sweep.dims.replicate + r.trailing, name
        assert var.dtype == np.dtype(r.dtype), name
        assert {k: var.attrs[k] for k in ("long_name", "units")} == r.attrs, name
        assert var.shape[len(cell):] == tuple(ds.sizes[dim] for dim in r.trailing) == r.trailing_shape(sweep)
        fill = group[name].fill_value
        if r.fill is None:
            assert not fill, name                          # zarr's null fill: zeros, False for done
        elif isinstance(r.fill, float) and np.isnan(r.fill):
            assert np.isnan(fill), name
        else:
            assert fill == r.fill, name
        if r.measured:                                     # a task filled it: every done replicate has a value
            assert np.isfinite(var.where(ds["done"]).values[ds["done"].values]).any(), name


@dataclass(frozen=True)
class _Result:
    """Stands in for ReplicateResult with one more field, as the simulation gains it."""

    base: object
    top_share: np.ndarray

    def __getattr__(self, name: str):
        return getattr(self.base, name)


def test_a_new_observable_is_one_entry_and_its_measurement(tmp_path, monkeypatch):
    """An observable added as one table entry and a measurement reaches the task, the store, the cost and the maps.

    ``top_share`` is lambda_1 / trace(S) at each SNR value; with ``top_k`` the rank of ``S``, the stored eigenvalues
    give it independently: their largest over their sum.
    """
    from rmtsweep.analysis.maps.style import colour_scale
    from rmtsweep.model import replicate
    from rmtsweep.run.cost import point_cost

    entry = Result("top_share", ("snr",), "largest eigenvalue of S over its trace", colour="unit",
                   cost=lambda w: w.schemes * w.n_snr * w.gram(w.N, w.d, w.n))
    data = {**copy.deepcopy(TINY), "name": "top-share", "d": 8, "top_k": 8, "observables": {},
            "grid": {**TINY["grid"], "delta": [0.5], "gamma": [1.0]}}           # N = d = 8: S has rank 8
    sweep = parse_sweep(data)
    before = point_cost(sweep).total()
    measure = replicate.measure

    def with_share(model, draws, snr):                     # the simulation's part: measure it
        res = measure(model, draws, snr)
        C0T, a, _ = replicate.pool(model, draws.Z, draws.train)
        trace = [np.sum((C0T + np.sqrt(s) * np.outer(a, draws.u)) ** 2) / model.N for s in np.asarray(snr, float)]
        return _Result(res, res.eigenvalues[:, 0] / np.asarray(trace))

    monkeypatch.setitem(RESULTS, "top_share", entry)     # the table's part: one entry
    monkeypatch.setattr(replicate, "measure", with_share)
    ds = xr.open_zarr(build_store(tmp_path / "store.zarr", data))

    share = ds["top_share"].where(ds["done"])
    assert share.dims == ("delta", "gamma", "T", "weights", "replicate", "snr")
    assert ds["top_share"].attrs["long_name"] == entry.long_name
    eig = ds["eigenvalues"].where(ds["done"])
    np.testing.assert_allclose(share, eig.isel(k=0) / eig.sum("k"), rtol=1e-10)
    assert float(share.min()) > 1 / 8
    N = d = 8
    extra = 2 * 4 * 5.0e-11 * N * d * min(d, N)             # schemes x snr values x one Gram (run/cost.py's _GRAM)
    assert point_cost(sweep).total() == pytest.approx(before + extra, rel=1e-12)
    assert colour_scale(share.rename("top_share")).kind == "unit"
    assert colour_scale(share.rename("top_share_mean")).kind == "unit"
