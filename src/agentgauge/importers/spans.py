"""Spans -> trials: the one mapping behind ``import otel``, ``import openinference``
and ``collect``.

A trace is one trial, rooted at its outermost agent span (GenAI ``invoke_agent``,
OpenInference ``AGENT``), or at the trace's root span when no span says it is an
agent. The trace's model and tool spans, in time order, become the transcript:
a model span is a `ModelCallEvent` (tokens, model, latency from its times, and the
price the span states; a call with tokens and no price is priced as the harness
prices one, `agentgauge.agents.prices`), a tool span a `ToolCallEvent` and its
`ToolResultEvent`, and the messages the spans carry become `MessageEvent`s, each
once although every model call repeats the history before it.

The task, the trial index and the outcome are attributes of the root span
(names in `TraceOptions`), or rows of an outcomes file keyed by trace id
(`read_outcomes`). A trace with no outcome is graded by its task's graders when
the suite is given; without one it is refused: a trial needs an outcome, and
agentgauge will not invent one.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from operator import attrgetter
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentgauge.agents.prices import PriceTable, Usage, default_prices
from agentgauge.errors import InputError, first_error
from agentgauge.evidence import grades_problem
from agentgauge.importers.dialects import (
    GENAI,
    Dialect,
    History,
    Message,
    SpanKind,
    detect,
    first,
)
from agentgauge.importers.otlp import Span, span_digest, unique_spans
from agentgauge.model_calls import known_sum
from agentgauge.otel_record import (
    EVALUATION_EVENT,
    EVENT_INDEX,
    RECORD_CALL_ATTEMPTS,
    RECORD_CALL_COST,
    RECORD_CALL_LATENCY_UNKNOWN,
    RECORD_CALL_PRICE_SOURCE,
    RECORD_MARK,
    RESULT_INDEX,
    conversation_events,
    placed,
    record_from_attributes,
    result_fields,
)
from agentgauge.schema import (
    INT64_MAX,
    MAX_TRIAL_INDEX,
    SUCCESS_TOLERANCE,
    Event,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.sources import read_jsonl, too_large_trial
from agentgauge.textio import MAX_DEPTH, nests_deeper

__all__ = [
    "Outcome",
    "TraceOptions",
    "evaluation_grade",
    "events_from_trace",
    "group_traces",
    "outcomes_record",
    "read_outcomes",
    "trial_from_trace",
    "trials_from_spans",
]


@dataclass(frozen=True)
class TraceOptions:
    """Which root-span attributes hold what the trace itself cannot say."""

    task_attr: str = "agentgauge.task.id"
    trial_attr: str = "agentgauge.trial"
    success_attr: str = "agentgauge.outcome.success"
    score_attr: str = "agentgauge.outcome.score"
    outcome_evaluation: str | None = None
    """The ``gen_ai.evaluation.name`` of the evaluation whose verdict is the trial's
    outcome, for a trace that carries none in its attributes or outcomes file."""

    def __post_init__(self) -> None:
        if self.outcome_evaluation is not None and not self.outcome_evaluation.strip():
            raise InputError(
                "give the name of an evaluation (its gen_ai.evaluation.name)",
                field="--outcome-evaluation",
            )


@dataclass(frozen=True)
class Outcome:
    """One row of an outcomes file: what a trace's spans leave out."""

    task_id: str | None = None
    trial: int | None = None
    success: bool | None = None
    score: float | None = None
    where: str = ""


def read_outcomes(path: str | Path) -> dict[str, Outcome]:
    """An outcomes file: JSON lines ``{"trace_id", "task_id"?, "trial"?, "success"?,
    "score"?}`` (docs/formats/otel.md), keyed by lowercase trace id."""
    out: dict[str, Outcome] = {}
    for line, obj in read_jsonl(path):
        trace_id, row = _outcome_row(obj, f"{path}:{line}", path, line)
        if trace_id in out:
            raise InputError(
                f"trace {trace_id} already has an outcome ({out[trace_id].where})",
                file=path,
                line=line,
                field="trace_id",
            )
        out[trace_id] = row
    return out


def outcomes_record(path: str | Path, rows: Mapping[str, Outcome]) -> dict[str, object]:
    """What a run keeps of the outcomes file that decided its outcomes: the file, its
    SHA-256 and its number of rows (the run's ``config["outcomes"]``)."""
    from agentgauge.importers import file_sha256

    return {"file": str(path), "sha256": file_sha256(Path(path)), "rows": len(rows)}


_OUTCOME_KEYS = ("trace_id", "task_id", "trial", "success", "score")


