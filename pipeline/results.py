"""The store's per-replicate variables, declared once: one :class:`Result` per variable in :data:`RESULTS`.

Each entry says what every room needs of a variable: its dims after the replicate's own, when a sweep
has it, its dtype and fill value, its long name and units, how a map colours it, and what it costs.
The store's layout (:mod:`rmtsweep.store.layout`), the task's arrays (:mod:`rmtsweep.run.block`), the
cost model (:mod:`rmtsweep.run.cost`) and the maps' colour scales (:mod:`rmtsweep.analysis.maps.style`)
are derived from it. A task fills a measured variable from the attribute of the same name of
:class:`rmtsweep.model.replicate.ReplicateResult`.

A new observable adds its field to the sweep (:mod:`rmtsweep.spec`), its measurement to the
simulation (:mod:`rmtsweep.model`), and one entry here.

Examples
--------
>>> from rmtsweep import load_sweep
>>> sweep = load_sweep("demo", ["observables.ridge={penalty: 0.1}"]).sweep
>>> [r.name for r in present(sweep) if r.measured]
['eigenvalues', 'overlap', 'alpha', 'kappa', 'accuracy']
>>> RESULTS["accuracy"].trailing_shape(sweep)
(13,)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .spec import Sweep

__all__ = ["RESULTS", "Colour", "PointWork", "Result", "present", "trailing_extent"]

Colour = Literal["auto", "unit"]
"""How a map colours a variable: ``unit`` is exactly [0, 1]; ``auto`` picks from its values."""


@dataclass(frozen=True)
class PointWork:
    """One replicate of one point, for the seconds an observable adds (:func:`rmtsweep.run.cost.point_cost`).

    Sizes are per ``gamma`` value (``N`` and ``n = min(d, N)``); the operations return fitted seconds.
    """

    d: int
    N: np.ndarray
    n: np.ndarray
    schemes: int
    n_snr: int
    eigh: Callable[[Any], np.ndarray]
    """Seconds of a full symmetric decomposition of size ``n``."""
    gram: Callable[[Any, Any, Any], np.ndarray]
    """Seconds of a Gram product ``(N, d, n)``."""
    direct: Callable[[Any, Any, Any], np.ndarray]
    """Seconds of a Gram product and its direct solve ``(N, d, n)``."""


@dataclass(frozen=True)
class Result:
    """One per-replicate variable of the store.

    Attributes
    ----------
    name
        The variable's name in the store, and the attribute of ``ReplicateResult`` a task reads it from.
    trailing
        Dims after the replicate's own (:attr:`rmtsweep.dims.StoreDims.replicate`): ``snr``, ``k``, ``bin``.
    dtype, fill
        The array's dtype, and what an unwritten chunk reads back as (``None``: zarr's null fill).
    long_name, units
        The variable's attributes.
    when
        Whether a sweep's store has it (default: every sweep).
    measured
        A task computes it (``False``: the driver's bookkeeping, such as ``done``).
    compared
        Two runs of one sweep must agree on it (:func:`rmtsweep.testing.assert_stores_equal`).
    required
        Every store has it, whatever version made it.
    colour
        How a map colours it, and its mean and theory counterparts.
    label
        Its axis label in a figure (:mod:`rmtsweep.analysis.figures`; default: :attr:`long_name`).
    cost
        Seconds it adds to one replicate of each ``gamma`` value (``None``: none beyond the top-k path).
    """

    name: str
    trailing: tuple[str, ...]
    long_name: str
    units: str = "1"
    dtype: str = "float64"
    fill: Any = np.nan
    when: Callable[[Sweep], bool] | None = None
    measured: bool = True
    compared: bool = True
    required: bool = False
    colour: Colour = "auto"
    cost: Callable[[PointWork], np.ndarray] | None = None
    label: str = ""

    def present(self, sweep: Sweep) -> bool:
        """Whether ``sweep``'s store has this variable."""
        return self.when is None or self.when(sweep)

    def trailing_shape(self, sweep: Sweep) -> tuple[int, ...]:
        """The lengths of :attr:`trailing` in ``sweep``'s store."""
        return tuple(trailing_extent(sweep, dim) for dim in self.trailing)

    @property
    def axis_label(self) -> str:
        """Its axis label in a figure."""
        return self.label or self.long_name

    @property
    def attrs(self) -> dict[str, str]:
        """The variable's attributes in the store."""
        return {"long_name": self.long_name, "units": self.units}


def trailing_extent(sweep: Sweep, dim: str) -> int:
    """The length in ``sweep``'s store of a dim after the replicate's: ``snr``, ``k`` or ``bin``."""
    obs = sweep.observables
    lengths = {"snr": len(sweep.grid.snr), "k": sweep.top_k, "bin": obs.spectrum.bins if obs.spectrum else 0}
    return lengths[dim]


def _attention(sweep: Sweep) -> bool:
    return any(w.data_dependent for w in sweep.grid.weights)


_RESULTS = (
    Result("eigenvalues", ("snr", "k"), "top-k eigenvalues of S = (1/N) sum_n c_n c_n^T, descending",
           "same units as the eigenvalues of S (absolute)", required=True),
    Result("overlap", ("snr", "k"), "alignment |u_hat_i^T u|^2 of the i-th top eigenvector with the signal",
           required=True, colour="unit"),
    Result("alpha", (), "realised signal strength (1/N) sum_n (w^T xi_n)^2", required=True),
    Result("kappa", (), "noise level kappa = ||w||^2", required=True),
    Result("done", (), "replicate computed and written (set after its data)", dtype="bool", fill=None,
           measured=False, required=True),
    Result("run", (), "index in attrs['runs'] of the run that computed this replicate (-1: none)", dtype="int16",
           fill=-1, measured=False, compared=False),
    Result("spectrum", ("snr", "bin"), "eigenvalue density of S/kappa on fixed bins (all d eigenvalues)",
           "1/(kappa units)", when=lambda s: s.observables.spectrum is not None,
           cost=lambda w: w.schemes * w.n_snr * (w.eigh(w.n) + w.gram(w.N, w.d, w.n)), label="density"),
    Result("accuracy", ("snr",), "ridge test accuracy of the sequence label from the pooled vector",
           when=lambda s: s.observables.ridge is not None, colour="unit",
           cost=lambda w: w.schemes * w.n_snr * (w.direct(w.N, w.d, w.d) + w.eigh(w.d)), label="ridge test accuracy"),
    Result("kappa_snr", ("snr",), "realised noise level (1/N) sum_n ||w_n||^2 at each SNR value "
           "(finite-d attention: the weights move with the SNR)", when=_attention),
    Result("alpha_snr", ("snr",), "realised signal strength (1/N) sum_n (w_n . xi_n)^2 at each SNR value",
           when=_attention),
    Result("attention_distance", ("snr",), "mean over sequences of sum_s |w_ns - causal(tau)_s|: finite-d "
           "attention weights against their large-d limit (NaN: fixed weights)", when=_attention),
)

RESULTS: Mapping[str, Result] = {r.name: r for r in _RESULTS}
"""Every per-replicate variable, by name, in the order of the store's layout."""


def present(sweep: Sweep) -> tuple[Result, ...]:
    """The per-replicate variables of ``sweep``'s store, in the order of :data:`RESULTS`."""
    return tuple(r for r in RESULTS.values() if r.present(sweep))
