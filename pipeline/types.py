"""Every string option of the package, as ``Literal`` types, in one place.

Parsed once at the boundary (:mod:`rmtsweep.spec`, :mod:`rmtsweep.cluster.batch`, the CLI); code below
the boundary trusts values of these types.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["AttentionScale", "Centering", "ClusterKind", "ExportFormat", "Method", "Writes"]

AttentionScale = Literal["d", "sqrt_d"]
"""Score scale of finite-d attention: ``tau / d`` (the paper's regime) or ``tau / sqrt(d)`` (transformers)."""

Centering = Literal["class", "none"]
"""``class``: class means of the table are exactly ``±mu``; ``none``: the model as literally stated."""

Method = Literal["auto", "direct", "rank2"]
"""How the top-k eigenpairs over the SNR axis are computed (:mod:`rmtsweep.model.topk`)."""

ClusterKind = Literal["slurm", "pbs"]
"""Batch systems reached through dask-jobqueue."""

ExportFormat = Literal["csv", "netcdf"]
"""Formats of ``rmtsweep export``."""

Writes = Literal["workers", "driver"]
"""Who writes a task's data chunks: the worker that computed it, or the driver process."""
