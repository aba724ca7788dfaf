"""Files shipped with the package: the sweeps of ``sweeps/``, the cluster configs of ``deploy/`` and the settings'
defaults (``rmtsweep.yaml``, the one source of every default; :mod:`rmtsweep.config` checks and serves the values).

Both folders stay where the project keeps them; ``pyproject.toml`` installs them as package data
(``rmtsweep/sweeps``, ``rmtsweep/deploy``), so a plain ``pip install .`` (not only an editable one)
carries them and ``rmtsweep run demo`` works from any directory.
"""

from __future__ import annotations

import difflib
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from .errors import SweepDefinitionError

__all__ = ["SETTINGS", "cluster_config", "default", "defaults", "resolve_sweep", "sweeps"]


def _root(name: str) -> Path:
    """The folder ``sweeps`` / ``deploy``: inside the installed package (``pip install .``), or, in a
    source checkout (an editable install), beside the package folder."""
    here = Path(__file__).resolve().parent
    installed = here / name
    return installed if installed.is_dir() else here.parent / name


def sweeps() -> dict[str, tuple[Path, str]]:
    """Every shipped sweep: name (``demo``, ``convergence/d400``) -> (file, description)."""
    root = _root("sweeps")
    out = {}
    for path in sorted(root.rglob("*.yaml")):
        name = path.relative_to(root).with_suffix("").as_posix()
        try:
            description = str((yaml.safe_load(path.read_text()) or {}).get("description", "")).strip()
        except yaml.YAMLError:
            description = ""
        out[name] = (path, " ".join(description.split()))
    return out


def resolve_sweep(sweep: str | Path) -> Path:
    """A SWEEP argument: an existing file, or the name of a shipped sweep (``demo``, ``paper-phase``).

    Raises
    ------
    SweepDefinitionError
        Neither a file nor a shipped sweep; the message suggests the closest shipped name and lists them.
    """
    path = Path(sweep)
    if path.exists():
        return path
    shipped = sweeps()
    name = path.as_posix().removesuffix(".yaml")
    if name in shipped:
        return shipped[name][0]
    close = difflib.get_close_matches(name, shipped, n=1, cutoff=0.6)
    guess = f"; did you mean `{close[0]}`?" if close else ""
    raise SweepDefinitionError(f"{sweep}: no such sweep file, and not a shipped sweep{guess} (shipped: "
                               f"{', '.join(shipped)}; `rmtsweep sweeps` describes them)")


def cluster_config(kind: str) -> Path:
    """The shipped dask-jobqueue config of a batch system (``deploy/<kind>/jobqueue.yaml``)."""
    return _root("deploy") / kind / "jobqueue.yaml"


SETTINGS = Path(__file__).with_name("rmtsweep.yaml")
"""The settings' shipped defaults, commented (docs/user-guide/configuration.md describes every key)."""


@cache
def defaults() -> dict[str, Any]:
    """The shipped defaults, ``{"rmtsweep": {...}}``, parsed once without dask (do not change the returned dict)."""
    with open(SETTINGS, encoding="utf-8") as f:
        return yaml.safe_load(f)


def default(key: str) -> Any:
    """The shipped default of the setting ``rmtsweep.<key>`` (dotted, e.g. ``"theory.pooled-budget"``).

    What the rooms below :mod:`rmtsweep.config` use where a caller gives no value: the theory, which knows
    nothing of dask, takes its budgets' defaults from here, so the file stays their one source.
    """
    node: Any = defaults()["rmtsweep"]
    for part in key.replace("_", "-").split("."):
        node = node[part]
    return node
