"""What a store recorded of the settings that shape its content, and what a resume takes from it.

A store records ``rmtsweep.theory.*`` and ``rmtsweep.batching.*`` in ``attrs["config"]`` when its template is
written (:func:`rmtsweep.run.runner.make_template`). A resume follows that record, not the settings now: the
store keeps its own task blocking, and a store whose theory at its own size is still to be computed
(``theory_pending``) gets it with the budgets it recorded.
"""

from __future__ import annotations

from typing import Any

from .. import config
from ..errors import SettingsError, StoreError
from ..spec import SweepFile
from ..store import locate, open_group, store_problem
from ..store.handle import sweep_plan
from ..store.pending import theory_pending
from ..theory.grid import TheoryBudgets

__all__ = ["recorded_budgets", "resume_check"]


def recorded_budgets(attrs: dict, path: Any) -> tuple[TheoryBudgets, str | None]:
    """The theory budgets a store recorded (``attrs["config"]["theory"]``), with which its theory at its own size
    is computed, and a line naming those that differ from the settings ``rmtsweep.theory.*`` now (``None``: none).

    Raises
    ------
    StoreError
        The store records no theory settings, or ones this version cannot take.
    """
    record = attrs.get("config")
    why = "the store records no rmtsweep.theory settings (attrs['config']['theory'])"
    if isinstance(record, dict) and "theory" in record:
        try:
            values, why = config.recorded("theory", record["theory"]), ""
        except SettingsError as exc:
            why = str(exc)
    if why:
        raise StoreError(f"{path}: its theory at its own size is still to be computed, but {why}; move the store "
                         f"aside and rerun to start a new one")
    now = config.recordable("theory")
    differ = [f"{name} {values[name]:g} (now {now[name]:g})" for name in values if values[name] != now[name]]
    line = f"{path}: the store's recorded theory settings are used: {', '.join(differ)}" if differ else None
    return TheoryBudgets(**{name.replace("-", "_"): value for name, value in values.items()}), line


def resume_check(sweep_file: SweepFile, path: Any) -> None:
    """Refuse, before a cluster starts, to resume a store whose theory cannot be computed as it recorded.

    Only a store this sweep resumes as it is matters: an extension records the settings now.

    Raises
    ------
    StoreError
        As :func:`recorded_budgets`.
    """
    if store_problem(path) is not None:
        return                                  # a new store, or one that prepare refuses or repairs
    attrs = dict(open_group(path).attrs)
    if theory_pending(attrs) and sweep_plan(attrs, sweep_file, locate(path)) == "same":
        recorded_budgets(attrs, path)
