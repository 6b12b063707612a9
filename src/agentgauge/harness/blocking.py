"""Catching an ``async def`` agent that blocks the event loop past its trial's deadline,
and keeping the trials it held up from being blamed for it.

A trial's timeout is a timer on the event loop. An ``async def`` agent that runs
blocking code (``time.sleep(8)``, a synchronous HTTP client, a long computation)
holds the loop: the timer cannot fire until the agent next awaits, every other
trial waits with it, and an agent that finishes inside that one stretch used to be
recorded as a success however late it was.

It cannot be pre-empted (Python has no way to stop a running coroutine from
outside), but it can be seen: `StepClock` drives the agent's coroutine and times
each step, the code between two suspensions. A step during which the deadline
passed is the agent's own overrun, and the harness records the trial as a
timeout (docs/running-agents.md, "Timeouts").

The other trials were held up by it, and are not blamed for it: each trial runs on
a clock of its own. A step that holds the loop for `STALL_S` or more is a *stall*,
kept with its owner in the loop's `LoopLedger`. A trial that was waiting through
another's stall and resumes as soon as the loop is free again (within
`SETTLE_HOPS` loop iterations: what it waited for came while the loop was held) is
credited that stall: it pushes its deadline back by as much (`OwnDeadline`), so
work it had finished before a late timer fired counts. One whose wait went on past
the stall was not held up by it and is credited nothing. The loop cannot tell when,
during a stall, a wait ended: the credit is the whole stretch of the stall the
trial spent waiting, so the latency of a trial credited anything is unknown (the
harness records it as such, with the credit in its metadata).
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["SETTLE_HOPS", "STALL_S", "LoopLedger", "OwnDeadline", "StepClock", "loop_ledger"]

T = TypeVar("T")

#: Seconds a step must hold the loop to count as a stall: asyncio's own threshold for
#: a slow callback (``loop.slow_callback_duration``, reported in debug mode).
STALL_S = 0.1

#: Loop iterations after a stall within which a trial that resumes is taken to have
#: been kept waiting by it. What it waited for (a socket's data, a timer) arrived
#: while the loop was held, and reaches it in the first iterations after: the event,
#: then the futures and tasks it completes, one iteration each.
SETTLE_HOPS = 8

#: Stalls one chain keeps at most (stalls back to back, the loop never settling).
_CHAIN_LIMIT = 10_000


@dataclass(frozen=True)
class _Stall:
    start: float
    end: float
    owner: object
    joined: bool
    """It began before the loop had settled from the stall before it."""


class LoopLedger:
    """The stalls of one event loop, each with its owner (a trial's cell), while the
    loop has not settled from them (see the module docstring)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        # Weakly: the loops' ledgers are kept by loop, and must not keep a closed one.
        self._loop = weakref.ref(loop)
        self._chain: list[_Stall] = []
        self._generation = 0
        self._on_settled: list[Callable[[], None]] = []
        self.unsettled = False
        """A stall ended fewer than `SETTLE_HOPS` loop iterations ago."""

    def record(self, owner: object, start: float, end: float, joined: bool) -> None:
        """A step of ``owner`` held the loop from ``start`` to ``end``; ``joined``: the
        loop had not settled from an earlier stall when the step began."""
        if end - start < STALL_S:
            return
        if not joined:
            self._chain.clear()
        elif len(self._chain) >= _CHAIN_LIMIT:
            del self._chain[0]
        self._chain.append(_Stall(start, end, owner, joined))
        self._generation += 1
        self.unsettled = True
        self._call_soon(self._hop, self._generation, SETTLE_HOPS)

    def _hop(self, generation: int, left: int) -> None:
        if generation != self._generation:
            return  # a later stall runs its own count
        if left > 1:
            self._call_soon(self._hop, generation, left - 1)
            return
        self.unsettled = False
        callbacks, self._on_settled = self._on_settled, []
        for callback in callbacks:
            callback()

    def when_settled(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the loop has settled from the present stalls."""
        if self.unsettled:
            self._on_settled.append(callback)
        else:
            self._call_soon(callback)

    def _call_soon(self, callback: Callable[..., None], *args: Any) -> None:
        loop = self._loop()
        if loop is not None and not loop.is_closed():
            loop.call_soon(callback, *args)

    def held(self, owner: object, since: float, now: float) -> float:
        """Seconds the loop was held by others' stalls while ``owner`` waited from
        ``since`` until ``now``, if it is ready as the loop settles from them (else 0)."""
        if not self.unsettled:
            return 0.0
        total = 0.0
        for stall in reversed(self._chain):
            if stall.end <= since:
                break
            if stall.owner is not owner:
                total += max(0.0, min(stall.end, now) - max(stall.start, since))
            if not stall.joined:
                break
        return total


_LEDGERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopLedger] = (
    weakref.WeakKeyDictionary()
)


def loop_ledger() -> LoopLedger:
    """The running loop's `LoopLedger`."""
    loop = asyncio.get_running_loop()
    ledger = _LEDGERS.get(loop)
    if ledger is None:
        ledger = _LEDGERS[loop] = LoopLedger(loop)
    return ledger


class StepClock(Generic[T]):
    """Await ``awaitable`` (once), timing each of its steps against ``deadline``.

    ``deadline`` is in the running loop's clock (`asyncio.Timeout.when`); ``None``
    means no deadline. With a ``ledger``, the steps' stalls are kept in it under
    ``owner``, and the stalls of others that held this trial up are ``credited``
    (and move its deadline back by as much).
    """

    def __init__(
        self,
        awaitable: Awaitable[T],
        deadline: float | None,
        *,
        ledger: LoopLedger | None = None,
        owner: object = None,
    ) -> None:
        self._awaitable = awaitable
        self.deadline = deadline
        self.ledger = ledger
        self._owner = self if owner is None else owner
        self._since: float | None = None  # when the awaitable last suspended
        self.credited = 0.0
        """Seconds others' stalls held this trial up (see the module docstring)."""
        self.overran_s: float | None = None
        """Length of the step during which the deadline passed (the loop was held for
        that long), or ``None`` when the deadline never passed inside a step."""

    @property
    def due(self) -> float | None:
        """The deadline on this trial's own clock: moved back by what it was credited."""
        return None if self.deadline is None else self.deadline + self.credited

    def pending(self, now: float) -> float:
        """Credit this trial would get if it resumed ``now`` (while it waits)."""
        if self.ledger is None or self._since is None:
            return 0.0
        return self.ledger.held(self._owner, self._since, now)

    def _timed(self, start: float, end: float, joined: bool) -> None:
        due = self.due
        if due is not None and start < due <= end:
            self.overran_s = end - start
        if self.ledger is not None:
            self.ledger.record(self._owner, start, end, joined)
        self._since = end

    def __await__(self) -> Generator[Any, Any, T]:
        steps = self._awaitable.__await__()
        clock = asyncio.get_running_loop().time
        ledger = self.ledger
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            start = clock()
            joined = False
            if ledger is not None:
                if self._since is not None:
                    self.credited += ledger.held(self._owner, self._since, start)
                joined = ledger.unsettled
            self._since = None
            try:
                yielded = steps.send(sent) if thrown is None else steps.throw(thrown)
            except StopIteration as stop:
                self._timed(start, clock(), joined)
                result: T = stop.value
                return result
            except BaseException:
                self._timed(start, clock(), joined)
                raise
            self._timed(start, clock(), joined)
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                steps.close()
                raise
            except BaseException as exc:  # a cancellation, handed to the agent as usual
                sent, thrown = None, exc


class OwnDeadline:
    """Expires ``scope`` (an `asyncio.timeout` entered with no deadline) when the
    trial's own deadline passes: `StepClock.due`, moved back by others' stalls that
    held the trial up. A timer that fires late, after such a stall, gives the trial
    until the loop settles to show it was ready (it resumes: the stall is credited)
    rather than cancelling work it had already finished."""

    def __init__(self, scope: asyncio.Timeout, steps: StepClock[Any]) -> None:
        self._scope = scope
        self._steps = steps
        self._loop = asyncio.get_running_loop()
        self._handle: asyncio.TimerHandle | None = None
        self._over = False

    def start(self) -> None:
        due = self._steps.due
        if due is not None:
            self._handle = self._loop.call_at(due, self._check)

    def stop(self) -> None:
        self._over = True
        if self._handle is not None:
            self._handle.cancel()

    def _check(self) -> None:
        if self._over:
            return
        if self._handle is not None:
            self._handle.cancel()
        now = self._loop.time()
        pending = self._steps.pending(now)
        due = self._steps.due
        assert due is not None
        if now >= due + pending:
            self._over = True
            self._scope.reschedule(now)
            return
        self._handle = self._loop.call_at(due + pending, self._check)
        if pending and self._steps.ledger is not None:
            self._steps.ledger.when_settled(self._check)
