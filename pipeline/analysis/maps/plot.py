"""Heat maps of any store or comparison variable over two grid axes, with the theory's transitions.

The map is drawn through hvplot (``quadmesh``) into an interactive HTML page with every resource
inline (it renders offline, no CDN; :mod:`.interactive`), and through matplotlib into static PNG / SVG / PDF
files (no browser needed; :mod:`.static`), every panel of them, on pages of at most ``max_panels``.
Per-replicate variables are averaged over the replicates whose ``done`` flag is set
(:func:`rmtsweep.analysis.mask.only_done`; ``notes`` is told how many are not); ``k`` defaults to 1 (the top
eigenpair); the title says which ``k`` and statistic is shown.
The colour scale is chosen per quantity (:mod:`rmtsweep.analysis.maps.style`: exactly 0-1 for rates
and alignments, symmetric for errors, a discrete legend for categorical variables such as
``theory_phase``, robust limits otherwise; ``clim`` overrides). The remaining grid axes become
facets (or widgets in the HTML with ``widgets=True``; static files are always faceted), ``d`` too
where it is a grid axis (``select={"d": 400}`` picks one). Over each
panel the population and sample transitions (``theory_snr_population``, ``theory_snr_sample``) are
drawn as curves in the plotted plane: SNR against delta or gamma, or contours in the (delta, gamma)
plane; not over a categorical axis (T, weights), where a line between categories means nothing.
They pass through the store's values, and between grid points follow the function that wrote them.

A store whose theory at its size is not written yet (``theory_pending``) maps a Monte Carlo variable with no
transitions and says so (the map's caption and ``StoreMap.attrs["theory"]``, a line in ``notes``); any other
variable it refuses (:func:`rmtsweep.store.pending.require_theory`).

Plotting libraries are imported inside the functions, so ``rmtsweep run`` never loads them.
"""

from __future__ import annotations

import contextlib
import itertools
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from ...theory import cell_law
from ...dims import ALL_AXES, AXES
from ...errors import SelectionError
from ...store import Location
from ...store.pending import PENDING_MARK, pending_note, require_theory, theory_pending
from ..compare import GROUP, SHORT, compare, measured, no_law_cells, open_source
from ..source import monte_carlo, store_name, with_options
from .axes import LOWER_BOUND, AxisScale, axis_scale, cell_edges
from .output import DEFAULT_FORMATS, make_directory, output_target, parse_clim, parse_formats
from .interactive import holomap, save_html, title_points
from .static import save_static
from .style import MapFigure, Panel, colour_label, colour_scale, statistic
from ..mask import NotDone, not_done, not_done_note, only_done

__all__ = ["StoreMap", "heat_map", "holoviews_backends", "map_data", "map_figure", "plot", "save_map", "snr_transition",
           "title_points", "transition_curves"]

MAX_PANELS = 24
POINTS = (200, 120)        # points across an axis of a transition line, and of a (delta, gamma) contour grid
EXACT_POINTS = (24, 12)    # the same where theory_law = 1 (the exact law's threshold is costly; cached)
CATEGORICAL = ("T", "weights")  # drawn at equally spaced positions, labelled with their values