def _outcome_row(
    obj: dict[str, Any], where: str, path: str | Path, line: int
) -> tuple[str, Outcome]:
    def fail(key: str, reason: str) -> InputError:
        return InputError(reason, file=path, line=line, field=key)

    unknown = sorted(set(obj) - set(_OUTCOME_KEYS))
    if unknown:
        raise fail(unknown[0], f"unknown key; an outcome row has {', '.join(_OUTCOME_KEYS)}")
    trace_id = obj.get("trace_id")
    if not isinstance(trace_id, str) or not _TRACE_ID.fullmatch(trace_id):
        raise fail("trace_id", "expected the trace id as 32 hex digits")
    if not trace_id.strip("0"):
        raise fail("trace_id", "a trace id of all zeros is invalid (W3C Trace Context)")
    task_id = obj.get("task_id")
    if task_id is not None and (not isinstance(task_id, str) or not task_id):
        raise fail("task_id", "expected a non-empty string")
    trial = _index(obj.get("trial"))
    if trial is False:
        raise fail("trial", _index_error(obj.get("trial")))
    success = obj.get("success")
    if success is not None and not isinstance(success, bool):
        raise fail("success", "expected true or false")
    score = _score(obj.get("score"))
    if score is False:
        raise fail("score", "expected a number in [0, 1]")
    index = trial if isinstance(trial, int) and not isinstance(trial, bool) else None
    value = score if isinstance(score, float) else None
    return trace_id.lower(), Outcome(task_id, index, success, value, where=where)


#: A trace id as OTLP JSON writes it: 32 hex digits and nothing else (``int(s, 16)``
#: would take ``0x``, a sign, ``_`` and spaces, and the row would match no trace).
_TRACE_ID = re.compile("[0-9a-fA-F]{32}")


def _index(value: Any) -> int | bool | None:
    """A trial index, ``None`` when absent, ``False`` when invalid."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    if not 0 <= value <= MAX_TRIAL_INDEX:
        return False
    return value


def _index_error(value: Any) -> str:
    """Why ``value`` is no trial index (`_index` said ``False``)."""
    if type(value) is int and value > MAX_TRIAL_INDEX:
        return too_large_trial(value)
    return "expected an integer >= 0"


def _score(value: Any) -> float | bool | None:
    """A score in [0, 1], ``None`` when absent, ``False`` when invalid."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return float(value) if 0 <= value <= 1 else False


