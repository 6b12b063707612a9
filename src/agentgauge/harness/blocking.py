"""Catching an ``async def`` agent that blocks the event loop past its trial's deadline.

A trial's timeout is a timer on the event loop. An ``async def`` agent that runs
blocking code (``time.sleep(8)``, a synchronous HTTP client, a long computation)
holds the loop: the timer cannot fire until the agent next awaits, every other
trial waits with it, and an agent that finishes inside that one stretch used to be
recorded as a success however late it was.

It cannot be pre-empted (Python has no way to stop a running coroutine from
outside), but it can be seen: `StepClock` drives the agent's coroutine and times
each step, the code between two suspensions. A step during which the deadline
passed is the agent's own overrun, and the harness records the trial as a
timeout (docs/running-agents.md, "Timeouts"). Trials that were only made to wait
by another agent's step are not blamed for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Generator
from typing import Any, Generic, TypeVar

__all__ = ["StepClock"]

T = TypeVar("T")


class StepClock(Generic[T]):
    """Await ``awaitable`` (once), timing each of its steps against ``deadline``.

    ``deadline`` is in the running loop's clock (`asyncio.Timeout.when`); ``None``
    means no deadline.
    """

    def __init__(self, awaitable: Awaitable[T], deadline: float | None) -> None:
        self._awaitable = awaitable
        self.deadline = deadline
        self.overran_s: float | None = None
        """Length of the step during which the deadline passed (the loop was held for
        that long), or ``None`` when the deadline never passed inside a step."""

    def _timed(self, start: float, end: float) -> None:
        if self.deadline is not None and start < self.deadline <= end:
            self.overran_s = end - start

    def __await__(self) -> Generator[Any, Any, T]:
        steps = self._awaitable.__await__()
        clock = asyncio.get_running_loop().time
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            start = clock()
            try:
                yielded = steps.send(sent) if thrown is None else steps.throw(thrown)
            except StopIteration as stop:
                self._timed(start, clock())
                result: T = stop.value
                return result
            except BaseException:
                self._timed(start, clock())
                raise
            self._timed(start, clock())
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # a cancellation, handed to the agent as usual
                sent, thrown = None, exc
