"""OTLP log records that are events of a span: GenAI events sent through the Logs API.

OpenTelemetry now emits events as log records with an event name (the Logs API's
``event_name``; older SDKs put it in the ``event.name`` attribute) and the trace and span
they happened in, instead of as span events; the GenAI conventions' events go that way
too: ``gen_ai.evaluation.result`` (an evaluator's verdict), and, before the message
attributes (semconv 1.27-1.36), ``gen_ai.user.message``, ``gen_ai.choice`` and the
others, with the message in the record's body. Read from an OTLP JSON logs file
(``ExportLogsServiceRequest``: ``resourceLogs`` -> ``scopeLogs`` -> ``logRecords``,
what the Collector's file exporter writes for a logs pipeline), each such record
becomes a `SpanEvent` of the span it names (`attach_log_events`), where the trace
reader finds it as if the span had carried it: the rest of the import does not know
the difference.

A record with no trace id, or with no event name (an application's log line), is no
event of a span and is counted, not kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from agentgauge.errors import InputError
from agentgauge.importers.otlp import (
    Span,
    SpanEvent,
    _Path,
    _pb_attributes,
    _pb_value,
    parse_protobuf,
    read_otlp_documents,
)

__all__ = [
    "LogEvent",
    "LogEvents",
    "attach_log_events",
    "log_events_from_json",
    "log_events_from_protobuf",
    "read_otlp_logs_file",
]

#: The attribute older SDKs named an event by, before the Logs API had ``event_name``.
EVENT_NAME_ATTRIBUTE = "event.name"


@dataclass(slots=True)
class LogEvent:
    """One log record that is an event of a span."""

    trace_id: str
    span_id: str | None
    """``None`` when the record names its trace only: it goes on the trace's root."""
    event: SpanEvent


@dataclass
class LogEvents:
    """What a logs file holds: the span events, and how many records were not."""

    events: list[LogEvent]
    not_events: int = 0
    """Records with no trace id or no event name."""


def log_events_from_json(doc: Any, *, file: str | Path, line: int | None = None) -> LogEvents:
    """The span events of one OTLP JSON ``ExportLogsServiceRequest``."""
    check = _Path(file, line)
    top = check.request(doc, "resourceLogs")
    out = LogEvents(events=[])
    for i, raw_rl in enumerate(check.items(top, "resourceLogs", "")):
        rl_at = f"resourceLogs[{i}]"
        rl = check.obj(raw_rl, rl_at)
        for j, raw_sl in enumerate(check.items(rl, "scopeLogs", rl_at)):
            sl_at = f"{rl_at}.scopeLogs[{j}]"
            sl = check.obj(raw_sl, sl_at)
            for k, raw in enumerate(check.items(sl, "logRecords", sl_at)):
                at = f"{sl_at}.logRecords[{k}]"
                record = check.obj(raw, at)
                attributes = check.attributes(record, at)
                name = check.text(record, "eventName", at) or attributes.get(EVENT_NAME_ATTRIBUTE)
                # A record's ids are optional; all zeros, like none, ties it to no trace
                # (opentelemetry-proto logs.proto).
                trace_id = check.hex_id(record, "traceId", at, 16, zeros="absent")
                span_id = check.hex_id(record, "spanId", at, 8, zeros="absent")
                if trace_id is None or not isinstance(name, str) or not name:
                    out.not_events += 1
                    continue
                time_ns = check.uint64(record, "timeUnixNano", at) or check.uint64(
                    record, "observedTimeUnixNano", at
                )
                body = check.any_value(record.get("body"), f"{at}.body", 1)
                out.events.append(
                    LogEvent(trace_id, span_id, SpanEvent(name, time_ns, _merged(attributes, body)))
                )
    return out


def log_events_from_protobuf(body: bytes, *, source: str) -> LogEvents:
    """The span events of a protobuf ``ExportLogsServiceRequest``; ``source`` names it."""
    request = parse_protobuf(ExportLogsServiceRequest(), body, source=source)
    out = LogEvents(events=[])
    for i, rl in enumerate(request.resource_logs):
        for j, sl in enumerate(rl.scope_logs):
            for k, record in enumerate(sl.log_records):
                at = f"resourceLogs[{i}].scopeLogs[{j}].logRecords[{k}]"
                attributes = _pb_attributes(record.attributes, at, source)
                name = record.event_name or attributes.get(EVENT_NAME_ATTRIBUTE)
                if (
                    len(record.trace_id) != 16
                    or not any(record.trace_id)
                    or not isinstance(name, str)
                    or not name
                ):
                    if record.trace_id and len(record.trace_id) != 16:
                        raise InputError("expected 16 bytes", file=source, field=f"{at}.traceId")
                    out.not_events += 1
                    continue
                if record.span_id and len(record.span_id) != 8:
                    raise InputError("expected 8 bytes", file=source, field=f"{at}.spanId")
                body_value = (
                    _pb_value(record.body, f"{at}.body", source, 1)
                    if record.HasField("body")
                    else None
                )
                out.events.append(
                    LogEvent(
                        record.trace_id.hex(),
                        record.span_id.hex() if any(record.span_id) else None,
                        SpanEvent(
                            name,
                            record.time_unix_nano or record.observed_time_unix_nano,
                            _merged(attributes, body_value),
                        ),
                    )
                )
    return out


def _merged(attributes: dict[str, Any], body: Any) -> dict[str, Any]:
    """The event's attributes, with a map body's keys under them (the 1.27-1.36 GenAI
    events kept the message there: ``{"content": ...}``, ``{"message": {...}}``); an
    attribute of the same name wins. Another body is kept as ``body``."""
    attributes.pop(EVENT_NAME_ATTRIBUTE, None)
    if isinstance(body, dict):
        return {**body, **attributes}
    if body is not None and "body" not in attributes:
        return {**attributes, "body": body}
    return attributes


def read_otlp_logs_file(path: Path) -> LogEvents:
    """Every span event of an OTLP JSON logs file: one request per line (the Collector's
    file exporter), or one request as the whole document."""
    out = LogEvents(events=[])
    for doc, line in read_otlp_documents(path):
        got = log_events_from_json(doc, file=path, line=line)
        out.events.extend(got.events)
        out.not_events += got.not_events
    return out


def attach_log_events(spans: Iterable[Span], events: Iterable[LogEvent]) -> list[LogEvent]:
    """Put each event on the span it names, or, naming its trace only (or a span the
    trace does not hold), on the trace's top span. Returns the events whose trace is
    not among ``spans``."""
    by_id: dict[tuple[str, str], Span] = {}
    tops: dict[str, Span] = {}
    for span in spans:
        by_id[(span.trace_id, span.span_id)] = span
        top = tops.get(span.trace_id)
        if top is None or (top.parent_id is not None and span.parent_id is None):
            tops[span.trace_id] = span
    unmatched: list[LogEvent] = []
    for item in events:
        target = by_id.get((item.trace_id, item.span_id or "")) or tops.get(item.trace_id)
        if target is None:
            unmatched.append(item)
        else:
            target.events.append(item.event)
            target.logged += 1  # not the span's own: a resend of it is the same span
    return unmatched
