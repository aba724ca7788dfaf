"""Your own weights scheme without editing rmtsweep: ``{scheme: python, function: ..., params: {...}}``.

``function`` names a Python function ``f(R, **params) -> w``: either ``"package.module:name"``, or
the name of an entry point in the group ``rmtsweep.weights`` that an installed package declares::

    # pyproject.toml of your package
    [project.entry-points."rmtsweep.weights"]
    geometric = "my_weights:geometric"

    # the sweep file
    grid:
      weights: [mean, {scheme: python, function: geometric, params: {ratio: 0.5}, name: geo}]

``f`` receives the ``T x T`` sign correlation ``R`` of each sequence length and returns ``T`` finite
weights, not all zero, used as given (no normalisation: the theory is scale invariant, and ``kappa``
carries the scale). The weights are fixed (the same for every sequence), so the theory applies as to
every fixed scheme, through ``alpha = w^T R w`` and ``kappa = ||w||^2``. The function is looked up
and called for every ``T`` of the sweep when the file is read, so a missing package, a wrong name,
a wrong length, or a module that fails as it is imported (its file and line named) is a one-line error
naming the field; every worker imports it too, so it must be installed where the workers run. An example
package is ``docs/plugin-example/``.
"""

from __future__ import annotations

import importlib
import math
import traceback
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Literal

import numpy as np
from pydantic import field_validator

from ..errors import SweepDefinitionError
from .weights import Scheme

__all__ = ["ENTRY_POINT_GROUP", "PythonScheme", "load_function"]

ENTRY_POINT_GROUP = "rmtsweep.weights"
Param = float | int | str | bool | list[float]


def load_function(function: str, group: str = ENTRY_POINT_GROUP, what: str = "weights function"
                  ) -> Callable[..., np.ndarray]:
    """The function ``"module:name"`` or the entry point ``function`` of ``group`` (``what`` names it in errors).

    Raises
    ------
    SweepDefinitionError
        (a ``ValueError``) It cannot be imported or found, or is not callable (the message says which and
        lists the entry points there are).
    """
    if ":" in function:
        module, _, name = function.partition(":")
        try:
            target = getattr(importlib.import_module(module), name)
        except Exception as exc:
            if _raised_by_plugin(exc):
                raise SweepDefinitionError(f"cannot import {module!r} ({_failure(exc)})") from None
            if isinstance(exc, ImportError):
                raise SweepDefinitionError(f"cannot import {module!r} ({exc}); is its package installed?") from None
            if isinstance(exc, AttributeError):
                raise SweepDefinitionError(f"module {module!r} has no {name!r}") from None
            raise
    else:
        found = {ep.name: ep for ep in entry_points(group=group)}
        if function not in found:
            known = ", ".join(sorted(found)) or "none installed"
            raise SweepDefinitionError(f"no {what} {function!r}: give 'package.module:name', or the name "
                                       f"of an entry point in {group!r} ({known})")
        try:
            target = found[function].load()
        except Exception as exc:
            if not (isinstance(exc, (ImportError, AttributeError)) or _raised_by_plugin(exc)):
                raise
            why = _failure(exc) if _raised_by_plugin(exc) else str(exc)
            raise SweepDefinitionError(f"entry point {function!r} ({found[function].value}) does not load "
                                       f"({why})") from None
    if not callable(target):
        raise SweepDefinitionError(f"{function!r} is not a function")
    return target


class PythonScheme(Scheme):
    """Weights from a user's function ``f(R, **params)`` (see the module)."""

    scheme: Literal["python"] = "python"
    function: str
    params: dict[str, Param] = {}

    @field_validator("function")
    @classmethod
    def _loads(cls, v: str) -> str:
        load_function(v)
        return v

    def _default_label(self) -> str:
        args = ",".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.function.rpartition(':')[2]}({args})" if args else self.function.rpartition(":")[2]

    def weights(self, R: np.ndarray) -> np.ndarray:
        w = np.asarray(load_function(self.function)(R, **self.params), dtype=float)
        T = R.shape[0]
        if w.shape != (T,) or not np.all(np.isfinite(w)) or not np.any(w):
            raise SweepDefinitionError(f"{self.function} returned {_describe(w)} for T = {T}; it must return {T} "
                                       "finite weights, not all zero")
        return w

    def problems(self, Ts: tuple[int, ...], where: str) -> list[str]:
        out = []
        for T in Ts:
            try:
                self.weights(np.eye(T))
            except Exception as exc:  # noqa: BLE001 - whatever the user's function raises, in one line
                out.append(f"{where}: {exc}" if isinstance(exc, ValueError) else
                           f"{where}: {self.function} failed for T = {T}: {type(exc).__name__}: {exc}")
                break
        return out


def _plugin_frames(exc: BaseException) -> list[traceback.FrameSummary]:
    """The frames of ``exc``'s traceback in the module being imported, after the import machinery's last one."""
    frames = traceback.extract_tb(exc.__traceback__)
    last = max((i for i, f in enumerate(frames) if f.filename.startswith("<frozen importlib")), default=None)
    return [] if last is None else frames[last + 1:]


def _raised_by_plugin(exc: BaseException) -> bool:
    """Whether ``exc`` comes from the plugin's own file: its syntax, or its code as it ran on import (not the
    import machinery failing to find it, nor a name the module lacks)."""
    return isinstance(exc, SyntaxError) or bool(_plugin_frames(exc))


def _failure(exc: BaseException) -> str:
    """``exc`` as one line with the file and line of the plugin where it was raised: ``FILE, line N: Type: msg``."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{exc.filename}, line {exc.lineno}: {type(exc).__name__}: {exc.msg}"
    frames = _plugin_frames(exc) or traceback.extract_tb(exc.__traceback__)[-1:]
    where = f"{frames[0].filename}, line {frames[0].lineno}: " if frames else ""
    return f"{where}{type(exc).__name__}: {exc}"


def _describe(w: np.ndarray) -> str:
    if w.ndim != 1:
        return f"an array of shape {w.shape}"
    bad = [x for x in w.tolist() if not math.isfinite(x)]
    return f"{w.size} values" + (f" with {bad[0]}" if bad else "") + (" all zero" if w.size and not np.any(w) else "")
