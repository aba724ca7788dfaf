"""Maps and figures: the requested data drawn, every panel, readable scales and legends; one-line errors."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import types
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from rmtsweep.analysis.maps.style import Z_FLOOR
from rmtsweep.errors import SelectionError
from tests.helpers import BASE, build_store


def _offline(text: str) -> bool:
    """No script or stylesheet is fetched from the network (URLs inside inline JS are not loads)."""
    return not re.search(r'<script[^>]*\ssrc="https?://|<link[^>]*\shref="https?://[^"]*\.(css|js)', text)


def _png_ok(path: Path) -> None:
    import matplotlib.image as mpimg
    assert path.stat().st_size > 5_000
    img = mpimg.imread(path)
    assert img.ndim == 3 and len(np.unique(img.reshape(-1, img.shape[-1]), axis=0)) > 50   # not blank


def _bokeh_docs(text: str) -> list[dict]:
    """The bokeh documents embedded in an HTML page."""
    return [json.loads(d) for d in re.findall(r'<script type="application/json" id="[^"]+">\s*(.*?)\s*</script>',
                                              text, re.S)]


def _walk(obj):
    """Every dict inside a bokeh document, depth first."""
    if isinstance(obj, dict):
        yield obj
        for value in obj.values():
            yield from _walk(value)
    elif isinstance(obj, list):
        for value in obj:
            yield from _walk(value)


def _models(text: str, name: str) -> list[dict]:
    """The attributes of every bokeh model of type ``name`` in the page."""
    return [o.get("attributes", {}) for d in _bokeh_docs(text) for o in _walk(d) if o.get("name") == name]


def _decode(value) -> np.ndarray:
    if isinstance(value, dict) and value.get("type") == "ndarray":
        raw = value["array"]
        if isinstance(raw, dict):                               # base64 bytes, gzipped when large
            data = base64.b64decode(raw["data"])
            data = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
            return np.frombuffer(data, dtype=value["dtype"]).astype(float)
        return np.asarray(raw, dtype=float)
    return np.asarray(value, dtype=float)


def _html_column(text: str, column: str) -> np.ndarray:
    """All values of the data-source column ``column`` embedded in the page (the cells drawn)."""
    parts = [_decode(v) for src in _models(text, "ColumnDataSource") for k, v in src["data"]["entries"] if k == column]
    assert parts, f"no data column {column!r} in the page"
    return np.concatenate(parts)


def _expected(store: Path, var: str, select: dict | None = None, k: int = 1) -> xr.DataArray:
    """``var`` computed here straight from the store (replicate mean over done replicates, or the comparison)."""
    ds = xr.open_zarr(store)
    if var in ds:
        da = ds[var].where(ds["done"]).mean("replicate")
        da = da.sel(k=k) if "k" in da.dims else da
    else:
        da = xr.open_zarr(store, group="comparison")[var]
    for dim, value in (select or {}).items():
        da = da.sel({dim: np.array(value, dtype=da[dim].dtype).item()})
    return da.load()


def _long_name(store: Path, var: str) -> str:
    """What a colour bar of ``var`` should read: its long_name, and its units unless they are 1."""
    ds = xr.open_zarr(store)
    attrs = (ds if var in ds else xr.open_zarr(store, group="comparison"))[var].attrs
    return attrs["long_name"] + ("" if attrs["units"] == "1" else f" ({attrs['units']})")


def _same_values(drawn: np.ndarray, expected: xr.DataArray) -> None:
    drawn = np.sort(drawn[np.isfinite(drawn)])
    want = np.sort(expected.values[np.isfinite(expected.values)].ravel())
    assert drawn.shape == want.shape
    np.testing.assert_allclose(drawn, want, rtol=1e-9)


def _figure(store, var, x, y, select=None, clim=None):
    from rmtsweep.analysis.maps.plot import map_data, map_figure
    da, ds = map_data(store, var, select)
    return map_figure(da.rename(var), ds, x, y, clim)


def _pages(fig, max_panels: int = 24):
    """The static pages of ``fig``, drawn (Agg) so that text extents are known."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from rmtsweep.analysis.maps.static import static_pages
    pages = static_pages(fig, max_panels)
    for page in pages:
        FigureCanvasAgg(page).draw()
    return pages


def _panels(page) -> list:
    """The map panels of a page (axes holding a colour mesh; not the colour bar)."""
    return [ax for ax in page.axes if any(type(c).__name__ == "QuadMesh" for c in ax.collections)
            and ax.get_label() != "<colorbar>"]


@pytest.mark.parametrize("x, y, var, select", [("snr", "gamma", "overlap", None),
                                                ("weights", "delta", "lambda1_z", {"snr": "4.0", "gamma": "0.5"}),
                                                ("snr", "delta", "detection_rate", {"gamma": "1.0"})])
