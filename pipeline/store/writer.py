"""Writes finished tasks into their chunks: every data variable first, then ``done``.

Only the driver process writes (workers return arrays), data first and ``done`` last, so a reader
never sees a ``done`` replicate without its data, and the store is readable while a sweep runs.
Unwritten chunks read back as the fill value (NaN, and ``False`` for ``done``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import zarr

from .layout import OPTIONAL, PER_REPLICATE, PER_SNR

__all__ = ["Writer", "task_mask"]


@dataclass
class Writer:
    """Writes finished tasks into their chunks of an existing store (the driver's only job)."""

    path: Path
    run: int = -1

    def __post_init__(self) -> None:
        group = zarr.open_group(str(self.path), mode="r+")
        names = PER_SNR + PER_REPLICATE + tuple(n for n in OPTIONAL if n in group)
        self.arrays = {name: group[name] for name in names}
        self.chunk = self.arrays["done"].chunks[-1]

    def write(self, index: tuple[int, int, int], weights: tuple[int, ...], replicates: tuple[int, int],
              values: dict[str, np.ndarray]) -> None:
        """Write one task's block: every data variable first, then ``done``.

        ``values`` hold the task's schemes (positions ``weights``) along their first axis. A task with
        every scheme fills its chunk in one write per variable; one with some (a store extended with
        new schemes) updates those schemes inside the chunk.
        """
        r0, r1 = replicates
        n_w, n = self.arrays["done"].shape[-2:]
        if r0 % self.chunk or (r1 % self.chunk and r1 != n):
            raise ValueError(f"replicates {r0}:{r1} are not aligned to the store's chunk of {self.chunk}")
        # (position on the weights axis, row of `values`): the whole chunk at once, or scheme by scheme
        parts = [(slice(None), None)] if tuple(weights) == tuple(range(n_w)) else \
            [(w, row) for row, w in enumerate(weights)]
        for name, array in self.arrays.items():
            if name == "done":
                continue
            for w, row in parts:
                region = tuple(index) + (w, slice(r0, r1))
                array[region] = self.run if name == "run" else (values[name] if row is None else values[name][row])
        for w, _ in parts:
            self.arrays["done"][tuple(index) + (w, slice(r0, r1))] = True

    def done_tasks(self, blocks: list[tuple[int, int]]) -> np.ndarray:
        """Done mask per task (see :func:`task_mask`)."""
        return task_mask(self.arrays["done"][...], blocks)


def task_mask(done: np.ndarray, blocks: list[tuple[int, int]]) -> np.ndarray:
    """Done mask per scheme and replicate block, shape ``task_shape + (n_weights, n_blocks)``.

    ``done`` has dims ``(delta, gamma, T, weights, replicate)``; a block is done when all its
    replicates are.
    """
    return np.stack([done[..., a:b].all(axis=-1) for a, b in blocks], axis=-1)
