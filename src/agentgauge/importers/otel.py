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
from agentgauge.importers.shape import kind
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
    prices: str | Path | None = None,
) -> ImportedRun:
    """An OTLP JSON file's traces as trials, in the order traces first appear; with
    ``logs``, an OTLP JSON logs file whose event records join the traces' spans
    (`agentgauge.importers.otlp_logs`); ``prices``, a file of the user's prices for
    model calls that carry tokens and no cost (docs/running-agents.md, "Prices")."""
    from agentgauge.agents.prices import default_prices

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
    table = default_prices(prices, warm=False)  # genai-prices only once a call needs it
    spans, repeated = read_otlp_spans(path)
    if not spans:
        raise InputError(
            "holds no traces: no span in it (an empty file, blank lines, or requests "
            "without spans)",
            file=path,
        )
    joined = _join_logs(Path(logs), spans, path) if logs is not None else None
    trials = trials_from_spans(
        spans,
        dialect=dialect,
        options=options,
        outcomes=rows,
        tasks=tasks,
        unique=True,
        prices=table,
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
    suite, version = (loaded.name, loaded.version) if loaded else _exported_suite(spans, path)
    return ImportedRun(
        trials=trials,
        suite=suite,
        suite_version=version,
        tasks=[t for t in tasks.values() if t.id in used],
        config=config,
    )


#: The resource attributes ``agentgauge export --otel`` names the run's suite with
#: (`agentgauge.exporters.otel.run_to_otlp`).
SUITE_ATTR = "agentgauge.suite"
SUITE_VERSION_ATTR = "agentgauge.suite.version"


def _exported_suite(spans: list[Span], path: Path) -> tuple[str | None, str | None]:
    """The suite and its version that an agentgauge export wrote on its resource, so
    that a run and its round trip name the same suite (``compare`` said "suites
    differ", the file's name standing in for the suite). ``None`` when no resource
    names one, or the file's resources name different ones (exports of several runs
    put together): no one of them is the run's."""
    named: set[tuple[str, str | None]] = set()
    for span in spans:
        if SUITE_ATTR not in span.resource:
            continue
        suite, version = span.resource[SUITE_ATTR], span.resource.get(SUITE_VERSION_ATTR)
        for key, value in ((SUITE_ATTR, suite), (SUITE_VERSION_ATTR, version)):
            if value is not None and not isinstance(value, str):
                # Where the span was read (``FILE:LINE: resourceSpans[0]...spans[2]``),
                # cut back to the resource the attribute sits on.
                resource = span.where.split(".scopeSpans[", 1)[0] + ".resource"
                raise InputError(
                    f"attribute {key!r} must be a string, got {kind(value)}", file=resource
                )
        if suite:
            named.add((suite, version or None))
    if len(named) != 1:
        return None, None
    return next(iter(named))


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
    "prices",
)


@register("otel", options=SPAN_OPTIONS)
def read(path: Path, **options: str | None) -> ImportedRun:
    """OpenTelemetry GenAI spans (OTLP JSON) -> trials."""
    return read_spans_file(path, GENAI, **options)