def test_map_draws_the_requested_variable(tiny_store, tmp_path, x, y, var, select):
    """The HTML holds exactly the values of ``var`` (decoded from the page), offline; the PNG is not blank."""
    from rmtsweep.analysis.maps.plot import heat_map, map_data, plot
    html, png = plot(tiny_store, x, y, var, select=select).save(tmp_path)
    text = html.read_text()
    assert len(text) > 100_000 and "Bokeh" in text
    assert _offline(text) and "cdn.bokeh.org" not in text   # inline resources only
    expected = _expected(tiny_store, var, select)
    _same_values(_html_column(text, var), expected)
    assert {" ".join(bar.get("title").split()) for bar in _models(text, "ColorBar")} == {_long_name(tiny_store, var)}
    _png_ok(png)
    da, ds = map_data(tiny_store, var, select)
    hmap = heat_map(da.rename(var), ds, x, y)
    for key, overlay in hmap.items():
        qm = overlay.get(0)
        assert [d.name for d in qm.vdims] == [var]
        at = {d.name: [str(v) for v in expected[d.name].values].index(k) for d, k in zip(hmap.kdims, key)
              if d.name in expected.dims}
        _same_values(qm.dimension_values(var), expected.isel(at))


def test_map_with_widgets(tiny_store, tmp_path):
    from rmtsweep.analysis.maps.plot import plot
    html, png = plot(tiny_store, "snr", "gamma", "overlap_error", select={"delta": "0.5"}).save(tmp_path, widgets=True)
    text = html.read_text()
    assert html.stat().st_size > 100_000 and _offline(text)
    assert ("overlap_error (k=1), mean over 4 replicates minus the best prediction, finite size where stored; "
            "delta=0.5, T=4") in text
    assert "dark cell: the simulated mean is |z|" in text
    assert "markdown.css" not in text
    _png_ok(png)


def test_transition_curves_lie_in_the_plane(tiny_store):
    from rmtsweep.analysis.compare import open_source
    from rmtsweep.analysis.maps.plot import transition_curves
    ds = open_source(tiny_store)
    at = {"delta": 0.5, "gamma": 0.5, "snr": 2.0, "T": 4, "weights": "mean"}
    curves = transition_curves(ds, "snr", "gamma", at)
    sample = curves["sample"][0]
    expected = float(ds["theory_snr_sample"].sel(delta=0.5, gamma=0.5, T=4, weights="mean"))
    assert sample[0, 1] == pytest.approx(0.5) and sample[0, 0] == pytest.approx(expected, rel=1e-6)
    assert set(transition_curves(ds, "delta", "gamma", at)) == {"population", "sample"}


def test_transitions_follow_the_selected_values(tiny_store):
    """With ``--select gamma=1.0`` the transitions are those at gamma = 1, not at the axis' first value."""
    fig = _figure(tiny_store, "overlap", "snr", "delta", {"gamma": "1.0", "weights": "mean"})
    ds = xr.open_zarr(tiny_store)
    want = float(ds["theory_snr_sample"].sel(delta=0.5, gamma=1.0, T=4, weights="mean"))
    assert fig.panels[0].curves["sample"][0][0] == pytest.approx([want, 0.5], rel=1e-6)


@pytest.mark.parametrize("kwargs, match", [
    ({"x": "snr", "y": "nope", "var": "overlap"}, r"--y 'nope': not a grid axis \(valid: delta"),
    ({"x": "snr", "y": "gamma", "var": "nope"}, r"--var 'nope': not a variable .* \(valid: .*overlap"),
    ({"x": "snr", "y": "snr", "var": "overlap"}, r"both 'snr'"),
    ({"x": "snr", "y": "gamma", "var": "overlap", "select": {"T": "99"}}, r"--select T=99: not on the axis"),
    ({"x": "snr", "y": "gamma", "var": "overlap", "clim": "1"}, r"--clim '1': expected LO,HI"),
    ({"x": "snr", "y": "gamma", "var": "overlap", "clim": (1, 0)}, r"--clim 1,0: .*LO < HI"),
    ({"x": "snr", "y": "gamma", "var": "theory_phase", "clim": (0, 1)}, r"--clim: theory_phase is categorical"),
    ({"x": "snr", "y": "gamma", "var": "overlap", "formats": "png,jpg"}, r"--format 'jpg': not a map format"),
])
def test_map_errors(tiny_store, tmp_path, kwargs, match):
    from rmtsweep.analysis.maps.plot import plot
    save = {k: kwargs.pop(k) for k in ("formats",) if k in kwargs}
    with pytest.raises(SelectionError, match=match):
        plot(tiny_store, **kwargs).save(tmp_path / "maps", **save)
    assert not (tmp_path / "maps").exists()               # a mistake leaves no empty output directory behind


