"""rmtsweep's settings in dask's config, under the key ``rmtsweep`` (defaults: the shipped ``rmtsweep.yaml``).

Importing this module adds the shipped defaults to ``dask.config`` below whatever is already set, so a
value can be changed the ways dask's own settings are: a YAML file in ``~/.config/dask/``, an environment
variable (``DASK_RMTSWEEP__RUN__WINDOW__PER_THREAD=8``: read when dask is imported) or
``dask.config.set({"rmtsweep.run.window.per-thread": 8})``. The modules that use a value call :func:`get` at
the point of use, so a change takes effect for the next run; ``import rmtsweep`` alone stays free of dask
(the command line starts sooner), and the defaults are loaded when a module first reads a value.

Every value is checked against one schema (:class:`Settings`: a type and a range per key) whenever it is
read, whichever way it was set; :func:`check` checks them all at once (every command does, before it
touches a cluster or a store). A wrong value, an unknown key or a malformed YAML file of dask's config
raises :class:`~rmtsweep.errors.SettingsError`, in one line that names the key, the value and the range.

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

import ast
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from . import shipped
from .errors import SettingsError

__all__ = ["MACHINE_KEYS", "PATH", "Settings", "allowed", "check", "current", "defaults", "get", "keys", "recordable",
           "recorded", "settings"]


def _malformed(exc: ValueError) -> str:
    """One line for dask's error on a YAML file of its config that it cannot read (a many-line message)."""
    found = re.search(r"config file at '(.*?)' is malformed", str(exc))
    if found is None:
        return f"dask's configuration cannot be read: {' '.join(str(exc).split())}"
    path = found.group(1)
    try:
        yaml.safe_load(Path(path).read_text())
        why = "its top level must be a mapping (key: value)"
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        why = f"{where}{err.problem or err.context}"
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as err:
        why = " ".join(str(err).split())
    return f"{path}: malformed YAML in dask's configuration ({why}); fix or remove the file"


try:
    import dask.config
except ValueError as _exc:               # dask reads its YAML files when it is imported, and refuses a malformed one
    raise SettingsError(_malformed(_exc)) from None

PATH = shipped.SETTINGS
"""The shipped defaults, commented (docs/user-guide/configuration.md describes every key)."""


@dataclass(frozen=True)
class _Range:
    """What a key may be, in words: the error messages' and the docs' (test_config keeps the two in step)."""

    text: str


def _no_bool(value: Any) -> Any:
    # YAML's `true` would pass as 1: a switch is no count or duration
    if isinstance(value, bool):
        raise ValueError("a truth value is not a number")
    return value


_Number = BeforeValidator(_no_bool)
Seconds = Annotated[float, _Number, Field(gt=0.0, allow_inf_nan=False), _Range("seconds > 0, finite")]
Rate = Annotated[float, _Number, Field(gt=0.0, allow_inf_nan=False), _Range("a number > 0, finite")]
Limit = Annotated[float, _Number, Field(ge=0.0, allow_inf_nan=False), _Range("a number >= 0, finite")]
SecondsBudget = Annotated[float, _Number, Field(ge=0.0, allow_inf_nan=False), _Range("seconds >= 0, finite")]
Count = Annotated[int, _Number, Field(ge=1), _Range("a whole number >= 1")]
Budget = Annotated[int, _Number, Field(ge=0), _Range("a whole number >= 0")]
Port = Annotated[int, _Number, Field(ge=1, le=65535), _Range("a port number, 1-65535")]
Interval = Annotated[float, _Number, Field(ge=0.5, allow_inf_nan=False), _Range("seconds >= 0.5, finite")]
# dask reads the environment's `none` (and YAML's null) as None: the same switch
Folder = Annotated[str, BeforeValidator(lambda v: "none" if v is None else v), Field(min_length=1),
                   _Range("a folder, default (the user's cache folder) or none (off)")]


def _hyphens(name: str) -> str:
    return name.replace("_", "-")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=_hyphens, populate_by_name=True)


