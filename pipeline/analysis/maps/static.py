"""Static maps (PNG, SVG, PDF) through matplotlib: every panel, split into pages when there are many.

A page holds at most ``max_panels`` panels, in up to :data:`COLUMNS` columns that share their axes,
laid out along the facets (:mod:`rmtsweep.analysis.maps.pages`: a row holds whole groups of the
innermost facet, a page whole groups of the outer ones, and its title says which), under one colour bar
(or, for a categorical variable, one legend of its categories) and one legend of the transitions,
both outside the panels. The layout is matplotlib's constrained layout, so tick labels of a
categorical axis never run into a neighbour; titles are fitted to their panel or page (smaller, or
on more lines: :func:`rmtsweep.analysis.maps.text.fit_text`), so none is clipped or overlaps. Figures are built on an
explicit Agg ``Figure`` (no pyplot), so a notebook's matplotlib backend is left alone.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Literal

import numpy as np

from .pages import COLUMNS, page_layout, page_suffixes
from .style import MapFigure
from .text import fit_text

__all__ = ["COLUMNS", "TRANSITIONS", "drawn_transitions", "page_suffixes", "static_pages", "save_static"]

TRANSITIONS: tuple[tuple[str, Literal["dashed", "solid"]], ...] = (("population", "dashed"), ("sample", "solid"))
PANEL_INCHES = (3.0, 2.5)
DPI = 100


def drawn_transitions(panels) -> list[str]:
    """The transitions (``population``, ``sample``) with a line in at least one of ``panels``: the legend's entries."""
    panels = list(panels)
    return [kind for kind, _ in TRANSITIONS if any(len(p) for panel in panels for p in panel.curves.get(kind, []))]


def _norm(fig: MapFigure):
    from matplotlib.colors import BoundaryNorm, ListedColormap, LogNorm, Normalize
    from matplotlib import colormaps

    s = fig.scale
    if s.kind == "categorical":
        values = np.array([v for v, _ in s.categories], dtype=float)
        mids = (values[1:] + values[:-1]) / 2
        bounds = np.concatenate([[values[0] - 0.5], mids, [values[-1] + 0.5]])
        return ListedColormap(s.colours()), BoundaryNorm(bounds, len(values))
    norm = LogNorm(s.lo, s.hi) if s.kind == "log" else Normalize(s.lo, s.hi)
    return colormaps[s.cmap], norm


def _draw_panel(ax, fig: MapFigure, panel, cmap, norm):
    da = panel.data
    mesh = ax.pcolormesh(fig.edges[fig.x], fig.edges[fig.y], np.ma.masked_invalid(da.values), shading="flat",
                         cmap=cmap, norm=norm)
    for kind, style in TRANSITIONS:
        for path in panel.curves.get(kind, []):      # a pale underlay keeps black lines visible on dark colours
            ax.plot(path[:, 0], path[:, 1], color="white", alpha=0.6, linewidth=3.0, solid_capstyle="round")
            ax.plot(path[:, 0], path[:, 1], color="black", linestyle=style, linewidth=1.4)
    for axis, set_scale, set_ticks in ((fig.x, ax.set_xscale, ax.set_xticks), (fig.y, ax.set_yscale, ax.set_yticks)):
        if fig.scales[axis] == "log":                 # base 2, ticks at the grid's values
            set_scale("log", base=2)
            set_ticks([], minor=True)
        if ticks := fig.axis_ticks(axis, da[axis].values):
            pos, labels = zip(*ticks, strict=True)
            set_ticks(pos, labels)
    ax.set_xlim(fig.edges[fig.x][[0, -1]])            # the cells, whole; curves that leave them do not stretch
    ax.set_ylim(fig.edges[fig.y][[0, -1]])
    if panel.title:
        text, size = fit_text(panel.title, PANEL_INCHES[0] * DPI * 0.95)
        ax.set_title(text, fontsize=size)
    return mesh


def _page_facets(fig: MapFigure, idx: range) -> str:
    """Which values of the facets a page shows, where it shows only some: ``delta=0.25, 0.5; panels 1-18 of 27``."""
    parts = []
    for i, facet in enumerate(fig.facets):
        every = list(dict.fromkeys(p.key[i] for p in fig.panels))
        here = list(dict.fromkeys(fig.panels[j].key[i] for j in idx))
        if len(here) < len(every):
            parts.append(f"{facet}={', '.join(here)}")
    return "; ".join(parts + [f"panels {idx.start + 1}-{idx.stop} of {len(fig.panels)}"])