def test_every_panel_is_drawn_on_pages(tiny_store, tmp_path):
    """8 panels (weights x snr) at 3 per page: four pages named -p1..-p4, each half the snr values of one
    scheme (a group larger than a page gets pages of its own), holding all 8, and a note that says so."""
    from rmtsweep.analysis.maps.plot import plot
    notes: list[str] = []
    paths = plot(tiny_store, "delta", "gamma", "eigenvalues").save(tmp_path, formats="png", max_panels=3, notes=notes.append)
    assert [p.name for p in paths] == [f"tiny-eigenvalues-delta-gamma-p{i}.png" for i in (1, 2, 3, 4)]
    for p in paths:
        _png_ok(p)
    assert any("8 panels" in n and "4 pages" in n for n in notes)
    pages = _pages(_figure(tiny_store, "eigenvalues", "delta", "gamma"), max_panels=3)
    assert [[ax.get_title() for ax in _panels(page)] for page in pages] == [
        [f"weights={w}, snr={s}" for s in pair] for w in ("mean", "optimal") for pair in (("0", "2"), ("4", "6"))]
    assert [len(_panels(page)) for page in _pages(_figure(tiny_store, "eigenvalues", "delta", "gamma"))] == [8]


@pytest.mark.parametrize("var, kind, limits", [
    ("overlap", "unit", (0.0, 1.0)), ("overlap_mean", "unit", (0.0, 1.0)), ("detection_rate", "unit", (0.0, 1.0)),
    ("lambda1_z", "diverging", None), ("eigenvalues", None, None),
])
def test_colour_limits_per_quantity(tiny_store, var, kind, limits):
    """Rates and alignments: exactly 0-1, no extend arrows; errors symmetric; others within the data."""
    fig = _figure(tiny_store, var, "snr", "gamma")
    values = _expected(tiny_store, var).values
    values = values[np.isfinite(values)]
    s = fig.scale
    if kind:
        assert s.kind == kind
    if limits:
        assert (s.lo, s.hi) == limits and s.extend == "neither"
    elif kind == "diverging":
        assert s.lo == -s.hi and s.hi <= max(np.abs(values).max(), Z_FLOOR)   # a z-score's scale is at least +-3
    else:
        assert values.min() <= s.lo < s.hi <= values.max()
    bar = [ax for ax in _pages(fig)[0].axes if ax.get_label() == "<colorbar>"][0]
    assert " ".join(bar.get_ylabel().split()) == _long_name(tiny_store, var)
    mesh = _panels(_pages(fig)[0])[0].collections[0]
    assert (mesh.norm.vmin, mesh.norm.vmax) == pytest.approx((s.lo, s.hi))


def test_title_says_k_and_statistic(tiny_store, tmp_path):
    fig = _figure(tiny_store, "overlap", "snr", "gamma")
    assert fig.title == "overlap (k=1), mean over 4 replicates; T=4"
    assert _pages(fig)[0]._suptitle.get_text() == fig.title
    assert _figure(tiny_store, "eigenvalues", "snr", "gamma", {"k": "2"}).title.startswith(
        "eigenvalues (k=2), mean over 4 replicates")
    assert _figure(tiny_store, "lambda1_z", "snr", "gamma").title.startswith(
        "lambda1_z (k=1), z-score of the mean over 4 replicates")
    from rmtsweep.analysis.maps.plot import plot
    html, _ = plot(tiny_store, "snr", "gamma", "overlap").save(tmp_path)
    assert "overlap (k=1), mean over 4 replicates; T=4" in html.read_text()


def test_clim_overrides_the_limits(tiny_store, tmp_path):
    from rmtsweep.cli import main
    fig = _figure(tiny_store, "overlap", "snr", "gamma", clim=(0.2, 0.8))
    assert (fig.scale.lo, fig.scale.hi) == (0.2, 0.8) and fig.scale.extend == "both"
    main(["plot", str(tiny_store), "--x", "snr", "--y", "gamma", "--var", "lambda1_z", "--out", str(tmp_path),
          "--clim", "-3,3"])
    mappers = _models((tmp_path / "tiny-lambda1_z-snr-gamma.html").read_text(), "LinearColorMapper")
    assert mappers and all((m["low"], m["high"]) == (-3.0, 3.0) for m in mappers)


@pytest.mark.parametrize("var, names", [
    ("theory_phase", ["no population outlier", "population outlier only", "sample outlier"]),
    ("phase_agrees", ["disagree", "agree"]),                 # its attrs carry theory_phase's flags: not used
])
def test_categorical_variable_gets_a_discrete_legend(tiny_store, tmp_path, var, names):
    from rmtsweep.analysis.maps.plot import plot
    fig = _figure(tiny_store, var, "snr", "gamma")
    assert fig.scale.kind == "categorical" and [n for _, n in fig.scale.categories] == names
    page = _pages(fig)[0]
    assert not [ax for ax in page.axes if ax.get_label() == "<colorbar>"]           # no continuous colour bar
    texts = [[t.get_text() for t in legend.get_texts()] for legend in page.legends]
    assert names in texts
    html, _ = plot(tiny_store, "snr", "gamma", var).save(tmp_path)
    bars = _models(html.read_text(), "ColorBar")
    assert bars and all(sorted(b["major_label_overrides"]["entries"], key=lambda e: e[0]) ==
                        [[v, n] for v, n in fig.scale.categories] for b in bars)