class Window(_Section):
    """``rmtsweep.run.window``: tasks kept in flight."""

    min_in_flight: Count
    per_thread: Count
    adaptive_per_thread: Count
    refresh: Seconds


class Run(_Section):
    """``rmtsweep.run``: the window, the submission, the retries."""

    window: Window
    submit_batch: Count
    retries: Budget


class Batching(_Section):
    """``rmtsweep.batching``: how much work a task of a new store holds."""

    target_task_seconds: Seconds
    progressive_blocks: Count
    driver_tasks_per_second: Rate


class Lock(_Section):
    """``rmtsweep.lock``: the lease and the heartbeat (checked below the lease by :func:`check`)."""

    lease: Seconds
    heartbeat: Seconds


class Progress(_Section):
    """``rmtsweep.progress``."""

    line_seconds: Seconds


class Theory(_Section):
    """``rmtsweep.theory``: what a new store's theory may cost, and where its draws are cached."""

    finite_t_below: Limit
    finite_t_budget: SecondsBudget
    one_token_budget: Budget
    finite_size_budget: Budget
    pooled_budget: Limit
    cache: Folder = "default"        # where this machine keeps results: not recorded (MACHINE_KEYS)


class StoreWrites(_Section):
    """``rmtsweep.store``."""

    done_writers: Count


class BatchSystem(_Section):
    """``rmtsweep.batch-system``."""

    submit_timeout: Seconds
    status_timeout: Seconds
    query_timeout: Seconds


class Scheduler(_Section):
    """``rmtsweep.scheduler``."""

    connect_timeout: Seconds
    probe_timeout: Seconds
    workers_timeout: Seconds
    dashboard_port: Port


class Serve(_Section):
    """``rmtsweep.serve``: the live page."""

    interval: Interval
    rate_window: Seconds
    stall: Seconds


class Compare(_Section):
    """``rmtsweep.compare``."""

    limit_budget: Budget
    list_all: Count


class Settings(_Section):
    """Every setting of ``rmtsweep``: its type and range (the shipped file gives every value)."""

    run: Run
    batching: Batching
    lock: Lock
    progress: Progress
    theory: Theory
    store: StoreWrites
    batch_system: BatchSystem
    scheduler: Scheduler
    serve: Serve
    compare: Compare


def defaults() -> dict[str, Any]:
    """The shipped defaults, ``{"rmtsweep": {...}}`` (parsed once; do not change the returned dict)."""
    return shipped.defaults()


def _model_at(parts: tuple[str, ...]) -> type[BaseModel] | None:
    """The section model that holds the key ``parts[-1]`` (``None`` if a part on the way is no section)."""
    model: type[BaseModel] = Settings
    for part in parts[:-1]:
        field = model.model_fields.get(part.replace("-", "_"))
        annotation = field.annotation if field is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return None
        model = annotation
    return model


def keys() -> list[str]:
    """Every setting's dotted key below ``rmtsweep`` (``"lock.lease"``, ...), in the shipped file's order."""
    def walk(tree: dict, prefix: str) -> list[str]:
        return [k for name, value in tree.items()
                for k in (walk(value, f"{prefix}{name}.") if isinstance(value, dict) else [f"{prefix}{name}"])]
    return walk(defaults()["rmtsweep"], "")


def allowed(key: str) -> str:
    """What the setting ``rmtsweep.<key>`` may be, in words (``"seconds > 0, finite"``)."""
    parts = tuple(_hyphens(key).split("."))
    model = _model_at(parts)
    field = model.model_fields.get(parts[-1].replace("-", "_")) if model is not None else None
    if field is None:
        raise KeyError(key)
    texts = [m.text for m in field.metadata if isinstance(m, _Range)]
    if not texts:
        raise KeyError(key)                 # a section, not a setting
    extra = "; below rmtsweep.lock.lease" if parts == ("lock", "heartbeat") else ""
    return texts[0] + extra


