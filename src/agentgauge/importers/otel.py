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

from agentgauge.importers import ImportedRun, register
from agentgauge.importers.dialects import GENAI, Dialect
from agentgauge.importers.otlp import (
    Span,
    read_otlp_json_file,
    spans_from_json,
    spans_from_protobuf,
)
from agentgauge.importers.spans import (
    Outcome,
    TraceOptions,
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
    suite: str | Path | None = None,
) -> ImportedRun:
    """An OTLP JSON file's traces as trials, in the order traces first appear."""
    defaults = TraceOptions()
    options = TraceOptions(
        task_attr=task_attr or defaults.task_attr,
        trial_attr=trial_attr or defaults.trial_attr,
        success_attr=success_attr or defaults.success_attr,
        score_attr=score_attr or defaults.score_attr,
        outcome_evaluation=outcome_evaluation,
    )
    rows = read_outcomes(outcomes) if outcomes is not None else None
    tasks = {t.id: t for t in load_suite(suite, include_heldout=True).tasks} if suite else {}
    trials = trials_from_spans(
        read_otlp_json_file(path), dialect=dialect, options=options, outcomes=rows, tasks=tasks
    )
    trials = assign_trial_indices([(None, t) for t in trials], file=path)
    used = {t.task_id for t in trials}
    config = {"dialect": dialect.name, "attributes": options.__dict__}
    return ImportedRun(
        trials=trials,
        suite=str(suite) if suite else None,
        tasks=[t for t in tasks.values() if t.id in used],
        config=config,
    )


#: The command-line options a span reader takes (``agentgauge import otel --suite ...``).
SPAN_OPTIONS = (
    "task_attr",
    "trial_attr",
    "success_attr",
    "score_attr",
    "outcome_evaluation",
    "outcomes",
    "suite",
)


@register("otel", options=SPAN_OPTIONS)
def read(path: Path, **options: str | None) -> ImportedRun:
    """OpenTelemetry GenAI spans (OTLP JSON) -> trials."""
    return read_spans_file(path, GENAI, **options)