def _overlaps(a, b) -> bool:
    return a.width > 0 and b.width > 0 and a.overlaps(b)


def test_categorical_axis_labels_clear_and_no_transitions(tiny_store):
    """(snr, weights): no transition lines across the schemes; no label runs into another panel or the colour bar."""
    from rmtsweep.analysis.maps.plot import heat_map, map_data
    fig = _figure(tiny_store, "lambda1_z", "snr", "weights")
    assert not fig.transitions and all(not p.curves for p in fig.panels)
    da, ds = map_data(tiny_store, "lambda1_z")
    assert all(len(overlay) == 1 for overlay in heat_map(da.rename("lambda1_z"), ds, "snr", "weights").values())
    page = _pages(fig)[0]
    renderer = page.canvas.get_renderer()
    assert all(not ax.lines for ax in _panels(page))
    assert not page.legends                                           # no transitions: no transition legend
    axes = page.axes
    for a in axes:
        for b in axes:
            if a is not b:
                assert not _overlaps(a.get_tightbbox(renderer), b.get_window_extent(renderer)), (a.get_title(),
                                                                                                 b.get_title())
    assert [t.get_text() for t in _panels(page)[0].get_yticklabels()] == ["mean", "optimal"]


def test_legends_outside_the_data_with_both_transitions(tiny_store):
    import holoviews as hv

    from rmtsweep.analysis.maps.plot import holoviews_backends, heat_map, map_data
    fig = _figure(tiny_store, "overlap", "snr", "gamma")
    page = _pages(fig)[0]
    renderer = page.canvas.get_renderer()
    panels = _panels(page)
    assert all(ax.get_legend() is None for ax in panels)
    (legend,) = page.legends
    assert [t.get_text() for t in legend.get_texts()] == ["population transition", "sample transition"]
    box = legend.get_window_extent(renderer)
    assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in panels)
    da, ds = map_data(tiny_store, "overlap")
    with holoviews_backends():
        for overlay in heat_map(da.rename("overlap"), ds, "snr", "gamma").values():
            plot = hv.render(overlay, backend="bokeh")
            legends = [r for r in plot.above if type(r).__name__ == "Legend"]
            assert legends and not [r for r in plot.center if type(r).__name__ == "Legend"]
            assert [item.label.value for item in legends[0].items] == ["population transition", "sample transition"]


