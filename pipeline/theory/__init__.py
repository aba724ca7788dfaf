"""Exact large-dimension theory for ``S / kappa`` (docs/theory.md): pure numpy and xarray, no files.

- :mod:`rmtsweep.theory.bulk`: the bulk law ``MP_delta ⊠ MP_gamma`` (edge, atom, density, moments,
  Stieltjes transform).
- :mod:`rmtsweep.theory.spikes`: thresholds, outlier locations and alignments, and the corrections for
  an uncentred table.
- :mod:`rmtsweep.theory.on_grid`: all of it evaluated on a sweep's grid (the store's theory arrays);
  :mod:`rmtsweep.theory.cell_law` picks each cell's law (the cubic, or the exact finite-T law where the
  weights sit on one position) and is what the analysis calls to draw curves between grid points.
"""

from __future__ import annotations

from . import bulk, spikes
from .bulk import *  # noqa: F403 - the public names are listed in each module's __all__
from .spikes import *  # noqa: F403

__all__ = sorted(bulk.__all__ + spikes.__all__)