def map_data(path: str | Path | Location | xr.Dataset, var: str,
             select: dict | None = None) -> tuple[xr.DataArray, xr.Dataset]:
    """The variable to map (replicate-averaged, ``k`` selected) and the store it came from.

    ``var`` may be a store variable or a comparison variable (read from the store's ``comparison``
    group when present and it states its detection rule, computed on the fly otherwise). The result's
    ``map_statistic`` attr says what is shown, e.g. ``overlap (k=1), mean over 8 replicates``; for a value
    computed from the replicates, ``replicates_not_done`` and ``replicates_total`` say how many of those
    selected were left out as not done. On a store whose theory at its size is not written yet, only a Monte
    Carlo variable is mapped (a store's per-replicate one, or :func:`~rmtsweep.analysis.compare.measured`'s; its
    ``theory`` attr says so); any other is refused.
    """
    ds = open_source(path)
    pending = theory_pending(ds.attrs)
    own = measured(ds) if pending else None
    if own is not None and var not in (mc := monte_carlo(ds) + list(map(str, own.data_vars))):
        require_theory(ds.attrs, store_name(path), f"plot a Monte Carlo variable now ({', '.join(mc)}), {var}")
    per_replicate = False
    if var in ds.data_vars:
        da = ds[var]
        if "replicate" in da.dims:
            per_replicate = True
            da = only_done(da, ds["done"]).mean("replicate").assign_attrs(da.attrs)
    elif own is not None:                                 # the comparison's Monte Carlo side: no theory needed
        da = own[var]
    else:
        try:
            cmp = open_source(path, GROUP) if not isinstance(path, xr.Dataset) else compare(ds)
        except SelectionError:
            cmp = compare(ds)
        if not {"false_alarm", "margin_factor"} & set(cmp.attrs):   # a group written before detection stated its
            cmp = compare(ds)                                        # rule: its detection rates use another test
        elif "reference" not in cmp.attrs and var.split("_")[0] in ("lambda1", "overlap", "limit"):
            cmp = compare(ds)                  # written before the best prediction was the default reference
        elif ("detection_null" not in cmp and "false_alarm" in cmp.attrs and "T" in ds.dims
              and ds.attrs.get("table_centering", "class") == "class" and bool(no_law_cells(ds).any())):
            cmp = compare(ds)                  # written before cells without a law got a Monte Carlo null
        if var not in cmp.data_vars:
            choices = sorted(map(str, set(ds.data_vars) | set(cmp.data_vars)))
            raise SelectionError(f"--var {var!r}: not a variable of {store_name(path)} (valid: {', '.join(choices)})")
        da = cmp[var]
    done = ds["done"]
    for dim, value in (select or {}).items():
        if dim not in da.dims:
            raise SelectionError(f"--select {dim}: not a dimension of {var} (valid: {', '.join(map(str, da.dims))})")
        kind = da[dim].dtype.kind
        cast = float if kind == "f" else int if kind in "iu" else str
        try:
            da = da.sel({dim: cast(value)})
        except (KeyError, ValueError):
            raise SelectionError(f"--select {dim}={value}: not on the axis (valid: "
                                 f"{', '.join(map(str, da[dim].values))})") from None
        if dim in done.dims:
            done = done.sel({dim: cast(value)})
    k = da["k"].item() if "k" in da.coords and da["k"].ndim == 0 else None
    if "k" in da.dims:
        da, k = da.sel(k=1, drop=True), 1
    elif k is None and (var.startswith("lambda1_") or
                        (var.startswith("overlap_") and ds.attrs.get("table_centering", "class") == "class")):
        k = 1                                               # the comparison holds the top eigenpair
    extra = [d for d in da.dims if d not in ALL_AXES]
    if extra:
        raise SelectionError(f"--var {var}: has the non-grid dimension(s) {extra}; pick one value with --select")
    da = da.load()
    da.attrs["map_statistic"] = statistic(var, done, per_replicate, k)
    if da.attrs.get("reference_kind") in SHORT and var.endswith(("_z", "_error")):   # against what
        da.attrs["map_statistic"] = da.attrs["map_statistic"].replace(" theory",
                                                                      " " + SHORT[da.attrs["reference_kind"]])
    if per_replicate or var not in ds.data_vars:                  # a store variable's mean, or the comparison's
        nd = not_done(done)
        da.attrs.update(replicates_not_done=nd.count, replicates_total=nd.total)
    if pending:
        da.attrs.update(theory=PENDING_MARK, caption=f"theory {PENDING_MARK}")
    return da, ds


