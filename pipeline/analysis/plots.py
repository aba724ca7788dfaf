"""Heat maps of any store or comparison variable over two grid axes, with the theory's transitions.

The map is drawn through hvplot (``quadmesh``) and saved twice: an interactive HTML page with every
resource inline (it renders offline, no CDN) and a static PNG through holoviews' matplotlib backend
(no browser needed). Per-replicate variables are averaged over the replicates whose ``done`` flag is
set; ``k`` defaults to 1 (the top eigenpair). The remaining grid axes become facets (or widgets in
the HTML with ``widgets=True``; the PNG is always faceted). Over each panel the population and
sample transitions (``theory_snr_population``, ``theory_snr_sample``) are drawn as curves in the
plotted plane: SNR against delta, gamma, T or weights, or contours in the (delta, gamma) plane.

Plotting libraries are imported inside the functions, so ``rmtsweep run`` never loads them.
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

import numpy as np
import xarray as xr

from .. import theory
from ..dims import AXES
from ..errors import SelectionError
from .compare import GROUP, compare, open_source

__all__ = ["heat_map", "map_data", "plot_map", "save_map", "snr_transition", "transition_curves"]

DIVERGING = ("_error", "_z")
MAX_PANELS = 24
CATEGORICAL = ("T", "weights")  # drawn at equally spaced positions, labelled with their values


def map_data(path: str | Path | xr.Dataset, var: str, select: dict | None = None) -> tuple[xr.DataArray, xr.Dataset]:
    """The variable to map (replicate-averaged, ``k`` selected) and the store it came from.

    ``var`` may be a store variable or a comparison variable (read from the store's ``comparison``
    group when present, computed on the fly otherwise).
    """
    ds = open_source(path)
    if var in ds.data_vars:
        da = ds[var]
        if "replicate" in da.dims:
            da = da.where(ds["done"]).mean("replicate").assign_attrs(da.attrs)
    else:
        try:
            cmp = open_source(path, GROUP) if not isinstance(path, xr.Dataset) else compare(ds)
        except SelectionError:
            cmp = compare(ds)
        if var not in cmp.data_vars:
            choices = sorted(set(ds.data_vars) | set(cmp.data_vars))
            raise SelectionError(f"--var {var!r}: not a variable of {path} (valid: {', '.join(choices)})")
        da = cmp[var]
    for dim, value in (select or {}).items():
        if dim not in da.dims:
            raise SelectionError(f"--select {dim}: not a dimension of {var} (valid: {', '.join(da.dims)})")
        kind = da[dim].dtype.kind
        cast = float if kind == "f" else int if kind in "iu" else str
        try:
            da = da.sel({dim: cast(value)})
        except (KeyError, ValueError):
            raise SelectionError(f"--select {dim}={value}: not on the axis (valid: "
                                 f"{', '.join(map(str, da[dim].values))})") from None
    if "k" in da.dims:
        da = da.sel(k=1, drop=True)
    extra = [d for d in da.dims if d not in AXES]
    if extra:
        raise SelectionError(f"--var {var}: has the non-grid dimension(s) {extra}; pick one value with --select")
    return da.load(), ds


def snr_transition(ds: xr.Dataset, kind: str, delta, gamma, T, weights, snr=None) -> np.ndarray:
    """SNR of the population or sample transition at arrays of delta and gamma, one (T, weights).

    :func:`rmtsweep.theory.transition_snr` with the store's weight scalars and centering.
    """
    sel = {"T": T, "weights": weights}
    return theory.transition_snr(kind, float(ds["theory_alpha"].sel(sel)), float(ds["theory_kappa"].sel(sel)),
                                 delta, gamma, ds.attrs.get("table_centering", "class"))


def transition_curves(ds: xr.Dataset, x: str, y: str, at: dict) -> dict[str, list[np.ndarray]]:
    """Theory transitions in the (x, y) plane at the other axes' values ``at``, as lists of (n, 2) paths."""
    out: dict[str, list[np.ndarray]] = {}
    pos = {a: (np.arange(ds.sizes[a]) if a in CATEGORICAL else ds[a].values.astype(float)) for a in AXES}
    for kind in ("population", "sample"):
        if "snr" in (x, y):
            a = y if x == "snr" else x
            if a in ("delta", "gamma"):
                grid = np.linspace(pos[a].min(), pos[a].max(), 200)
                s = snr_transition(ds, kind, **{**at, a: grid})
            else:  # T or weights: one point per grid value
                grid = pos[a]
                s = np.array([snr_transition(ds, kind, **{**at, a: v}).item() for v in ds[a].values])
            xy = np.column_stack([s, grid] if x == "snr" else [grid, s])
            out[kind] = [xy[np.isfinite(xy).all(axis=1)]]
        elif {x, y} == {"delta", "gamma"}:
            import contourpy
            gx = np.linspace(pos[x].min(), pos[x].max(), 120)
            gy = np.linspace(pos[y].min(), pos[y].max(), 120)
            X, Y = np.meshgrid(gx, gy)
            D, G = (X, Y) if x == "delta" else (Y, X)
            field = snr_transition(ds, kind, D, G, at["T"], at["weights"]) - at["snr"]
            out[kind] = list(contourpy.contour_generator(gx, gy, field).lines(0.0))
    return out


@contextlib.contextmanager
def _backends():
    """Both holoviews plotting backends loaded, bokeh current; the caller's current backend restored.

    Loads the backends by import (what ``hv.extension`` does in a script, without notebook output),
    so a notebook's own holoviews, panel and matplotlib settings are left as they were.
    """
    import holoviews as hv

    before = hv.Store.current_backend              # read first: importing a backend may make it current
    import holoviews.plotting.bokeh  # noqa: F401
    import holoviews.plotting.mpl  # noqa: F401

    hv.Store.set_current_backend("bokeh")
    try:
        yield
    finally:
        hv.Store.set_current_backend(before)


