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

from agentgauge.schema import ControlEvent, Grade, MessageEvent, Trial
from agentgauge.textio import loads_json

__all__ = [
    "CONTROL_EVENT",
    "EVALUATION_EVENT",
    "MESSAGE_EVENT",
    "RECORD_ATTRIBUTES",
    "RECORD_MARK",
    "control_attributes",
    "conversation_events",
    "grade_attributes",
    "grade_from_attributes",
    "message_attributes",
    "record_attributes",
    "record_from_attributes",
]

RECORD_MARK = "agentgauge.record"
EVALUATION_EVENT = "gen_ai.evaluation.result"

#: Root-span attribute -> trial field (values JSON-scalar; ``final_state`` as JSON text).
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
}


def record_attributes(trial: Trial) -> dict[str, Any]:
    """The trial's record as root-span attributes (``None``: leave the attribute out)."""
    attrs: dict[str, Any] = {RECORD_MARK: 1}
    for key, name in RECORD_ATTRIBUTES.items():
        value = getattr(trial, name)
        if name == "final_state" and value is not None:
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
    state = fields.get("final_state")
    if isinstance(state, str):
        fields["final_state"] = loads_json(
            state, file=f"{where}: {RECORD_MARK}.final_state", line=None
        )
    fields["grades"] = [grade_from_attributes(a, where=where) for a in evaluations]
    return fields


MESSAGE_EVENT = "agentgauge.message"
CONTROL_EVENT = "agentgauge.control"


def message_attributes(event: MessageEvent) -> dict[str, Any]:
    return {"agentgauge.message.role": event.role, "agentgauge.message.content": event.content}


def control_attributes(event: ControlEvent) -> dict[str, Any]:
    return {
        "agentgauge.control.decision": event.decision,
        "agentgauge.control.reason": event.reason,
    }


def conversation_events(
    span_events: Iterable[tuple[str, float, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The messages and control decisions of a marked root span's events
    ``(name, t, attributes)``, as event fields (checked when the `Trial` is built)."""
    out: list[dict[str, Any]] = []
    for name, t, attrs in span_events:
        if name == MESSAGE_EVENT:
            out.append(
                {
                    "type": "message",
                    "t": t,
                    "role": attrs.get("agentgauge.message.role"),
                    "content": attrs.get("agentgauge.message.content"),
                }
            )
        elif name == CONTROL_EVENT:
            out.append(
                {
                    "type": "control",
                    "t": t,
                    "decision": attrs.get("agentgauge.control.decision"),
                    "reason": attrs.get("agentgauge.control.reason"),
                }
            )
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