def test_html_panel_titles_fit_their_panels(tiny_store, tmp_path):
    """Panel titles of three facets (delta, gamma, weights) fit their panels' width in bold DejaVu Sans."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    from rmtsweep.analysis.maps.plot import plot
    html, _ = plot(tiny_store, "snr", "T", "overlap").save(tmp_path)
    text = html.read_text()
    (frame,) = {p["frame_width"] for p in _models(text, "Figure")}
    titles = [t for t in _models(text, "Title") if t.get("text")]
    assert len(titles) == 8
    for t in titles:
        size = t.get("text_font_size", "13px")
        px = float(size[:-2]) * (96 / 72 if size.endswith("pt") else 1.0)
        font = FontProperties(family="DejaVu Sans", weight="bold", size=px)
        assert TextToPath().get_text_width_height_descent(t["text"], font, ismath=False)[0] <= frame, t


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
    out = capsys.readouterr().out.split()
    assert out == [str(tmp_path / "tiny-overlap-snr-delta.html"), str(tmp_path / "tiny-overlap-snr-delta.png")]
    _same_values(_html_column(Path(out[0]).read_text(), "overlap"),
                 _expected(tiny_store, "overlap", {"gamma": "0.5", "weights": "mean"}))
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(tiny_store), "--x", "snr", "--y", "delta", "--var", "bogus", "--out", str(tmp_path)])
    assert exc.value.code == 2
    assert "bogus" in capsys.readouterr().err


def test_cli_formats_and_out_file(tiny_store, tmp_path, capsys):
    from rmtsweep.cli import main
    args = ["plot", str(tiny_store), "--x", "snr", "--y", "gamma", "--var", "overlap"]
    main(args + ["--out", str(tmp_path / "a"), "--format", "svg,pdf", "--format", "png"])
    stem = tmp_path / "a" / "tiny-overlap-snr-gamma"
    assert capsys.readouterr().out.split() == [f"{stem}.{f}" for f in ("svg", "pdf", "png")]
    assert Path(f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    assert Path(f"{stem}.pdf").read_bytes()[:5] == b"%PDF-"
    main(args + ["--out", str(tmp_path / "new" / "deeper" / "fig.pdf")])       # parents created, like mkdir -p
    assert capsys.readouterr().out.split() == [str(tmp_path / "new" / "deeper" / "fig.pdf")]
    main(args + ["--out", str(tmp_path / "w"), "--format", "html", "--widgets"])       # a widget page: panel's embedding
    out, err = capsys.readouterr()                                        # bar stays out of a non-terminal log
    assert out.split() == [str(tmp_path / "w" / "tiny-overlap-snr-gamma.html")] and "\r" not in out + err


def _one_line_error(capsys, argv: list[str]) -> tuple[int, str]:
    from rmtsweep.cli import main
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err and err.startswith("rmtsweep: error: ")
    return exc.value.code, err


def test_cli_bad_out_paths(tiny_store, tmp_path, capsys, monkeypatch):
    """A file in the way is a user mistake (exit 2); an OS refusal (permissions, /proc) is exit 1."""
    args = ["plot", str(tiny_store), "--x", "snr", "--y", "gamma", "--var", "overlap", "--out"]
    regular = tmp_path / "afile"
    regular.write_text("not a directory")
    code, err = _one_line_error(capsys, args + [str(regular / "maps")])
    assert code == 2 and f"is under {regular}, which is a file" in err
    code, err = _one_line_error(capsys, args + [str(regular)])
    assert code == 2 and "is a file, not a directory" in err
    code, err = _one_line_error(capsys, args + [str(tmp_path / "x.pdf"), "--format", "png"])
    assert code == 2 and "names a .pdf file, but --format asks for png" in err
    if Path("/proc/self").exists():
        code, err = _one_line_error(capsys, args + ["/proc/rmtsweep-no-such/maps"])
        assert code == 1 and "No such file or directory" in err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    if os.access(locked, os.W_OK):               # root ignores permission bits: refuse as the OS would a user
        import rmtsweep.analysis.maps.output as map_output
        monkeypatch.setattr(map_output, "os", types.SimpleNamespace(
            access=lambda *a: False, W_OK=os.W_OK, X_OK=os.X_OK, strerror=os.strerror))
    code, err = _one_line_error(capsys, args + [str(locked)])
    assert code == 1 and err == f"rmtsweep: error: {locked}: Permission denied"


def test_facets_follow_the_sweeps_order(tiny_store):
    """Facets come in the order of the sweep's axes (the weights as written), not alphabetically."""
    from rmtsweep.analysis.maps.plot import heat_map, map_data
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
    from rmtsweep.analysis.maps.plot import plot
    import holoviews.plotting.mpl
    hv.Store.set_current_backend("matplotlib")
    backend = matplotlib.get_backend()
    plot(tiny_store, "snr", "delta", "overlap").save(tmp_path)
    figures([tiny_store], tmp_path / "figs")
    assert hv.Store.current_backend == "matplotlib"
    assert matplotlib.get_backend() == backend


UNEVEN = {**BASE, "name": "uneven", "d": 20, "replicates": 2, "replicates_per_task": 2,
          "grid": {"delta": [0.5, 1.0], "gamma": [0.25, 0.5, 1.0], "snr": [0.0, 1.5, 3.0, 6.0], "T": [2, 4],
                   "weights": ["mean", "optimal"]}}


@pytest.fixture(scope="module")
def uneven_store(tmp_path_factory) -> Path:
    """Uneven SNR steps from 0 and a gamma grid of powers of 2 (what the shipped theory checks have)."""
    from rmtsweep.analysis.compare import compare, write_comparison
    path = build_store(tmp_path_factory.mktemp("uneven") / "uneven.zarr", UNEVEN)
    write_comparison(path, compare(path))
    return path


def _mesh_edges(ax) -> tuple[np.ndarray, np.ndarray]:
    """The x and y cell edges of the colour mesh drawn in ``ax``."""
    corners = next(c for c in ax.collections if type(c).__name__ == "QuadMesh").get_coordinates()
    return corners[0, :, 0], corners[:, 0, 1]


