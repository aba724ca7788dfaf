"""rmtsweep's settings in dask's config, under the key ``rmtsweep`` (defaults: the shipped ``rmtsweep.yaml``).

Importing this module adds the shipped defaults to ``dask.config`` below whatever is already set, so a
value can be changed the ways dask's own settings are: a YAML file in ``~/.config/dask/``, an environment
variable (``DASK_RMTSWEEP__RUN__WINDOW__PER_THREAD=8``: read when dask is imported) or
``dask.config.set({"rmtsweep.run.window.per-thread": 8})``. The modules that use a value call :func:`get` at
the point of use, so a change takes effect for the next run; ``import rmtsweep`` alone stays free of dask
(the command line starts sooner), and the defaults are loaded when a module first reads a value.

Example
-------
>>> import dask
>>> from rmtsweep import config
>>> config.get("run.window.per-thread")
4
>>> with dask.config.set({"rmtsweep.run.window.per-thread": 8}):
...     config.get("run.window.per-thread")
8
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import dask.config
import yaml

__all__ = ["PATH", "defaults", "get", "settings"]

PATH = Path(__file__).with_name("rmtsweep.yaml")
"""The shipped defaults, commented (docs/user-guide/configuration.md describes every key)."""


@cache
def defaults() -> dict[str, Any]:
    """The shipped defaults, ``{"rmtsweep": {...}}`` (parsed once; do not change the returned dict)."""
    with open(PATH, encoding="utf-8") as f:
        return yaml.safe_load(f)


def get(key: str) -> Any:
    """The setting ``rmtsweep.<key>`` now (``key`` dotted, e.g. ``"lock.lease"``; ``-`` and ``_`` alike).

    Falls back to the shipped default when the key is missing from dask's config, as it is after a
    ``dask.config.set`` made before this module was imported removed its own keys on exit.

    Raises
    ------
    KeyError
        When ``key`` is not a setting of the shipped defaults.
    """
    shipped = dask.config.get(f"rmtsweep.{key}", config=defaults())
    return dask.config.get(f"rmtsweep.{key}", default=shipped)


def settings(section: str) -> dict[str, Any]:
    """Every value of ``rmtsweep.<section>`` now, by its name in the shipped file (JSON-able: for provenance)."""
    return {name: get(f"{section}.{name}") for name in defaults()["rmtsweep"][section]}


dask.config.update_defaults(defaults())