def snr_transition(ds: xr.Dataset, kind: str, delta, gamma, T, weights, snr=None, d=None) -> np.ndarray:
    """SNR of the population or sample transition at arrays of delta and gamma, one (T, weights).

    :func:`rmtsweep.theory.cell_law.transition_snr`, the function that wrote the store's
    ``theory_snr_population`` / ``theory_snr_sample``, with the store's weight scalars, centering and
    ``theory_law``: at the grid's points it gives the store's values (a large-dimension limit: the
    same at every ``d``).
    """
    sel = {"T": T, "weights": weights}
    alpha, kappa = float(ds["theory_alpha"].sel(sel)), float(ds["theory_kappa"].sel(sel))
    return cell_law.transition_snr(kind, alpha, kappa, delta, gamma, ds.attrs.get("table_centering", "class"),
                                   cell_law.law_at(ds, T, weights))


def _axis_grid(values: np.ndarray, n: int) -> np.ndarray:
    """``n`` points across the axis' range (evenly on its scale), and its grid values (a curve passes
    through the store's points)."""
    space = np.geomspace if axis_scale(values) == "log" else np.linspace
    return np.union1d(space(values.min(), values.max(), n), values)


def transition_curves(ds: xr.Dataset, x: str, y: str, at: dict) -> dict[str, list[np.ndarray]]:
    """Theory transitions in the (x, y) plane at the other axes' values ``at``, as lists of (n, 2) paths.

    Through the store's ``theory_snr_*`` at the grid's values, :func:`snr_transition` between them
    (:data:`EXACT_POINTS` across an axis where ``theory_law = 1``: ~30 ms a point; else :data:`POINTS`).
    """
    out: dict[str, list[np.ndarray]] = {}
    pos = {a: (np.arange(ds.sizes[a]) if a in CATEGORICAL else ds[a].values.astype(float))
           for a in ALL_AXES if a in ds.dims}
    law = cell_law.law_at(ds, at["T"], at["weights"]) if "T" in at and "weights" in at else cell_law.CUBIC
    n_line, n_plane = (POINTS if law == cell_law.CUBIC else EXACT_POINTS)
    for kind in ("population", "sample"):
        if "snr" in (x, y):
            a = y if x == "snr" else x
            if a in ("delta", "gamma"):
                grid = _axis_grid(pos[a], n_line)
                s = snr_transition(ds, kind, **{**at, a: grid})
            else:  # T, weights or d: one point per grid value
                grid = pos[a]
                s = np.array([snr_transition(ds, kind, **{**at, a: v}).item() for v in ds[a].values])
            if grid.size == 1:                  # one row of cells: the transition crosses it from edge to edge
                scale = "linear" if a in CATEGORICAL else axis_scale(grid)
                grid = np.union1d(cell_edges(grid, scale, None if a in CATEGORICAL else LOWER_BOUND.get(a)), grid)
                s = np.repeat(np.ravel(s), grid.size)
            xy = np.column_stack([s, grid] if x == "snr" else [grid, s])
            out[kind] = [xy[np.isfinite(xy).all(axis=1)]]
        elif {x, y} == {"delta", "gamma"}:
            import contourpy
            gx, gy = _axis_grid(pos[x], n_plane), _axis_grid(pos[y], n_plane)
            if min(gx.size, gy.size) < 2:          # a plane one grid value wide holds no contour: none drawn
                out[kind] = []
                continue
            X, Y = np.meshgrid(gx, gy)
            D, G = (X, Y) if x == "delta" else (Y, X)
            field = snr_transition(ds, kind, D, G, at["T"], at["weights"]) - at["snr"]
            # contourpy types every line type at once; the default one (Separate) is a list of arrays
            out[kind] = list(contourpy.contour_generator(gx, gy, field).lines(0.0))  # type: ignore[arg-type]
    return out