def static_pages(fig: MapFigure, max_panels: int) -> list:
    """One matplotlib ``Figure`` per page of ``fig``'s panels (see the module docstring)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cmap, norm = _norm(fig)
    sizes = [len({p.key[i] for p in fig.panels}) for i in range(len(fig.facets))]
    layout = page_layout(sizes, max_panels)
    ranges = layout.pages
    out = []
    for page, idx in enumerate(ranges):
        n = len(idx)
        rows, cols = layout.rows(n), layout.columns
        slots = [layout.slot(i) for i in range(n)]
        w, h = PANEL_INCHES
        figure = Figure(figsize=(w * cols + 1.6, h * rows + 1.2), layout="constrained", dpi=DPI)
        grid = figure.subplots(rows, cols, squeeze=False, sharex=True, sharey=True).flat
        for k, ax in enumerate(grid):
            if k not in slots:
                ax.remove()
        axes = [grid[k] for k in slots]
        mesh = None
        for i, ax in enumerate(axes):
            mesh = _draw_panel(ax, fig, fig.panels[idx[i]], cmap, norm)
            c = slots[i] % cols
            below = slots[i] + cols in slots           # a panel under this one carries the x labels
            ax.tick_params(labelbottom=not below, labelleft=c == 0)
            if not below:
                ax.set_xlabel(fig.labels[fig.x])
            if c == 0:
                ax.set_ylabel(fig.labels[fig.y])
        used = axes
        if fig.scale.kind == "categorical":
            handles = [Patch(facecolor=c, edgecolor="0.3", label=name)
                       for c, (_, name) in zip(fig.scale.colours(), fig.scale.categories, strict=True)]
            figure.legend(handles=handles, title=textwrap.fill(fig.clabel, 28), loc="outside right upper", fontsize=8,
                          title_fontsize=9)
        else:
            shrink = min(1.0, 0.5 + 0.25 * rows)
            label = textwrap.fill(fig.clabel, max(20, int(PANEL_INCHES[1] * rows * shrink * DPI / 7)))
            assert mesh is not None                       # a page has at least one panel
            bar = figure.colorbar(mesh, ax=used, extend=fig.scale.extend, label=label, shrink=shrink,
                                  aspect=20 * min(rows, 2))
            if fig.scale.kind == "log":                 # label 1-2-5 steps, not only the decades
                from matplotlib.ticker import LogLocator, StrMethodFormatter
                bar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                bar.ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
                bar.ax.yaxis.set_minor_formatter(StrMethodFormatter(""))
        kinds = drawn_transitions(fig.panels[i] for i in idx)
        if kinds:                                     # a legend entry only for a line drawn on the page
            lines = [Line2D([], [], color="black", linestyle=style, linewidth=1.4, label=f"{kind} transition")
                     for kind, style in TRANSITIONS if kind in kinds]
            figure.legend(handles=lines, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
        if fig.caption:                               # under everything: what a dark cell means
            text, size = fit_text(fig.caption, 0.96 * (w * cols + 1.6) * DPI, (8, 7, 6))
            figure.supxlabel(text, fontsize=size, style="italic")
        title = fig.title if len(ranges) == 1 else (f"{fig.title} (page {page + 1} of {len(ranges)}: "
                                                    f"{_page_facets(fig, idx)})")
        text, size = fit_text(title, 0.96 * (w * cols + 1.6) * DPI, (10, 9, 8))
        figure.suptitle(text, fontsize=size)
        out.append(figure)
    return out


def save_static(fig: MapFigure, directory: Path, stem: str, formats: tuple[str, ...], max_panels: int
                ) -> list[Path]:
    """Write each page of ``fig`` as ``<stem>[-p<i>].<format>`` in ``directory``; return the paths."""
    figures = static_pages(fig, max_panels)
    paths = []
    for fmt in formats:
        for figure, mark in zip(figures, page_suffixes(len(figures)), strict=True):
            path = directory / f"{stem}{mark}.{fmt}"
            figure.savefig(path, format=fmt, dpi=DPI)
            paths.append(path)
    return paths
