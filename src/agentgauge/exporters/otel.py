"""A run as OTLP JSON: OpenTelemetry GenAI spans with ``gen_ai.evaluation.result`` events.

Field names follow the GenAI semantic conventions (open-telemetry/semantic-conventions-genai,
schema 1.42.0; every ``gen_ai.*`` name there is still "development"); the encoding is
OTLP/JSON (opentelemetry-proto, docs/specification.md, "JSON Protobuf Encoding"): the
protobuf classes of ``opentelemetry-proto`` serialised by ``google.protobuf.json_format``,
with trace and span ids as hex strings (where OTLP departs from protobuf's own JSON
mapping), enums as integers, 64-bit integers as strings. docs/formats/otel-export.md
has the mapping table.

Each trial is a trace:

- a root ``invoke_agent {agent}`` span (kind INTERNAL) with the trial's record as
  attributes (``agentgauge.task.id``, ``agentgauge.trial``, ``agentgauge.outcome.success``,
  ``agentgauge.outcome.score``, ``gen_ai.agent.name``, ``gen_ai.request.model``, usage...);
- a ``chat {model}`` child span (CLIENT) per model call, an ``execute_tool {name}``
  child span (INTERNAL) per tool call with its arguments and result (``error.type`` when
  the tool failed); messages and control decisions are span events on the root;
- a ``gen_ai.evaluation.result`` span event per grade (``gen_ai.evaluation.name``,
  ``gen_ai.evaluation.score.value``, ``gen_ai.evaluation.score.label``,
  ``gen_ai.evaluation.explanation``) on the span evaluated, as the convention asks:
  the root, or the ``execute_tool`` span of a grade whose evidence names a ``call_id``.

A trial run through an ``http:`` agent keeps the trace and span ids its request
carried, so the agent's own spans (children of that span) fall under the exported root.
Other trials get ids derived from the run and cell, so exporting twice gives the same ids.
Spans need absolute times that trials do not record: every trace starts at the run's
creation time, and events sit at their offsets (``t``) from it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections import deque
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from agentgauge._version import __version__
from agentgauge.otel_record import (
    CONTROL_EVENT,
    EVALUATION_EVENT,
    MESSAGE_EVENT,
    RECORD_CALL_ATTEMPTS,
    RECORD_CALL_COST,
    RECORD_CALL_LATENCY_UNKNOWN,
    RECORD_CALL_PRICE_SOURCE,
    RESULT_INDEX,
    TOOL_RESULT_EVENT,
    control_attributes,
    grade_attributes,
    message_attributes,
    placement_attributes,
    record_attributes,
    result_attributes,
)
from agentgauge.schema import (
    ControlEvent,
    Event,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Run,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)

__all__ = ["EVALUATION_EVENT", "otlp_json", "run_to_otlp"]

_HEX_ID = re.compile(r"^[0-9a-f]{32}$")
_HEX_SPAN = re.compile(r"^[0-9a-f]{16}$")
_NS = 1_000_000_000
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")

Attribute = str | bool | int | float


def run_to_otlp(run: Run, trials: Iterable[Trial]) -> ExportTraceServiceRequest:
    """The run's trials as one OTLP trace export request (one trace per trial)."""
    start_ns = _unix_ns(run.created_at)
    scope = ScopeSpans(
        scope=InstrumentationScope(name="agentgauge", version=__version__),
        spans=[span for trial in trials for span in _trial_spans(run, trial, start_ns)],
    )
    resource = Resource(
        attributes=_attributes(
            {
                "service.name": "agentgauge",
                "agentgauge.run.id": run.run_id,
                "agentgauge.suite": run.suite,
                "agentgauge.suite.version": run.suite_version,
            }
        )
    )
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[scope])]
    )


def otlp_json(request: ExportTraceServiceRequest) -> str:
    """``request`` in the OTLP/JSON encoding (one line)."""
    data = json_format.MessageToDict(request, use_integers_for_enums=True)
    for rs in data.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for span in ss.get("spans", []):
                for key in _ID_FIELDS:
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- one trial


