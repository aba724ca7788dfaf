"""The error hierarchy: every error rmtsweep raises on purpose is an :class:`RmtsweepError`.

Two branches, which the CLI maps to one line on stderr and no traceback:

- :class:`UserError`: a mistake in the input or the user's state (a sweep file, an option, a store
  path, a cluster address): exit status 2, fix it and run again.
- :class:`RunError`: a run that could not finish through no fault of its input (a task that keeps
  failing, a disk that fills, a lock that cannot be kept, a batch system that will not start its
  workers): exit status 1; finished tasks stay in the store and the same command resumes.

``except RmtsweepError`` catches both. The classes also subclass the matching builtin
(``ValueError``, ``RuntimeError``) so ordinary code keeps working.
"""

from __future__ import annotations

__all__ = ["ArgumentError", "BatchSystemError", "ClusterError", "RmtsweepError", "RunError", "SelectionError",
           "SettingsError", "StorageUnavailableError", "StoreError", "StoreWriteError", "SweepDefinitionError",
           "TaskFailedError", "UserError"]


class RmtsweepError(Exception):
    """The root of every error rmtsweep raises on purpose."""


class UserError(RmtsweepError, ValueError):
    """A mistake in the input or in the user's state (exit status 2)."""


class SweepDefinitionError(UserError):
    """A sweep file that cannot be read or does not validate."""


class StoreError(UserError):
    """A store path that is not usable: not an rmtsweep store, wrong sweep, not writable."""


class ClusterError(UserError):
    """A cluster that cannot be built or reached from the given options."""


class SelectionError(UserError):
    """A variable, axis, group or format that the store or command does not have."""


class SettingsError(UserError):
    """A setting of rmtsweep (dask's config under ``rmtsweep``) out of its range, unknown, or in a malformed file."""


class ArgumentError(UserError):
    """An argument that a Python function of rmtsweep cannot take: out of its domain, or missing."""


class RunError(RmtsweepError, RuntimeError):
    """A run that stopped on a failure that is not a user mistake (exit status 1)."""


class BatchSystemError(RunError):
    """The batch system gave the run no worker: a submission it refused, or a job that ended before one joined."""


class StoreWriteError(RunError):
    """A worker could not write its task's chunks (disk full, permission, read-only, vanished store)."""


class TaskFailedError(RunError):
    """A task whose computation failed repeatedly."""


class StorageUnavailableError(RunError):
    """The storage of a store does not answer (an endpoint down, a network outage, a timeout)."""
