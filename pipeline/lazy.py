"""Names a package imports on first use (PEP 562), so that importing one of its modules does not import the rest."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, table: dict[str, tuple[str, str | None]],
               namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package`` for the names of ``table``.

    Parameters
    ----------
    package
        The package's ``__name__``.
    table
        Name -> (module, attribute): the module absolute, or relative to ``package`` when it starts with a
        dot; the attribute ``None`` for the module itself.
    namespace
        The package's ``globals()``: a name, once imported, is kept there and is not looked up again.
    """
    def __getattr__(name: str) -> Any:
        if name not in table:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attribute = table[name]
        value = importlib.import_module(module, package)
        value = value if attribute is None else getattr(value, attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(table))

    return __getattr__, __dir__