def heat_map(da: xr.DataArray, ds: xr.Dataset, x: str, y: str):
    """A ``holoviews.HoloMap`` of heat maps (one per value of the remaining axes) with transition curves."""
    import holoviews as hv

    with _backends():                                 # hvplot's import picks a backend too: import it inside
        import hvplot.xarray  # noqa: F401  (registers .hvplot)
        return _heat_map(hv, da, ds, x, y)


def _heat_map(hv, da: xr.DataArray, ds: xr.Dataset, x: str, y: str):
    for axis in (x, y):
        if axis not in da.dims:
            raise SelectionError(f"axis {axis!r}: not a dimension of {da.name} (valid: {', '.join(da.dims)})")
    if x == y:
        raise SelectionError(f"--x and --y are both {x!r}; choose two different axes")
    rest = [d for d in da.dims if d not in (x, y)]
    ticks = {}
    for a, axis in (("x", x), ("y", y)):
        if axis in CATEGORICAL:
            ticks[f"{a}ticks"] = list(enumerate(str(v) for v in ds[axis].values))
            da = da.assign_coords({axis: np.arange(da.sizes[axis])})
    diverging = da.name.endswith(DIVERGING)
    finite = np.abs(da.values[np.isfinite(da.values)])
    hi = float(np.nanpercentile(finite, 98)) if finite.size else 1.0
    lo = -hi if diverging else float(np.nanmin(da.values)) if finite.size else 0.0
    clim = (lo, hi if hi > lo else lo + 1.0)
    cmap = "RdBu_r" if diverging else "viridis"
    panels = {}
    for key in itertools.product(*(da[d].values for d in rest)):
        at = dict(zip(rest, key))
        sub = da.sel(at)
        title = ", ".join(f"{k}={v}" for k, v in at.items())
        qm = sub.hvplot.quadmesh(x=x, y=y, cmap=cmap, clim=clim, colorbar=True, width=360, height=280,
                                 title=title, clabel=str(da.name), **ticks)
        qm = qm.opts(backend="matplotlib", cmap=cmap, clim=clim, colorbar=True, title=title, fig_inches=3.6,
                     clabel=str(da.name), **ticks)
        layers = [qm]
        full = {**{a: ds[a].values[0] for a in AXES}, **at}
        for kind, style in (("population", "dashed"), ("sample", "solid")):
            for path in transition_curves(ds, x, y, full).get(kind, []):
                c = hv.Curve(path, x, y, label=f"{kind} transition")
                c = c.opts(color="black", line_dash=style, line_width=2, show_legend=not layers[1:]).opts(
                    backend="matplotlib", color="black", linestyle=style, linewidth=1.5)
                layers.append(c)
        panels[tuple(str(k) for k in key) or ("all",)] = hv.Overlay(layers).opts(legend_position="bottom_right")
    return hv.HoloMap(panels, kdims=rest or ["panel"], sort=False)      # facets in the sweep's order


def save_map(hmap, out: Path, stem: str, widgets: bool | None = None,
             max_panels: int = MAX_PANELS) -> tuple[Path, Path]:
    """Write ``<stem>.html`` (inline resources: works offline) and ``<stem>.png`` (matplotlib backend).

    ``widgets=None`` chooses widgets for the HTML when there are more than ``max_panels // 2``
    panels; the PNG always shows facets, at most ``max_panels`` of them (narrow the rest with
    ``--select``).
    """
    import holoviews as hv
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    out.mkdir(parents=True, exist_ok=True)
    with _backends():
        return _save_map(hv, file_html, INLINE, hmap, out, stem, widgets, max_panels)


def _save_map(hv, file_html, INLINE, hmap, out: Path, stem: str, widgets: bool | None, max_panels: int
              ) -> tuple[Path, Path]:
    html, png = out / f"{stem}.html", out / f"{stem}.png"
    n = len(hmap)
    frames = list(hmap.values())[:max_panels]
    layout = hv.Layout(frames).cols(min(len(frames), 4)) if n > 1 else hmap.last
    if n > 1:
        layout = layout.opts(sublabel_format="", backend="matplotlib")
    if widgets is None:
        widgets = n > max_panels // 2
    if widgets and n > 1:
        import panel as pn
        with pn.config.set(inline=True):
            pn.panel(hmap).save(str(html), embed=True, resources=INLINE, title=stem)
    else:
        html.write_text(file_html(hv.render(layout, backend="bokeh"), INLINE, stem))
    hv.save(layout, str(png), backend="matplotlib", dpi=80)
    return html, png


def plot_map(path: str | Path | xr.Dataset, x: str, y: str, var: str, out: str | Path, widgets: bool | None = None,
             select: dict | None = None) -> tuple[Path, Path]:
    """Map ``var`` over the axes ``x`` and ``y`` of the store at ``path``; returns (html, png) paths.

    Examples
    --------
    >>> plot_map("store/demo.zarr", "snr", "gamma", "overlap", "maps/")  # doctest: +SKIP
    """
    for name, axis in (("--x", x), ("--y", y)):
        if axis not in AXES:
            raise SelectionError(f"{name} {axis!r}: not a grid axis (valid: {', '.join(AXES)})")
    da, ds = map_data(path, var, select)
    hmap = heat_map(da.rename(var), ds, x, y)
    name = path.attrs.get("sweep_name", "store") if isinstance(path, xr.Dataset) else Path(str(path)).stem
    stem = f"{name}-{var}-{x}-{y}"
    return save_map(hmap, Path(out), stem, widgets)
