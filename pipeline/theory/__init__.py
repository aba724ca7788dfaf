"""Exact large-dimension theory for ``S / kappa`` (THEORY.md §3-5): pure numpy, vectorised.

- :mod:`pipeline.theory.bulk`: the bulk law ``MP_delta ⊠ MP_gamma`` (edge, atom, density, moments,
  Stieltjes transform).
- :mod:`pipeline.theory.spikes`: thresholds, outlier locations and alignments, and the corrections for an
  uncentred table.
"""

from __future__ import annotations

from . import bulk, spikes
from .bulk import *  # noqa: F403 - the public names are listed in each module's __all__
from .spikes import *  # noqa: F403

__all__ = sorted(bulk.__all__ + spikes.__all__)
