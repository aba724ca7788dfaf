"""What a map's colours mean: the colour scale chosen per quantity, category names, the title's statistic.

:func:`colour_scale` picks the limits from what the variable *is*, not one rule for all: exactly
[0, 1] for rates and alignments (``overlap``, ``detection_rate``, ``accuracy``), symmetric about 0
for errors and z-scores (at 2.5 times the median of ``|value|``, about the 90th percentile of a
normal sample, so that one column of extremes, such as a z-score's snr = 0, saturates with arrows
rather than fading every other cell; a z-score scale is at least +-3), a discrete legend for categorical variables
(``theory_phase``: the store's
``flag_values`` / ``flag_meanings`` attrs), and robust limits of the variable itself otherwise (a log
scale when it spans more than :data:`LOG_SPAN` robustly, as absolute eigenvalues do across weight
schemes). ``clim`` overrides the limits. :func:`statistic` says what a mapped value is (which ``k``,
a mean over how many replicates), for the map's title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import xarray as xr

from ...errors import SelectionError
from ...results import RESULTS
from .axes import AxisScale

__all__ = ["ColourScale", "LOG_SPAN", "MapFigure", "Panel", "categories", "colour_label", "colour_scale", "statistic"]

ScaleKind = Literal["unit", "linear", "log", "diverging", "categorical"]
DIVERGING = ("_error", "_z")
UNIT_RATES = ("rate",)              # the comparison's rates (``detection_rate``); store variables say theirs in RESULTS
LOG_SPAN = 20.0                     # robust max / min beyond which a positive quantity gets a log scale
ROBUST = (1.0, 99.0)                # percentiles; extremes within SNAP of the range are kept instead
SNAP = 0.1
DIVERGING_MEDIANS = 2.5             # half-width in medians of |value|: ~ the 90th percentile of a normal sample,
                                    # but up to half the cells (a column of a z-score's snr = 0) cannot set it
Z_FLOOR = 3.0                       # a z-score scale is never narrower than +-3 (noise would look like signal)


@dataclass(frozen=True)
class ColourScale:
    """How values map to colours: limits, colour map, and for categorical variables the categories.

    Attributes
    ----------
    kind
        ``unit`` (exactly 0-1), ``linear``, ``log``, ``diverging`` (symmetric about 0) or ``categorical``.
    lo, hi
        The colour limits (for ``categorical``: the smallest and largest category value).
    cmap
        A matplotlib / bokeh colour map name.
    extend
        Whether values fall below / above the limits: ``neither``, ``min``, ``max`` or ``both``
        (matplotlib's colour-bar arrows).
    categories
        ``(value, name)`` pairs of a categorical variable, in value order; empty otherwise.
    """

    kind: ScaleKind
    lo: float
    hi: float
    cmap: str = "viridis"
    extend: str = "neither"
    categories: tuple[tuple[int, str], ...] = ()

    def colours(self) -> list[str]:
        """One hex colour per category (positions on ``cmap`` by value, so shared values match across maps)."""
        from matplotlib import colormaps
        from matplotlib.colors import to_hex
        values = np.array([v for v, _ in self.categories], dtype=float)
        span = values.max() - values.min() if values.size > 1 else 1.0
        cmap = colormaps[self.cmap]
        return [to_hex(cmap((v - values.min()) / span)) for v in values]


@dataclass(frozen=True)
class Panel:
    """One facet of a map: its title, its data and the theory's transitions in its plane.

    ``data`` has dims ``(y, x)``; a categorical axis (T, weights) holds the positions 0..n-1.
    ``curves`` maps ``population`` / ``sample`` to (n, 2) paths in the (x, y) plane.
    """

    key: tuple[str, ...]
    title: str
    data: xr.DataArray
    curves: dict[str, list[np.ndarray]]


@dataclass(frozen=True)
class MapFigure:
    """Everything a map draws, for any backend: panels, the shared colour scale, axes and title.

    ``ticks`` gives a categorical axis its ``(position, label)`` pairs; ``transitions`` is False when
    a categorical axis makes the transition curves meaningless (they are not drawn then); ``caption`` is one
    line under the map saying what a dark cell means (a z-score's or an error's, else empty). ``scales``
    and ``edges`` give each of ``x`` and ``y`` its scale (``linear`` or ``log``) and the edges of its
    cells (:mod:`rmtsweep.analysis.maps.axes`), what every backend draws.
    """

    var: str
    x: str
    y: str
    title: str
    panels: tuple[Panel, ...]
    scale: ColourScale
    labels: dict[str, str]
    ticks: dict[str, list[tuple[int, str]]]
    facets: tuple[str, ...]
    transitions: bool
    scales: dict[str, AxisScale]
    edges: dict[str, np.ndarray]
    clabel: str = ""
    caption: str = ""

    def axis_ticks(self, axis: str, values: np.ndarray) -> list[tuple[float, str]] | None:
        """The ``(position, label)`` ticks of ``axis`` (``x`` or ``y``) drawn over ``values``; None: the backend's.

        A categorical axis gets its names, a log axis the grid's values, and an axis one value wide that
        value (not ticks spread over the span of its one cell).
        """
        if axis in self.ticks:
            return [(float(p), label) for p, label in self.ticks[axis]]
        if self.scales[axis] == "log" or np.size(values) == 1:
            return [(float(v), f"{v:g}") for v in np.atleast_1d(values)]
        return None


def categories(da: xr.DataArray) -> tuple[tuple[int, str], ...]:
    """``(value, name)`` pairs when ``da`` is categorical, else ``()``.

    From the CF attrs ``flag_values`` / ``flag_meanings`` that the store and the comparison write on
    their phase arrays (underscores read as spaces), else ``False``/``True`` for booleans.
    """
    values, meanings = da.attrs.get("flag_values"), da.attrs.get("flag_meanings")
    if values is not None and meanings:
        names = str(meanings).split()
        if len(names) == len(np.atleast_1d(values)):
            return tuple((int(v), n.replace("_", " ")) for v, n in zip(np.atleast_1d(values), names, strict=True))
    if da.dtype.kind == "b":
        return ((0, "False"), (1, "True"))
    return ()


def colour_label(da: xr.DataArray, width: int | None = None) -> str:
    """What the colours show, for the colour bar: the variable's ``long_name`` and ``units`` attrs.

    Without a ``long_name``, the name with spaces for underscores; units of ``1`` are left out.
    ``width``: wrap into lines of at most that many characters.

    Examples
    --------
    >>> colour_label(xr.DataArray([1.0], name="lambda1_z", attrs={"long_name": "z-score of lambda_1", "units": "1"}))
    'z-score of lambda_1'
    >>> colour_label(xr.DataArray([1.0], name="transition_snr_error", attrs={"units": "snr"}))
    'transition snr error (snr)'
    """
    import textwrap

    name = str(da.attrs.get("long_name") or str(da.name).replace("_", " "))
    units = str(da.attrs.get("units", "1"))
    text = name if units in ("1", "") else f"{name} ({units})"
    return textwrap.fill(text, width) if width else text


def _robust(values: np.ndarray) -> tuple[float, float]:
    """Percentile limits, widened to the extremes when those are close (no arrows for a small overshoot)."""
    lo, hi = np.percentile(values, ROBUST)
    vmin, vmax = float(values.min()), float(values.max())
    tol = SNAP * (hi - lo)
    return (vmin if lo - vmin <= tol else float(lo)), (vmax if vmax - hi <= tol else float(hi))


def _symmetric(magnitudes: np.ndarray, floor: float) -> float:
    """Half-width of a symmetric scale: :data:`DIVERGING_MEDIANS` times the median ``|value|`` (the largest
    one when it is within :data:`SNAP` of it), at least ``floor``; 1 when there is nothing to scale."""
    if not magnitudes.size:
        return max(1.0, floor)
    m, top = DIVERGING_MEDIANS * float(np.median(magnitudes)), float(magnitudes.max())
    m = top if top <= (1 + SNAP) * m else m
    return max(m, floor) or 1.0


def _extend(values: np.ndarray, lo: float, hi: float) -> str:
    below = values.size and values.min() < lo - 1e-12 * max(1.0, abs(lo))
    above = values.size and values.max() > hi + 1e-12 * max(1.0, abs(hi))
    return {(False, False): "neither", (True, False): "min", (False, True): "max"}.get((bool(below), bool(above)),
                                                                                         "both")


def _unit_interval() -> re.Pattern[str]:
    """Names coloured on exactly [0, 1]: the store's unit variables and rates, their means and theory values."""
    names = [name for name, r in RESULTS.items() if r.colour == "unit"] + list(UNIT_RATES)
    return re.compile(rf"(^|_)({'|'.join(names)})(_mean|_theory)?$")


def colour_scale(da: xr.DataArray, clim: tuple[float, float] | None = None) -> ColourScale:
    """The colour scale of ``da`` (all its panels share it), from what the quantity is.

    Parameters
    ----------
    da
        The mapped variable (named; attrs as in the store or comparison).
    clim
        ``(lo, hi)`` to use instead of the chosen limits; not allowed for a categorical variable.

    Examples
    --------
    >>> s = colour_scale(xr.DataArray([0.1, 0.5], name="overlap"))
    >>> (s.kind, s.lo, s.hi, s.extend)
    ('unit', 0.0, 1.0, 'neither')
    """
    name = str(da.name)
    values = np.asarray(da.values, dtype=float)
    values = values[np.isfinite(values)]
    cats = categories(da)
    if cats:
        if clim is not None:
            raise SelectionError(f"--clim: {name} is categorical ({', '.join(n for _, n in cats)}); "
                                 f"its colours are fixed")
        return ColourScale("categorical", float(cats[0][0]), float(cats[-1][0]), "viridis", "neither", cats)
    if clim is not None:
        lo, hi = (float(c) for c in clim)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise SelectionError(f"--clim {lo:g},{hi:g}: expected finite LO,HI with LO < HI, e.g. --clim 0,1")
    if name.endswith(DIVERGING):
        if clim is None:
            m = _symmetric(np.abs(values), Z_FLOOR if name.endswith("_z") else 0.0)
            lo, hi = -m, m
        return ColourScale("diverging", lo, hi, "RdBu_r", _extend(values, lo, hi))
    if _unit_interval().search(name):
        kind: ScaleKind = "unit" if clim is None else "linear"
        lo, hi = (0.0, 1.0) if clim is None else (lo, hi)
        return ColourScale(kind, lo, hi, "viridis", _extend(values, lo, hi))
    if clim is None:
        if not values.size:
            return ColourScale("linear", 0.0, 1.0)
        lo, hi = _robust(values)
        if values.min() > 0 and hi / lo > LOG_SPAN:         # every value positive, spanning decades
            llo, lhi = _robust(np.log10(values))
            lo, hi = 10.0 ** llo, 10.0 ** lhi
            return ColourScale("log", lo, hi, "viridis", _extend(values, lo, hi))
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
    return ColourScale("linear", lo, hi, "viridis", _extend(values, lo, hi))


def _count(n: np.ndarray) -> str:
    n = n[np.isfinite(n)] if n.size else n
    if not n.size:
        return "0"
    lo, hi = int(n.min()), int(n.max())
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


STATISTICS = (   # (pattern on the name, what the value is); {n}: the replicates done per cell
    (re.compile(r"_rel_error$"), "relative error of the mean over {n} replicates"),
    (re.compile(r"_error$"), "mean over {n} replicates minus theory"),
    (re.compile(r"_z$"), "z-score of the mean over {n} replicates against theory"),
    (re.compile(r"_sem$"), "standard error of the mean over {n} replicates"),
    (re.compile(r"_mean$"), "mean over {n} replicates"),
    (re.compile(r"bulk_ks$"), "Kolmogorov distance of the histogram over {n} replicates to the law"),
    (re.compile(r"^(theory_|paper_)|_theory$|^detection_(margin|threshold)$"), "theory prediction"),
    (re.compile(r"^detection_rate$"), "fraction of {n} replicates detected"),
    (re.compile(r"^n_done$"), "replicates done per cell"),
)


def statistic(name: str, done: xr.DataArray, per_replicate: bool, k: int | str | None) -> str:
    """What a mapped value is, for the title: e.g. ``overlap (k=1), mean over 8 replicates``.

    Parameters
    ----------
    name
        The variable's name.
    done
        The store's ``done`` flags (``replicate`` dim), to count the replicates averaged.
    per_replicate
        Whether the value is a store variable averaged here over the done replicates.
    k
        The eigenpair shown, or None when the variable has none.
    """
    n = _count(np.asarray(done.sum("replicate").values, dtype=float).ravel())
    head = f"{name} (k={k})" if k is not None else name
    if per_replicate:
        return f"{head}, mean over {n} replicates"
    for pattern, text in STATISTICS:
        if pattern.search(name):
            return f"{head}, {text.format(n=n)}"
    return f"{head}, from {n} replicates"
