"""Sweep files: YAML in, a validated, frozen :class:`Sweep` out (parse once, at the boundary).

Every error names the file, the field and the bad value, in one line, and is raised as
:class:`~rmtsweep.errors.SweepDefinitionError`. A sweep file looks like::

    name: demo
    d: 300                                        # or, as a grid axis: grid.d: [100, 200, 400]
    replicates: 8
    seed: 2026
    correlation: {model: prefix, L: 4}            # or your own R(T): {model: python, function: "pkg.mod:R"}
    table_centering: class
    top_k: 3
    grid:
      delta: [0.5, 1.0]
      gamma: [0.25, 0.5]
      snr: {start: 0.0, stop: 6.0, num: 13}     # or a list
      T: [16]
      weights: [mean, optimal, harmonic]
    observables:                                  # optional
      spectrum: {bins: 100, max: 10.0}            # eigenvalue histogram of S/kappa
      ridge: {penalty: 0.1, test_samples: 2000}   # downstream task accuracy

Fields can be overridden from the command line (``rmtsweep run demo d=400 grid.T=4,16``): each
``KEY=VALUE`` sets a dotted path to a YAML value (a plain comma list is a list), ``~KEY`` removes one;
the result is validated like the file, and the overrides are kept with it (:attr:`SweepFile.overrides`,
the store's provenance). ``rmtsweep show`` prints the result (:meth:`Sweep.to_yaml`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from .dims import StoreDims, store_dims
from .errors import ArgumentError, SweepDefinitionError
from .model import CorrelationSpec, WeightsSpec
from .overrides import apply_overrides
from .shipped import resolve_sweep
from .sweep_errors import glued_colons, messages
from .types import Centering

__all__ = ["DEFAULT_NULL_REPLICATES", "Grid", "Observables", "RidgeSpec", "SpectrumSpec", "Sweep", "SweepFile",
           "apply_overrides", "as_sweep", "load_sweep", "parse_sweep", "sizes"]

_STRICT = ConfigDict(extra="forbid", frozen=True)
MAX_SWEEP_FILE = 4 * 2**20      # bytes: a sweep file's text is kept in every store's attributes
DEFAULT_NULL_REPLICATES = 99    # the fewest whose order statistic gives the level 0.01 exactly: 1/0.01 - 1
MAX_DESCRIPTION = 10_000        # characters: stored twice, in the attributes and their consolidated copy
MAX_T = 4096                    # a draw's sign law factors a T x T matrix: 128 MiB and seconds at this length
PositiveAxis = tuple[Annotated[float, Field(gt=0.0, allow_inf_nan=False)], ...]


def _axis(value: Any) -> Any:
    """A scalar, a list, or ``{start, stop, num}`` (inclusive linspace) -> a list."""
    if isinstance(value, dict):
        extra = set(value) - {"start", "stop", "num"}
        missing = {"start", "stop", "num"} - set(value)
        if extra or missing:
            raise ValueError(f"a range needs exactly the keys start, stop, num "
                             f"(unknown: {sorted(extra)}, missing: {sorted(missing)})")
        num = value["num"]
        if not isinstance(num, int) or num < 1:
            raise ValueError(f"range num must be a whole number >= 1, got {num!r}")
        return [float(x) for x in np.linspace(float(value["start"]), float(value["stop"]), num)]
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return [value]
    return value


def _unique(values: tuple) -> tuple:
    if len(values) == 0:
        raise ValueError("needs at least one value")
    if len(set(values)) != len(values):
        raise ValueError(f"values must be distinct, got {list(values)}")
    return values


class Grid(BaseModel):
    """The swept axes. ``snr`` is computed inside each task; the others each make grid cells.

    ``d`` (the embedding dimension) is optional: a sweep gives either a top-level ``d`` or ``grid.d``.
    """

    model_config = _STRICT
    d: tuple[Annotated[int, Field(ge=2, strict=False)], ...] | None = None
    delta: PositiveAxis
    gamma: PositiveAxis
    snr: tuple[Annotated[float, Field(ge=0.0, allow_inf_nan=False)], ...]
    T: tuple[Annotated[int, Field(ge=1, strict=False)], ...]
    weights: tuple[WeightsSpec, ...]

    @field_validator("d", "delta", "gamma", "snr", "T", mode="before")
    @classmethod
    def _expand(cls, v: Any) -> Any:
        return _axis(v)

    @field_validator("weights", mode="before")
    @classmethod
    def _names(cls, v: Any) -> Any:
        v = [v] if isinstance(v, (str, dict)) else v
        if not isinstance(v, (list, tuple)):
            return v                                   # pydantic names the wrong type in one line
        if not v:
            raise ValueError("needs at least one weights scheme, e.g. [mean]")
        return [{"scheme": x} if isinstance(x, str) else x for x in v]

    @field_validator("d", "delta", "gamma", "snr", "T")
    @classmethod
    def _distinct(cls, v: tuple | None) -> tuple | None:
        return v if v is None else _unique(v)

    @field_validator("T")
    @classmethod
    def _factorable(cls, v: tuple, info: ValidationInfo) -> tuple:
        # a new run's draws factor T x T matrices; a store made before the limit stays readable
        if not (info.context or {}).get("stored") and (long := [T for T in v if T > MAX_T]):
            raise ValueError(f"{long[0]} is longer than {MAX_T:,}, the longest sequence a run draws: its draws "
                             f"factor T x T matrices")
        return v


class SpectrumSpec(BaseModel):
    """Histogram of the eigenvalues of ``S / kappa`` on ``bins`` equal bins over ``[0, max]``."""

    model_config = _STRICT
    bins: Annotated[int, Field(ge=1, le=10_000)] = 100
    max: Annotated[float, Field(gt=0.0, allow_inf_nan=False)] = 10.0

    def edges(self) -> np.ndarray:
        """The bin edges."""
        return np.linspace(0.0, self.max, self.bins + 1)


class RidgeSpec(BaseModel):
    """The downstream task: ridge regression of the labels on the pooled vectors (docs/theory.md)."""

    model_config = _STRICT
    penalty: Annotated[float, Field(ge=0.0, allow_inf_nan=False)] = 0.1
    test_samples: Annotated[int, Field(ge=2)] = 2000


class Observables(BaseModel):
    """Optional observables beyond the top-k eigenpairs (each costs a full decomposition per SNR)."""

    model_config = _STRICT
    spectrum: SpectrumSpec | None = None
    ridge: RidgeSpec | None = None


class Sweep(BaseModel):
    """A validated sweep definition (frozen). Build it with :func:`load_sweep` or :func:`parse_sweep`."""

    model_config = _STRICT
    name: Annotated[str, Field(min_length=1, pattern=r"^[A-Za-z0-9._-]+$")]
    description: Annotated[str, Field(max_length=MAX_DESCRIPTION)] = ""
    d: Annotated[int, Field(ge=2)] | None = None
    replicates: Annotated[int, Field(ge=1)]
    replicates_per_task: Annotated[int, Field(ge=1)] | None = None
    null_replicates: Annotated[int, Field(ge=0)] | None = None
    points_per_task: Annotated[int, Field(ge=1)] | None = None
    seed: Annotated[int, Field(ge=0)]
    correlation: CorrelationSpec
    table_centering: Centering = "class"
    top_k: Annotated[int, Field(ge=1)] = 3
    observables: Observables = Observables()
    grid: Grid

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """``cells_per_task``, the old name of ``points_per_task``, is read as it (files and stores use it)."""
        if isinstance(data, dict) and "cells_per_task" in data:
            if "points_per_task" in data:
                raise ValueError("give points_per_task, or cells_per_task (its old name), not both")
            data = {("points_per_task" if k == "cells_per_task" else k): v for k, v in data.items()}
        return data

    @property
    def cells_per_task(self) -> int | None:
        """The old name of :attr:`points_per_task`."""
        return self.points_per_task

    def weight_labels(self) -> list[str]:
        """The ``weights`` coordinate: one label per scheme."""
        return [w.label for w in self.grid.weights]

    @property
    def d_axis(self) -> bool:
        """Whether ``d`` is a grid axis (``grid.d`` given) rather than one top-level value."""
        return self.grid.d is not None

    @property
    def d_values(self) -> tuple[int, ...]:
        """Every ``d`` of the sweep: ``grid.d`` in its order, or ``(d,)``."""
        if self.grid.d is not None:
            return tuple(self.grid.d)
        return () if self.d is None else (self.d,)

    @property
    def dims(self) -> StoreDims:
        """The dimensions of this sweep's store (:func:`rmtsweep.dims.store_dims`)."""
        return store_dims(self.d_axis)

    def sizes(self, delta: float, gamma: float, d: int | None = None) -> tuple[int, int]:
        """``V = round(d / delta)`` and ``N = round(d / gamma)`` (:func:`sizes`).

        ``d`` defaults to the top-level ``d``; a sweep with ``grid.d`` needs it.
        """
        if d is None:
            if self.d is None:
                raise ArgumentError(f"sweep {self.name!r} sweeps d (grid.d = {list(self.d_values)}); pass d")
            d = self.d
        return sizes(d, delta, gamma)

    def canonical(self, batching: bool = True) -> dict[str, Any]:
        """The definition as plain JSON-able data (defaults filled in).

        ``batching=False`` leaves out ``points_per_task`` and ``replicates_per_task``: how work is cut
        into tasks changes no result, so two sweeps that differ only there hold the same numbers.
        An unset ``points_per_task`` is left out either way (hashes of sweeps written before it existed
        stay the same), and so are an unset ``grid.d`` and, with ``grid.d``, the unset top-level ``d``.
        ``points_per_task`` is written under its old name ``cells_per_task``, so that the hash of a sweep
        that sets it, and so the stores made of it, stay the same.
        """
        out = self.model_dump(mode="json")
        points_per_task = out.pop("points_per_task")
        if not batching:
            out.pop("replicates_per_task")
        if batching and points_per_task is not None:
            out["cells_per_task"] = points_per_task
        if out["grid"]["d"] is None:
            out["grid"].pop("d")
        if out["d"] is None:
            out.pop("d")
        if out["null_replicates"] is None:
            out.pop("null_replicates")
        return out

    @property
    def null_replicate_count(self) -> int:
        """The ``snr = 0`` null replicates a run schedules per point for the cells without a law at the store's size.

        Those are the data-dependent weights over ``T >= 2`` on a class-centred table (:attr:`null_schemes`).
        ``null_replicates`` when set, else :data:`DEFAULT_NULL_REPLICATES`; 0 when no cell needs them.
        """
        if not self.null_schemes or max(self.grid.T) < 2:
            return 0
        return DEFAULT_NULL_REPLICATES if self.null_replicates is None else self.null_replicates

    @property
    def null_schemes(self) -> tuple[int, ...]:
        """Positions on ``grid.weights`` of the schemes whose cells over ``T >= 2`` have no law at the store's size
        (data-dependent weights on a class-centred table) and so get scheduled null replicates."""
        if self.table_centering != "class":
            return ()
        return tuple(i for i, w in enumerate(self.grid.weights) if w.data_dependent)

    def to_yaml(self) -> str:
        """The sweep as a sweep file, every default filled in (``rmtsweep show``); it reads back to this sweep.

        Lists of plain values are written on one line (``T: [4, 16]``), as sweep files usually are.
        """
        return yaml.dump(self.model_dump(mode="json"), Dumper=_FlowLists, sort_keys=False, allow_unicode=True,
                         width=100)

    def digest(self) -> str:
        """SHA-256 of the canonical definition: two files that mean the same sweep hash the same."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


class _FlowLists(yaml.SafeDumper):
    """A YAML dumper that writes a list of scalars in flow style (``[0.5, 1.0]``) and the rest in block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(not isinstance(x, (list, dict)) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


_FlowLists.add_representer(list, _represent_list)


def sizes(d: int, delta: float, gamma: float) -> tuple[int, int]:
    """Vocabulary and sample sizes of a point: ``V = round(d / delta)``, ``N = round(d / gamma)``."""
    return round(d / delta), round(d / gamma)


@dataclass(frozen=True)
class SweepFile:
    """A sweep together with where it came from (for provenance): the file, its text, the overrides."""

    sweep: Sweep
    path: str
    text: str
    overrides: tuple[str, ...] = ()


def _check_d(s: Sweep) -> str | None:
    """Exactly one of the top-level ``d`` and ``grid.d``."""
    if s.d is not None and s.grid.d is not None:
        return (f"d: give either a top-level `d` or the axis `grid.d`, not both "
                f"(got d = {s.d} and grid.d = {list(s.grid.d)})")
    if s.d is None and s.grid.d is None:
        return "d: missing; give a top-level `d: 400` (one dimension) or the axis `grid.d: [100, 200, 400]`"
    return None


def _check_consistency(s: Sweep) -> list[str]:
    """Checks that need more than one field."""
    if (problem := _check_d(s)) is not None:
        return [problem]
    problems = []
    Ts = s.grid.T
    d = min(s.d_values)                       # V, N and the rank bound are smallest at the smallest d
    at = f" at d = {d} (the smallest of grid.d)" if s.d_axis else ""
    for field, axis in (("grid.delta", s.grid.delta), ("grid.gamma", s.grid.gamma)):
        bad = [i for i, x in enumerate(axis) if round(d / x) < 2]
        what = "V" if field == "grid.delta" else "N"
        if len(bad) == 1:
            x = axis[bad[0]]
            problems.append(f"{field}[{bad[0]}]: d/{field[5:]} = {d}/{x:g} rounds to {what} = "
                            f"{round(d / x)}{at}; need at least 2")
        elif bad:                             # one error for the field, however many of its values
            problems.append(f"{field}: d/{field[5:]} rounds to {what} < 2{at} for {len(bad)} of its values "
                            f"({', '.join(f'{axis[i]:g}' for i in bad)}); need at least 2")
    n_min = min(round(d / g) for g in s.grid.gamma)
    v_min = min(round(d / x) for x in s.grid.delta)
    if s.top_k > min(d, n_min, v_min):
        problems.append(f"top_k: {s.top_k} exceeds the rank bound min(d, V, N) = {min(d, n_min, v_min)}{at}")
    problems += s.correlation.problems(Ts)
    labels = s.weight_labels()
    for i, w in enumerate(s.grid.weights):
        problems += w.problems(Ts, f"grid.weights[{i}]")
        if w.data_dependent and (s.observables.spectrum or s.observables.ridge):
            problems.append(f"grid.weights[{i}]: {w.label} computes its weights per sequence; the spectrum and "
                            f"ridge observables are not available with it yet (drop `observables` or the scheme)")
        if labels.count(labels[i]) > 1 and labels.index(labels[i]) == i:
            problems.append(f"grid.weights[{i}]: label {labels[i]!r} appears twice; give one a `name`")
    if s.replicates_per_task is not None and s.replicates_per_task > s.replicates:
        problems.append(f"replicates_per_task: {s.replicates_per_task} exceeds replicates = {s.replicates}")
    return problems


def parse_sweep(data: Any, source: str = "<sweep>", *, stored: bool = False) -> Sweep:
    """Validate already-loaded YAML data; errors name ``source``.

    ``stored``: the sweep a store records. Limits that bound a new run only (``MAX_T``) are not applied, so a
    store made before a limit stays readable.
    """
    if not isinstance(data, dict):
        raise SweepDefinitionError(f"{source}: expected a mapping of sweep fields, got {type(data).__name__}")
    if glued := glued_colons(data):
        raise SweepDefinitionError(f"{source}: " + "; ".join(glued))
    try:
        sweep = Sweep.model_validate(data, context={"stored": stored})
    except ValidationError as exc:
        errors = [dict(e) for e in exc.errors()]
        raise SweepDefinitionError(f"{source}: " + "; ".join(messages(errors, data, Sweep))) from None
    problems = _check_consistency(sweep)
    if problems:
        raise SweepDefinitionError(f"{source}: " + "; ".join(problems))
    return sweep


def as_sweep(sweep: Sweep | SweepFile | str | Path) -> Sweep:
    """The :class:`Sweep` of ``sweep``: a Sweep, what :func:`load_sweep` returns, or a sweep file's path or a
    shipped sweep's name (``"demo"``), as :func:`rmtsweep.run_sweep` takes.

    Raises
    ------
    SweepDefinitionError
        A path or name that :func:`load_sweep` refuses.
    """
    if isinstance(sweep, SweepFile):
        return sweep.sweep
    return sweep if isinstance(sweep, Sweep) else load_sweep(sweep).sweep


def load_sweep(path: str | Path, overrides: Sequence[str] = ()) -> SweepFile:
    """Read and validate a sweep file (or a shipped sweep: ``"demo"``), with ``overrides`` (:func:`apply_overrides`).

    Raises
    ------
    SweepDefinitionError
        If the file is missing, is not YAML, or does not validate; the message names the file,
        the field and the bad value.
    """
    path = Path(path) if Path(path).exists() else resolve_sweep(path)
    try:
        if (size := path.stat().st_size) > MAX_SWEEP_FILE:     # give long axes as {start, stop, num} ranges
            raise SweepDefinitionError(f"{path}: {size:,} bytes; a sweep file may hold at most {MAX_SWEEP_FILE:,}")
        text = path.read_text()
    except OSError as exc:
        raise SweepDefinitionError(f"{path}: cannot read sweep file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SweepDefinitionError(f"{path}: YAML syntax error{where}: {problem}") from None
    if overrides:
        data = apply_overrides(data, overrides, str(path))
        source = f"{path} with {' '.join(overrides)}"
    else:
        source = str(path)
    return SweepFile(parse_sweep(data, source), str(path), text, tuple(overrides))
