"""``ds.rmt``: the comparison, the transitions and maps of a store, from a notebook.

Registered when :mod:`rmtsweep` is imported (this module is imported when ``ds.rmt`` is first used)::

    import rmtsweep
    ds = rmtsweep.open_store("store/demo.zarr")
    data = ds.rmt.masked()                   # per-replicate values NaN (run -1) where done is false
    ds.rmt.not_done                          # how many replicates those are (NotDone(count, total))
    cmp = ds.rmt.compare()                   # lazy: nothing is read or computed until asked
    ds.rmt.transition().compute()            # empirical transition SNR per (delta, gamma, T, weights)
    ds.rmt.phase_diagram()                   # ... with bootstrap intervals and theory's thresholds (a table)
    m = ds.rmt.plot("snr", "gamma", "overlap")   # a map: the notebook shows it
    m.save("maps/")                              # its HTML + PNG files; m.hv is the holoviews object

Every result shows a per-replicate value only where its ``done`` flag is set
(:func:`rmtsweep.analysis.mask.only_done`, the rule the CLI's readers follow too). On a store whose theory at
its size is not written yet (``theory_pending``), ``compare``, ``transition``, ``phase_diagram`` and a ``plot`` of
a variable of the theory raise a one-line :class:`~rmtsweep.errors.StoreError`; a ``plot`` of a Monte Carlo
variable (per replicate, or :func:`~rmtsweep.analysis.compare.measured`'s) is drawn with no theory, and its
``attrs["theory"]`` says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import xarray as xr

from .compare import compare
from .mask import NotDone, mask_not_done, not_done

if TYPE_CHECKING:
    import pandas

    from .maps.plot import StoreMap

__all__ = ["RmtAccessor"]


class RmtAccessor:
    """Analysis of an rmtsweep store opened with :func:`rmtsweep.open_store`."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def masked(self) -> xr.Dataset:
        """The store with every per-replicate value of a replicate not done set to its fill value (lazy)."""
        return mask_not_done(self._ds)

    @property
    def not_done(self) -> NotDone:
        """How many replicates are not done, of how many (reads ``done``, which is small)."""
        return not_done(self._ds)

    def compare(self, *, false_alarm: float | None = None, margin_factor: float | None = None,
                lazy: bool = True, reference: str = "best") -> xr.Dataset:
        """Monte Carlo against theory (:func:`rmtsweep.analysis.compare.compare`), lazy by default; ``reference``
        ``"best"`` (the store's finite-size prediction where it has one) or ``"limit"``."""
        return compare(self._ds, false_alarm=false_alarm, margin_factor=margin_factor, lazy=lazy, reference=reference)

    def transition(self, *, false_alarm: float | None = None, margin_factor: float | None = None) -> xr.DataArray:
        """Empirical transition SNR per line (detection rate crossing 1/2), lazy."""
        return self.compare(false_alarm=false_alarm, margin_factor=margin_factor)["transition_snr_empirical"]

    def phase_diagram(self, n_boot: int = 1000, level: float = 0.95, seed: int = 0, *,
                      false_alarm: float | None = None, margin_factor: float | None = None, reference: str = "best"
                      ) -> pandas.DataFrame:
        """The transition curves with bootstrap intervals (:func:`rmtsweep.analysis.phase.phase_diagram`).

        Reads the eigenvalues (the bootstrap needs every replicate), so it computes.
        """
        from .phase import phase_diagram
        return phase_diagram(self._ds, n_boot, level, seed, false_alarm=false_alarm, margin_factor=margin_factor,
                             reference=reference)

    def plot(self, x: str, y: str, var: str, select: dict | None = None,
             clim: tuple[float, float] | None = None) -> StoreMap:
        """A map of ``var`` over ``x`` and ``y`` (:class:`rmtsweep.analysis.maps.plot.StoreMap`): a notebook shows
        it; ``.save("maps/")`` writes its HTML and PNG files (as ``rmtsweep plot`` does); ``.hv`` is the
        ``holoviews.HoloMap``."""
        from .maps.plot import plot
        return plot(self._ds, x, y, var, select, clim)

    def map(self, x: str, y: str, var: str, select: dict | None = None, clim: tuple[float, float] | None = None):
        """Deprecated: ``ds.rmt.plot(...).hv``, the map as a ``holoviews.HoloMap``."""
        import warnings
        warnings.warn("ds.rmt.map is deprecated; use ds.rmt.plot(...).hv", DeprecationWarning, stacklevel=2)
        return self.plot(x, y, var, select, clim).hv