def group_traces(spans: Iterable[Span]) -> dict[str, list[Span]]:
    """Spans by trace id, in the order traces first appear."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace_id, []).append(span)
    return traces


def trials_from_spans(
    spans: Iterable[Span],
    *,
    dialect: Dialect | None = None,
    options: TraceOptions | None = None,
    outcomes: Mapping[str, Outcome] | None = None,
    tasks: Mapping[str, Task] | None = None,
    unique: bool = False,
    prices: PriceTable | None = None,
) -> list[Trial]:
    """One trial per trace (`trial_from_trace`), in the order traces first appear.
    ``dialect=None`` detects each trace's dialect from its spans. Trial indices the
    trace does not give are left ``None`` (`agentgauge.sources.assign_trial_indices`
    numbers them). A span given twice counts once; two different spans with the same
    ``(trace_id, span_id)`` are an `InputError` (`agentgauge.importers.otlp.unique_spans`).
    ``unique``: the caller has made them so already (`read_otlp_spans` does).
    ``prices``: what prices a model call that carries tokens and no cost (default:
    `default_prices`, the user's ``AGENTGAUGE_PRICES`` file then genai-prices)."""
    if not unique:
        spans, _repeats = unique_spans(spans)
    table = prices if prices is not None else default_prices(warm=False)
    return [
        trial_from_trace(
            trace,
            dialect=dialect,
            options=options,
            outcome=(outcomes or {}).get(trace_id),
            tasks=tasks,
            prices=table,
        )
        for trace_id, trace in group_traces(spans).items()
    ]


def events_from_trace(
    spans: list[Span],
    *,
    dialect: Dialect | None = None,
    options: TraceOptions | None = None,
    t0_ns: int | None = None,
    known: Iterable[Event] = (),
    prices: PriceTable | None = None,
) -> list[Event]:
    """The transcript events of one trace's spans (tool calls and results, model calls,
    messages), as `trial_from_trace` reads them, without making a trial: for spans that
    join a trial recorded elsewhere (an ``http:`` agent's, `agentgauge.collect.join`).

    ``t0_ns``: the time events' ``t`` counts from (default: the spans' root's start).
    ``known``: the trial's transcript so far. A message it holds already is history
    that a model call of these spans repeats in its input (or the final answer the
    trial recorded), and is not added again; so are the tool calls and results of a
    call id it has. The spans themselves must be new to the trial (`join_spans`
    keeps the span ids a trial was read from). ``prices``: as `trials_from_spans`."""
    if not spans:
        return []
    builder = _Builder(spans, dialect or detect(spans), options or TraceOptions(), prices)
    if t0_ns is not None:
        builder.t0 = t0_ns
    with _checked(builder.root.where):
        events = builder.events()[0]
    return _not_known(events, known)


def _not_known(events: list[Event], known: Iterable[Event]) -> list[Event]:
    """``events`` less the messages (as many times as held) and tool call ids ``known``
    holds."""
    held: Counter[tuple[str, str | None]] = Counter()
    calls: set[str] = set()
    results: set[str] = set()
    for e in known:
        if isinstance(e, MessageEvent):
            held[(e.role, e.content)] += 1
        elif isinstance(e, ToolCallEvent) and e.call_id is not None:
            calls.add(e.call_id)
        elif isinstance(e, ToolResultEvent) and e.call_id is not None:
            results.add(e.call_id)
    if not (held or calls or results):
        return events
    out: list[Event] = []
    for e in events:
        if isinstance(e, MessageEvent):
            key = (e.role, e.content)
            if held[key] > 0:
                held[key] -= 1
                continue
        elif isinstance(e, ToolCallEvent | ToolResultEvent) and e.call_id in (
            calls if isinstance(e, ToolCallEvent) else results
        ):
            continue
        out.append(e)
    return out


def trial_from_trace(
    spans: list[Span],
    *,
    dialect: Dialect | None = None,
    options: TraceOptions | None = None,
    outcome: Outcome | None = None,
    tasks: Mapping[str, Task] | None = None,
    incomplete: bool = False,
    prices: PriceTable | None = None,
) -> Trial:
    """The trial of one trace's spans (all of one trace id, in any order).

    ``incomplete``: the trace's root span never arrived (``collect`` at shutdown);
    the trial is stored with status ``error``, an infra error, and says so.
    ``prices``: as `trials_from_spans`."""
    if not spans:
        raise ValueError("a trace has at least one span")
    builder = _Builder(spans, dialect or detect(spans), options or TraceOptions(), prices)
    with _checked(builder.root.where):
        return builder.build(outcome, tasks or {}, incomplete)


@contextmanager
def _checked(where: str) -> Iterator[None]:
    """An event the builder made that its model refuses is the trace's fault (a value
    the attribute checks let through): one `InputError` at the trace's root span, never
    a traceback. The builder checks each value it reads, so this is a last guard."""
    try:
        yield
    except ValidationError as exc:
        field, reason = first_error(exc, metadata_hint=False)
        raise InputError(reason, file=where, field=field) from None


#: A span's place in time: its start, then its end.
_BY_TIME = attrgetter("start_ns", "end_ns")


class _Builder:
    def __init__(
        self,
        spans: list[Span],
        dialect: Dialect,
        options: TraceOptions,
        prices: PriceTable | None = None,
    ) -> None:
        self.spans = sorted(spans, key=_BY_TIME)
        self._prices = prices
        self._priced = True
        """Whether calls with tokens and no cost are priced: not those of a trace
        agentgauge exported, whose record says what each call cost, or that it was
        unknown (its round trip gives back the same figures)."""
        if any(s.attributes.get(RECORD_MARK) == 1 for s in self.spans):
            # A trace agentgauge exported (``export --otel``) is GenAI spans, whichever
            # reader is given it (``import openinference`` of an export).
            dialect = GENAI
            self._priced = False
        self.d = dialect
        self.options = options
        self.kinds: dict[str, SpanKind | None] = {s.span_id: dialect.kind(s) for s in self.spans}
        self.root = self._root()
        self.call_spans: dict[int, Span] = {}
        """The span of each model call made (by the event's ``id``), to name the span
        where the trace's totals overflow (`_total`)."""
        self.t0 = self.root.start_ns
        self.trace_id = self.root.trace_id

    def _root(self) -> Span:
        by_id = {s.span_id: s for s in self.spans}
        for span in self.spans:  # earliest first: the outermost agent span
            if self.kinds[span.span_id] == "agent" and not self._has_agent_above(span, by_id):
                return span
        tops = [s for s in self.spans if s.parent_id is None or s.parent_id not in by_id]
        # Parents that loop (a span its own ancestor) leave no top: take the earliest.
        return tops[0] if tops else self.spans[0]

    def _has_agent_above(self, span: Span, by_id: dict[str, Span]) -> bool:
        seen = {span.span_id}
        parent = span.parent_id
        while parent is not None and parent in by_id and parent not in seen:
            seen.add(parent)
            if self.kinds[parent] == "agent":
                return True
            parent = by_id[parent].parent_id
        return False

    def _t(self, ns: int) -> float:
        return max(ns - self.t0, 0) / 1e9

    # ----------------------------------------------------------------- attributes

    def _int(self, span: Span, keys: tuple[str, ...]) -> int | None:
        attrs = span.attributes
        for key in keys:  # the first of them the span has (`first`, inlined: a hot path)
            if key in attrs:
                value = attrs[key]
                if type(value) is int and value >= 0:  # the usual: one test
                    return value
                if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                    raise InputError(
                        f"attribute {key!r}: expected an integer >= 0, got {value!r}",
                        file=span.where,
                    )
                return value
        return None

    def _num(self, span: Span, key: str) -> float | None:
        value = span.attributes.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise InputError(
                f"attribute {key!r}: expected a number >= 0, got {value!r}", file=span.where
            )
        return float(value)

    def _str(self, span: Span, keys: tuple[str, ...]) -> str | None:
        attrs = span.attributes
        for key in keys:  # the first of them the span has (`first`, inlined: a hot path)
            if key in attrs:
                value = attrs[key]
                if value is None or type(value) is str:
                    return value
                if not isinstance(value, str):
                    raise InputError(
                        f"attribute {key!r}: expected a string, got {value!r}", file=span.where
                    )
                return value
        return None

    def _cost(self, span: Span) -> float | None:
        if not (self.d.cost_usd or self.d.cost_parts):  # GenAI spans state no price
            return None
        found = first(span.attributes, self.d.cost_usd)
        if found is not None:
            return self._num(span, found[0])
        parts = [self._num(span, k) for k in self.d.cost_parts if k in span.attributes]
        if parts and len(parts) == len(self.d.cost_parts):
            return sum(p for p in parts if p is not None)
        return None

    def _attr_anywhere(self, key: str) -> tuple[Span, Any] | None:
        """An attribute of the root; else of the trace's top span (the agent may run
        inside a span of the application's that the attributes were set on); else of
        the earliest span that has it (a trace whose root never ended keeps its task
        only where the agent copied it onto other spans)."""
        if key in self.root.attributes:  # the usual place: one look
            return self.root, self.root.attributes[key]
        tops = [s for s in self.spans if s.parent_id is None]
        for span in (*tops, *self.spans):
            if key in span.attributes:
                return span, span.attributes[key]
        return None

    # ----------------------------------------------------------------- events

    def events(self) -> tuple[list[Event], dict[str, Any]]:
        timed: list[tuple[int, int, Event]] = []
        extras: Counter[str] = Counter()
        first_chunk: list[float] = []
        seen: dict[tuple[Any, ...], int] = {}
        has_tool_spans = "tool" in self.kinds.values()
        history = History()  # each call's input repeats the last's: read once

        def add(ns: int, event: Event) -> None:
            # Its place among the events added at the same time: the order they came in.
            timed.append((ns, len(timed), event))

        def add_messages(ns: int, msgs: list[Message] | None) -> None:
            if not msgs:
                return
            local: dict[tuple[Any, ...], int] = {}
            t = self._t(ns)
            for msg in msgs:
                key = msg.key()
                count = local[key] = local.get(key, 0) + 1
                if count <= seen.get(key, 0):
                    continue  # history a later call repeats
                seen[key] = seen.get(key, 0) + 1
                for event in self._message_events(msg, t, with_tools=not has_tool_spans):
                    timed.append((ns, len(timed), event))

        root_agent = self.kinds[self.root.span_id] == "agent"
        if root_agent:
            add_messages(self.root.start_ns, self.d.messages(self.root, "input", history))
        for span in self.spans:
            kind = self.kinds[span.span_id]
            if kind == "model":
                add_messages(span.start_ns, self.d.messages(span, "input", history))
                made = self._model_call(span)
                self.call_spans[id(made)] = span
                add(span.end_ns, made)  # when its answer came
                for name, keys in self.d.usage_extras:
                    value = self._int(span, keys)
                    if value is not None:
                        extras[name] += value
                ttfc = self._num(span, "gen_ai.response.time_to_first_chunk")
                if ttfc is not None:
                    first_chunk.append(ttfc)
                add_messages(span.end_ns, self.d.messages(span, "output", history))
            elif kind == "tool":
                call, result = self._tool(span)
                add(span.start_ns, call)
                add(span.end_ns, result)
        if root_agent:
            add_messages(self.root.end_ns, self.d.messages(self.root, "output", history))
        timed.sort()  # by time, then order added: no two items tie, no event is compared
        meta: dict[str, Any] = dict(extras)
        if first_chunk:
            meta["time_to_first_chunk_s"] = first_chunk
        return [e for _, _, e in timed], meta

    def _message_events(self, msg: Message, t: float, *, with_tools: bool) -> list[Event]:
        """A message's events; its tool calls and results only when the trace has no
        tool spans, which say the same with times and errors."""
        out: list[Event] = []
        if msg.role == "tool" or msg.tool_call_id is not None:
            if with_tools:
                out.append(
                    ToolResultEvent.model_validate(
                        {"t": t, "call_id": msg.tool_call_id, "content": msg.result}
                    )
                )
            return out
        if msg.text is not None or not msg.tool_calls:
            # model_validate of a dict: the checks of MessageEvent(...), without its
            # keyword packing (a fifth of the event's making).
            out.append(MessageEvent.model_validate({"t": t, "role": msg.role, "content": msg.text}))
        if with_tools:
            out.extend(
                ToolCallEvent(
                    t=t, name=c.name, arguments=_arguments(c.arguments), call_id=c.call_id
                )
                for c in msg.tool_calls
            )
        return out

    def _model_call(self, span: Span) -> ModelCallEvent:
        fields = {
            # When the call returned, as the harness records a model call (its answer
            # is the event); the start for a span with no usable end.
            "t": self._t(span.end_ns),
            "model": self._str(span, self.d.response_model)
            or self._str(span, self.d.request_model),
            "input_tokens": self._int(span, self.d.input_tokens),
            "output_tokens": self._int(span, self.d.output_tokens),
            "cost_usd": self._cost(span),
            "latency_s": span.duration_s,  # unknown for a span with no (usable) end
        }
        if not self._priced:
            # A call of a trace agentgauge exported: what its record says of it.
            fields["cost_usd"] = self._num(span, RECORD_CALL_COST)
            fields["price_source"] = self._str(span, (RECORD_CALL_PRICE_SOURCE,))
            fields["attempts"] = self._int(span, (RECORD_CALL_ATTEMPTS,))
            if span.attributes.get(RECORD_CALL_LATENCY_UNKNOWN) is True:
                fields["latency_s"] = None  # the span's length was made up, not measured
        elif (
            fields["cost_usd"] is None
            and fields["input_tokens"] is not None
            and fields["output_tokens"] is not None
        ):
            fields["cost_usd"], fields["price_source"] = self._price(span, fields)
        return ModelCallEvent.model_validate(_given(fields, _CALL_NONE_DEFAULTS))

    def _price(self, span: Span, fields: dict[str, Any]) -> tuple[float | None, str]:
        """The price of a model call that carries tokens and no cost, and its source
        (docs/running-agents.md, "Prices"): by the model the provider reported, then
        the one requested; the provider the span (else the trace) names; the price in
        force when the call was made; its cached and reasoning tokens when it counts
        them."""
        if self._prices is None:  # loaded once per builder, and only when needed
            self._prices = default_prices(warm=False)
        names = (self._str(span, self.d.response_model), self._str(span, self.d.request_model))
        provider = self._str(span, self.d.provider) or self._str(self.root, self.d.provider)
        known_unknown = self._prices.known_unknown(names, provider)
        if known_unknown is not None:  # a trace's calls of one model: read once
            return known_unknown.usd, known_unknown.source
        extras = {name: self._int(span, keys) for name, keys in self.d.usage_extras}
        usage = Usage(
            fields["input_tokens"],
            fields["output_tokens"],
            extras.get("cache_read_input_tokens"),
            extras.get("cache_creation_input_tokens"),
            extras.get("reasoning_output_tokens"),
        )
        quote = self._prices.quote(names, usage, provider=provider, at=_utc(span.start_ns))
        return quote.usd, quote.source

    def _tool(self, span: Span) -> tuple[ToolCallEvent, ToolResultEvent]:
        name = self._str(span, self.d.tool_name)
        if name is None:
            # The GenAI span name is "execute_tool {gen_ai.tool.name}".
            name = span.name.removeprefix("execute_tool ").strip() or span.name
        call_id = self._str(span, self.d.tool_call_id)
        found = first(span.attributes, self.d.tool_arguments)
        result = first(span.attributes, self.d.tool_result)
        error_type = span.attributes.get("error.type")
        is_error = error_type is not None or span.error is not None
        content = result[1] if result is not None else None
        if content is None and is_error:
            content = " ".join(str(x) for x in (error_type, span.error) if x not in (None, "error"))
            content = content or "error"
        return (
            ToolCallEvent(
                t=self._t(span.start_ns),
                name=name,
                arguments=_arguments(found[1] if found else None),
                call_id=call_id,
            ),
            ToolResultEvent(
                t=self._t(span.end_ns),
                call_id=call_id,
                name=name,
                content=content,
                is_error=is_error,
            ),
        )

    # ----------------------------------------------------------------- the trial

    def build(self, outcome: Outcome | None, tasks: Mapping[str, Task], incomplete: bool) -> Trial:
        opts = self.options
        events, usage_meta = self.events()
        task_id = self._task_id(outcome)
        trial_index = self._trial_index(outcome)
        success, score = self._outcome(outcome)
        record_trace = self.root.attributes.get(RECORD_MARK) == 1  # an exported record
        evaluations = [] if record_trace else self._evaluations()
        if success is None and score is None and opts.outcome_evaluation is not None:
            success, score = self._evaluation_outcome(evaluations, opts.outcome_evaluation)
        calls = [e for e in events if isinstance(e, ModelCallEvent)]
        models = {c.model for c in calls if c.model is not None}
        model = (
            next(iter(models)) if len(models) == 1 else self._str(self.root, self.d.request_model)
        )
        meta: dict[str, Any] = {
            "trace_id": self.trace_id,
            "dialect": self.d.name,
            # What late spans of this trace are told apart from (`agentgauge.collect.join`):
            # their ids, and a digest of each one's content, so that a changed copy of
            # one is refused rather than taken for a repeat.
            "trace_spans": [s.span_id for s in self.spans],
            "trace_span_digests": {s.span_id: span_digest(s) for s in self.spans},
            "trace_t0_ns": self.t0,
            **usage_meta,
        }
        provider = self._str(self.root, self.d.provider) or next(
            (p for s in self.spans if (p := self._str(s, self.d.provider))), None
        )
        if provider:
            meta["provider"] = provider
        status, error, error_kind = "completed", None, None
        root_error = self.root.attributes.get("error.type")
        if incomplete:
            status, error_kind = "error", "infra"
            error = "incomplete trace: its root span had not ended when the receiver stopped"
            meta["incomplete"] = True
        elif root_error is not None or self.root.error is not None:
            # The agent's own span failed: the agent raised (docs/metrics.md, error kinds).
            status, error_kind = "error", "agent"
            error = ": ".join(str(x) for x in (root_error, self.root.error) if x is not None)
        if success is None and score is None and (status != "completed" or task_id not in tasks):
            if status == "completed":
                where_to = f"{opts.success_attr!r} or {opts.score_attr!r} on its root span"
                if opts.outcome_evaluation is not None:
                    where_to += (
                        f" (it has no {EVALUATION_EVENT!r} event named "
                        f"{opts.outcome_evaluation!r} either)"
                    )
                reason = (
                    f"trace {self.trace_id} has no outcome and the suite has no task "
                    f"{task_id!r} to grade it by: set {where_to} or give it in an outcomes "
                    "file (--outcomes)"
                    if tasks
                    else f"trace {self.trace_id} (task {task_id!r}) has no outcome: set "
                    f"{where_to}, give it in an outcomes file (--outcomes), or pass the suite "
                    "(--suite) to grade it"
                )
                raise InputError(
                    reason,
                    file=self.root.where,
                )
            success = False  # an unfinished trial fails; its status says why
        answer = self._answer(events)
        values: dict[str, Any] = {
            "task_id": task_id,
            "trial": trial_index,
            "agent": self._str(self.root, self.d.agent_name),
            "model": model,
            "success": success if success is not None or score is not None else False,
            "score": score,
            "input_tokens": self._total(calls, "input_tokens"),
            "output_tokens": self._total(calls, "output_tokens"),
            "cost_usd": self._total(calls, "cost_usd"),
            # An incomplete trace's "root" is a child standing in for the span that never
            # came: its duration is not the agent's run time, which nobody measured.
            "latency_s": None if incomplete else self.root.duration_s,
            # A trace of nothing but its root span shows no transcript: how many tools
            # the agent called is unknown, not 0 (an exported record says, below).
            "tool_calls": sum(1 for e in events if isinstance(e, ToolCallEvent))
            if events
            else None,
            "model_calls": len(calls),
            "status": status,
            "error": error,
            "error_kind": error_kind,
            "events": events,
            "answer": answer,
            "metadata": meta,
            "grades": [grade for _, grade in evaluations],
        }
        if not calls:
            # No model spans: the agent span's own usage, when it reports one.
            values["input_tokens"] = self._int(self.root, self.d.input_tokens)
            values["output_tokens"] = self._int(self.root, self.d.output_tokens)
            values["cost_usd"] = self._cost(self.root)
            values["model_calls"] = None
        record = record_from_attributes(
            self.root.attributes,
            (e.attributes for s in self.spans for e in s.events if e.name == EVALUATION_EVENT),
            where=self.root.where,
        )
        if record is not None:  # a trace agentgauge exported: its record, whole
            record["events"] = self._record_events()
            values.update(record)
        trial = self._validated(values)
        if record is None and success is None and score is None and status == "completed":
            trial = _graded(trial, tasks[task_id], self.root.where)
        return trial

    def _total(self, calls: list[ModelCallEvent], field: str) -> Any:
        """The sum of the calls' ``field`` (`known_sum`); one past what a trial can
        hold (the largest finite number; for tokens, the store's integers) is refused
        at the span whose value carries it over, not blamed on the root."""
        total = known_sum([getattr(c, field) for c in calls])
        if total is None or (math.isfinite(total) if field == "cost_usd" else total <= INT64_MAX):
            return total
        running: float = 0
        for call in calls:
            running += getattr(call, field) or 0
            if math.isfinite(running) and running <= (
                math.inf if field == "cost_usd" else INT64_MAX
            ):
                continue
            span = self.call_spans.get(id(call), self.root)
            keys = self.d.cost_usd + self.d.cost_parts
            if field != "cost_usd":
                keys = self.d.input_tokens if field == "input_tokens" else self.d.output_tokens
            key = next((k for k in keys if k in span.attributes), field)
            what = (
                "costs add up past the largest finite number"
                if field == "cost_usd"
                else f"{field.replace('_', ' ')} add up past {INT64_MAX} (2^63 - 1, the "
                "largest integer the store holds)"
            )
            raise InputError(f"the trace's model-call {what}", file=span.where, field=key)
        return total  # not reached: the running sum passes the bound at some call

    def _record_events(self) -> list[dict[str, Any]]:
        """The transcript of a trace agentgauge exported: messages, control decisions
        and unanswered tool results from the root's span events, model and tool calls
        from the spans, each put back in its place (`otel_record.placed`). A file
        written before events carried their places is ordered by time."""
        placed_events = conversation_events(
            ((e.name, self._t(e.time_ns), e.attributes) for e in self.root.events),
            where=self.root.where,
        )
        for span in self.spans:
            kind = self.kinds[span.span_id]
            if kind == "model":
                placed_events.append(placed(self._model_call(span).model_dump(), span.attributes))
            elif kind == "tool":
                call, result = self._tool(span)
                placed_events.append(placed(call.model_dump(), span.attributes))
                if EVENT_INDEX not in span.attributes:  # an older file: the span's result
                    placed_events.append((None, result.model_dump()))
                    continue
                if RESULT_INDEX not in span.attributes:  # the call got no result
                    continue
                fields = result_fields(span.attributes, call_id=call.call_id, where=span.where)
                fields.update(t=result.t, is_error=result.is_error)
                placed_events.append(placed(fields, span.attributes, RESULT_INDEX))
        if all(index is not None for index, _ in placed_events):
            return [e for _, e in sorted(placed_events, key=lambda item: item[0] or 0)]
        return sorted((e for _, e in placed_events), key=lambda e: e["t"] or 0.0)

    # ----------------------------------------------------------------- evaluations

    def _evaluations(self) -> list[tuple[Span, Grade]]:
        """The trace's ``gen_ai.evaluation.result`` span events (an evaluator's verdict,
        parented to the span it evaluated), each as a grade, in time order."""
        return [
            (span, self._evaluation(span, event.attributes))
            for span in self.spans
            for event in span.events
            if event.name == EVALUATION_EVENT
        ]

    def _evaluation(self, span: Span, attrs: Mapping[str, Any]) -> Grade:
        return evaluation_grade(attrs, span_name=span.name, where=span.where)

    def _evaluation_outcome(
        self, evaluations: list[tuple[Span, Grade]], name: str
    ) -> tuple[bool | None, float | None]:
        """The outcome the evaluation ``name`` gives: its pass/fail label, else its score
        in [0, 1]. One on the root span is the trial's; elsewhere there must be one."""
        named = [(span, g) for span, g in evaluations if g.grader == name]
        on_root = [item for item in named if item[0] is self.root]
        chosen = on_root or named
        if not chosen:
            return None, None
        if len(chosen) > 1:
            spans = ", ".join(sorted({span.name for span, _ in chosen}))
            raise InputError(
                f"trace {self.trace_id} has {len(chosen)} {EVALUATION_EVENT!r} events named "
                f"{name!r} (on {spans}) and none on its root span: which one is the trial's "
                "outcome is not clear",
                file=self.root.where,
            )
        span, grade = chosen[0]
        if grade.passed is not None:
            return grade.passed, None
        if grade.score is not None:
            return None, grade.score
        said = grade.evidence if isinstance(grade.evidence, dict) else {}
        why = (
            f"it failed ({said.get('error_type')})"
            if grade.status == "grader_error"
            else f"its label {said.get('label')!r} is not one of pass/fail, correct/incorrect, "
            f"true/false, yes/no, and its score {said.get('score')!r} is not in [0, 1]"
        )
        raise InputError(
            f"trace {self.trace_id}: the evaluation {name!r} cannot be the outcome: {why}",
            file=span.where,
        )

    def _validated(self, values: dict[str, Any]) -> Trial:
        try:
            trial = Trial.model_validate(_given(values, _TRIAL_NONE_DEFAULTS))
        except ValidationError as exc:
            field, reason = first_error(exc, metadata_hint=False)
            raise InputError(reason, file=self.root.where, field=field) from None
        # An agentgauge export carries its grades' evidence as JSON: checked as a
        # JSONL line's is (`agentgauge.evidence`).
        if trial.grades and (problem := grades_problem(trial.grades)) is not None:
            raise InputError(problem[1], file=self.root.where, field=problem[0])
        return trial

    def _task_id(self, outcome: Outcome | None) -> str:
        found = self._attr_anywhere(self.options.task_attr)
        value: str | None = None
        if found is not None:
            span, raw = found
            if isinstance(raw, int) and not isinstance(raw, bool):
                raw = str(raw)
            if not isinstance(raw, str) or not raw:
                raise InputError(
                    f"attribute {self.options.task_attr!r}: expected a task id (a string)",
                    file=span.where,
                )
            value = raw
        if outcome is not None and outcome.task_id is not None:
            if value is not None and value != outcome.task_id:
                raise InputError(
                    f"trace {self.trace_id} says task {value!r}, the outcomes file "
                    f"{outcome.task_id!r}",
                    file=outcome.where,
                    field="task_id",
                )
            value = outcome.task_id
        if value is None:
            raise InputError(
                f"trace {self.trace_id} names no task: set {self.options.task_attr!r} on its "
                "root span (or name the attribute with --task-attr), or give its task_id in an "
                "outcomes file (--outcomes)",
                file=self.root.where,
            )
        return value

    def _trial_index(self, outcome: Outcome | None) -> int | None:
        found = self._attr_anywhere(self.options.trial_attr)
        value: int | None = None
        if found is not None:
            index = _index(found[1])
            if index is False:
                raise InputError(
                    f"attribute {self.options.trial_attr!r}: {_index_error(found[1])}",
                    file=found[0].where,
                )
            value = index if isinstance(index, int) else None
        if outcome is not None and outcome.trial is not None:
            value = outcome.trial
        return value

    def _outcome(self, outcome: Outcome | None) -> tuple[bool | None, float | None]:
        success: bool | None = None
        score: float | None = None
        found = self._attr_anywhere(self.options.success_attr)
        if found is not None:
            if not isinstance(found[1], bool):
                raise InputError(
                    f"attribute {self.options.success_attr!r}: expected true or false, "
                    f"got {found[1]!r}",
                    file=found[0].where,
                )
            success = found[1]
        found = self._attr_anywhere(self.options.score_attr)
        if found is not None:
            value = _score(found[1])
            if value is False:
                raise InputError(
                    f"attribute {self.options.score_attr!r}: expected a number in [0, 1], "
                    f"got {found[1]!r}",
                    file=found[0].where,
                )
            score = value if isinstance(value, float) else None
        if outcome is not None and (outcome.success is not None or outcome.score is not None):
            success, score = outcome.success, outcome.score
        return success, score

    def _answer(self, events: list[Event]) -> str | None:
        for event in reversed(events):
            if isinstance(event, MessageEvent) and event.role == "assistant" and event.content:
                return event.content
        found = first(self.root.attributes, self.d.answer)
        text = found[1] if found is not None else None
        return text if isinstance(text, str) else None


def evaluation_grade(attrs: Mapping[str, Any], *, span_name: str, where: str) -> Grade:
    """The grade of one ``gen_ai.evaluation.result`` event's attributes, on the span
    named ``span_name``; a malformed one is an `InputError` at ``where``."""

    def fail(key: str, expected: str) -> InputError:
        return InputError(
            f"event {EVALUATION_EVENT!r}: attribute {key!r}: expected {expected}, "
            f"got {attrs.get(key)!r}",
            file=where,
        )

    name = attrs.get("gen_ai.evaluation.name")
    if not isinstance(name, str) or not name:
        raise fail("gen_ai.evaluation.name", "the evaluation's name (the convention requires it)")
    value = attrs.get("gen_ai.evaluation.score.value")
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))
    ):
        raise fail("gen_ai.evaluation.score.value", "a number")
    texts: dict[str, str] = {}
    for key, short in (
        ("gen_ai.evaluation.score.label", "label"),
        ("gen_ai.evaluation.explanation", "explanation"),
        ("error.type", "error_type"),
        ("gen_ai.response.id", "response_id"),
    ):
        text = attrs.get(key)
        if text is not None and not isinstance(text, str):
            raise fail(key, "a string")
        if text is not None:
            texts[short] = text
    label = texts.get("label")
    passed = _LABEL_VERDICT.get(label.strip().lower()) if label is not None else None
    errored = "error_type" in texts
    evidence: dict[str, Any] = {**texts, "span": span_name}
    if value is not None:
        evidence["score"] = value
    return Grade(
        grader=name,
        # A value outside [0, 1] (a 1-5 rating) is no score here; it stays in the evidence.
        score=None if errored or value is None or not 0 <= value <= 1 else float(value),
        passed=None if errored else passed,
        status="grader_error" if errored else None,
        evidence=evidence,
    )


