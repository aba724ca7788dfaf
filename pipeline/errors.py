"""The error hierarchy: every user mistake is an :class:`RmtsweepError`.

The CLI maps these to one line on stderr and exit status 2, with no traceback. A :class:`RunError`
is a run that could not finish through no fault of its input (a task that keeps failing, a disk
that fills, a lock that cannot be kept, a batch system that will not start its workers): one line and
exit status 1. The classes also subclass the matching builtin so ordinary ``except ValueError``
code keeps working.
"""

from __future__ import annotations

__all__ = ["BatchSystemError", "ClusterError", "RmtsweepError", "RunError", "SelectionError", "StoreError",
           "StoreWriteError", "SweepDefinitionError", "TaskFailedError"]


class RmtsweepError(Exception):
    """Base class of all errors caused by user input or user state."""


class SweepDefinitionError(RmtsweepError, ValueError):
    """A sweep file that cannot be read or does not validate."""


class StoreError(RmtsweepError, ValueError):
    """A store path that is not usable: not an rmtsweep store, wrong sweep, not writable."""


class ClusterError(RmtsweepError, ValueError):
    """A cluster that cannot be built or reached from the given options."""


class SelectionError(RmtsweepError, ValueError):
    """A variable, axis, group or format that the store or command does not have."""


class RunError(RuntimeError):
    """A run that stopped on a failure that is not a user mistake (exit status 1)."""


class BatchSystemError(RunError):
    """The batch system gave the run no worker: a submission it refused, or a job that ended before one joined."""


class StoreWriteError(RunError):
    """A worker could not write its task's chunks (disk full, permission, read-only, vanished store)."""


class TaskFailedError(RunError):
    """A task whose computation failed repeatedly."""
