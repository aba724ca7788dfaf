"""Rewriting a store's damaged coordinates and theory arrays from the sweep the store records.

Both are functions of the sweep alone: the coordinates are its grid (:func:`rmtsweep.store.layout.frame`),
and the theory is deterministic (:func:`rmtsweep.theory.on_grid.theory_dataset`, its Monte Carlo laws
seeded), computed again with the budgets recorded when the store was made (``attrs["config"]["theory"]``).
Each damaged array is rewritten whole, through its own metadata, so it keeps its codecs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import xarray as xr
import zarr

from .. import config
from ..theory.grid import TheoryBudgets
from ..theory.on_grid import SIZED, theory_dataset
from .frame_check import FrameDamage
from .io import open_group, stored_sweep
from .layout import frame
from .location import StorePath, locate
from .pending import theory_pending
from .writer import dims_of

__all__ = ["recorded_budgets", "rewrite_frame"]


def recorded_budgets(attrs: dict[str, Any]) -> TheoryBudgets:
    """The theory budgets a store was made with (``attrs["config"]["theory"]``); the current settings where a
    store records none."""
    recorded = (attrs.get("config") or {}).get("theory") or config.settings("theory")
    fields = {f.name for f in dataclasses.fields(TheoryBudgets)}
    return TheoryBudgets(**{k.replace("-", "_"): v for k, v in recorded.items() if k.replace("-", "_") in fields})


def rewrite_frame(path: str | Path | StorePath, damage: list[FrameDamage],
                  notes: Callable[[str], None] | None = None) -> list[str]:
    """Rewrite every array with a chunk in ``damage`` from the store's sweep; returns one line per array that
    could not be (``notes``: a line before the theory is computed again)."""
    where = locate(path)
    group = open_group(where, mode="r+")
    attrs = dict(group.attrs)
    sweep = stored_sweep(where, attrs)
    names = sorted({d.name for d in damage})
    sources: dict[str, xr.Variable] = {str(k): v.variable for k, v in frame(sweep, xr.Dataset(), {}).coords.items()}
    theory = [n for n in names if n not in sources]
    if theory:
        # the arrays at the store's size are there once the store's theory is no longer pending
        sized = not theory_pending(attrs) and any(fnmatch(n, p) for n in theory for p in SIZED)
        if notes:
            notes(f"{where}: computing the theory again for {', '.join(theory)}")
        computed = theory_dataset(sweep, budgets=recorded_budgets(attrs), part="all" if sized else "template")
        sources.update({n: computed[n].variable for n in theory if n in computed})
    left = []
    for name in names:
        with zarr.config.set({"array.write_empty_chunks": True}):        # taken when the array is opened
            array = zarr.open_array(store=group.store, path=name, mode="r+", zarr_format=2)
        source = sources.get(name)
        if source is None:
            left.append(f"{name}: the store's sweep no longer gives this array; rebuild the store from its sweep file")
            continue
        values = source.transpose(*dims_of(array)).values
        if values.shape != array.shape:
            left.append(f"{name}: the store's sweep gives it the shape {values.shape}, the store {array.shape}")
            continue
        array[...] = values
    return left