#: Labels of a ``gen_ai.evaluation.result`` that say pass or fail (the convention's
#: examples, "pass", "fail", "correct", "incorrect", and their usual spellings); any other
#: label ("relevant", "4 stars") leaves the grade's verdict unknown.
_LABEL_VERDICT: dict[str, bool] = {
    **dict.fromkeys(("pass", "passed", "correct", "true", "yes", "success"), True),
    **dict.fromkeys(("fail", "failed", "incorrect", "false", "no", "failure"), False),
}


def _utc(ns: int) -> datetime | None:
    """A span's time as a UTC datetime; ``None`` (the price in force today) for one no
    datetime can hold."""
    try:
        return datetime.fromtimestamp(ns / 1e9, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _none_defaults(model: type[Any]) -> frozenset[str]:
    return frozenset(
        name
        for name, info in model.model_fields.items()
        if info.default is None and info.default_factory is None
    )


#: Fields whose default is ``None``: left out when ``None`` (the same value), which
#: spares pydantic a call of their checks (a microsecond each, a third of a trial's).
_TRIAL_NONE_DEFAULTS = _none_defaults(Trial)
_CALL_NONE_DEFAULTS = _none_defaults(ModelCallEvent)


def _given(values: dict[str, Any], none_defaults: frozenset[str]) -> dict[str, Any]:
    """``values`` without the ``None`` of fields that default to it."""
    return {k: v for k, v in values.items() if v is not None or k not in none_defaults}


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else None
        deep = isinstance(raw, str) and raw.count("[") + raw.count("{") > MAX_DEPTH
        if deep and nests_deeper(raw, MAX_DEPTH):
            parsed = None
    except (ValueError, RecursionError):
        parsed = None
    # Arguments that are not a JSON object are the agent's error: kept as text for graders.
    return parsed if isinstance(parsed, dict) else {"__unparsed__": raw}


def _graded(trial: Trial, task: Task, where: str) -> Trial:
    """The trial with the outcome its task's code graders give it."""
    from agentgauge.graders.base import grade_trial

    grading = grade_trial(task, trial)
    if grading.success is None and grading.score is None:
        raise InputError(
            f"trace {trial.metadata.get('trace_id')} (task {task.id!r}) has no outcome and its "
            "task enables no grader that decides one",
            file=where,
        )
    if grading.success is not None:
        success = grading.success
    else:  # partial credit only: tau-bench's rule, as `Trial` applies it
        assert grading.score is not None
        success = grading.score >= 1 - SUCCESS_TOLERANCE
    score = grading.score if grading.score is not None else (1.0 if success else 0.0)
    grades = [*trial.grades, *grading.grades]  # the trace's own evaluations first
    return trial.model_copy(update={"success": success, "score": score, "grades": grades})
