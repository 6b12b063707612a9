"""A trial record as OpenTelemetry attributes, both ways: what ``export --otel`` writes on
a trace's root span and ``import otel`` reads back, so that a run exported and imported
again reports the same metrics.

The GenAI conventions carry what any tracer knows (the agent, the model calls, the tool
calls); a trial record holds more (its family, cost, outcome, grades). An exported root
span says it carries the whole record with ``agentgauge.record = 1``; on such a span
every field below is read from its attribute, an absent attribute meaning unknown
(``None``), and the grades from the trace's ``gen_ai.evaluation.result`` events. Traces
from anywhere else (no ``agentgauge.record``) are read by the conventions alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentgauge.schema import ControlEvent, Event, Grade, MessageEvent, ToolResultEvent, Trial
from agentgauge.textio import loads_json

__all__ = [
    "CONTROL_EVENT",
    "EVALUATION_EVENT",
    "EVENT_INDEX",
    "MESSAGE_EVENT",
    "RECORD_ATTRIBUTES",
    "RECORD_CALL_ATTEMPTS",
    "RECORD_CALL_COST",
    "RECORD_CALL_LATENCY_UNKNOWN",
    "RECORD_CALL_PRICE_SOURCE",
    "RECORD_MARK",
    "RESULT_INDEX",
    "TOOL_RESULT_EVENT",
    "control_attributes",
    "conversation_events",
    "grade_attributes",
    "grade_from_attributes",
    "message_attributes",
    "placed",
    "placement_attributes",
    "record_attributes",
    "record_from_attributes",
    "result_attributes",
    "result_fields",
]

RECORD_MARK = "agentgauge.record"
#: A model call's span attributes for what the GenAI conventions have no key for: its
#: cost (``None``, unknown, left out), where its price came from, its HTTP attempts.
RECORD_CALL_COST = "agentgauge.cost_usd"
RECORD_CALL_PRICE_SOURCE = "agentgauge.price_source"
RECORD_CALL_ATTEMPTS = "agentgauge.attempts"
#: ``true`` on a model call's span when its latency was never measured: the span still
#: needs an end, which must not come back as a measured 0 s.
RECORD_CALL_LATENCY_UNKNOWN = "agentgauge.latency.unknown"
EVALUATION_EVENT = "gen_ai.evaluation.result"

#: Root-span attribute -> trial field (values JSON-scalar; ``final_state`` and ``turns``
#: as JSON text).
RECORD_ATTRIBUTES: dict[str, str] = {
    "agentgauge.task.id": "task_id",
    "agentgauge.trial": "trial",
    "agentgauge.variant": "variant",
    "agentgauge.outcome.success": "success",
    "agentgauge.outcome.score": "score",
    "gen_ai.agent.name": "agent",
    "agentgauge.model": "model",
    "agentgauge.status": "status",
    "agentgauge.error": "error",
    "agentgauge.error_kind": "error_kind",
    "agentgauge.family": "family",
    "agentgauge.split": "split",
    "agentgauge.capability": "capability",
    "agentgauge.human_minutes": "human_minutes",
    "agentgauge.cost_usd": "cost_usd",
    "agentgauge.judge_cost_usd": "judge_cost_usd",
    "agentgauge.input_tokens": "input_tokens",
    "agentgauge.output_tokens": "output_tokens",
    "agentgauge.latency_s": "latency_s",
    "agentgauge.tool_calls": "tool_calls",
    "agentgauge.model_calls": "model_calls",
    "agentgauge.confidence": "confidence",
    "agentgauge.expected_control": "expected_control",
    "agentgauge.control": "control",
    "agentgauge.seed": "seed",
    "agentgauge.answer": "answer",
    "agentgauge.final_state": "final_state",
    "agentgauge.turns": "turns",
}
#: The record's fields written as JSON text (objects and lists the attribute types of
#: OpenTelemetry cannot hold whole).
_JSON_TEXT = ("final_state", "turns")


def record_attributes(trial: Trial) -> dict[str, Any]:
    """The trial's record as root-span attributes (``None``: leave the attribute out)."""
    attrs: dict[str, Any] = {RECORD_MARK: 1}
    for key, name in RECORD_ATTRIBUTES.items():
        value = getattr(trial, name)
        if name in _JSON_TEXT and value is not None:
            value = json.dumps(value, sort_keys=True)
        attrs[key] = value
    return attrs


