"""A Python function of a `Session` as an agent (docs/running-agents.md, "A Python function").

``async def agent(session)`` runs on the harness's event loop, like every other
agent; it must not block (use async clients).

``def agent(session)`` (synchronous) runs in a worker thread, so it may block
— call a synchronous HTTP client, sleep, compute — without stalling the other
trials. It receives a `SyncSession`: the same interface with plain methods
(``session.call_tool(name, args)`` returns the `ToolOutcome` directly); each
call is executed on the event loop, so the transcript is recorded exactly as
for async agents. A thread cannot be stopped from outside: when a synchronous
agent outlives its trial's timeout the harness records the timeout and moves
on, and the agent's next session call raises `TrialOver`, so a well-behaved
function ends there.

A function is treated as async when it is an ``async def`` (or an object
whose ``__call__`` is); anything else is synchronous.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

import numpy as np

from agentgauge.agents.base import AgentError, Session
from agentgauge.envs.base import ToolOutcome
from agentgauge.schema import ControlDecision, Event

__all__ = ["CallableAgent", "SyncSession", "TrialOver", "is_async_callable"]

T = TypeVar("T")


class TrialOver(Exception):
    """Raised into a synchronous agent that is still running after its trial ended."""


def is_async_callable(fn: object) -> bool:
    """Whether ``fn(...)`` returns a coroutine (``async def``, also behind partial/__call__)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class SyncSession:
    """The `Session` interface with blocking methods, for agents running in a thread."""

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop) -> None:
        self._session = session
        self._loop = loop
        self.closed = threading.Event()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.closed.is_set():
            coro.close()
            raise TrialOver("the trial has ended (timeout or cancellation)")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _sync(self, fn: Callable[[], T]) -> T:
        async def call() -> T:
            return fn()

        return self._run(call())

    @property
    def task_id(self) -> str:
        return self._session.task_id

    @property
    def policy(self) -> str:
        return self._session.policy

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._session.tools

    @property
    def instruction(self) -> str:
        return self._session.instruction

    @property
    def rng(self) -> np.random.Generator:
        return self._session.rng

    @property
    def events(self) -> list[Event]:
        return self._session.events

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        return self._run(self._session.call_tool(name, arguments))

    def say(self, text: str) -> str | None:
        return self._run(self._session.say(text))

    def control(self, decision: ControlDecision, reason: str | None = None) -> None:
        self._sync(lambda: self._session.control(decision, reason))

    def answer(self, text: str) -> None:
        self._sync(lambda: self._session.answer(text))

    def report_confidence(self, p: float) -> None:
        self._sync(lambda: self._session.report_confidence(p))

    def record_cost(self, usd: float) -> None:
        self._sync(lambda: self._session.record_cost(usd))

    def record_model_call(
        self,
        *,
        model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        cost_usd: float | None,
        latency_s: float | None,
        attempts: int | None = None,
    ) -> None:
        self._sync(
            lambda: self._session.record_model_call(
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost_usd,
                latency_s=latency_s,
                attempts=attempts,
            )
        )


class CallableAgent:
    """Wrap ``fn(session)`` (sync or async) as an `Agent`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        model: str | None = None,
        max_threads: int = 256,
    ) -> None:
        self.fn = fn
        self.name = name or _label(fn)
        self.model = model
        self.is_async = is_async_callable(fn)
        self._max_threads = max_threads
        self._pool: ThreadPoolExecutor | None = None

    def __call__(self, session: Session) -> Awaitable[None]:
        if self.is_async:
            return cast(Awaitable[None], self.fn(session))
        return self._run_sync(session)

    async def _run_sync(self, session: Session) -> None:
        loop = asyncio.get_running_loop()
        if self._pool is None:
            # Our own pool: the loop's default executor has only cpu+4 threads, too few
            # when blocking agents run at the harness's concurrency.
            self._pool = ThreadPoolExecutor(self._max_threads, thread_name_prefix="agent")
        facade = SyncSession(session, loop)
        future = loop.run_in_executor(self._pool, _in_context(self.fn, facade))
        try:
            result = await future
        finally:
            facade.closed.set()
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise AgentError(
                f"{self.name} is synchronous but returned an awaitable; declare it `async def`"
            )

    async def aclose(self) -> None:
        if self._pool is not None:
            pool, self._pool = self._pool, None
            # Do not wait: a hung agent thread would hold the run open forever.
            pool.shutdown(wait=False, cancel_futures=True)


def _in_context(fn: Callable[[Any], T], arg: Any) -> Callable[[], T]:
    # run_in_executor does not copy context variables (to_thread does); the
    # in-flight marker of `agentgauge.agents.provider` lives in one.
    ctx = contextvars.copy_context()
    return lambda: ctx.run(fn, arg)


def _label(fn: object) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    module = getattr(target, "__module__", None) or "python"
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    return f"python:{module}.{name}"
