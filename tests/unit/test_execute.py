"""A run that is stopping marks done what is written, and nothing else: run.execute.salvage."""

from __future__ import annotations

import asyncio

import pytest

from rmtsweep.errors import RunError
from rmtsweep.run.execute import salvage


class _Finished:
    """A finished future: its result, or the exception its result raises."""

    def __init__(self, outcome) -> None:
        self.outcome = outcome

    def result(self, timeout: float | None = None):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


def _ready(*outcomes):
    return [(f"task-{i}", _Finished(o)) for i, o in enumerate(outcomes)]


def test_every_written_task_is_handed_over_whatever_the_others_raise():
    got = []
    salvage(_ready({"written": True}, ValueError("the task failed"), asyncio.CancelledError(), TimeoutError(),
                   {"os_error": (28, "No space left on device", "x")}, {"written": True}), got.append)
    assert got == [[("task-0", {"written": True}), ("task-5", {"written": True})]]


def test_nothing_written_calls_nothing():
    salvage(_ready(ValueError("failed")), lambda done: pytest.fail("called"))


@pytest.mark.parametrize("refusal", [RunError("the lock is lost"), OSError(28, "No space left on device")])
def test_a_store_that_refuses_the_marking_is_left_as_it_is(refusal):
    def on_done(done):
        raise refusal
    salvage(_ready({"written": True}), on_done)


@pytest.mark.parametrize("bug", [TypeError("a bug"), KeyboardInterrupt()])
def test_a_bug_or_a_second_interrupt_is_not_swallowed(bug):
    def on_done(done):
        raise bug
    with pytest.raises(type(bug)):
        salvage(_ready({"written": True}), on_done)