def _trial_spans(run: Run, trial: Trial, start_ns: int) -> list[Span]:
    trace_id, root_id = _ids(run, trial)
    end_ns = start_ns + _ns(trial.latency_s or _last_t(trial))
    root = Span(
        trace_id=trace_id,
        span_id=root_id,
        name=f"invoke_agent {trial.agent}" if trial.agent else "invoke_agent",
        kind=Span.SPAN_KIND_INTERNAL,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=end_ns,
        attributes=_attributes(_root_attributes(trial)),
    )
    if trial.status != "completed":
        root.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=trial.error or ""))
    children: list[Span] = []
    tool_spans: dict[str, Span] = {}
    events = trial.events
    answers = _results_of_calls(events)
    answered = set(answers.values())
    for i, event in enumerate(events):
        at = start_ns + _ns(event.t or 0.0)
        if isinstance(event, ModelCallEvent):
            # ``t`` is when the call returned (the session records a call once its
            # answer is in): the span ends there and began its latency before, even
            # if that is before the trial's start (an untimed call), so that both
            # come back as they were.
            began = max(0, at - _ns(event.latency_s or 0.0))
            chat = _chat(event, placement_attributes(i, event))
            children.append(_child(trace_id, root_id, i, chat, began, at, Span.SPAN_KIND_CLIENT))
        elif isinstance(event, ToolCallEvent):
            j = answers.get(i)
            result = events[j] if j is not None else None
            assert result is None or isinstance(result, ToolResultEvent)
            place = placement_attributes(i, event)
            if j is not None and result is not None:
                place |= placement_attributes(j, result, RESULT_INDEX)
            ends = start_ns + _ns(result.t or event.t or 0.0) if result else at
            span = _child(trace_id, root_id, i, _tool(event, result, place), at, max(at, ends))
            if result is not None and result.is_error:
                span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR))
            children.append(span)
            if event.call_id:
                tool_spans.setdefault(event.call_id, span)
        elif isinstance(event, ToolResultEvent):
            if i not in answered:  # no call of the transcript asked for it: kept on the root
                root.events.add(
                    time_unix_nano=at,
                    name=TOOL_RESULT_EVENT,
                    attributes=_attributes(
                        {
                            "gen_ai.tool.call.id": event.call_id,
                            **result_attributes(event),
                            **placement_attributes(i, event),
                        }
                    ),
                )
        elif isinstance(event, MessageEvent | ControlEvent):
            said = (
                (MESSAGE_EVENT, message_attributes(event))
                if isinstance(event, MessageEvent)
                else (CONTROL_EVENT, control_attributes(event))
            )
            root.events.add(
                time_unix_nano=at,
                name=said[0],
                attributes=_attributes({**said[1], **placement_attributes(i, event)}),
            )
    for grade in trial.grades:
        named = grade.evidence.get("call_id") if isinstance(grade.evidence, dict) else None
        target = tool_spans.get(named, root) if isinstance(named, str) else root
        target.events.add(time_unix_nano=end_ns, name=EVALUATION_EVENT, attributes=_grade(grade))
    return [root, *children]


def _results_of_calls(events: Sequence[Event]) -> dict[int, int]:
    """Each tool call's result, by their places in the transcript: the first result
    after the call that names its call id and answers no earlier call; else (a call or
    results without ids: ``gen_ai.tool.call.id`` is only recommended by the GenAI
    conventions, and many traces lack it) the first result after it, answering no
    earlier call, that names no call of the transcript. A call with no result left (the
    trial ended first) has none; a result no call takes is exported on its own
    (`TOOL_RESULT_EVENT`), never dropped."""
    call_ids = {e.call_id for e in events if isinstance(e, ToolCallEvent) and e.call_id}
    by_id: dict[str, deque[int]] = {}
    loose: deque[int] = deque()  # results without an id, or with one no call has
    for j, e in enumerate(events):
        if isinstance(e, ToolResultEvent):
            if e.call_id in call_ids:
                assert e.call_id is not None
                by_id.setdefault(e.call_id, deque()).append(j)
            else:
                loose.append(j)

    def first_after(queue: deque[int] | None, i: int) -> int | None:
        while queue and queue[0] < i:  # a result before the call answers another call
            queue.popleft()
        return queue.popleft() if queue else None

    out: dict[int, int] = {}
    for i, e in enumerate(events):
        if isinstance(e, ToolCallEvent):
            found = first_after(by_id.get(e.call_id), i) if e.call_id else None
            if found is None:
                found = first_after(loose, i)
            if found is not None:
                out[i] = found
    return out


