"""`TrialSession`: one trial's bridge between an agent and its environment.

It implements the `agentgauge.agents.base.Session` protocol and records every
step as a transcript event (`agentgauge.Event`), so whatever the agent is — a Python
function, an endpoint adapter, a reference policy — the transcript has the same
shape. At the end, `TrialSession.outcome` gathers the transcript, the final
answer, the final state and the usage totals for the trial record.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

import numpy as np
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from agentgauge.agents.base import AgentError
from agentgauge.bounds import OutOfBounds, add_amount, check_amount, check_count, plain_json
from agentgauge.envs.base import (
    Environment,
    EnvironmentFailed,
    ToolOutcome,
    TurnTaking,
    user_turns,
)
from agentgauge.schema import (
    ControlDecision,
    ControlEvent,
    Event,
    MessageEvent,
    ModelCallEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from agentgauge.store.rows import dumps, replace_surrogates
from agentgauge.turns import hand_back

__all__ = [
    "HARNESS_METADATA_KEYS",
    "MAX_EVENTS",
    "MAX_TRANSCRIPT_BYTES",
    "SIMULATED_TOOL_LATENCY",
    "TRANSFER_TOOLS",
    "SessionOutcome",
    "TrialSession",
]

T = TypeVar("T")

#: Tool names that hand the conversation to a human (recorded as ``transfer``).
TRANSFER_TOOLS = frozenset({"transfer_to_human", "transfer_to_human_agents"})

#: Seconds a tool call takes in virtual time (simulated agents).
SIMULATED_TOOL_LATENCY = 0.05

#: Events one trial's transcript may hold. Every event counts (messages, tool calls
#: and results, control decisions, model calls): a flood of ``control`` or
#: ``model_call`` messages, which the step limit does not see, once made 102,404
#: events per trial and a 420 MB store for 4 trials. The built-in agents use a few
#: dozen; no honest agent comes near.
MAX_EVENTS = 10_000

#: UTF-8 bytes of text one trial's transcript may hold (message and result text,
#: tool arguments, control reasons), 50 MB.
MAX_TRANSCRIPT_BYTES = 50_000_000

#: Keys of a trial's metadata that agentgauge writes itself, and what each says: an
#: agent's ``note`` under one of them is refused. Noted, they overwrote the harness's
#: value or were read as it (an agent's ``attempts`` read as infra retries, its
#: ``loop_held_by_others_s`` made the trial's latency unknown). The ``http:`` adapter's
#: trace keys (``trace_id``, ``span_id``, ``trace_t0_ns``, ``http_attempts``) are an
#: agent's own notes, so any agent may write them (docs/running-agents.md).
HARNESS_METADATA_KEYS: dict[str, str] = {
    "attempts": "how many times the harness ran the cell (--infra-retries)",
    "worker_attempts": "how many Ray workers the trial took (--backend ray)",
    "loop_held_by_others_s": "how long other trials' stalls held this one up",
    "trace_events": "how many events agentgauge collect added from the trial's trace",
    "trace_spans": "the spans agentgauge collect read into the transcript",
    "trace_span_digests": "the content of each span agentgauge collect read",
}


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
    turns: list[dict[str, Any]] | None = None
    """The hand-backs of a multi-turn conversation (`agentgauge.turns`)."""


class TrialSession:
    """A `Session` over one fresh environment, recording the transcript."""

    def __init__(
        self,
        task_id: str,
        env: Environment,
        *,
        seed: int,
        max_steps: int = 200,
        max_events: int = MAX_EVENTS,
        max_transcript_bytes: int = MAX_TRANSCRIPT_BYTES,
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
        self.started_ns = time.time_ns()
        """The wall-clock time (ns since the Unix epoch) of the trial's ``t = 0``: what
        an ``http:`` agent's spans, timed by another process's clock, count from."""
        self._events: list[Event] = []
        self._ids = itertools.count(1)
        self._steps = 0
        self._max_steps = max_steps
        self._max_events = max_events
        self._max_bytes = max_transcript_bytes
        self._bytes = 0
        self._tool_names = {t["function"]["name"] for t in env.tools}
        # What a world of one's own returns is checked as the store will write it
        # (`_result_event`, `_state_of`); agentgauge's own worlds return plain JSON, and
        # are spared the cost (serialising a retail state takes longer than building it).
        self._own_world = _own_world(env)
        self._answer: str | None = None
        self._confidence: float | None = None
        self._recorded_cost: float | None = None  # record_cost's sum; None: never called
        # Running totals, kept so that the call that would overflow one is refused.
        self._model_cost = 0.0
        self._tokens_in = self._tokens_out = 0
        self._reported_state: dict[str, Any] | None = None
        self._notes: dict[str, Any] = {}
        self.env_failure: EnvironmentFailed | None = None
        """The environment's failure, once it has failed: the trial is then an infra
        error, whatever the agent does next (`run_cell`)."""
        self.user_done = False
        """True once the simulated user has ended the conversation."""
        # A conversation with follow-ups records each hand-back and the state then
        # (`agentgauge.turns`); one without keeps its record as it always was.
        self._turn_env: TurnTaking | None = (
            cast(TurnTaking, env) if _takes_turns(env) and user_turns(env) > 1 else None
        )
        self._hand_backs: list[dict[str, Any]] = []
        self._instruction = env.first_message()
        self._record(MessageEvent(role="user", content=self._instruction, t=0.0), self._instruction)

    # ------------------------------------------------------------------ Session protocol

    @property
    def task_id(self) -> str:
        return self._task_id

    @property
    def policy(self) -> str:
        return self._in_env("policy", lambda: self._env.policy)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._in_env("tools", lambda: self._env.tools)

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

    @property
    def transcript_bytes(self) -> int:
        """UTF-8 bytes of text the transcript holds (within ``max_transcript_bytes``)."""
        return self._bytes

    def _virtual_now(self) -> float:
        return self._vt

    def _t(self) -> float:
        return max(0.0, self._clock() - self._t0)

    def _in_env(self, what: str, call: Callable[[], T]) -> T:
        """``call()``, a call into the environment. What it raises is the environment's
        failure, not the agent's: it reaches the agent as `EnvironmentFailed` (which the
        agent may catch), is kept in ``env_failure``, and makes the trial an infra error.
        A failed environment is not called again: every later call raises the same."""
        if self.env_failure is not None:
            raise EnvironmentFailed(*self.env_failure.args)
        try:
            return call()
        except Exception as exc:
            text = str(exc)
            said = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            self.env_failure = EnvironmentFailed(f"the environment failed in {what}: {said}")
            raise EnvironmentFailed(*self.env_failure.args) from exc

    def _step(self) -> None:
        self._steps += 1
        if self._steps > self._max_steps:
            raise AgentError(f"exceeded {self._max_steps} steps without finishing")

    def _record(self, event: Event, text: str | None) -> None:
        """Append ``event``, whose text is ``text``, within the transcript's budget.

        The event that would pass a budget is not kept, and the trial ends as the
        agent's error: the store holds a bounded transcript whatever the agent does.
        """
        if len(self._events) >= self._max_events:
            raise AgentError(f"transcript exceeded {self._max_events} events")
        size = 0
        if text:  # ASCII text (most of it) is one byte a character: no need to encode
            size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
        if self._bytes + size > self._max_bytes:
            raise AgentError(f"transcript exceeded {self._max_bytes} bytes of text")
        self._bytes += size
        self._events.append(event)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Run one tool call and record it with its result."""
        self._step()
        if not isinstance(arguments, dict):
            raise AgentError(f"tool {name!r} called with non-object arguments: {arguments!r}")
        try:  # numpy scalars become numbers; the call is not made with an object JSON lacks
            arguments = plain_json(arguments)
        except OutOfBounds as exc:
            why = f"tool {name!r} called with arguments that are not JSON: {exc}"
            raise AgentError(why) from None
        if self._virtual:
            self._vt += SIMULATED_TOOL_LATENCY
        call_id = f"call_{next(self._ids)}"
        with _refused("call_tool"):
            event = ToolCallEvent(name=name, arguments=arguments, call_id=call_id, t=self._t())
        try:  # as the store will write it: a cyclic or too deep argument fails the agent
            text = event.model_dump_json()
        except ValueError as exc:
            if not _lone_surrogate(exc):
                why = f"tool {name!r} called with arguments that are not JSON: {exc}"
                raise AgentError(why) from None
            # A lone surrogate has no UTF-8 form: the tool gets U+FFFD, as the store keeps it.
            arguments = replace_surrogates(arguments)
            event = ToolCallEvent(name=name, arguments=arguments, call_id=call_id, t=event.t)
            text = event.model_dump_json()
        self._record(event, text)
        if name not in self._tool_names:
            outcome = ToolOutcome(content=f"Error: unknown tool {name!r}", is_error=True)
        else:
            outcome = self._in_env(
                f"call_tool({name!r})", lambda: _outcome(self._env, name, arguments)
            )
        content = outcome.content
        self._record(
            self._in_env(
                f"call_tool({name!r})",
                lambda: _result_event(
                    checked=self._own_world,
                    call_id=call_id,
                    name=name,
                    content=content,
                    is_error=outcome.is_error,
                    irreversible=outcome.irreversible,
                    t=self._t(),
                ),
            ),
            # Only text counts: a structured result is the environment's making,
            # and the step limit bounds how many the agent can ask for.
            content if isinstance(content, str) else None,
        )
        if name in TRANSFER_TOOLS and not outcome.is_error:
            self.control("transfer", f"called {name}")
        return outcome

    async def say(self, text: str) -> str | None:
        """Send a message to the user; the reply, or ``None`` once the user has left."""
        self._step()
        if not isinstance(text, str):  # None too: the world would be handed no message
            raise AgentError(f"say: text must be a string, got {text!r} ({type(text).__name__})")
        self._record(MessageEvent(role="assistant", content=text, t=self._t()), text)
        if self.user_done:
            return None
        reply = self._in_env("user_reply", lambda: _reply(self._env, text))
        if self._turn_env is not None and self._turn_env.user_turn > len(self._hand_backs) + 1:
            # The reply is a follow-up: the turn ended with the message just recorded.
            state = self._in_env(
                "final_state", lambda: _state_of(self._env, checked=self._own_world)
            )
            self._hand_backs.append(hand_back(len(self._events), state))
        if reply is None:
            self.user_done = True
            return None
        self._record(MessageEvent(role="user", content=reply, t=self._t()), reply)
        return reply

    def control(self, decision: ControlDecision, reason: str | None = None) -> None:
        with _refused("control"):
            event = ControlEvent(decision=decision, reason=reason, t=self._t())
        self._record(event, reason)

    def answer(self, text: str) -> None:
        """Record the final answer (also as the last assistant message)."""
        with _refused("answer", {"content": "text"}):
            said = MessageEvent(role="assistant", content=text, t=self._t())
        self._answer = text
        last = self._events[-1] if self._events else None
        if not (
            isinstance(last, MessageEvent) and last.role == "assistant" and last.content == text
        ):
            self._record(said, text)

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
        try:
            amount = check_amount("cost", usd)
            if amount is None:
                raise OutOfBounds(f"cost must be a finite number >= 0, got {usd!r}")
            add_amount("cost", self._spent(), amount)  # the trial's total stays finite
        except OutOfBounds as exc:
            raise AgentError(f"record_cost: {exc} (US dollars)") from None
        self._recorded_cost = (self._recorded_cost or 0.0) + amount

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
        """Record one model call. Token counts must fit the store (below 2**63),
        costs and latencies be finite and >= 0, and the trial's totals stay finite:
        a value that does not is refused here, and the trial ends as the agent's
        error saying which."""
        try:
            tokens_in = check_count("model_call input_tokens", input_tokens)
            tokens_out = check_count("model_call output_tokens", output_tokens)
            cache_read = check_count("model_call cache_read_tokens", cache_read_tokens)
            reasoning = check_count("model_call reasoning_tokens", reasoning_tokens)
            cost = check_amount("model_call cost_usd", cost_usd)
            latency = check_amount("model_call latency_s", latency_s)
            totals = self._model_call_totals(tokens_in, tokens_out, cost)
            vt = add_amount("latency_s", self._vt, latency) if self._virtual and latency else None
        except OutOfBounds as exc:
            raise AgentError(str(exc)) from None
        with _refused("record_model_call"):
            event = ModelCallEvent(
                model=model,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cache_read_tokens=cache_read,
                reasoning_tokens=reasoning,
                cost_usd=cost,
                price_source=price_source,
                latency_s=latency,
                attempts=attempts,
                t=self._t(),
            )
        self._record(event, model)
        self._tokens_in, self._tokens_out, self._model_cost = totals
        if vt is not None:
            self._vt = vt

    def _model_call_totals(
        self, tokens_in: int | None, tokens_out: int | None, cost: float | None
    ) -> tuple[int, int, float]:
        """The trial's token and model-cost totals with one more call, or `OutOfBounds`
        when one would no longer fit the store (every model call of the trial counts,
        whether recorded here or reported by a remote agent through `record_event`)."""
        total_in = self._tokens_in + (tokens_in or 0)
        total_out = self._tokens_out + (tokens_out or 0)
        check_count("the trial's total input_tokens", total_in)
        check_count("the trial's total output_tokens", total_out)
        if cost is not None:
            add_amount("cost_usd", self._spent(), cost)
        return total_in, total_out, self._model_cost + (cost or 0.0)

    def _spent(self) -> float:
        return self._model_cost + (self._recorded_cost or 0.0)

    # ------------------------------------------------------------------ remote agents

    def record_event(self, event: Event) -> None:
        """Add a step the agent took outside this session (a remote agent's own tool
        call, say) to the transcript, as it happened; the environment is not touched.
        Not counted against ``max_steps``, which stops an agent looping through this
        session: a remote transcript is as long as its reply. It does count toward
        the transcript's event and byte budget, as every event does, and a model call
        meets the checks of `record_model_call` (its counts and cost fit the store, and
        so do the trial's totals). Lone surrogates in its text become U+FFFD, as the
        store keeps them."""
        if not isinstance(event, _EVENT_TYPES):
            raise AgentError(
                "record_event takes a transcript event (agentgauge.schema: MessageEvent, "
                f"ModelCallEvent, ToolCallEvent, ToolResultEvent, ControlEvent), got "
                f"{type(event).__module__}.{type(event).__qualname__}"
            )
        totals = None
        if isinstance(event, ModelCallEvent):
            try:
                tokens_in = check_count("model_call input_tokens", event.input_tokens)
                tokens_out = check_count("model_call output_tokens", event.output_tokens)
                cost = check_amount("model_call cost_usd", event.cost_usd)
                check_amount("model_call latency_s", event.latency_s)
                totals = self._model_call_totals(tokens_in, tokens_out, cost)
            except OutOfBounds as exc:
                raise AgentError(str(exc)) from None
        try:
            text = event.model_dump_json()
        except PydanticSerializationError as exc:
            if not _lone_surrogate(exc):
                raise
            event = type(event).model_validate(replace_surrogates(event.model_dump()))
            text = event.model_dump_json()
        self._record(event, text)
        if totals is not None:
            self._tokens_in, self._tokens_out, self._model_cost = totals
        if (
            isinstance(event, ToolResultEvent)
            and event.name in TRANSFER_TOOLS
            and not event.is_error
        ):
            self.control("transfer", f"called {event.name}")

    def report_state(self, state: dict[str, Any]) -> None:
        """The final state of a world the agent keeps itself; it replaces this
        environment's state in the trial record (the state grader reads it). A JSON
        object: anything else is refused, naming the path of what JSON cannot hold."""
        if not isinstance(state, dict):
            raise AgentError(f"report_state takes a JSON object, got {type(state).__name__}")
        self._reported_state = _json_value(state, "report_state: state")

    def note(self, key: str, value: Any) -> None:
        """Keep ``value`` (JSON) in the trial's metadata under ``key`` (a string)."""
        if not isinstance(key, str):
            raise AgentError(f"note: the key must be a string, got {key!r}")
        if key in HARNESS_METADATA_KEYS:
            raise AgentError(
                f"note: metadata.{key} is agentgauge's own ({HARNESS_METADATA_KEYS[key]}); "
                "note under another key"
            )
        self._notes[key] = _json_value(value, f"note: metadata.{key}")

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
            turns=None if self._turn_env is None else list(self._hand_backs),
        )

    def _final_state(self) -> dict[str, Any]:
        if self._reported_state is not None:
            return self._reported_state
        return _state_of(self._env, checked=self._own_world)


