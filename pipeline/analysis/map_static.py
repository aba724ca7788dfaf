"""Static maps (PNG, SVG, PDF) through matplotlib: every panel, split into pages when there are many.

A page holds at most ``max_panels`` panels (pages are balanced: 39 panels at 24 per page make two
pages of 20 and 19), in up to :data:`COLUMNS` columns that share their axes, under one colour bar
(or, for a categorical variable, one legend of its categories) and one legend of the transitions,
both outside the panels. The layout is matplotlib's constrained layout, so tick labels of a
categorical axis never run into a neighbour. Figures are built on an explicit Agg ``Figure`` (no
pyplot), so a notebook's matplotlib backend is left alone.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .map_style import MapFigure

__all__ = ["COLUMNS", "TRANSITIONS", "page_ranges", "page_suffixes", "static_pages", "save_static"]

COLUMNS = 4
TRANSITIONS = (("population", "dashed"), ("sample", "solid"))
PANEL_INCHES = (3.0, 2.5)
DPI = 100


def page_ranges(n: int, max_panels: int) -> list[range]:
    """Panel indices of each page: as few pages as ``max_panels`` allows, balanced in size."""
    pages = max(1, math.ceil(n / max(1, max_panels)))
    per = math.ceil(n / pages) if n else 1
    return [range(i, min(i + per, n)) for i in range(0, max(n, 1), per)]


def page_suffixes(pages: int) -> list[str]:
    """``["" ]`` for one page, else ``["-p1", "-p2", ...]`` (the file name's page mark)."""
    return [""] if pages == 1 else [f"-p{i + 1}" for i in range(pages)]


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
    mesh = ax.pcolormesh(da[fig.x].values, da[fig.y].values, np.ma.masked_invalid(da.values),
                         shading="nearest", cmap=cmap, norm=norm)
    xlim, ylim = ax.get_xlim(), ax.get_ylim()
    for kind, style in TRANSITIONS:
        for path in panel.curves.get(kind, []):      # a pale underlay keeps black lines visible on dark colours
            ax.plot(path[:, 0], path[:, 1], color="white", alpha=0.6, linewidth=3.0, solid_capstyle="round")
            ax.plot(path[:, 0], path[:, 1], color="black", linestyle=style, linewidth=1.4)
    ax.set_xlim(xlim)
    ax.set_ylim(ylim)                     # curves that leave the grid do not stretch the axes
    for axis, set_ticks in ((fig.x, ax.set_xticks), (fig.y, ax.set_yticks)):
        if axis in fig.ticks:
            pos, labels = zip(*fig.ticks[axis])
            set_ticks(pos, labels)
    if panel.title:
        ax.set_title(panel.title, fontsize=9)
    return mesh


def static_pages(fig: MapFigure, max_panels: int) -> list:
    """One matplotlib ``Figure`` per page of ``fig``'s panels (see the module docstring)."""
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cmap, norm = _norm(fig)
    ranges = page_ranges(len(fig.panels), max_panels)
    out = []
    for page, idx in enumerate(ranges):
        n = len(idx)
        rows = math.ceil(n / COLUMNS)
        cols = math.ceil(n / rows)
        w, h = PANEL_INCHES
        figure = Figure(figsize=(w * cols + 1.6, h * rows + 1.2), layout="constrained", dpi=DPI)
        axes = figure.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
        mesh = None
        for i, ax in enumerate(axes.flat):
            if i >= n:
                ax.remove()
                continue
            mesh = _draw_panel(ax, fig, fig.panels[idx[i]], cmap, norm)
            r, c = divmod(i, cols)
            below = i + cols < n                      # a panel under this one carries the x labels
            ax.tick_params(labelbottom=not below, labelleft=c == 0)
            if not below:
                ax.set_xlabel(fig.labels[fig.x])
            if c == 0:
                ax.set_ylabel(fig.labels[fig.y])
        used = [ax for i, ax in enumerate(axes.flat) if i < n]
        if fig.scale.kind == "categorical":
            handles = [Patch(facecolor=c, edgecolor="0.3", label=name)
                       for c, (_, name) in zip(fig.scale.colours(), fig.scale.categories)]
            figure.legend(handles=handles, title=fig.var, loc="outside right upper", fontsize=8, title_fontsize=9)
        else:
            bar = figure.colorbar(mesh, ax=used, extend=fig.scale.extend, label=fig.var,
                                  shrink=min(1.0, 0.5 + 0.25 * rows), aspect=20 * min(rows, 2))
            if fig.scale.kind == "log":                 # label 1-2-5 steps, not only the decades
                from matplotlib.ticker import LogLocator, StrMethodFormatter
                bar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                bar.ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
                bar.ax.yaxis.set_minor_formatter(StrMethodFormatter(""))
        if fig.transitions:
            lines = [Line2D([], [], color="black", linestyle=style, linewidth=1.4, label=f"{kind} transition")
                     for kind, style in TRANSITIONS]
            figure.legend(handles=lines, loc="outside lower center", ncols=2, fontsize=8, frameon=False)
        title = fig.title if len(ranges) == 1 else (f"{fig.title} (page {page + 1} of {len(ranges)}: panels "
                                                    f"{idx.start + 1}-{idx.stop} of {len(fig.panels)})")
        figure.suptitle(title, fontsize=10)
        out.append(figure)
    return out


def save_static(fig: MapFigure, directory: Path, stem: str, formats: tuple[str, ...], max_panels: int
                ) -> list[Path]:
    """Write each page of ``fig`` as ``<stem>[-p<i>].<format>`` in ``directory``; return the paths."""
    figures = static_pages(fig, max_panels)
    paths = []
    for fmt in formats:
        for figure, mark in zip(figures, page_suffixes(len(figures))):
            path = directory / f"{stem}{mark}.{fmt}"
            figure.savefig(path, format=fmt, dpi=DPI)
            paths.append(path)
    return paths
