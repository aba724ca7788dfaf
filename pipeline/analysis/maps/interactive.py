"""The interactive HTML map (bokeh through holoviews): one overlay per panel, every resource inline.

Each panel is a ``quadmesh`` whose quads take the figure's cell edges (a hook moves them: holoviews
draws linear midpoints), on log axes where the grid is geometric, with the transitions drawn over it
and a legend naming only those drawn. Facets are laid out :data:`HTML_COLUMNS` a row under one title,
or shown one at a time through widgets. :func:`title_points` fits a panel's title to its width.
"""

from __future__ import annotations

import html
import math
import sys
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import numpy as np

from .static import TRANSITIONS, drawn_transitions
from .style import MapFigure, Panel

__all__ = ["FRAME", "HTML_COLUMNS", "holomap", "hv_panel", "save_html", "title_points"]

HTML_COLUMNS = 3
FRAME = {1: (520, 360), 2: (420, 300), 3: (300, 230)}    # (width, height) of a panel's data area, px
# the faceted HTML fits a 1400 px window: 3 x (300 + ~80 y axis) + ~120 colour bar on the last column


def _joined(paths: list[np.ndarray]) -> np.ndarray:
    """Paths as one (n, 2) array, NaN rows between them (one legend entry, the line breaks at NaN)."""
    parts = [np.vstack([p, np.full((1, 2), np.nan)]) for p in paths]
    return np.vstack(parts)[:-1] if parts else np.full((1, 2), np.nan)   # not empty: bokeh hides empty lines' legend


def title_points(text: str, width: float, sizes: tuple[int, ...] = (10, 9, 8, 7)) -> int:
    """The largest title font size (pt) at which ``text`` fits ``width`` px in bold DejaVu Sans.

    DejaVu Sans is what the browser falls back to here for bokeh's Helvetica, and is wider than it.
    """
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    for pt in sizes:
        font = FontProperties(family="DejaVu Sans", weight="bold", size=pt * 96 / 72)     # CSS px
        if TextToPath().get_text_width_height_descent(text, font, ismath=False)[0] <= width:
            return pt
    return sizes[-1]


def _wrapped(text: str, length: float) -> str:
    """``text`` in lines that fit ``length`` px at 10 pt (about 7 px a character)."""
    import textwrap
    return textwrap.fill(text, max(20, int(length / 7)))


def _edge_hook(fig: MapFigure) -> Callable:
    """A holoviews hook that puts ``fig.edges`` into the rendered cells (holoviews draws linear midpoints).

    The element keeps the grid's values (hover shows them); only the quads' sides move, cell by cell.
    """
    def hook(plot, element) -> None:
        source = plot.handles.get("source")
        if source is None or "left" not in source.data:
            return
        data = dict(source.data)
        for sides, axis in ((("left", "right"), fig.x), (("bottom", "top"), fig.y)):
            centres = np.sort(np.unique(element.dimension_values(axis, expanded=False).astype(float)))
            default = _linear_edges(centres)
            for side in sides:
                drawn = np.asarray(data[side], dtype=float)
                data[side] = fig.edges[axis][np.abs(drawn[:, None] - default[None, :]).argmin(axis=1)]
        source.data = data
    return hook


def _linear_edges(centres: np.ndarray) -> np.ndarray:
    """Holoviews' own cell edges of a regular quadmesh: linear midpoints, half a step beyond the ends."""
    half = np.diff(centres) / 2 if centres.size > 1 else np.array([0.5])
    return np.concatenate([[centres[0] - half[0]], centres[:-1] + half[: centres.size - 1], [centres[-1] + half[-1]]])