def test_cells_end_at_zero_and_are_geometric_on_a_log_axis(uneven_store, tmp_path):
    """SNR cells (0, 1.5, 3, 6) start at 0, not -0.75; gamma (1/4, 1/2, 1) on a log2 axis has geometric edges
    half a log step beyond the ends: the PNG's mesh and the HTML's quads."""
    fig = _figure(uneven_store, "detection_rate", "snr", "gamma", {"delta": "0.5", "weights": "mean", "T": "4"})
    (ax,) = _panels(_pages(fig)[0])
    xe, ye = _mesh_edges(ax)
    np.testing.assert_allclose(xe, [0.0, 0.75, 2.25, 4.5, 7.5])
    np.testing.assert_allclose(np.log2(ye), [-2.5, -1.5, -0.5, 0.5])
    assert ax.get_yscale() == "log" and ax.get_xlim()[0] == 0.0
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.25", "0.5", "1"]
    from rmtsweep.analysis.maps.plot import plot
    html, _ = plot(uneven_store, "snr", "gamma", "detection_rate", select={"delta": "0.5", "weights": "mean", "T": "4"}).save(tmp_path)
    text = html.read_text()
    lefts, rights = np.unique(_html_column(text, "left")), np.unique(_html_column(text, "right"))
    np.testing.assert_allclose(np.union1d(lefts, rights), [0.0, 0.75, 2.25, 4.5, 7.5])
    bottoms, tops = np.unique(_html_column(text, "bottom")), np.unique(_html_column(text, "top"))
    np.testing.assert_allclose(np.log2(np.union1d(bottoms, tops)), [-2.5, -1.5, -0.5, 0.5])
    assert len(_models(text, "LogScale")) == 1                            # the y axis, not the x axis


def test_legend_names_only_the_lines_drawn(tiny_store, tmp_path):
    """(delta, gamma) at snr = 0: no transition crosses the plane, so no legend names one (PNG and HTML);
    at snr = 2 only the lines drawn are named."""
    from rmtsweep.analysis.maps.plot import plot
    for snr in ("0.0", "2.0"):
        page = _pages(_figure(tiny_store, "overlap", "delta", "gamma", {"snr": snr}))[0]
        styles = {line.get_linestyle() for ax in _panels(page) for line in ax.lines if line.get_color() == "black"}
        named = [t.get_text() for legend in page.legends for t in legend.get_texts()]
        assert named == [f"{k} transition" for k, style in (("population", "--"), ("sample", "-")) if style in styles]
        if snr == "0.0":
            assert not styles and not named
    html, _ = plot(tiny_store, "delta", "gamma", "overlap", select={"snr": "0.0"}).save(tmp_path)
    assert not [i for i in _models(html.read_text(), "LegendItem") if "transition" in str(i.get("label"))]


def test_one_column_of_extreme_z_scores_does_not_fade_the_rest(tiny_store):
    """A z-score map whose snr = 0 column is 40 sigma off: the others (within +-3) keep visible colours,
    the column saturates and the colour bar has arrows."""
    from rmtsweep.analysis.maps.plot import map_data, map_figure
    da, ds = map_data(tiny_store, "lambda1_z")
    rest = np.linspace(-3.0, 3.0, da.size).reshape(da.shape)
    da = xr.where(da["snr"] == 0.0, 40.0, da.copy(data=rest)).transpose(*da.dims)
    page = _pages(map_figure(da.rename("lambda1_z"), ds, "snr", "gamma"))[0]
    mesh = _panels(page)[0].collections[0]
    assert mesh.norm.vmin == -mesh.norm.vmax and 3.0 <= mesh.norm.vmax < 8.0            # not 40
    drawn = np.concatenate([ax.collections[0].get_array().compressed() for ax in _panels(page)])
    shade = mesh.norm(drawn[drawn < 40.0])
    assert np.mean(np.abs(shade - 0.5) > 0.1) > 0.5                     # most cells visibly blue or red
    assert np.all(mesh.norm(drawn[drawn == 40.0]) > 1.0)                 # the column beyond the scale
    bar = next(ax for ax in page.axes if ax.get_label() == "<colorbar>")
    colorbar = _panels(page)[-1].collections[0].colorbar                     # the bar is drawn from the last panel
    assert bar is colorbar.ax and colorbar.extend in ("max", "both")          # an arrow for the column


def test_colour_bar_says_what_the_colours_are(tiny_store, tmp_path):
    """The colour bar reads the variable's long_name (wrapped to the bar), not ``lambda1_z`` (PNG and HTML)."""
    from rmtsweep.analysis.maps.plot import plot
    want = xr.open_zarr(tiny_store, group="comparison")["lambda1_z"].attrs["long_name"]
    bar = next(ax for ax in _pages(_figure(tiny_store, "lambda1_z", "snr", "gamma"))[0].axes
               if ax.get_label() == "<colorbar>")
    assert " ".join(bar.get_ylabel().split()) == want and "lambda1_z" not in bar.get_ylabel()
    html, _ = plot(tiny_store, "snr", "gamma", "lambda1_z").save(tmp_path)
    titles = {" ".join(str(b.get("title")).split()) for b in _models(html.read_text(), "ColorBar")}
    assert titles == {want}


def _saved_figures(monkeypatch) -> dict:
    """The matplotlib figures ``rmtsweep.analysis.figures`` saves, by file name, drawn (text extents known)."""
    import rmtsweep.analysis.figures as figures_module
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    saved, save = {}, figures_module._save

    def keep(fig, path, tight=True):
        saved[path.name] = fig
        out = save(fig, path, tight)
        FigureCanvasAgg(fig).draw()
        return out
    monkeypatch.setattr(figures_module, "_save", keep)
    return saved


