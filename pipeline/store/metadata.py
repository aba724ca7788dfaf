"""The store's metadata documents: each a JSON object, each equal to its copy in the consolidated metadata.

A zarr (format 2) store keeps every group's and array's metadata twice: in its own small documents
(``.zgroup``, ``.zattrs``, ``.zarray``) and together in ``.zmetadata``, which readers use. A damaged
consolidated copy stops every reader; a damaged own document hides behind the consolidated copy until
something reads it. :func:`damaged` names both kinds, :func:`restore` rebuilds a damaged document from
its other copy where that one is whole.

Only the store's own documents count: the root's, those of the arrays its layout declares
(:func:`rmtsweep.store.layout.declared_arrays`), of its theory arrays and of the groups commands write;
a stray document (``junk/.zarray``) is never taken into a rebuilt consolidated copy. A document whose
both copies are damaged cannot be rebuilt in place: the store is rebuilt from its sweep file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .backend import Location

__all__ = ["CONSOLIDATED", "Damage", "consolidated_problem", "beyond_repair", "damaged", "metadata_damage",
           "rebuild_hint", "restore", "restore_metadata", "root_attrs_lost", "unrestorable"]

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


def _marked(copy: Any) -> bool:
    """Whether ``copy`` (a parsed root ``.zattrs``) carries the rmtsweep store marker."""
    from .layout import FORMAT
    return isinstance(copy, dict) and copy.get("rmtsweep_format") == FORMAT


def _root_attrs(store: Location, meta: dict | None) -> dict | None:
    """The store's root attributes from whichever copy is whole and marked (its own first), or ``None``."""
    own, _ = _parse(store.child(".zattrs").read())
    return next((c for c in (own, (meta or {}).get(".zattrs")) if _marked(c)), None)


def _declared(attrs: dict | None) -> tuple[set[str], set[str]] | None:
    """:func:`~rmtsweep.store.layout.declared_arrays` of the sweep recorded in ``attrs``, or ``None``."""
    from ..spec import parse_sweep
    from .layout import declared_arrays
    try:
        stored = json.loads((attrs or {})["sweep_canonical"])
        return declared_arrays(parse_sweep(stored, "the stored sweep", stored=True))
    except Exception:  # noqa: BLE001 - no readable sweep: nothing is declared
        return None


def _belongs(key: str, names: set[str]) -> bool:
    """Whether ``key`` is one of the store's own documents: the root's, a declared or theory array's, a group's."""
    from .layout import GROUPS, THEORY_PREFIXES
    if key in (".zgroup", ".zattrs"):
        return True
    head, _, rest = key.partition("/")
    return head in GROUPS or (rest in _OWN and (head in names or head.startswith(THEORY_PREFIXES)))


def _own_keys(store: Location, meta: dict | None, names: set[str] | None = None) -> list[str]:
    """The keys of the store's own metadata documents: from the consolidated copy, else by listing the store
    (only those that belong to it, when its declared arrays ``names`` are known)."""
    if meta is not None:
        return sorted(meta)
    return sorted(k for k in store.list() if k.rsplit("/", 1)[-1] in _OWN and (names is None or _belongs(k, names)))


def damaged(store: Location) -> list[Damage]:
    """Every metadata document of ``store`` that is missing, empty, not a JSON object, or differs from its
    consolidated copy; and a stray ``zarr.json`` (zarr would read the store as format 3)."""
    meta, problem = _consolidated(store)
    found = [problem] if problem else []
    declared = _declared(_root_attrs(store, meta))
    for key in _own_keys(store, meta, None if declared is None else declared[0]):
        value, why = _parse(store.child(key).read())
        if why is not None:
            found.append(Damage(key, why))
        elif meta is not None and value != meta[key]:
            found.append(Damage(key, "differs from its copy in the consolidated metadata"))
    if store.child(_FOREIGN).read() is not None:
        found.append(Damage(_FOREIGN, "is there: zarr format 3's document, which a format 2 store has none of"))
    return found


