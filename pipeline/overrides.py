"""Command-line overrides of a sweep file: ``KEY=VALUE`` sets a dotted path to a YAML value, ``~KEY`` removes one."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import yaml

from .errors import SweepDefinitionError

__all__ = ["apply_overrides"]


def apply_overrides(data: Any, overrides: Sequence[str], source: str = "<sweep>") -> dict:
    """``data`` (a sweep file's mapping, not changed) with each ``KEY=VALUE`` or ``~KEY`` of ``overrides`` applied.

    ``KEY`` is a dotted path (``grid.T``); ``VALUE`` is read as YAML (``400``, ``[4, 16]``, ``mean``),
    and a plain comma list is a list (``grid.T=4,16``, ``grid.weights=mean,harmonic``; quote a string
    that holds a comma: ``description='a, b'``); missing mappings on the way are created. Errors name
    the override.
    """
    out = copy.deepcopy(data) if isinstance(data, dict) else {}
    for item in overrides:
        remove = item.startswith("~")
        key, sep, text = item.removeprefix("~").partition("=")
        if not key or (not sep and not remove) or (sep and remove) or any(not part for part in key.split(".")):
            raise SweepDefinitionError(f"{source}: override {item!r}: expected KEY=VALUE (e.g. replicates=32, "
                                       "grid.T=[4,16]) or ~KEY to remove one")
        *parents, last = key.split(".")
        node = out
        for i, part in enumerate(parents):
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise SweepDefinitionError(f"{source}: override {item!r}: {'.'.join(parents[:i + 1])} is not a "
                                           "mapping")
        if remove:
            if last not in node:
                raise SweepDefinitionError(f"{source}: override {item!r}: there is no {key} to remove")
            del node[last]
            continue
        try:
            node[last] = _override_value(text)
        except yaml.YAMLError as exc:
            raise SweepDefinitionError(f"{source}: override {item!r}: the value is not YAML "
                                       f"({getattr(exc, 'problem', None) or exc})") from None
    return out


def _override_value(text: str) -> Any:
    """An override's value: YAML, where a plain comma list (``4,16``, ``mean,harmonic``) is a list.

    A value that YAML reads as a string with a comma in it becomes the list of its parts, as Hydra's
    multirun lists do; quoting keeps the comma in one string (``description='a, b'``), and a value in
    brackets or braces is read as written (``grid.T=[4,16]``).
    """
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        if "," not in text:
            raise
        return yaml.safe_load(f"[{text}]")      # `"a b", c`: a list whose first item is quoted
    if isinstance(value, str) and "," in value and text.lstrip()[:1] not in ("'", '"'):
        return yaml.safe_load(f"[{text}]")
    return value
