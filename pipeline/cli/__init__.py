"""The ``rmtsweep`` command line: the only room that knows all the others.

User mistakes (:class:`~rmtsweep.errors.RmtsweepError`) print one line on stderr and exit with
status 2, never a traceback; run failures (:class:`~rmtsweep.errors.RunError`) one line and status 1.
The commands live in :mod:`.running` (run, submit, work, demo, sweeps, show) and :mod:`.reading` (status,
verify, compare, plot, figures, export); each imports what it needs when it runs, so ``rmtsweep
--help`` answers at once. :mod:`.serving` holds ``serve``, the live page of a store; :mod:`.caching` holds
``cache``, the theory cache.
"""

from __future__ import annotations

from . import caching, reading, running, serving  # noqa: F401  (registers the commands)
from ._group import cli, main, script

__all__ = ["cli", "main", "script"]