def _takes_turns(env: Environment) -> bool:
    """``isinstance(env, TurnTaking)``, answered at once for a world that cannot be one:
    neither its class nor the object has ``user_turns``, and no ``__getattr__`` could
    make it. typing's check of a protocol with properties walks the protocol's
    attributes each time (about 10 µs on Python 3.11), and most worlds are asked once
    per trial."""
    if (
        not hasattr(type(env), "user_turns")
        and not hasattr(type(env), "__getattr__")
        and "user_turns" not in getattr(env, "__dict__", ())
    ):
        return False
    return isinstance(env, TurnTaking)


def _outcome(env: Environment, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    outcome = env.call_tool(name, arguments)
    if not isinstance(outcome, ToolOutcome):
        raise TypeError(f"returned a {type(outcome).__name__}, not a ToolOutcome")
    return outcome


def _own_world(env: Environment) -> bool:
    """Whether ``env`` is not one of agentgauge's built-in worlds (under the harness's
    variant wrappers, `agentgauge.envs.faults`)."""
    while type(env).__module__ == "agentgauge.envs.faults" and hasattr(env, "inner"):
        env = env.inner
    return not type(env).__module__.startswith(_BUILT_IN_WORLDS)


_BUILT_IN_WORLDS = ("agentgauge.envs.retail.", "agentgauge.envs.functions.")


def _result_event(*, checked: bool, **fields: Any) -> ToolResultEvent:
    """The tool result event, checked as the store will write it: content JSON has no
    form for (bytes, an object, a NaN, a cycle, nesting past the serialiser's depth)
    is the environment's failure, raised here so that `TrialSession._in_env` makes the
    trial an infra error; unchecked, it stopped the store's writer, and the run, with a
    traceback. Numpy scalars become numbers and tuples lists; lone surrogates U+FFFD,
    as the store keeps them. Unless ``checked``, the event is made as it is."""
    if not checked:
        return ToolResultEvent(**fields)
    try:
        fields["content"] = plain_json(fields["content"], "content")
    except OutOfBounds as exc:
        raise ValueError(f"returned {exc}") from None
    event = ToolResultEvent(**fields)
    try:
        event.model_dump_json()
    except (ValueError, RecursionError) as exc:  # PydanticSerializationError is a ValueError
        if not _lone_surrogate(exc):
            why = str(exc).removeprefix("Error serializing to JSON: ")
            raise ValueError(f"returned content that is not JSON: {why}") from None
        event = ToolResultEvent(**replace_surrogates(event.model_dump()))
    return event


def _state_of(env: Environment, *, checked: bool) -> dict[str, Any]:
    """``env.final_state()``, ``checked`` as the store will write it: a cycle, or
    nesting past what the encoder can follow, stopped the store's writer, and the
    run, with a traceback; raised here, it makes the trial an infra error
    (`run_cell`)."""
    state = env.final_state()
    if not checked:
        return state
    try:  # one that is no object is refused by the trial record (`run_cell`'s `_finish`)
        dumps(state)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"final_state() returned a state that is not JSON: {exc}") from None
    return state


