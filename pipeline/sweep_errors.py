"""One-line messages of a sweep file's validation errors: each names its field, its value, and a close match.

:func:`rmtsweep.spec.parse_sweep` joins them into its :class:`~rmtsweep.errors.SweepDefinitionError`.
"""

from __future__ import annotations

import difflib
import typing
from typing import Any

from pydantic import BaseModel

from .model import CORRELATIONS, SCHEMES

__all__ = ["glued_colons", "messages"]


def messages(errors: list[dict], data: dict, root: type[BaseModel]) -> list[str]:
    """One message per wrong field of ``data`` from pydantic's ``errors`` of validating it as ``root``.

    An unknown key comes first, with the closest known key: a typo often explains the other errors.
    """
    errs = sorted(_on_ranges(errors, data), key=lambda e: e["type"] != "extra_forbidden")
    return [_format(e, root) for e in errs]


_BY_TAG: dict[str, type[BaseModel]] = {c.model_fields["model"].default: c for c in CORRELATIONS} | \
    {w.model_fields["scheme"].default: w for w in SCHEMES}     # the classes of the discriminated unions' tags
_UNION_TAGS = set(_BY_TAG)


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model class inside a field's annotation (``X``, ``X | None``, ``list[X]``), if there is one."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    found = [m for arg in typing.get_args(annotation) if (m := _model_in(arg)) is not None]
    return found[0] if len(found) == 1 else None


def _keys_at(loc: tuple, root: type[BaseModel]) -> list[str]:
    """The keys the mapping that holds ``loc[-1]`` may have ([] where that is not known)."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        if part in _BY_TAG:
            model = _BY_TAG[part]
            continue
        field = model.model_fields.get(part) if model is not None else None
        model = _model_in(field.annotation) if field is not None else None
    return list(model.model_fields) if model is not None else []


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _UNION_TAGS:
            continue  # the tags of discriminated unions are not fields
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def _format(err: dict, root: type[BaseModel]) -> str:
    msg = err["msg"].removeprefix("Value error, ")
    where = _where(err["loc"])
    if err["type"] == "extra_forbidden":
        close = difflib.get_close_matches(str(err["loc"][-1]), _keys_at(err["loc"], root), n=1, cutoff=0.6)
        return f"{where}: unknown key" + (f" (did you mean `{close[0]}`?)" if close else "")
    if err["type"] == "union_tag_invalid":
        field, tag = err["ctx"]["discriminator"].strip("'"), str(err["ctx"]["tag"])
        known = [t.strip().strip("'") for t in str(err["ctx"]["expected_tags"]).split(",")]
        close = difflib.get_close_matches(tag, known, n=1, cutoff=0.6)
        return (f"{where}: unknown {field} {tag!r}" + (f" (did you mean `{close[0]}`?)" if close else "") +
                f"; the {field}s are {', '.join(map(repr, known))}")
    got = err.get("input")
    shown = repr(got) if len(repr(got)) <= 80 else f"{repr(got)[:60]}... ({len(repr(got))} characters)"
    return f"{where}: {msg} (got {shown})" if not isinstance(got, dict) else f"{where}: {msg}"


def _on_ranges(errs: list[dict], data: dict) -> list[dict]:
    """The errors of an axis given as a range ``{start, stop, num}``, each named by the range's field.

    A range's values lie between its ends, so a bound that some value breaks is broken by ``start`` or
    ``stop``: the error is that end's, once, not one per value of the range.
    """
    grid = data.get("grid")
    out, seen = [], set()
    for err in errs:
        loc = err["loc"]
        axis = grid.get(loc[1]) if isinstance(grid, dict) and len(loc) == 3 and loc[0] == "grid" else None
        if not (isinstance(axis, dict) and isinstance(loc[2], int) and isinstance(axis.get("num"), int)):
            out.append(err)
            continue
        end = "start" if loc[2] == 0 else "stop" if loc[2] == axis["num"] - 1 else None
        if end is not None and (loc[1], end) not in seen:        # a middle value breaks a bound only with an end
            seen.add((loc[1], end))
            out.append({**err, "loc": ("grid", loc[1], end), "input": axis[end]})
    return out or errs


def glued_colons(data: Any, where: str = "") -> list[str]:
    """One message per mapping key that YAML read as ``key:value`` with no value: a colon without its space.

    ``{model:markov}`` is the mapping ``{"model:markov": None}`` in YAML; the message names the field and
    the fix (``{model: markov}``) rather than the errors that follow from the lost key.
    """
    out: list[str] = []
    if isinstance(data, dict):
        glued = [k for k, v in data.items() if isinstance(k, str) and ":" in k.strip(":") and v is None]
        if glued:
            fixed = ", ".join(": ".join(k.split(":", 1)) for k in glued)
            keys = ", ".join(f"`{k}`" for k in glued)
            out.append(f"{where or '(top level)'}: {keys} read{'s' if len(glued) == 1 else ''} as "
                       f"{'a key' if len(glued) == 1 else 'keys'} with no value; YAML needs a space after the "
                       f"colon: `{{{fixed}}}`")
        for key, value in data.items():
            if key not in glued:
                out += glued_colons(value, f"{where}.{key}" if where else str(key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            out += glued_colons(value, f"{where}[{i}]")
    return out
