"""A Python function of a `Session` as an agent (docs/running-agents.md, "A Python function").

``async def agent(session)`` runs on the harness's event loop, like every other
agent; it must not block (use async clients). One that does holds every trial
up, and when its deadline passes while it blocks, the harness records a timeout
(`agentgauge.harness.blocking`).

``def agent(session)`` (synchronous) runs in a daemon thread of its own, so it
may block — call a synchronous HTTP client, sleep, compute — without stalling
the other trials. It receives a `SyncSession`: the same interface with plain
methods (``session.call_tool(name, args)`` returns the `ToolOutcome` directly);
each call is executed on the event loop, so the transcript is recorded exactly
as for async agents. A thread cannot be stopped from outside: when a synchronous
agent outlives its trial's timeout the harness records the timeout and moves
on, and the agent's next session call raises `TrialOver`, so a well-behaved
function ends there. One that never returns is abandoned when the process exits
(`CallableAgent.still_running` names its trial; the run prints it).

A function is treated as async when it is an ``async def`` (or an object
whose ``__call__`` is); anything else is synchronous.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import sys
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, cast

import numpy as np

from agentgauge.agents.base import AgentError, Session
from agentgauge.components import digest
from agentgauge.envs.base import ToolOutcome
from agentgauge.errors import InputError
from agentgauge.schema import ControlDecision, Event

__all__ = ["CallableAgent", "SyncSession", "TrialOver", "is_async_callable", "running_trial"]

T = TypeVar("T")

#: The trial a synchronous agent's thread is started for (set by the harness).
_TRIAL: ContextVar[str] = ContextVar("agentgauge_trial", default="outside a harness trial")


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


def _generator_kind(fn: object) -> str | None:
    """``"a generator function"`` or ``"an async generator function"`` when calling
    ``fn`` (also behind partial/__call__) makes a generator instead of running it."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    for target in (fn, getattr(fn, "__call__", None)):  # noqa: B004 - objects' __call__
        if inspect.isasyncgenfunction(target):
            return "an async generator function"
        if inspect.isgeneratorfunction(target):
            return "a generator function"
    return None


class SyncSession:
    """The `Session` interface with blocking methods, for agents running in a thread:
    all of it (`agentgauge.agents.base.SESSION_INTERFACE`), each call run on the loop."""

    def __init__(self, session: Session, loop: asyncio.AbstractEventLoop) -> None:
        self._session = session
        self._loop = loop
        self.closed = threading.Event()
        self.ended_because = "the trial timed out or was cancelled"
        """Why the trial ended, as `TrialOver` says it; set before ``closed``."""

    def close(self, because: str) -> None:
        """End the trial for the agent's thread: its session calls raise `TrialOver`
        saying ``because`` (the agent function returned, raised, or ran out of time)."""
        self.ended_because = because
        self.closed.set()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self.closed.is_set():
            coro.close()
            raise TrialOver(
                f"the trial has ended ({self.ended_because}); session calls after that are refused"
            )
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

    @property
    def trial(self) -> int | None:
        return self._session.trial

    @property
    def variant(self) -> str:
        return self._session.variant

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
        price_source: str | None = None,
        cache_read_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> None:
        self._sync(
            lambda: self._session.record_model_call(
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost_usd,
                latency_s=latency_s,
                attempts=attempts,
                price_source=price_source,
                cache_read_tokens=cache_read_tokens,
                reasoning_tokens=reasoning_tokens,
            )
        )

    def record_event(self, event: Event) -> None:
        self._sync(lambda: self._session.record_event(event))

    def report_state(self, state: dict[str, Any]) -> None:
        self._sync(lambda: self._session.report_state(state))

    def note(self, key: str, value: Any) -> None:
        self._sync(lambda: self._session.note(key, value))


def _declared_version(fn: Callable[..., Any]) -> object:
    """The function's ``__version__``, else that of the module defining it."""
    own = getattr(fn, "__version__", None)
    if own is not None:
        return own
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return getattr(module, "__version__", None)