def unrestorable(store: Location, damage: list[Damage]) -> list[str]:
    """What :func:`restore` cannot rebuild, one line each naming the document and the fix that works (reads only)."""
    meta, _ = _consolidated(store)
    attrs = _root_attrs(store, meta)
    left = []
    for item in damage:
        if item.key == CONSOLIDATED:
            left += [f"{CONSOLIDATED} {item.reason}, and verify cannot rebuild it ({why}); {rebuild_hint(attrs)}"
                     for why in _consolidation_gaps(store, attrs)[:1]]
        elif item.key != _FOREIGN and (meta is None or item.key not in meta):
            left.append(f"{item}, and verify cannot rebuild it (its copy in {CONSOLIDATED} is damaged too); "
                        f"{rebuild_hint(attrs)}")
    return left


def _consolidation_gaps(store: Location, attrs: dict | None) -> list[str]:
    """Why the consolidated copy cannot be rebuilt from the own documents (empty when it can)."""
    declared = _declared(attrs)
    if declared is None:
        return ["the root's .zattrs has no readable sweep"]
    names, required = declared
    gaps, whole = [], set()
    for key in _own_keys(store, None, names):
        _, why = _parse(store.child(key).read())
        if why is None:
            whole.add(key)
        else:
            gaps.append(f"{key} {why} too")
    gaps += [f"{name}/.zarray is missing too" for name in sorted(required) if f"{name}/.zarray" not in whole]
    return gaps


def rebuild_hint(attrs: dict | None) -> str:
    """How to rebuild the store from its sweep file: a new store of the same sweep recomputes every replicate,
    bit for bit the same."""
    sweep = (attrs or {}).get("sweep_file") or "SWEEP.yaml"
    overrides = "".join(f" {o}" for o in (attrs or {}).get("sweep_overrides", []))
    return f"rebuild the store from its sweep file: `rmtsweep run {sweep}{overrides} --store NEW.zarr`"


def beyond_repair(store: Location, damage: list[Damage] | None = None) -> str | None:
    """The first damaged document (of ``damage``, default: all) that ``verify --repair`` cannot rebuild, named
    with how to rebuild the store from its sweep file; ``None`` when it can rebuild every one."""
    left = unrestorable(store, damaged(store) if damage is None else damage)
    return left[0] if left else None


def restore(store: Location, damage: list[Damage]) -> list[str]:
    """Rebuild each damaged document from its other copy; returns what could not be rebuilt, one line each, and
    then changes nothing (:func:`unrestorable`).

    An own document is rewritten from the consolidated copy; the consolidated copy is rebuilt from the store's own
    documents when every one of them is whole; a stray ``zarr.json`` is removed.
    """
    if left := unrestorable(store, damage):
        return left
    meta, _ = _consolidated(store)
    for item in damage:
        if item.key == _FOREIGN:
            store.child(_FOREIGN).remove()
        elif item.key == CONSOLIDATED:
            declared = _declared(_root_attrs(store, None))
            assert declared is not None           # unrestorable() said so
            own = {key: _parse(store.child(key).read())[0] for key in _own_keys(store, None, declared[0])}
            document = {"metadata": own, "zarr_consolidated_format": 1}
            store.child(CONSOLIDATED).write(json.dumps(document, indent=4, sort_keys=True).encode())
        elif meta is not None:
            store.child(item.key).write(json.dumps(meta[item.key], indent=4, sort_keys=True).encode())
    return []


def root_attrs_lost(store: Location) -> str | None:
    """What is lost, and how to rebuild, for a store whose root attributes are damaged in both copies (an
    rmtsweep store by its arrays: it has ``done``); ``None`` when a copy is whole or it is no such store."""
    meta, problem = _consolidated(store)
    if _root_attrs(store, meta) is not None or store.child("done/.zarray").read() is None:
        return None
    _, own = _parse(store.child(".zattrs").read())
    copy = f"{CONSOLIDATED} {problem.reason}" if problem else f"its copy in {CONSOLIDATED} has no store marker"
    return (f"its root attributes are lost (.zattrs {own or 'has no store marker'}; {copy}), and with them its "
            f"sweep, seed and record of runs, so no command can trust its data; "
            f"{rebuild_hint(None)}")


def metadata_damage(path: Any) -> list[Damage]:
    """:func:`damaged` for the rmtsweep store at ``path`` (a path, URL or location); empty for anything else."""
    from .location import locate
    store = locate(path)
    return damaged(store) if store.exists() and _root_attrs(store, _consolidated(store)[0]) is not None else []


def restore_metadata(path: Any, damage: list[Damage]) -> list[str]:
    """:func:`restore` for the store at ``path``."""
    from .location import locate
    return restore(locate(path), damage)
