"""Mean and standard error over done replicates: the one estimator the comparison, figures and docs use."""

from __future__ import annotations

import numpy as np
import xarray as xr

from .mask import only_done

__all__ = ["mean_sem"]


def mean_sem(x: xr.DataArray, done: xr.DataArray | None = None, dim: str = "replicate"
             ) -> tuple[xr.DataArray, xr.DataArray]:
    """Mean and standard error of the mean of ``x`` along ``dim``, counting only ``done`` replicates.

    NaN mean where none is done, NaN standard error where fewer than two are (ddof = 1).

    Examples
    --------
    >>> x = xr.DataArray([1.0, 2.0, 3.0, 99.0], dims="replicate")
    >>> m, s = mean_sem(x, xr.DataArray([True, True, True, False], dims="replicate"))
    >>> float(m), round(float(s), 4)
    (2.0, 0.5774)
    """
    if done is not None:
        x = only_done(x, done)
    n = x.count(dim)
    return x.mean(dim), x.std(dim, ddof=1) / np.sqrt(n.where(n > 1))