def record_from_attributes(
    attributes: Mapping[str, Any], evaluations: Iterable[Mapping[str, Any]], *, where: str
) -> dict[str, Any] | None:
    """The trial fields a marked root span carries, with its grades; ``None`` when the
    span carries no agentgauge record. Values are checked when the `Trial` is built;
    JSON text too deep to hold is an `InputError` at ``where`` (the span)."""
    if attributes.get(RECORD_MARK) != 1:
        return None
    fields: dict[str, Any] = {name: attributes.get(key) for key, name in RECORD_ATTRIBUTES.items()}
    for name in _JSON_TEXT:
        text = fields.get(name)
        if isinstance(text, str):
            fields[name] = loads_json(text, file=f"{where}: {RECORD_MARK}.{name}", line=None)
    fields["grades"] = [grade_from_attributes(a, where=where) for a in evaluations]
    return fields


MESSAGE_EVENT = "agentgauge.message"
CONTROL_EVENT = "agentgauge.control"
TOOL_RESULT_EVENT = "agentgauge.tool_result"
"""A tool result that answers no tool call of the transcript (one whose call was never
recorded): a root span event, as it has no ``execute_tool`` span to sit on."""

#: An event's place in the transcript, on the span or span event that carries it (a
#: tool span carries its call's, and its result's under `RESULT_INDEX`): spans are
#: read back in time order, and events of the same instant, or with no time, would
#: otherwise change places (which error a ``recover`` decision follows, say).
EVENT_INDEX = "agentgauge.event.index"
RESULT_INDEX = "agentgauge.result.index"
#: ``true`` when the event's ``t`` is unknown: the span still needs a time, and the
#: trace's start is written, which must not come back as a measured 0.
_UNTIMED = {EVENT_INDEX: "agentgauge.event.untimed", RESULT_INDEX: "agentgauge.result.untimed"}
_RESULT_NAME = "agentgauge.result.name"
_RESULT_JSON = "agentgauge.result.json"
_RESULT_TEXT = "gen_ai.tool.call.result"
_IRREVERSIBLE = "agentgauge.tool.irreversible"


def placement_attributes(index: int, event: Event, key: str = EVENT_INDEX) -> dict[str, Any]:
    """Where ``event`` (the ``index``-th of its transcript) sits, as attributes."""
    return {key: index, _UNTIMED[key]: True if event.t is None else None}


def placed(
    fields: dict[str, Any], attributes: Mapping[str, Any], key: str = EVENT_INDEX
) -> tuple[int | None, dict[str, Any]]:
    """An event's fields read back from a record trace, with its place in the
    transcript (``None`` in a file written before places were); an event written
    without a time gets none back."""
    index = attributes.get(key)
    if attributes.get(_UNTIMED[key]) is True:
        fields["t"] = None
    valid = isinstance(index, int) and not isinstance(index, bool) and index >= 0
    return (index if valid else None), fields


def result_attributes(result: ToolResultEvent) -> dict[str, Any]:
    """A tool result as attributes: its content as text (JSON text, flagged, when the
    tool returned JSON), its error, and the tool's name when the result names one."""
    content = result.content
    return {
        _RESULT_TEXT: content if isinstance(content, str) else json.dumps(content, sort_keys=True),
        _RESULT_JSON: None if isinstance(content, str) else True,
        _RESULT_NAME: result.name,
        "error.type": "tool_error" if result.is_error else None,
        _IRREVERSIBLE: result.irreversible or None,
    }


