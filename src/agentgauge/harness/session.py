"""`TrialSession`: one trial's bridge between an agent and its environment.

It implements the `agentgauge.agents.base.Session` protocol and records every
step as a transcript event (`agentgauge.Event`), so whatever the agent is — a Python
function, an endpoint adapter, a reference policy — the transcript has the same
shape. At the end, `TrialSession.outcome` gathers the transcript, the final
answer, the final state and the usage totals for the trial record.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgauge.agents.base import AgentError
from agentgauge.envs.base import Environment, ToolOutcome
from agentgauge.schema import (
    ControlDecision,
    ControlEvent,
    Event,
    MessageEvent,
    ModelCallEvent,
    ToolCallEvent,
    ToolResultEvent,
)

__all__ = ["SIMULATED_TOOL_LATENCY", "TRANSFER_TOOLS", "SessionOutcome", "TrialSession"]

#: Tool names that hand the conversation to a human (recorded as ``transfer``).
TRANSFER_TOOLS = frozenset({"transfer_to_human", "transfer_to_human_agents"})

#: Seconds a tool call takes in virtual time (simulated agents).
SIMULATED_TOOL_LATENCY = 0.05


@dataclass
class SessionOutcome:
    """What a finished session contributes to its trial record."""

    events: list[Event]
    answer: str | None
    final_state: dict[str, Any] | None
    tool_calls: int
    model_calls: int
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    """Model-call costs plus what the agent recorded with ``record_cost``; ``None``
    (unknown) when any call's price is unknown, or when the agent recorded no cost
    at all: an agent that calls its own model without saying so is not free."""
    confidence: float | None = None
    """The agent's own confidence that it succeeded, in [0, 1], when it reported one."""
    elapsed_s: float | None = None
    """Simulated seconds the trial took, for sessions in virtual time; else ``None``."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """What the agent noted for the trial record (``note``), e.g. the trace id it sent."""


class TrialSession:
    """A `Session` over one fresh environment, recording the transcript."""

    def __init__(
        self,
        task_id: str,
        env: Environment,
        *,
        seed: int,
        max_steps: int = 200,
        clock: Callable[[], float] = time.monotonic,
        virtual_time: bool = False,
        trial: int | None = None,
        variant: str = "base",
    ) -> None:
        self._task_id = task_id
        self.trial = trial
        """The trial's index within its task and variant (``None`` outside a run)."""
        self.variant = variant
        """The trial's variant (``base``, ``paraphrase:N``, ...)."""
        self._env = env
        self._seed = seed
        self._rng: np.random.Generator | None = None  # built on first use: it costs ~50 µs
        # Simulated agents run in virtual time: the clock advances by each model call's
        # reported latency and a fixed SIMULATED_TOOL_LATENCY per tool call, so their
        # latencies are reproducible rather than this machine's scheduling noise.
        self._virtual = virtual_time
        self._vt = 0.0
        if virtual_time:
            clock = self._virtual_now
        self._clock = clock
        self._t0 = clock()
        self._events: list[Event] = []
        self._ids = itertools.count(1)
        self._steps = 0
        self._max_steps = max_steps
        self._tool_names = {t["function"]["name"] for t in env.tools}
        self._answer: str | None = None
        self._confidence: float | None = None
        self._recorded_cost: float | None = None  # record_cost's sum; None: never called
        self._reported_state: dict[str, Any] | None = None
        self._notes: dict[str, Any] = {}
        self.user_done = False
        """True once the simulated user has ended the conversation."""
        self._instruction = env.first_message()
        self._events.append(MessageEvent(role="user", content=self._instruction, t=0.0))

    # ------------------------------------------------------------------ Session protocol

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def policy(self) -> str:
        return self._env.policy

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._env.tools

    @property
    def instruction(self) -> str:
        return self._instruction

    @property
    def rng(self) -> np.random.Generator:
        if self._rng is None:
            self._rng = np.random.default_rng(self._seed)
        return self._rng

    @property
    def events(self) -> list[Event]:
        return self._events

    def _virtual_now(self) -> float:
        return self._vt

    def _t(self) -> float:
        return max(0.0, self._clock() - self._t0)

    def _step(self) -> None:
        self._steps += 1
        if self._steps > self._max_steps:
            raise AgentError(f"exceeded {self._max_steps} steps without finishing")

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run one tool call and record it with its result."""
        self._step()
        if not isinstance(arguments, dict):
            raise AgentError(f"tool {name!r} called with non-object arguments: {arguments!r}")
        if self._virtual:
            self._vt += SIMULATED_TOOL_LATENCY
        call_id = f"call_{next(self._ids)}"
        event = ToolCallEvent(name=name, arguments=arguments, call_id=call_id, t=self._t())
        try:  # as the store will write it: a cyclic or too deep argument fails the agent
            event.model_dump_json()
        except ValueError as exc:
            why = f"tool {name!r} called with arguments that are not JSON: {exc}"
            raise AgentError(why) from None
        self._events.append(event)
        if name not in self._tool_names:
            outcome = ToolOutcome(content=f"Error: unknown tool {name!r}", is_error=True)
        else:
            outcome = self._env.call_tool(name, arguments)
        self._events.append(
            ToolResultEvent(
                call_id=call_id,
                name=name,
                content=outcome.content,
                is_error=outcome.is_error,
                irreversible=outcome.irreversible,
                t=self._t(),
            )
        )
        if name in TRANSFER_TOOLS and not outcome.is_error:
            self.control("transfer", f"called {name}")
        return outcome

    async def say(self, text: str) -> str | None:
        """Send a message to the user; the reply, or ``None`` once the user has left."""
        self._step()
        self._events.append(MessageEvent(role="assistant", content=text, t=self._t()))
        if self.user_done:
            return None
        reply = self._env.user_reply(text)
        if reply is None:
            self.user_done = True
            return None
        self._events.append(MessageEvent(role="user", content=reply, t=self._t()))
        return reply

    def control(self, decision: ControlDecision, reason: str | None = None) -> None:
        self._events.append(ControlEvent(decision=decision, reason=reason, t=self._t()))

    def answer(self, text: str) -> None:
        """Record the final answer (also as the last assistant message)."""
        self._answer = text
        last = self._events[-1] if self._events else None
        if not (
            isinstance(last, MessageEvent) and last.role == "assistant" and last.content == text
        ):
            self._events.append(MessageEvent(role="assistant", content=text, t=self._t()))

    def report_confidence(self, p: float) -> None:
        """Record the agent's confidence that it succeeded (the last report wins)."""
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise AgentError(f"confidence must be a number in [0, 1], got {p!r}")
        self._confidence = float(p)

    def record_cost(self, usd: float) -> None:
        """Record spend outside the recorded model calls, in US dollars (it adds up).

        ``record_cost(0.0)`` says the agent really is free; without it (or a model
        call with a cost) the trial's cost is unknown, never $0.
        """
        valid = not isinstance(usd, bool) and isinstance(usd, int | float)
        if not valid or not math.isfinite(usd) or usd < 0:
            raise AgentError(f"cost must be a finite number >= 0 in US dollars, got {usd!r}")
        self._recorded_cost = (self._recorded_cost or 0.0) + float(usd)

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
        if self._virtual and latency_s:
            self._vt += latency_s
        self._events.append(
            ModelCallEvent(
                model=model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost_usd,
                latency_s=latency_s,
                attempts=attempts,
                t=self._t(),
            )
        )

    # ------------------------------------------------------------------ remote agents

    def record_event(self, event: Event) -> None:
        """Add a step the agent took outside this session (a remote agent's own tool
        call, say) to the transcript, as it happened; the environment is not touched.
        Not counted against ``max_steps``, which stops an agent looping through this
        session: a remote transcript is as long as its reply."""
        self._events.append(event)
        if (
            isinstance(event, ToolResultEvent)
            and event.name in TRANSFER_TOOLS
            and not event.is_error
        ):
            self.control("transfer", f"called {event.name}")

    def report_state(self, state: dict[str, Any]) -> None:
        """The final state of a world the agent keeps itself; it replaces this
        environment's state in the trial record (the state grader reads it)."""
        self._reported_state = state

    def note(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) in the trial's metadata under ``key``."""
        self._notes[key] = value

    # ------------------------------------------------------------------ results

    def outcome(self, *, with_state: bool = True) -> SessionOutcome:
        """Transcript, answer, final state and usage totals."""
        calls = [e for e in self._events if isinstance(e, ModelCallEvent)]
        answer = self._answer
        if answer is None:
            said = [
                e for e in self._events if isinstance(e, MessageEvent) and e.role == "assistant"
            ]
            answer = said[-1].content if said else None

        def total(attr: str) -> int | None:
            # No recorded model call says nothing about tokens (the agent may call its
            # own model): unknown, like an unrecorded cost.
            values = [getattr(c, attr) for c in calls]
            return None if not values or any(v is None for v in values) else sum(values)

        costs = [c.cost_usd for c in calls]
        cost: float | None = None
        if (calls or self._recorded_cost is not None) and all(c is not None for c in costs):
            cost = float(sum(c for c in costs if c)) + (self._recorded_cost or 0.0)
        return SessionOutcome(
            events=list(self._events),
            answer=answer,
            final_state=self._final_state() if with_state else None,
            tool_calls=sum(1 for e in self._events if isinstance(e, ToolCallEvent)),
            model_calls=len(calls),
            input_tokens=total("input_tokens"),
            output_tokens=total("output_tokens"),
            cost_usd=cost,
            confidence=self._confidence,
            elapsed_s=self._vt if self._virtual else None,
            metadata=dict(self._notes),
        )

    def _final_state(self) -> dict[str, Any]:
        if self._reported_state is not None:
            return self._reported_state
        return self._env.final_state()
