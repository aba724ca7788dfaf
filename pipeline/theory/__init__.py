"""Exact large-dimension theory for ``S / kappa`` (docs/theory.md): pure numpy and xarray, no files.

- :mod:`rmtsweep.theory.bulk`: the bulk law ``MP_delta ⊠ MP_gamma`` (edge, atom, density, moments,
  Stieltjes transform).
- :mod:`rmtsweep.theory.spikes`: thresholds, outlier locations and alignments, and the corrections for
  an uncentred table.
- :mod:`rmtsweep.theory.on_grid`: all of it evaluated on a sweep's grid (the store's theory arrays).
"""

from __future__ import annotations

from . import bulk, spikes
from .bulk import *  # noqa: F403 - the public names are listed in each module's __all__
from .spikes import *  # noqa: F403

__all__ = sorted(bulk.__all__ + spikes.__all__)