def hv_panel(hv, fig: MapFigure, panel: Panel, frame: tuple[int, int], kinds: list[str]):
    """One panel of ``fig`` as a holoviews overlay: its quadmesh in a ``frame`` of pixels, and the transitions of
    ``kinds`` drawn over it (the live page draws one panel at a time)."""
    s = fig.scale
    pt = title_points(panel.title, frame[0])
    opts = dict(cmap=s.cmap, clim=(s.lo, s.hi), colorbar=True, frame_width=frame[0], frame_height=frame[1],
                title=panel.title, clabel=_wrapped(fig.clabel, frame[1]), xlabel=fig.labels[fig.x],
                ylabel=fig.labels[fig.y],
                logz=s.kind == "log", fontsize={"title": f"{pt}pt", "labels": "10pt"})
    for a, axis in (("x", fig.x), ("y", fig.y)):
        opts[f"log{a}"] = fig.scales[axis] == "log"
        if ticks := fig.axis_ticks(axis, panel.data[axis].values):
            opts[f"{a}ticks"] = ticks
    opts.update(xlim=tuple(fig.edges[fig.x][[0, -1]]), ylim=tuple(fig.edges[fig.y][[0, -1]]))
    qm = panel.data.hvplot.quadmesh(x=fig.x, y=fig.y, **opts).opts(hooks=[_edge_hook(fig)])
    if s.kind == "log":                                  # 1-2-5 steps, not only the decades
        from bokeh.models import FixedTicker
        steps = [m * 10.0 ** e for e in range(math.floor(math.log10(s.lo)), math.ceil(math.log10(s.hi)) + 1)
                 for m in (1, 2, 5) if s.lo <= m * 10.0 ** e <= s.hi]
        qm = qm.opts(colorbar_opts={"ticker": FixedTicker(ticks=steps),
                                    "major_label_overrides": {t: f"{t:g}" for t in steps}})
    if s.kind == "categorical":
        from bokeh.models import FixedTicker
        values = [v for v, _ in s.categories]
        bounds = [values[0] - 0.5] + [(a + b) / 2 for a, b in pairwise(values)] + [values[-1] + 0.5]
        qm = qm.opts(cmap=s.colours(), color_levels=bounds, clim=(bounds[0], bounds[-1]),
                     colorbar_opts={"ticker": FixedTicker(ticks=values),
                                    "major_label_overrides": {v: n for v, n in s.categories}})
    layers = [qm]
    if fig.transitions:
        for kind, style in ((k, s) for k, s in TRANSITIONS if k in kinds):     # a legend entry only for a line drawn
            xy = _joined(panel.curves.get(kind, []))
            layers.append(hv.Curve(xy, fig.x, fig.y).opts(color="white", line_width=3.5, alpha=0.5,
                                                                          line_join="round"))
            layers.append(hv.Curve(xy, fig.x, fig.y, label=f"{kind} transition").opts(
                color="black", line_dash=style, line_width=2, line_join="round"))
    return hv.Overlay(layers).opts(legend_position="top", legend_cols=1, legend_opts={
        "label_text_font_size": "8pt", "glyph_width": 30, "glyph_height": 12, "spacing": 0, "padding": 4,
        "margin": 2, "label_height": 12})


def holomap(hv, fig: MapFigure, frame: tuple[int, int] = FRAME[1], per_panel: bool = False):
    """One overlay per panel; their legends name the transitions drawn in the panel (``per_panel``: facets
    shown side by side) or in any panel (frames of one widget share their layers)."""
    kinds = drawn_transitions(fig.panels)
    panels = {p.key: hv_panel(hv, fig, p, frame, drawn_transitions([p]) if per_panel else kinds) for p in fig.panels}
    return hv.HoloMap(panels, kdims=list(fig.facets) or ["panel"], sort=False)      # facets in the sweep's order


def save_html(fig: MapFigure, path: Path, widgets: bool) -> None:
    """Write ``fig`` to the self-contained HTML file ``path``: one widget over the panels (``widgets``, with more
    than one panel), else the panels laid out :data:`HTML_COLUMNS` a row."""
    import holoviews as hv
    import hvplot.xarray  # noqa: F401
    from bokeh.embed import file_html
    from bokeh.resources import INLINE

    n = len(fig.panels)
    if widgets and n > 1:
        import panel as pn
        with pn.config.set(inline=True):
            heading = pn.pane.HTML(f"<h3>{html.escape(fig.title)}</h3>")      # Markdown would link a CDN css
            parts = [heading, pn.panel(holomap(hv, fig))]
            if fig.caption:
                parts.append(pn.pane.HTML(f"<p><i>{html.escape(fig.caption)}</i></p>"))
            page = pn.Column(*parts)
            # panel's embedding bar (tqdm on stdout) only where a person watches: a log gets no carriage returns
            page.save(str(path), embed=True, resources=INLINE, title=path.stem, progress=sys.stdout.isatty())
        return
    rows = math.ceil(n / HTML_COLUMNS)
    cols = math.ceil(n / rows)
    frames = list(holomap(hv, fig, FRAME[cols], per_panel=True).values())
    for i, frame in enumerate(frames):                 # one colour bar per row (the scale is shared), at the
        if i % cols != cols - 1:                       # right: in the last column, which the first row fills
            frames[i] = frame.opts(hv.opts.QuadMesh(colorbar=False), clone=True)
    layout = hv.Layout(frames).cols(cols).opts(title=fig.title, fontsize={"title": "12pt"})
    document = file_html(hv.render(layout, backend="bokeh"), INLINE, path.stem)
    if fig.caption:                                    # one line under the maps: what a dark cell means
        document = document.replace("</body>", f"<p><i>{html.escape(fig.caption)}</i></p>\n</body>", 1)
    path.write_text(document)
