"""The agent protocol: an agent is an async function of a `Session`.

The harness gives each trial a `Session` wrapping a fresh environment. The
agent reads ``session.policy``, ``session.tools`` and ``session.instruction``,
then acts through the session, which records every step as a transcript event
(`agentgauge.Event`):

- ``await session.call_tool(name, arguments)`` runs a tool;
- ``await session.say(text)`` sends a message to the (simulated) user and
  returns the reply, or ``None`` when the user has ended the conversation;
- ``session.control(decision, reason)`` records a control decision (ask,
  refuse, stop, confirm, recover, transfer) — ``transfer_to_human`` tool calls
  record ``transfer`` automatically;
- ``session.answer(text)`` records the final answer;
- ``session.report_confidence(p)`` records the agent's confidence in [0, 1]
  that it succeeded (for the predictability metrics: docs/compare-and-plan.md, "Reliability");
- ``session.record_model_call(...)`` records a model call's tokens, cost and latency;
- ``session.record_cost(usd)`` records spend the model calls do not carry, and
  ``session.record_cost(0.0)`` says the agent is free. A trial's cost is known
  only when the agent records it: one that calls its own model and records
  nothing has an unknown cost, never $0 (docs/running-agents.md, "Cost").
- ``session.record_event(event)``, ``session.report_state(state)`` and
  ``session.note(key, value)`` record what a remote agent did elsewhere, the final
  state of a world it keeps, and a JSON value for the trial's metadata.

`Session` is the interface, the same for every agent (`SESSION_INTERFACE` lists its
names): the harness's `TrialSession`, and the blocking `SyncSession` a plain ``def``
agent gets, implement all of it.

A plain Python function ``fn(session)`` (sync or async) is an agent; so are the
adapters for OpenAI-compatible endpoints and external commands.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import numpy as np

from agentgauge.envs.base import ToolOutcome
from agentgauge.schema import ControlDecision, Event

__all__ = ["SESSION_INTERFACE", "Agent", "AgentError", "Session", "TransientError"]


class AgentError(Exception):
    """The agent misbehaved (malformed tool call, protocol violation): its failure."""


class TransientError(Exception):
    """A provider hiccup worth retrying (429, 5xx, connection reset).

    When retries are exhausted the trial is recorded as an infra error, not as
    the agent's failure.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@runtime_checkable
class Session(Protocol):
    """A trial as the agent sees it."""

    @property
    def task_id(self) -> str: ...

    @property
    def policy(self) -> str: ...

    @property
    def tools(self) -> list[dict[str, Any]]: ...

    @property
    def instruction(self) -> str:
        """The user's opening message."""
        ...

    @property
    def rng(self) -> np.random.Generator:
        """Seeded randomness for this trial (reference agents use it)."""
        ...

    @property
    def events(self) -> list[Event]:
        """The transcript so far."""
        ...

    @property
    def trial(self) -> int | None:
        """The trial's index within its task and variant (``None`` outside a run)."""
        ...

    @property
    def variant(self) -> str:
        """The trial's variant (``base``, ``paraphrase:N``, ``fault:KIND``...)."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run a tool; the outcome carries the content and whether it is an error."""
        ...

    async def say(self, text: str) -> str | None: ...

    def control(self, decision: ControlDecision, reason: str | None = None) -> None: ...

    def answer(self, text: str) -> None: ...

    def report_confidence(self, p: float) -> None:
        """The agent's own confidence in [0, 1] that it succeeded (last report wins)."""
        ...

    def record_cost(self, usd: float) -> None:
        """Spend in US dollars beyond the recorded model calls (adds up); 0.0 for a free agent."""
        ...

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
    ) -> None: ...

    def record_event(self, event: Event) -> None:
        """A step the agent took elsewhere (a remote service's tool call), as it happened."""
        ...

    def report_state(self, state: dict[str, Any]) -> None:
        """The final state of a world the agent keeps itself (the state grader reads it)."""
        ...

    def note(self, key: str, value: Any) -> None:
        """Keep a JSON value in the trial's metadata under ``key``."""
        ...


#: The names of the `Session` interface, properties and methods: what every session
#: offers an agent (docs/running-agents.md, "Your agent").
SESSION_INTERFACE: tuple[str, ...] = tuple(
    sorted(name for name in vars(Session) if not name.startswith("_"))
)


class Agent(Protocol):
    """Anything the harness can run: called once per trial with a fresh session."""

    name: str
    """Label recorded on every trial (``builtin:careful``, ``openai:gpt-4o``...)."""
    model: str | None
    """The model behind the agent, when there is one."""

    def __call__(self, session: Session) -> Awaitable[None]: ...


AgentFunction = Callable[[Session], Awaitable[None] | None]
