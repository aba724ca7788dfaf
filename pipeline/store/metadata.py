"""The store's metadata documents: each a JSON object, each equal to its copy in the consolidated metadata.

A zarr (format 2) store keeps every group's and array's metadata twice: in its own small documents
(``.zgroup``, ``.zattrs``, ``.zarray``) and together in ``.zmetadata``, which readers use. A damaged
consolidated copy stops every reader; a damaged own document hides behind the consolidated copy until
something reads it. :func:`damaged` names both kinds, :func:`restore` rebuilds a damaged document from
its other copy where that one is whole.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .backend import Location

__all__ = ["CONSOLIDATED", "Damage", "consolidated_problem", "damaged", "metadata_damage", "restore",
           "restore_metadata"]

CONSOLIDATED = ".zmetadata"
_OWN = (".zgroup", ".zattrs", ".zarray")
_FOREIGN = "zarr.json"          # zarr format 3's document: a format-2 store has none


@dataclass(frozen=True)
class Damage:
    """One metadata document that cannot be used: its key in the store, and why."""

    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.key} {self.reason}"


def _parse(raw: bytes | None) -> tuple[Any, str | None]:
    """The JSON object in ``raw``, or ``None`` and why not."""
    if raw is None:
        return None, "is missing"
    if not raw.strip():
        return None, "is empty"
    try:
        value = json.loads(raw)
    except ValueError as exc:
        return None, f"is not JSON ({exc.__class__.__name__} at byte {getattr(exc, 'pos', '?')})"
    if not isinstance(value, dict):
        return None, "is not a JSON object"
    return value, None


def consolidated_problem(store: Location) -> str | None:
    """Why the store's consolidated metadata cannot be read (one read), or ``None``."""
    _, why = _parse(store.child(CONSOLIDATED).read())
    if why is None:
        foreign = store.child(_FOREIGN).read()
        return None if foreign is None else f"a stray {_FOREIGN} is there (zarr format 3's document)"
    return f"{CONSOLIDATED} {why}"


def _consolidated(store: Location) -> tuple[dict | None, Damage | None]:
    value, why = _parse(store.child(CONSOLIDATED).read())
    if why is not None:
        return None, Damage(CONSOLIDATED, why)
    meta = value.get("metadata")
    if not isinstance(meta, dict):
        return None, Damage(CONSOLIDATED, "has no 'metadata' mapping")
    return meta, None


def _own_keys(store: Location, meta: dict | None) -> list[str]:
    """The keys of the store's own metadata documents: from the consolidated copy, else by listing the store."""
    if meta is not None:
        return sorted(meta)
    return sorted(k for k in store.list() if k.rsplit("/", 1)[-1] in _OWN)


def damaged(store: Location) -> list[Damage]:
    """Every metadata document of ``store`` that is missing, empty, not a JSON object, or differs from its
    consolidated copy; and a stray ``zarr.json`` (zarr would read the store as format 3)."""
    meta, problem = _consolidated(store)
    found = [problem] if problem else []
    for key in _own_keys(store, meta):
        value, why = _parse(store.child(key).read())
        if why is not None:
            found.append(Damage(key, why))
        elif meta is not None and value != meta[key]:
            found.append(Damage(key, "differs from its copy in the consolidated metadata"))
    if store.child(_FOREIGN).read() is not None:
        found.append(Damage(_FOREIGN, "is there: zarr format 3's document, which a format 2 store has none of"))
    return found


def restore(store: Location, damage: list[Damage]) -> list[str]:
    """Rebuild each damaged document from its other copy; returns what could not be rebuilt, one line each.

    An own document is rewritten from the consolidated copy; the consolidated copy is rebuilt from the own
    documents when every one of them is whole; a stray ``zarr.json`` is removed.
    """
    meta, _ = _consolidated(store)
    left = []
    for item in damage:
        if item.key == _FOREIGN:
            store.child(_FOREIGN).remove()
        elif item.key == CONSOLIDATED:
            own = {}
            for key in _own_keys(store, None):
                value, why = _parse(store.child(key).read())
                if why is not None:
                    left.append(f"{CONSOLIDATED}: cannot rebuild it, {key} {why} too")
                    break
                own[key] = value
            else:
                document = {"metadata": own, "zarr_consolidated_format": 1}
                store.child(CONSOLIDATED).write(json.dumps(document, indent=4, sort_keys=True).encode())
        elif meta is not None and item.key in meta:
            store.child(item.key).write(json.dumps(meta[item.key], indent=4, sort_keys=True).encode())
        else:
            left.append(f"{item}: no whole copy to rebuild it from")
    return left


def _marked(store: Location) -> bool:
    """Whether either copy of the root attributes carries the rmtsweep store marker."""
    from .layout import FORMAT
    own, _ = _parse(store.child(".zattrs").read())
    meta, _ = _consolidated(store)
    copies = [own, (meta or {}).get(".zattrs")]
    return any(isinstance(c, dict) and c.get("rmtsweep_format") == FORMAT for c in copies)


def metadata_damage(path: Any) -> list[Damage]:
    """:func:`damaged` for the rmtsweep store at ``path`` (a path, URL or location); empty for anything else."""
    from .location import locate
    store = locate(path)
    return damaged(store) if store.exists() and _marked(store) else []


def restore_metadata(path: Any, damage: list[Damage]) -> list[str]:
    """:func:`restore` for the store at ``path``."""
    from .location import locate
    return restore(locate(path), damage)