def _merged(shipped: dict, given: Any) -> Any:
    """``given`` (dask's tree, ``-`` or ``_`` in its keys) over ``shipped``, with ``-`` in every key."""
    if not isinstance(given, dict) or not isinstance(shipped, dict):
        return given
    out = dict(shipped)
    for spelled in sorted(given, key=lambda k: "-" in str(k)):       # the ``-`` spelling last: dask's get prefers it
        name = _hyphens(str(spelled))
        out[name] = _merged(shipped.get(name, {}), given[spelled]) if isinstance(given[spelled], dict) \
            else given[spelled]
    return out


def _source(parts: tuple[str, ...], value: Any) -> str:
    """Where the value ``value`` of ``rmtsweep.<parts>`` came from, in a few words ("" if not found)."""
    key = ".".join(("rmtsweep", *parts))
    for name, raw in os.environ.items():
        spelled = _hyphens(name[5:].lower().replace("__", ".")) if name.startswith("DASK_") else ""
        if isinstance(value, dict) and spelled.startswith(f"{key}."):
            return f" (environment variable {name})"              # a key below an unknown section
        if spelled == key:
            try:
                seen = ast.literal_eval(raw)
            except (SyntaxError, ValueError):
                seen = raw
            if seen == value or raw == value:
                return f" (environment variable {name})"
    try:
        files = list(dask.config.collect_yaml(dask.config.paths, return_paths=True))
    except ValueError:
        files = []
    for path, tree in reversed(files):               # the later file wins in dask's merge
        node: Any = tree
        for part in ("rmtsweep", *parts):
            node = {_hyphens(str(k)): v for k, v in node.items()}.get(part) if isinstance(node, dict) else None
        if node is not None and node == value:
            return f" (in {path})"
    return ""


def _message(error: Any) -> str:
    """One line for a validation error of the merged tree."""
    parts = tuple(str(p) for p in error["loc"])
    key = ".".join(("rmtsweep", *parts))
    model = _model_at(parts)
    if error["type"] == "extra_forbidden":
        known = list(model.model_fields) if model is not None else []
        names = [_hyphens(n) for n in known]
        close = difflib.get_close_matches(parts[-1], names, n=1)
        hint = f"; did you mean {'.'.join(('rmtsweep', *parts[:-1], close[0]))}?" if close else ""
        where = ".".join(("rmtsweep", *parts[:-1]))
        return (f"{key}: no such setting{_source(parts, error['input'])}{hint} (the settings of {where}: "
                f"{', '.join(names)})")
    value, source = error["input"], _source(parts, error["input"])
    if error["type"] in ("model_type", "model_attributes_type"):       # a section set to a value
        sub = _model_at((*parts, ""))
        fields = ", ".join(_hyphens(n) for n in (sub.model_fields if sub is not None else ()))
        return f"{key} = {value!r}{source}: must be a mapping of {fields}"
    return f"{key} = {value!r}{source}: must be {allowed('.'.join(parts))}"


def _validate(tree: Any) -> Settings:
    try:
        valid = Settings.model_validate(tree)
    except ValidationError as exc:
        errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")    # a typo explains the rest
        raise SettingsError(_message(errors[0])) from None
    if valid.lock.heartbeat >= valid.lock.lease:
        where = _source(("lock", "heartbeat"), valid.lock.heartbeat)
        raise SettingsError(f"rmtsweep.lock.heartbeat = {valid.lock.heartbeat!r}{where}: must be below "
                            f"rmtsweep.lock.lease ({valid.lock.lease!r}), so that a live run's lock is never taken "
                            f"for a stale one")
    return valid