@contextlib.contextmanager
def holoviews_backends():
    """Holoviews' bokeh plotting backend loaded and current; the caller's current backend restored.

    Loads the backends by import (what ``hv.extension`` does in a script, without notebook output),
    so a notebook's own holoviews, panel and matplotlib settings are left as they were.
    """
    import holoviews as hv

    before = hv.Store.current_backend              # read first: importing a backend may make it current
    import holoviews.plotting.bokeh  # registers the bokeh backend

    hv.Store.set_current_backend("bokeh")
    try:
        yield
    finally:
        if before in hv.Store.renderers:           # a backend the caller loaded; holoviews' default before any
            hv.Store.set_current_backend(before)   # is loaded names matplotlib, whose switch hvplot cannot handle


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, (float, np.floating)) else str(value)


def _label(ds: xr.Dataset, axis: str) -> str:
    attrs = ds[axis].attrs
    units = attrs.get("units", "1")
    name = attrs.get("long_name", axis)
    return name if units in ("1", "") else f"{name} ({units})"


def map_figure(da: xr.DataArray, ds: xr.Dataset, x: str, y: str,
               clim: tuple[float, float] | None = None) -> MapFigure:
    """What a map of ``da`` over ``(x, y)`` draws: one panel per value of the other axes, one colour scale.

    Axes of one value (and values fixed by ``--select``) go into the title rather than each panel's.
    """
    for axis in (x, y):
        if axis not in da.dims:
            raise SelectionError(f"axis {axis!r}: not a dimension of {da.name} (valid: {', '.join(map(str, da.dims))})")
    if x == y:
        raise SelectionError(f"--x and --y are both {x!r}; choose two different axes")
    name = str(da.name)
    rest = [str(d) for d in da.dims if d not in (x, y)]
    ticks = {a: list(enumerate(str(v) for v in da[a].values)) for a in (x, y) if a in CATEGORICAL}
    drawn = da.assign_coords({a: np.arange(da.sizes[a]) for a in ticks}).sortby([a for a in (x, y) if a not in ticks])
    scales: dict[str, AxisScale] = {a: "linear" if a in ticks else axis_scale(da[a].values) for a in (x, y)}
    edges = {a: cell_edges(drawn[a].values, scales[a], None if a in ticks else LOWER_BOUND.get(a)) for a in (x, y)}
    fixed = {a: da[a].item() for a in ALL_AXES if a in da.coords and da[a].ndim == 0}
    fixed.update({d: da[d].values[0] for d in rest if da.sizes[d] == 1})
    fixed = {a: fixed[a] for a in ALL_AXES if a in fixed}
    varying = [d for d in rest if da.sizes[d] > 1]
    # a store whose theory is pending: its map holds the Monte Carlo alone
    transitions = not ticks and ("snr" in (x, y) or {x, y} == {"delta", "gamma"}) and not theory_pending(ds.attrs)
    head = da.attrs.get("map_statistic", name)
    title = head + ("; " + ", ".join(f"{a}={_fmt(v)}" for a, v in fixed.items()) if fixed else "")
    panels = []
    for key in itertools.product(*(da[d].values for d in rest)):
        at = dict(zip(rest, key, strict=True))
        full = {**{a: ds[a].values[0] for a in ALL_AXES if a in ds.dims}, **fixed, **at}
        panels.append(Panel(tuple(str(k) for k in key) or ("all",), ", ".join(f"{d}={_fmt(at[d])}" for d in varying),
                            drawn.sel(at).transpose(y, x), transition_curves(ds, x, y, full) if transitions else {}))
    return MapFigure(name, x, y, title, tuple(panels), colour_scale(da, clim), {a: _label(ds, a) for a in (x, y)},
                     ticks, tuple(rest), transitions, scales, edges, colour_label(da), str(da.attrs.get("caption", "")))


def heat_map(da: xr.DataArray, ds: xr.Dataset, x: str, y: str, clim: tuple[float, float] | None = None):
    """A ``holoviews.HoloMap`` of heat maps (one per value of the remaining axes) with transition curves."""
    return StoreMap(map_figure(da, ds, x, y, clim), str(da.name), ds, NotDone(0, 0)).hv