def _root_attributes(trial: Trial) -> dict[str, Any]:
    messages = [e for e in trial.events if isinstance(e, MessageEvent)]
    first_user = next((m.content for m in messages if m.role == "user"), None)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.request.model": trial.model,
        "gen_ai.usage.input_tokens": trial.input_tokens,
        "gen_ai.usage.output_tokens": trial.output_tokens,
        "error.type": trial.error.split(":", 1)[0] if trial.error else None,
        # The whole record, so that import otel gives back the same trial (otel_record).
        **record_attributes(trial),
    }
    if first_user is not None:
        attrs["gen_ai.input.messages"] = json.dumps([_message("user", first_user)])
    if trial.answer is not None:
        attrs["gen_ai.output.messages"] = json.dumps([_message("assistant", trial.answer)])
    return attrs


def _message(role: str, text: str) -> dict[str, Any]:
    # The GenAI conventions' message schema (gen-ai-input-messages.json): role + parts.
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(event: ModelCallEvent, place: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    name = f"chat {event.model}" if event.model else "chat"
    return name, {
        **place,
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": event.model,
        "gen_ai.response.model": event.model,
        "gen_ai.usage.input_tokens": event.input_tokens,
        "gen_ai.usage.output_tokens": event.output_tokens,
        RECORD_CALL_COST: event.cost_usd,
        RECORD_CALL_PRICE_SOURCE: event.price_source,
        RECORD_CALL_ATTEMPTS: event.attempts,
        RECORD_CALL_LATENCY_UNKNOWN: True if event.latency_s is None else None,
    }


def _tool(
    call: ToolCallEvent, result: ToolResultEvent | None, place: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.call_id,
        "gen_ai.tool.call.arguments": json.dumps(call.arguments, sort_keys=True),
        **place,
    }
    if result is not None:
        attrs |= result_attributes(result)
    return f"execute_tool {call.name}", attrs


def _grade(grade: Grade) -> Sequence[KeyValue]:
    return _attributes(grade_attributes(grade))


def _child(
    trace_id: bytes,
    parent: bytes,
    index: int,
    named: tuple[str, dict[str, Any]],
    start_ns: int,
    end_ns: int,
    kind: Span.SpanKind.ValueType = Span.SPAN_KIND_INTERNAL,
) -> Span:
    name, attrs = named
    span_id = hashlib.sha256(trace_id + parent + index.to_bytes(4, "big")).digest()[:8]
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=end_ns,
        attributes=_attributes(attrs),
    )


# --------------------------------------------------------------------------- encoding


def _ids(run: Run, trial: Trial) -> tuple[bytes, bytes]:
    """The trial's trace id and root span id: those its ``http:`` request carried, or
    ones derived from run and cell (stable across exports, never all zeros)."""
    meta = trial.metadata
    trace, span = meta.get("trace_id"), meta.get("span_id")
    if (
        isinstance(trace, str)
        and _HEX_ID.match(trace)
        and isinstance(span, str)
        and _HEX_SPAN.match(span)
        and int(trace, 16) != 0  # all zeros is not a trace id (W3C Trace Context)
        and int(span, 16) != 0
    ):
        return bytes.fromhex(trace), bytes.fromhex(span)
    cell = json.dumps(
        [run.run_id, trial.task_id, trial.trial, trial.variant, trial.agent, trial.model]
    )
    digest = hashlib.sha256(cell.encode()).digest()
    trace_id, span_id = digest[:16], digest[16:24]
    if not any(trace_id):
        trace_id = b"\x01" + trace_id[1:]
    if not any(span_id):
        span_id = b"\x01" + span_id[1:]
    return trace_id, span_id


def _attributes(values: dict[str, Any]) -> list[KeyValue]:
    """OTLP key-values; ``None`` (unknown) is left out rather than written as a value."""
    return [KeyValue(key=k, value=_any(v)) for k, v in values.items() if v is not None]


def _any(value: Attribute) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _unix_ns(timestamp: str) -> int:
    return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * _NS)


def _ns(seconds: float) -> int:
    return max(0, round(seconds * _NS))


def _last_t(trial: Trial) -> float:
    return max((e.t for e in trial.events if e.t is not None), default=0.0)
