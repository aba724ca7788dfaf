"""``ds.rmt``: analysis from a notebook, lazy until asked."""

from __future__ import annotations

import dask
import numpy as np
import pytest

import rmtsweep
from rmtsweep.analysis.compare import compare


def _no_compute(dsk, keys, **kwargs):
    raise RuntimeError("something computed before it was asked for")


def test_compare_and_transition_stay_lazy(reference):
    _, store = reference
    ds = rmtsweep.open_store(store)
    with dask.config.set(scheduler=_no_compute):             # like xarray's raise_if_dask_computes
        cmp = ds.rmt.compare()
        t = ds.rmt.transition()
        with pytest.raises(RuntimeError, match="computed before"):
            cmp["lambda1_mean"].values                         # the guard works: asking computes
    eager = compare(store)
    assert np.allclose(cmp["lambda1_mean"].compute(), eager["lambda1_mean"], equal_nan=True)
    assert np.allclose(t.compute(), eager["transition_snr_empirical"], equal_nan=True)


def test_plot_from_the_accessor(reference, tmp_path):
    _, store = reference
    html, png = rmtsweep.open_store(store).rmt.plot(x="snr", y="delta", var="overlap", out=tmp_path)
    assert html.exists() and png.exists() and html.name == "tiny-overlap-snr-delta.html"


def test_map_from_the_accessor_is_an_object_a_notebook_shows(reference):
    import holoviews as hv
    _, store = reference
    ds = rmtsweep.open_store(store)
    m = ds.rmt.map("snr", "delta", "overlap")
    assert isinstance(m, hv.HoloMap) and len(m) == ds.sizes["gamma"] * ds.sizes["T"] * ds.sizes["weights"]
    heat = next(iter(m.values()))
    image = heat.get(0) if isinstance(heat, hv.Overlay) else heat
    assert set(np.round(image.dimension_values("snr", expanded=False), 9)) == set(np.round(ds["snr"].values, 9))
