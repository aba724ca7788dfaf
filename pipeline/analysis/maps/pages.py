"""How a map's panels are laid out on static pages: columns, rows and page breaks that follow the facets.

Panels come in the order of the facets (the first facet outermost). A row holds whole groups of the
innermost facet (``weights=mean, optimal, harmonic`` side by side), and as many groups as fit
:data:`COLUMNS` when they tile the next facet; an innermost facet longer than a row wraps, and its
next group starts a new row. A page holds whole blocks of facets (all the panels of one ``delta``,
say), as many as ``max_panels`` allows, balanced over the pages; a group larger than a page is
spread over pages of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["COLUMNS", "PageLayout", "page_layout", "page_suffixes"]

COLUMNS = 4


@dataclass(frozen=True)
class PageLayout:
    """Columns of every page, the panels of each page, and the grid slot of a panel on its page.

    ``unit`` panels (a group of the innermost facet, or a row) start a new row; a unit longer than
    ``columns`` takes ``ceil(unit / columns)`` rows.
    """

    columns: int
    unit: int
    pages: tuple[range, ...]

    def slot(self, i: int) -> int:
        """Grid position (row-major, ``columns`` wide) of the ``i``-th panel of a page."""
        rows_per_unit = math.ceil(self.unit / self.columns)
        return (i // self.unit) * rows_per_unit * self.columns + i % self.unit

    def rows(self, n: int) -> int:
        """Rows of a page of ``n`` panels."""
        return self.slot(n - 1) // self.columns + 1 if n else 1


def _blocks(sizes: list[int], unit: int, max_panels: int) -> int:
    """The largest block of trailing facets (a multiple of ``unit``) that fits a page, else ``unit``."""
    block, fits = 1, unit
    for size in reversed(sizes):
        block *= size
        if block % unit == 0 and block <= max_panels:
            fits = block
    return fits


def page_layout(sizes: list[int], max_panels: int) -> PageLayout:
    """The layout of ``prod(sizes)`` panels, ``sizes`` the facets' lengths (outermost first).

    Examples
    --------
    >>> layout = page_layout([3, 3, 3], 24)              # delta x T x weights
    >>> layout.columns, [len(p) for p in layout.pages]
    (3, [18, 9])
    >>> page_layout([4, 2], 24).columns                 # two weights a group, two groups a row
    4
    """
    n = math.prod(sizes)
    varying = [s for s in sizes if s > 1]
    max_panels = max(1, max_panels)
    if not varying:
        return PageLayout(1, 1, (range(n),))
    inner = varying[-1]
    if inner > max_panels:           # a group larger than a page: each group on pages of its own, balanced
        chunk = math.ceil(inner / math.ceil(inner / max_panels))
        columns = math.ceil(chunk / math.ceil(chunk / COLUMNS))
        return PageLayout(columns, columns, tuple(range(g + j, min(g + j + chunk, g + inner))
                                                  for g in range(0, n, inner) for j in range(0, inner, chunk)))
    if inner <= COLUMNS:
        outer = varying[-2] if len(varying) > 1 else 1
        m = max(d for d in range(1, outer + 1) if outer % d == 0 and inner * d <= min(COLUMNS, max_panels))
        columns = unit = inner * m
    else:
        columns, unit = math.ceil(inner / math.ceil(inner / COLUMNS)), inner
    block = _blocks(varying, unit, max_panels)
    per_page = max(1, max_panels // block)
    n_blocks = math.ceil(n / block)
    pages = math.ceil(n_blocks / per_page)
    per = math.ceil(n_blocks / pages) * block
    return PageLayout(columns, unit, tuple(range(i, min(i + per, n)) for i in range(0, n, per)))


def page_suffixes(pages: int) -> list[str]:
    """``[""]`` for one page, else ``["-p1", "-p2", ...]`` (the file name's page mark)."""
    return [""] if pages == 1 else [f"-p{i + 1}" for i in range(pages)]
