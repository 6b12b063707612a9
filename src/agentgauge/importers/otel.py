"""OpenTelemetry GenAI traces in OTLP JSON (``agentgauge import otel PATH``).

The file is what the OpenTelemetry Collector's file exporter writes: one
``ExportTraceServiceRequest`` per line (``{"resourceSpans": [...]}``), or one
such document. Spans follow the GenAI semantic conventions
(open-telemetry/semantic-conventions-genai, schema 1.42.0); the mapping to
trials, and what is lost, is in docs/formats/otel.md.

`trials_from_spans` is the public builder: the receiver (``agentgauge collect``)
and anything else holding decoded spans (`agentgauge.importers.otlp`) call it.
"""

from __future__ import annotations

from pathlib import Path

from agentgauge.errors import InputError
from agentgauge.importers import ImportedRun, file_sha256, register, require_file
from agentgauge.importers.dialects import GENAI, Dialect
from agentgauge.importers.otlp import (
    Span,
    read_otlp_spans,
    spans_from_json,
    spans_from_protobuf,
)
from agentgauge.importers.spans import (
    Outcome,
    TraceOptions,
    outcomes_record,
    read_outcomes,
    trial_from_trace,
    trials_from_spans,
)
from agentgauge.sources import assign_trial_indices
from agentgauge.suite import load_suite

__all__ = [
    "SPAN_OPTIONS",
    "Outcome",
    "Span",
    "TraceOptions",
    "read",
    "read_spans_file",
    "spans_from_json",
    "spans_from_protobuf",
    "trial_from_trace",
    "trials_from_spans",
]


def read_spans_file(
    path: Path,
    dialect: Dialect,
    *,
    task_attr: str | None = None,
    trial_attr: str | None = None,
    success_attr: str | None = None,
    score_attr: str | None = None,
    outcome_evaluation: str | None = None,
    outcomes: str | Path | None = None,
    logs: str | Path | None = None,
    suite: str | Path | None = None,
) -> ImportedRun:
    """An OTLP JSON file's traces as trials, in the order traces first appear; with
    ``logs``, an OTLP JSON logs file whose event records join the traces' spans
    (`agentgauge.importers.otlp_logs`)."""
    defaults = TraceOptions()
    options = TraceOptions(
        task_attr=task_attr or defaults.task_attr,
        trial_attr=trial_attr or defaults.trial_attr,
        success_attr=success_attr or defaults.success_attr,
        score_attr=score_attr or defaults.score_attr,
        outcome_evaluation=outcome_evaluation,
    )
    rows = read_outcomes(outcomes) if outcomes is not None else None
    loaded = load_suite(suite, include_heldout=True) if suite else None
    tasks = {t.id: t for t in loaded.tasks} if loaded else {}
    spans, repeated = read_otlp_spans(path)
    if not spans:
        raise InputError(
            "holds no traces: no span in it (an empty file, blank lines, or requests "
            "without spans)",
            file=path,
        )
    joined = _join_logs(Path(logs), spans, path) if logs is not None else None
    trials = trials_from_spans(
        spans, dialect=dialect, options=options, outcomes=rows, tasks=tasks, unique=True
    )
    trials = assign_trial_indices([(None, t) for t in trials], file=path)
    used = {t.task_id for t in trials}
    config: dict[str, object] = {"dialect": dialect.name, "attributes": options.__dict__}
    if rows is not None and outcomes is not None:
        config["outcomes"] = outcomes_record(outcomes, rows)
    if repeated:
        config["repeated_spans"] = repeated  # written more than once, the same: read once
    if joined is not None:
        config["logs"] = joined
    return ImportedRun(
        trials=trials,
        suite=loaded.name if loaded else None,
        tasks=[t for t in tasks.values() if t.id in used],
        config=config,
    )


def _join_logs(logs: Path, spans: list[Span], traces: Path) -> dict[str, object]:
    """Put the event records of ``logs`` on ``spans``; what was joined, for the run's
    config. Refused when the file holds events and none belongs to these traces (the
    wrong file, most likely): with a few that do, the others are counted."""
    from agentgauge.importers.otlp_logs import attach_log_events, read_otlp_logs_file

    require_file(logs, field="--logs")
    got = read_otlp_logs_file(logs)
    unmatched = attach_log_events(spans, got.events)
    joined = len(got.events) - len(unmatched)
    if unmatched and not joined:
        raise InputError(
            f"none of its {len(got.events)} event records belongs to a trace in {traces} "
            f"(the first names trace {unmatched[0].trace_id})",
            file=logs,
            field="--logs",
        )
    return {
        "file": str(logs),
        "sha256": file_sha256(logs),
        "events": joined,
        "events_of_other_traces": len(unmatched),
        "records_not_events": got.not_events,
    }


#: The command-line options a span reader takes (``agentgauge import otel --suite ...``).
SPAN_OPTIONS = (
    "task_attr",
    "trial_attr",
    "success_attr",
    "score_attr",
    "outcome_evaluation",
    "outcomes",
    "logs",
    "suite",
)


@register("otel", options=SPAN_OPTIONS)
def read(path: Path, **options: str | None) -> ImportedRun:
    """OpenTelemetry GenAI spans (OTLP JSON) -> trials."""
    return read_spans_file(path, GENAI, **options)