def result_fields(
    attributes: Mapping[str, Any], *, call_id: str | None, where: str
) -> dict[str, Any]:
    """The fields of the tool result a record trace's ``attributes`` describe (written by
    `result_attributes`; checked when the `Trial` holding it is built). ``is_error`` is
    the span's own error, which the caller adds."""
    content = attributes.get(_RESULT_TEXT)
    if attributes.get(_RESULT_JSON) is True and isinstance(content, str):
        content = loads_json(content, file=f"{where}: {_RESULT_TEXT}", line=None)
    return {
        "type": "tool_result",
        "call_id": call_id,
        "name": attributes.get(_RESULT_NAME),
        "content": content,
        "is_error": attributes.get("error.type") is not None,
        "irreversible": attributes.get(_IRREVERSIBLE) is True,
    }


def message_attributes(event: MessageEvent) -> dict[str, Any]:
    return {"agentgauge.message.role": event.role, "agentgauge.message.content": event.content}


def control_attributes(event: ControlEvent) -> dict[str, Any]:
    return {
        "agentgauge.control.decision": event.decision,
        "agentgauge.control.reason": event.reason,
    }


def conversation_events(
    span_events: Iterable[tuple[str, float, Mapping[str, Any]]], *, where: str = ""
) -> list[tuple[int | None, dict[str, Any]]]:
    """The messages, control decisions and unanswered tool results of a marked root
    span's events ``(name, t, attributes)``, as event fields (checked when the `Trial`
    is built), each with its place in the transcript (`placed`)."""
    out: list[tuple[int | None, dict[str, Any]]] = []
    for name, t, attrs in span_events:
        if name == MESSAGE_EVENT:
            fields = {
                "type": "message",
                "t": t,
                "role": attrs.get("agentgauge.message.role"),
                "content": attrs.get("agentgauge.message.content"),
            }
        elif name == CONTROL_EVENT:
            fields = {
                "type": "control",
                "t": t,
                "decision": attrs.get("agentgauge.control.decision"),
                "reason": attrs.get("agentgauge.control.reason"),
            }
        elif name == TOOL_RESULT_EVENT:
            call_id = attrs.get("gen_ai.tool.call.id")
            fields = {"t": t, **result_fields(attrs, call_id=call_id, where=where)}
        else:
            continue
        out.append(placed(fields, attrs))
    return out


def grade_attributes(grade: Grade) -> dict[str, Any]:
    """A grade as a ``gen_ai.evaluation.result`` event's attributes."""
    label = {True: "pass", False: "fail", None: "unknown"}[grade.passed]
    evidence = grade.evidence
    explanation = evidence
    if not (isinstance(evidence, str) or evidence is None):
        explanation = json.dumps(evidence, sort_keys=True)
    return {
        "gen_ai.evaluation.name": grade.grader,
        "gen_ai.evaluation.score.value": None if grade.score is None else float(grade.score),
        "gen_ai.evaluation.score.label": label,
        "gen_ai.evaluation.explanation": explanation,
        "agentgauge.evaluation.evidence_json": not isinstance(evidence, str | None),
        "agentgauge.evaluation.status": grade.status,
        "agentgauge.evaluation.judge_model": grade.judge_model,
        "error.type": grade.status if grade.status == "grader_error" else None,
    }


def grade_from_attributes(attributes: Mapping[str, Any], *, where: str) -> dict[str, Any]:
    """The grade a ``gen_ai.evaluation.result`` event's attributes describe, as the
    fields of a `Grade` (checked when the `Trial` holding it is built)."""
    label = attributes.get("gen_ai.evaluation.score.label")
    evidence = attributes.get("gen_ai.evaluation.explanation")
    if attributes.get("agentgauge.evaluation.evidence_json") is True and isinstance(evidence, str):
        evidence = loads_json(evidence, file=f"{where}: {EVALUATION_EVENT}", line=None)
    return {
        "grader": attributes.get("gen_ai.evaluation.name"),
        "score": attributes.get("gen_ai.evaluation.score.value"),
        "passed": {"pass": True, "fail": False}.get(label) if isinstance(label, str) else None,
        "status": attributes.get("agentgauge.evaluation.status"),
        "evidence": evidence,
        "judge_model": attributes.get("agentgauge.evaluation.judge_model"),
    }