def test_phase_figure_cells_legend_and_cell(uneven_store, tmp_path, monkeypatch, capsys):
    """Figure (c): geometric gamma cells on the log2 axis, SNR cells from 0; its legend below the panels with
    black line samples; the title and a note say which T and weights it shows (``--select T=4``)."""
    from matplotlib.colors import to_rgba

    from rmtsweep.cli import main
    saved = _saved_figures(monkeypatch)
    main(["figures", str(uneven_store), "--out", str(tmp_path), "--select", "T=4"])
    out = capsys.readouterr().out
    fig = saved["fig-c-phase.png"]
    panels = _panels(fig)
    assert len(panels) == 2
    xe, ye = _mesh_edges(panels[0])
    np.testing.assert_allclose(xe, [0.0, 0.75, 2.25, 4.5, 7.5])
    np.testing.assert_allclose(np.log2(ye), [-2.5, -1.5, -0.5, 0.5])
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == ["theory population transition", "theory sample transition"]
    assert all(to_rgba(h.get_color()) == to_rgba("black") for h in legend.legend_handles)
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in panels)
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0
    assert "T=4" in fig._suptitle.get_text() and "weights=mean" in fig._suptitle.get_text()
    assert "fig-c-phase.png shows T=4, weights=mean" in out


def test_one_cell_figures_say_which_cell(uneven_store, tmp_path, monkeypatch):
    """Without --select, figure (b) shows the largest T (4 of 2, 4) and says so; --select T=2 moves it."""
    from rmtsweep.analysis.figures import figures
    saved = _saved_figures(monkeypatch)
    _, notes = figures([uneven_store], tmp_path)
    assert "T=4" in saved["fig-b-alignment.png"].axes[0].get_title()
    assert any("fig-b-alignment.png shows delta=0.5, gamma=0.25, T=4" in n for n in notes)
    _, notes = figures([uneven_store], tmp_path, select={"T": "2"})
    assert "T=2" in saved["fig-b-alignment.png"].axes[0].get_title()
    with pytest.raises(SelectionError, match=r"--select T=3: not on the axis"):
        figures([uneven_store], tmp_path, select={"T": "3"})


def test_attention_figure_legend_inside_the_figure(tiny_store, tmp_path, monkeypatch):
    """Figure (f)'s legend (one entry per scheme, long names as attention's) lies wholly inside the saved
    figure and off both panels."""
    from rmtsweep.analysis.compare import compare, open_source
    from rmtsweep.analysis.figures import attention_figure
    saved = _saved_figures(monkeypatch)
    ds = open_source(tiny_store)
    cmp = compare(ds)
    names = {"weights": ["attention(tau=2, scale=sqrt_d)", "causal(tau=2)"]}
    attention_figure(ds.assign_coords(names), cmp.assign_coords(names), tmp_path)
    fig = saved["fig-f-attention.png"]
    renderer = fig.canvas.get_renderer()
    legends = fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    assert [t.get_text().split(" (limit")[0] for t in legends[0].get_texts()] == names["weights"]
    for legend in legends:
        box = legend.get_window_extent(renderer)
        assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and fig.bbox.y0 <= box.y0 and box.y1 <= fig.bbox.y1
        assert not any(_overlaps(box, ax.get_window_extent(renderer)) for ax in fig.axes)
    import matplotlib.image as mpimg
    img = mpimg.imread(tmp_path / "fig-f-attention.png")[..., :3]
    assert np.all(img[:, -1] == 1.0) and np.all(img[-1, :] == 1.0)     # the saved PNG: nothing runs off its edges


def _text_boxes(page) -> list:
    """The window extents of a page's title and of every panel's title (drawn, non-empty)."""
    renderer = page.canvas.get_renderer()
    texts = [page._suptitle] + [ax.title for ax in _panels(page)]
    return [t.get_window_extent(renderer) for t in texts if t is not None and t.get_text()]


def _inside(box, page) -> bool:
    return page.bbox.x0 <= box.x0 and box.x1 <= page.bbox.x1 and page.bbox.y0 <= box.y0 and box.y1 <= page.bbox.y1