def save_map(fig: MapFigure, out: Path, stem: str, widgets: bool | None = None, max_panels: int = MAX_PANELS,
             formats: Iterable[str] = DEFAULT_FORMATS) -> list[Path]:
    """Write ``<stem>.html`` (inline resources: works offline) and static ``<stem>[-p<i>].<fmt>`` files.

    ``widgets=None`` chooses widgets for the HTML when there are more than ``max_panels // 2``
    panels; static files always show facets, every panel, on pages of at most ``max_panels``.
    Returns the paths written, in the order of ``formats``.
    """
    make_directory(out)
    if widgets is None:
        widgets = len(fig.panels) > max_panels // 2
    paths: list[Path] = []
    for fmt in parse_formats(formats) or DEFAULT_FORMATS:
        if fmt == "html":
            with holoviews_backends():
                save_html(fig, out / f"{stem}.html", widgets)
            paths.append(out / f"{stem}.html")
        else:
            paths += save_static(fig, out, stem, (fmt,), max_panels)
    return paths


class StoreMap:
    """A map of one store variable: a notebook shows it; :meth:`save` writes its files.

    :func:`plot` (``rmtsweep.plot``, ``ds.rmt.plot``) returns one. ``hv`` is the ``holoviews.HoloMap`` (one heat
    map per value of the other axes, with the transition lines) for anything holoviews does next. ``attrs``
    holds ``theory`` (:data:`rmtsweep.store.pending.PENDING_MARK`) for a map of a theory-pending store.
    """

    def __init__(self, fig: MapFigure, stem: str, source: str | Path | Location | xr.Dataset, nd: NotDone,
                 attrs: dict | None = None) -> None:
        self.figure, self.stem, self._source, self._not_done = fig, stem, source, nd
        self.attrs = dict(attrs or {})

    @property
    def hv(self):
        """The map as a ``holoviews.HoloMap`` (built on each access: holoviews objects are mutable)."""
        import holoviews as hv

        with holoviews_backends():          # hvplot's import picks a backend too: import it inside
            import hvplot.xarray  # noqa: F401  (registers .hvplot)
            return holomap(hv, self.figure)

    def _repr_mimebundle_(self, include=None, exclude=None):
        hmap = self.hv
        with holoviews_backends():          # rendered by bokeh whatever the notebook's current backend
            return hmap._repr_mimebundle_(include, exclude)

    def __repr__(self) -> str:
        return f"<StoreMap {self.figure.title!r}: {len(self.figure.panels)} panel(s); .save(out) writes its files>"

    def save(self, out: str | Path = "maps", widgets: bool | None = None, *,
             formats: Iterable[str] | str | None = None, max_panels: int = MAX_PANELS,
             notes: Callable[[str], None] | None = None) -> tuple[Path, ...]:
        """Write the map's files; returns the paths written, ``(html, png)`` by default.

        Parameters
        ----------
        out
            A directory (created if missing), or a file such as ``fig.pdf`` (its suffix is the format).
        widgets
            HTML with widgets (True) or facets (False) over the other axes; None: widgets beyond
            ``max_panels // 2`` panels.
        formats
            Any of ``html``, ``png``, ``svg``, ``pdf`` (a list or a comma-separated string); default
            ``html`` and ``png``.
        max_panels
            Panels per static page: more panels are split over ``<stem>-p1.png``, ``<stem>-p2.png``, ...
        notes
            Called with a line for what the user should know (pages, transitions not drawn).
        """
        directory, stem, fmts = output_target(out, self.stem, formats)
        fig = self.figure
        paths = save_map(fig, directory, stem, widgets, max_panels, fmts)
        say = notes or (lambda line: None)
        if self._not_done:
            say(not_done_note(self._source, self._not_done, "the map counts only the done ones"))
        static = [p for p in paths if p.suffix != ".html"]
        pages = len(static) // max(1, len([f for f in fmts if f != "html"]))
        if pages > 1:
            say(f"{len(fig.panels)} panels: each static format on {pages} pages of up to {max_panels} panels, "
                f"whole groups of facets a page ({static[0].name} ... {static[pages - 1].name})")
        if "theory" in self.attrs:
            say(pending_note(store_name(self._source), "the map is drawn"))
        elif not fig.transitions and "snr" in (fig.x, fig.y):
            cat = ", ".join(a for a in (fig.x, fig.y) if a in CATEGORICAL)
            say(f"transitions not drawn: {cat} is categorical (see theory_snr_sample / theory_snr_population)")
        return tuple(paths)