def current() -> dict[str, Any]:
    """Every setting now, checked and typed: ``{"run": {"window": {"min-in-flight": 4, ...}, ...}, ...}``.

    Falls back to the shipped default where a key is missing from dask's config, as it is after a
    ``dask.config.set`` made before this module was imported removed its own keys on exit.

    Raises
    ------
    SettingsError
        A value out of its range or of the wrong type, or an unknown key below ``rmtsweep``.
    """
    tree = _merged(defaults()["rmtsweep"], dask.config.get("rmtsweep", default={}))
    return _validate(tree).model_dump(by_alias=True)


def check() -> None:
    """Check every setting now (:func:`current`): what every command does before it starts anything.

    Raises
    ------
    SettingsError
        In one line, naming the key, the value, where it was set, and what it may be.
    """
    _no_section_replaced()
    current()


def _no_section_replaced() -> None:
    """Refuse a section set to a value in a file or the environment (``DASK_RMTSWEEP__LOCK=5``): dask's merge
    with the shipped defaults drops such a value without a word, so :func:`current` never sees it."""
    raw = {_hyphens(str(k)): v for k, v in dask.config.collect().items()}.get("rmtsweep")

    def walk(node: Any, parts: tuple[str, ...], model: type[BaseModel]) -> None:
        if node is None:
            return
        if not isinstance(node, dict):
            key = ".".join(("rmtsweep", *parts))
            fields = ", ".join(_hyphens(n) for n in model.model_fields)
            raise SettingsError(f"{key} = {node!r}{_source(parts, node)}: must be a mapping of {fields}")
        spelled = {_hyphens(str(k)): v for k, v in node.items()}
        for name, field in model.model_fields.items():
            sub = field.annotation
            if isinstance(sub, type) and issubclass(sub, BaseModel):
                walk(spelled.get(_hyphens(name)), (*parts, _hyphens(name)), sub)
    walk(raw, (), Settings)


def get(key: str) -> Any:
    """The setting ``rmtsweep.<key>`` now, checked and typed (``key`` dotted, e.g. ``"lock.lease"``; ``-`` and
    ``_`` alike).

    Raises
    ------
    KeyError
        When ``key`` is not a setting of the shipped defaults.
    SettingsError
        When any setting is not valid (:func:`current`).
    """
    node: Any = current()
    for part in _hyphens(key).split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


MACHINE_KEYS: dict[str, tuple[str, ...]] = {"theory": ("cache",)}
"""The settings of a section that say where this machine keeps things, not what a store holds: a store records
none of them (:func:`recordable`), so that its bytes do not depend on the machine that made it."""


def settings(section: str) -> dict[str, Any]:
    """Every value of ``rmtsweep.<section>`` now, by its name in the shipped file (JSON-able)."""
    return dict(current()[section])


def recordable(section: str) -> dict[str, Any]:
    """The values of ``rmtsweep.<section>`` now that decide what a store holds: :func:`settings` without
    :data:`MACHINE_KEYS` (what a store records in ``attrs["config"]``)."""
    return {k: v for k, v in settings(section).items() if k not in MACHINE_KEYS.get(section, ())}


def recorded(section: str, values: Any) -> dict[str, Any]:
    """``values``, a section's settings as a store recorded them (``attrs["config"][section]``), checked and typed
    (without :data:`MACHINE_KEYS`, which a store does not record).

    Raises
    ------
    SettingsError
        A record that is not every key of the section with a value in its range (says which).
    """
    model = _model_at((section, ""))
    assert model is not None, section
    if not isinstance(values, dict):
        raise SettingsError(f"the recorded rmtsweep.{section} is {values!r}, not a mapping of its settings")
    try:
        valid = model.model_validate(values).model_dump(by_alias=True)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = ".".join((section, *(str(p) for p in error["loc"])))
        if error["type"] in ("missing", "extra_forbidden"):
            what = "missing" if error["type"] == "missing" else "not a setting"
        else:
            what = f"{error['input']!r}, not {allowed(key)}"
        raise SettingsError(f"the recorded rmtsweep.{key} is {what}") from None
    return {k: v for k, v in valid.items() if k not in MACHINE_KEYS.get(section, ())}


dask.config.update_defaults(defaults())