def test_27_panels_keep_facet_groups_and_titles_apart(tiny_store):
    """delta x T x weights = 27 panels with long scheme names: rows hold the three weights of one (delta, T),
    pages whole deltas (18 + 9, not 14 + 13), and no title is clipped or runs into another."""
    from rmtsweep.analysis.maps.plot import map_figure
    _, ds = _figure(tiny_store, "overlap", "snr", "T").panels, xr.open_zarr(tiny_store)
    weights = ["mean", "attention(tau=2, scale=sqrt_d)", "causal(tau=2)"]
    da = xr.DataArray(np.random.default_rng(0).uniform(size=(3, 3, 3, 4, 1)), name="overlap",
                      dims=("delta", "gamma", "weights", "snr", "T"),
                      coords={"delta": [0.25, 0.5, 1.0], "gamma": [0.25, 0.5, 1.0], "weights": weights,
                              "snr": [0.0, 2.0, 4.0, 6.0], "T": [4]})
    pages = _pages(map_figure(da, ds, "snr", "T"))
    assert [len(_panels(p)) for p in pages] == [18, 9]
    for page in pages:
        titles = [ax.get_title().replace("\n", " ") for ax in _panels(page)]
        rows = {}
        for ax, title in zip(_panels(page), titles):
            rows.setdefault(round(ax.get_position().y0, 3), []).append(title)
        assert all([t.split("weights=")[1] for t in row] == weights for row in rows.values())   # one group a row
        deltas = {t.split(",")[0] for t in titles}
        assert all(sum(t.startswith(d + ",") for t in titles) == 9 for d in deltas)            # whole deltas
        assert "delta=" in page._suptitle.get_text()                                            # says which
        boxes = _text_boxes(page)
        assert all(_inside(b, page) for b in boxes)
        assert not any(_overlaps(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_single_panel_title_fits_the_page(uneven_store):
    """One panel (``--select T=2 --select delta=0.5 --select weights=mean``): its long title lies wholly
    inside the PNG, on more than one line if need be."""
    fig = _figure(uneven_store, "detection_rate", "snr", "gamma", {"T": "2", "delta": "0.5", "weights": "mean"})
    (page,) = _pages(fig)
    assert len(_panels(page)) == 1
    (box,) = _text_boxes(page)
    assert _inside(box, page)
    assert " ".join(page._suptitle.get_text().split()) == fig.title


def test_a_comparison_group_that_states_no_detection_rule_is_not_drawn(tiny_store, tmp_path):
    """A comparison group written before detection stated its rule (no ``false_alarm`` or ``margin_factor``)
    counted detections by another test: a map recomputes them; a group that states its rule is drawn as stored."""
    import shutil

    from rmtsweep.analysis.compare import GROUP, compare, write_comparison
    from rmtsweep.analysis.maps.plot import map_data
    store = tmp_path / "old.zarr"
    shutil.copytree(tiny_store, store)
    level = compare(store).attrs["false_alarm"]
    for states_rule in (True, False):
        group = xr.open_zarr(store, group=GROUP).load()
        group["detection_rate"] = xr.full_like(group["detection_rate"], 0.375)       # a value no cell has
        group.attrs = {k: v for k, v in group.attrs.items() if k not in ("false_alarm", "margin_factor")}
        if states_rule:
            group.attrs["false_alarm"] = level
        write_comparison(store, group)
        da, _ = map_data(store, "detection_rate")
        drawn = da.values[np.isfinite(da.values)]
        assert drawn.size and (np.all(drawn == 0.375) if states_rule else not np.any(drawn == 0.375)), states_rule


def test_a_plane_one_grid_value_wide_is_drawn_with_its_value_and_no_contour(tmp_path):
    """(delta, gamma) with one gamma: no transition contour can be traced (it crashed contourpy), and the one row
    of cells is labelled with its value, in the PNG and in the HTML, not with its edges' span."""
    from rmtsweep.analysis.maps.plot import plot
    store = build_store(tmp_path / "one-gamma.zarr", BASE)              # gamma: [0.5] only
    fig = _figure(store, "detection_rate", "delta", "gamma")
    assert fig.transitions and all(p.curves == {"population": [], "sample": []} for p in fig.panels)
    ax = _panels(_pages(fig)[0])[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0.5"]
    assert ax.get_yticks().tolist() == [0.5]
    html, png = plot(store, "delta", "gamma", "detection_rate").save(tmp_path / "maps")
    assert png.exists() and '"0.5"' in html.read_text()


def test_a_transition_across_a_row_one_grid_value_wide_spans_the_row(tmp_path):
    """SNR against gamma with one gamma: each transition is the store's SNR drawn across the row's cell (it was a
    single point, so nothing was drawn under a legend that named it)."""
    import xarray as xr
    store = build_store(tmp_path / "one-gamma.zarr", BASE)
    ds = xr.open_zarr(store)
    fig = _figure(store, "overlap", "snr", "gamma", {"delta": "1.0"})
    for panel in fig.panels:
        at = dict(delta=1.0, gamma=0.5, T=4, weights=panel.key[fig.facets.index("weights")])
        for kind in ("population", "sample"):
            (path,) = panel.curves[kind]
            want = float(ds[f"theory_snr_{kind}"].sel(at))
            np.testing.assert_allclose(path, [[want, 0.0], [want, 0.5], [want, 1.0]], rtol=1e-9)   # through the point