def _reply(env: Environment, text: str) -> str | None:
    reply = env.user_reply(text)
    if reply is not None and not isinstance(reply, str):
        raise TypeError(f"returned a {type(reply).__name__}, not text or None")
    return reply


_EVENT_TYPES = (MessageEvent, ModelCallEvent, ToolCallEvent, ToolResultEvent, ControlEvent)


def _json_value(value: Any, where: str) -> Any:
    """``value`` as plain JSON (numpy scalars become numbers), or `AgentError` naming
    the path of what JSON cannot hold: a NaN in a note once stopped the store's writer,
    and with it the run."""
    try:
        value = plain_json(value, where)
        json.dumps(value, allow_nan=False)
    except OutOfBounds as exc:
        raise AgentError(str(exc)) from None
    except (TypeError, ValueError, RecursionError) as exc:  # a cycle, or too deep
        raise AgentError(f"{where} is not JSON: {exc}") from None
    return value


@contextmanager
def _refused(call: str, params: Mapping[str, str] | None = None) -> Iterator[None]:
    """Turn pydantic's refusal of what the agent passed to ``call`` into the agent's
    error naming the call, the parameter and the value (``control: decision: Input
    should be 'act', ... or 'transfer', got 'refusee' (str)``), instead of pydantic's
    report on the event it was making (``1 validation error for ControlEvent decision
    ... For further information visit https://errors.pydantic.dev/...``). ``params``
    maps an event field to the parameter's name where they differ."""
    try:
        yield
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = str(error["loc"][0]) if error["loc"] else "value"
        value = error.get("input")
        raise AgentError(
            f"{call}: {(params or {}).get(field, field)}: {error['msg']}, got {value!r} "
            f"({type(value).__name__})"
        ) from None


def _lone_surrogate(exc: BaseException) -> bool:
    """Whether serializing failed on a lone surrogate (which has no UTF-8 form)."""
    return "surrogates not allowed" in str(exc)
