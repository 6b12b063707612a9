"""Stopping a run early: the flag the workers read, and Ctrl-C.

Workers check `Stop` before launching each trial. The built-in reference agents
never wait on anything, so a trial of theirs runs start to finish without giving
the event loop control; asyncio's own SIGINT handling (cancel the main task)
therefore never reached them, and Ctrl-C ran the whole suite to the end. The
handler installed by `sigint_stops` is a plain Python signal handler instead:
Python runs it between two bytecodes wherever the main thread is, so the flag is
set at once, and the next launch sees it whatever the agent is. Trials that are
waiting (on a model, a program, a thread) are cancelled through the loop and not
written: their cells stay missing, and a resume runs them afresh, so no trial is
ever stored half done or blamed on the agent for the interruption.

A second Ctrl-C raises `UserInterrupt` (a `KeyboardInterrupt`), for a user who
does not want to wait even for the commits. A `KeyboardInterrupt` an agent raises
itself is not one: it is the agent's error (`agentgauge.harness.trial`).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["Stop", "UserInterrupt", "sigint_stops"]


class UserInterrupt(KeyboardInterrupt):
    """The user's second Ctrl-C during a run: quit without waiting for the commits.

    A subclass, so that the harness tells it from a `KeyboardInterrupt` an agent
    raises itself, which is recorded as that agent's error and the run goes on."""


class Stop:
    """Why no more trials are launched (``reason`` is ``None`` while the run goes on)."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.interrupted = False
        self._on_interrupt: list[Callable[[], None]] = []

    @property
    def stopped(self) -> bool:
        return self.interrupted or self.reason is not None

    def halt(self, reason: str) -> None:
        """Launch nothing more; trials in flight finish (the circuit breaker)."""
        if self.reason is None:
            self.reason = reason

    def interrupt(self) -> None:
        """Launch nothing more and cancel what is waiting (Ctrl-C)."""
        self.interrupted = True
        self.reason = "interrupted"
        for callback in self._on_interrupt:
            callback()

    def on_interrupt(self, callback: Callable[[], None]) -> None:
        self._on_interrupt.append(callback)


# The runs under way in this process, and the SIGINT handler found before the first.
# Runs may overlap (``asyncio.gather`` of two `arun` calls) and end in any order: one
# handler serves them all, and the one found comes back when the last ends. Each run
# saving and restoring its own left the first run's handler installed when the runs
# ended in the order they started, and a later Ctrl-C raised "Event loop is closed".
_active: list[tuple[Stop, asyncio.AbstractEventLoop]] = []
_previous: Any = None


def _handler(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C for every run under way: the first stops them all, a second quits."""
    running = [(stop, loop) for stop, loop in _active if not stop.interrupted]
    if not running:
        raise UserInterrupt
    for stop, loop in running:
        stop.interrupted = True  # seen by the very next launch, before the loop runs again
        loop.call_soon_threadsafe(stop.interrupt)


@contextmanager
def sigint_stops(stop: Stop, loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While inside, the first SIGINT calls ``stop.interrupt`` (from the loop's thread
    safely), and that of every other run inside at the same time; the handler found
    before the first of them comes back when the last leaves. Outside the main thread
    (signals go only there), or where SIGINT is ignored (a shell script's background
    job), this does nothing."""
    global _previous
    main = threading.current_thread() is threading.main_thread()
    if not main or (not _active and signal.getsignal(signal.SIGINT) == signal.SIG_IGN):
        yield
        return
    if not _active:
        _previous = signal.signal(signal.SIGINT, _handler)
    entry = (stop, loop)
    _active.append(entry)
    try:
        yield
    finally:
        _active.remove(entry)
        if not _active:
            signal.signal(signal.SIGINT, _previous)
            _previous = None