class CallableAgent:
    """Wrap ``fn(session)`` (sync or async) as an `Agent`.

    ``version`` (else the function's ``__version__`` attribute, else its module's, the
    usual place for one) and ``components``
    (``system_prompt``, ``temperature``... as in `agentgauge.components`; a
    system prompt is recorded as its digest) declare the function's part of the
    run's configuration; what is not declared is "not recorded".
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        model: str | None = None,
        version: str | None = None,
        components: Mapping[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or _label(fn)
        self.model = model
        declared = version if version is not None else _declared_version(fn)
        self.version = None if declared is None else str(declared)
        self._declared = dict(components or {})
        kind = _generator_kind(fn)
        if kind is not None:
            # Calling one only makes a generator: none of its body would run, and every
            # trial would end "completed" with nothing done and no error to see.
            raise InputError(
                f"{self.name} is {kind} (it yields), so calling it runs none of its body; "
                "an agent is a function (async def or def) that acts on the session and "
                "returns: drop the yield",
                field="agent",
            )
        self.is_async = is_async_callable(fn)
        self._abandoned: list[tuple[str, threading.Thread]] = []

    def __call__(self, session: Session) -> Awaitable[None]:
        if self.is_async:
            return cast(Awaitable[None], self.fn(session))
        return self._run_sync(session)

    async def _run_sync(self, session: Session) -> None:
        loop = asyncio.get_running_loop()
        facade = SyncSession(session, loop)
        done: asyncio.Future[Any] = loop.create_future()
        # One daemon thread per trial, not a pool: a pool's threads are joined when the
        # interpreter exits, so one agent past its timeout held the whole process open
        # until its function returned (41 s for a 2 s timeout). A daemon thread that is
        # still running at exit is abandoned, and `still_running` says whose it was.
        thread = threading.Thread(
            target=_settle_from_thread,
            args=(_in_context(self.fn, facade), done, loop),
            name=f"agentgauge agent {_TRIAL.get()}",
            daemon=True,
        )
        thread.start()
        # Why the trial ended, for a thread the agent left behind that calls the
        # session later: "timeout or cancellation" misled when the function had returned.
        because = "the trial timed out or was cancelled"
        try:
            result = await done
            because = "the agent function returned"
        except asyncio.CancelledError:
            if thread.is_alive():
                self._abandoned.append((_TRIAL.get(), thread))
            raise
        except BaseException:
            because = "the agent function raised"
            raise
        finally:
            facade.close(because)
        if inspect.isawaitable(result):
            if inspect.iscoroutine(result):
                result.close()
            raise AgentError(
                f"{self.name} is synchronous but returned an awaitable; declare it `async def`"
            )
        if inspect.isgenerator(result) or inspect.isasyncgen(result):
            # A callable whose generator nature `_generator_kind` could not see (a lambda
            # or a wrapper returning one): the body never ran.
            if inspect.isgenerator(result):
                result.close()
            raise AgentError(
                f"{self.name} returned a generator, so none of its body ran; an agent is a "
                "function (async def or def) that acts on the session and returns"
            )

    def components(self) -> dict[str, Any]:
        """What the function's author declared of its configuration (`agentgauge.components`)."""
        out = dict(self._declared)
        prompt = out.get("system_prompt")
        if isinstance(prompt, str) and not prompt.startswith("sha256:"):
            out["system_prompt"] = digest(prompt)
        out.setdefault("model", self.model)
        if self.version is not None:
            out.setdefault("agent_version", f"{self.name} {self.version}")
        return out

    def still_running(self) -> list[str]:
        """The trials (``TASK trial N``) whose function outlived its timeout and is still
        running in its thread: nothing can stop a thread from outside, so it is abandoned
        when the process exits."""
        return [label for label, thread in self._abandoned if thread.is_alive()]


@contextmanager
def running_trial(label: str) -> Iterator[None]:
    """Used by the harness around one trial, so a thread it abandons can be named."""
    token = _TRIAL.set(label)
    try:
        yield
    finally:
        _TRIAL.reset(token)


def _settle_from_thread(
    call: Callable[[], Any], done: asyncio.Future[Any], loop: asyncio.AbstractEventLoop
) -> None:
    try:
        result = call()
    except BaseException as exc:  # handed to the trial, which classifies it
        outcome: Callable[[], None] = functools.partial(_settle, done, None, exc)
    else:
        outcome = functools.partial(_settle, done, result, None)
    # The trial may be over (its timeout) and the loop closed (the run ended).
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(outcome)


def _settle(done: asyncio.Future[Any], result: Any, exc: BaseException | None) -> None:
    if done.done():  # cancelled at the trial's timeout
        return
    if exc is not None:
        done.set_exception(exc)
    else:
        done.set_result(result)


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
