"""Maps and figures: files produced and non-empty; user mistakes are one-line errors."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from rmtsweep.analysis.compare import compare, write_comparison
from rmtsweep.errors import SelectionError
from rmtsweep.run.execute import compute_task
from rmtsweep.run.grid import tasks
from rmtsweep.run.runner import prepare_store
from rmtsweep.spec import SweepFile, parse_sweep
from rmtsweep.run.cost import Blocking
from rmtsweep.store import Writer, blocking_of
from tests.helpers import BASE, TINY, build_store

def _offline(text: str) -> bool:
    """No script or stylesheet is fetched from the network (URLs inside inline JS are not loads)."""
    return not re.search(r'<script[^>]*\ssrc="https?://|<link[^>]*\shref="https?://[^"]*\.(css|js)', text)


def _png_ok(path: Path) -> None:
    import matplotlib.image as mpimg
    assert path.stat().st_size > 5_000
    img = mpimg.imread(path)
    assert img.ndim == 3 and len(np.unique(img.reshape(-1, img.shape[-1]), axis=0)) > 50   # not blank


@pytest.mark.parametrize("x, y, var, select", [("snr", "gamma", "overlap", None),
                                                ("weights", "delta", "lambda1_z", {"snr": "4.0", "gamma": "0.5"})])
def test_map_writes_offline_html_and_png(tiny_store, tmp_path, x, y, var, select):
    from rmtsweep.analysis.plots import plot_map
    html, png = plot_map(tiny_store, x, y, var, tmp_path, select=select)
    text = html.read_text()
    assert len(text) > 100_000 and "Bokeh" in text
    assert _offline(text) and "cdn.bokeh.org" not in text   # inline resources only
    _png_ok(png)


def test_map_with_widgets(tiny_store, tmp_path):
    from rmtsweep.analysis.plots import plot_map
    html, png = plot_map(tiny_store, "snr", "gamma", "overlap_error", tmp_path, widgets=True,
                         select={"delta": "0.5"})
    assert html.stat().st_size > 100_000 and _offline(html.read_text())
    _png_ok(png)


def test_transition_curves_lie_in_the_plane(tiny_store):
    from rmtsweep.analysis.compare import open_source
    from rmtsweep.analysis.plots import transition_curves
    ds = open_source(tiny_store)
    at = {"delta": 0.5, "gamma": 0.5, "snr": 2.0, "T": 4, "weights": "mean"}
    curves = transition_curves(ds, "snr", "gamma", at)
    sample = curves["sample"][0]
    expected = float(ds["theory_snr_sample"].sel(delta=0.5, gamma=0.5, T=4, weights="mean"))
    assert sample[0, 1] == pytest.approx(0.5) and sample[0, 0] == pytest.approx(expected, rel=1e-6)
    assert set(transition_curves(ds, "delta", "gamma", at)) == {"population", "sample"}


@pytest.mark.parametrize("kwargs, match", [
    ({"x": "snr", "y": "nope", "var": "overlap"}, r"--y 'nope': not a grid axis \(valid: delta"),
    ({"x": "snr", "y": "gamma", "var": "nope"}, r"--var 'nope': not a variable .* \(valid: .*overlap"),
    ({"x": "snr", "y": "snr", "var": "overlap"}, r"both 'snr'"),
    ({"x": "snr", "y": "gamma", "var": "overlap", "select": {"T": "99"}}, r"--select T=99: not on the axis"),
])
def test_map_errors(tiny_store, tmp_path, kwargs, match):
    from rmtsweep.analysis.plots import plot_map
    with pytest.raises(SelectionError, match=match):
        plot_map(tiny_store, out=tmp_path, **kwargs)


def test_figures(tiny_store, tmp_path):
    from rmtsweep.analysis.figures import figures
    files, notes = figures([tiny_store], tmp_path)
    names = {f.name for f in files}
    assert {"fig-a-spectrum.png", "fig-b-alignment.png", "fig-d-accuracy.png"} <= names
    for f in files:
        if f.suffix == ".png":
            _png_ok(f)
    assert any("ranking by alpha/kappa: optimal" in n for n in notes)


def test_cli_plot_and_exit_status(tiny_store, tmp_path, capsys):
    from rmtsweep.cli import main
    main(["plot", str(tiny_store), "--x", "snr", "--y", "delta", "--var", "overlap", "--out", str(tmp_path),
          "--select", "gamma=0.5", "--select", "weights=mean"])
    assert (tmp_path / "tiny-overlap-snr-delta.png").exists()
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(tiny_store), "--x", "snr", "--y", "delta", "--var", "bogus", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "bogus" in capsys.readouterr().err


def test_facets_follow_the_sweeps_order(tiny_store):
    """Facets come in the order of the sweep's axes (the weights as written), not alphabetically."""
    from rmtsweep.analysis.plots import heat_map, map_data
    da, ds = map_data(tiny_store, "overlap")
    da, ds = da.isel(weights=[1, 0]), ds.isel(weights=[1, 0])           # a sweep that lists optimal first
    hmap = heat_map(da.rename("overlap"), ds, "snr", "gamma")
    order = [key[hmap.kdims.index(hmap.get_dimension("weights"))] for key in hmap.keys()]
    assert list(dict.fromkeys(order)) == ["optimal", "mean"]


def test_maps_and_figures_leave_global_plotting_state_alone(tiny_store, tmp_path):
    """A notebook's matplotlib backend and holoviews backend are the same after a map and the figures."""
    import holoviews as hv
    import matplotlib

    from rmtsweep.analysis.figures import figures
    from rmtsweep.analysis.plots import plot_map
    import holoviews.plotting.mpl  # noqa: F401  (a notebook that already uses holoviews' matplotlib backend)
    hv.Store.set_current_backend("matplotlib")
    backend = matplotlib.get_backend()
    plot_map(tiny_store, "snr", "delta", "overlap", tmp_path)
    figures([tiny_store], tmp_path / "figs")
    assert hv.Store.current_backend == "matplotlib"
    assert matplotlib.get_backend() == backend