def plot(path: str | Path | Location | xr.Dataset, x: str, y: str, var: str, select: dict | None = None,
         clim: tuple[float, float] | str | None = None, *, storage_options: dict | None = None) -> StoreMap:
    """The map of ``var`` over the axes ``x`` and ``y`` of a store: a notebook shows it, ``.save(out)`` writes it.

    ``rmtsweep plot`` and ``ds.rmt.plot`` are this function.

    Parameters
    ----------
    path
        A store path or an opened store dataset.
    x, y
        Grid axes across and up.
    var
        A store or comparison variable.
    select
        ``{dim: value}`` fixed first (strings are cast to the axis' type); ``k`` picks the eigenpair.
    clim
        ``(lo, hi)`` or ``"LO,HI"``: colour limits instead of the chosen ones (not for categorical variables).
    storage_options
        For a store at a URL: the options of its filesystem (``endpoint_url``, credentials, ...).

    Returns
    -------
    StoreMap
        Its :meth:`StoreMap.save` writes one HTML file and every static page, ``(html, png)`` by default.

    Examples
    --------
    >>> rmtsweep.plot("store/demo.zarr", "snr", "gamma", "overlap").save("maps/")  # doctest: +SKIP
    >>> m = rmtsweep.plot("store/demo.zarr", "snr", "gamma", "overlap", clim=(0, 1))  # doctest: +SKIP
    >>> m.save("paper/overlap.pdf")  # doctest: +SKIP
    """
    for name, axis in (("--x", x), ("--y", y)):
        if axis not in ALL_AXES:
            raise SelectionError(f"{name} {axis!r}: not a grid axis (valid: {', '.join(AXES)}; d where it is "
                                 f"a grid axis)")
    if not isinstance(path, xr.Dataset):
        path = with_options(path, storage_options)
    name = path.attrs.get("sweep_name", "store") if isinstance(path, xr.Dataset) else Path(str(path)).stem
    da, ds = map_data(path, var, select)
    fig = map_figure(da.rename(var), ds, x, y, parse_clim(clim))
    nd = NotDone(da.attrs.get("replicates_not_done", 0), da.attrs.get("replicates_total", 0))
    return StoreMap(fig, f"{name}-{var}-{x}-{y}", path, nd, {k: da.attrs[k] for k in ("theory",) if k in da.attrs})


def make_map(*args: Any, **kwargs: Any) -> StoreMap:
    """Deprecated: :func:`plot`, under the name it has everywhere."""
    warnings.warn("make_map is deprecated; use rmtsweep.plot", DeprecationWarning,
                  stacklevel=2)
    return plot(*args, **kwargs)


def plot_map(path: str | Path | Location | xr.Dataset, x: str, y: str, var: str, out: str | Path,
             widgets: bool | None = None, select: dict | None = None, *,
             clim: tuple[float, float] | str | None = None, formats: Iterable[str] | str | None = None,
             max_panels: int = MAX_PANELS, notes: Callable[[str], None] | None = None,
             storage_options: dict | None = None) -> tuple[Path, ...]:
    """Deprecated: ``plot(path, x, y, var, select, clim).save(out, widgets, formats=..., ...)``."""
    warnings.warn("rmtsweep.plot_map is deprecated; use rmtsweep.plot(...).save(out)", DeprecationWarning,
                  stacklevel=2)
    return plot(path, x, y, var, select, clim, storage_options=storage_options).save(
        out, widgets, formats=formats, max_panels=max_panels, notes=notes)
