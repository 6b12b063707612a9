"""`agentgauge collect` receives GenAI events sent as log records (``POST /v1/logs``),
from the OpenTelemetry SDK's own OTLP/HTTP log exporter: events that come before their
trace's root span ends join the trial (a model call's messages sent as its
``gen_ai.client.inference.operation.details`` event), an evaluator's verdict on a trace
already stored becomes a grade of its trial, and what is not kept is said."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry._logs import Logger
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.collect.test_receiver import Collector

from agentgauge.store import Store

MESSAGES_IN = [
    {"role": "user", "parts": [{"type": "text", "content": "What is 2 + 2?"}]},
]
MESSAGES_OUT = [
    {"role": "assistant", "parts": [{"type": "text", "content": "4"}], "finish_reason": "stop"},
]


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[Collector]:
    c = Collector(tmp_path / "live.db", "--outcome-evaluation", "correct")
    yield c
    if c.proc.poll() is None:
        c.proc.kill()
        c.proc.wait()


def _providers(collector: Collector) -> tuple[TracerProvider, LoggerProvider]:
    # Simple processors: each span and record is exported as it ends, so the order
    # they reach the receiver is the order the test makes them in.
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(collector.url)))
    logger_provider = LoggerProvider()
    logs_url = collector.url.replace("/v1/traces", "/v1/logs")
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(logs_url)))
    return tracer_provider, logger_provider


def _run(tracer: trace.Tracer, logger: Logger, task: str, *, verdict: str | None) -> trace.Span:
    """An agent span with one chat span whose messages go out as an operation-details
    log record; with ``verdict``, the evaluator's (on the agent span) before it ends."""
    with tracer.start_as_current_span("invoke_agent calc") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": task})
        with tracer.start_as_current_span("chat m") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
            logger.emit(
                event_name="gen_ai.client.inference.operation.details",
                attributes={
                    "gen_ai.input.messages": json.dumps(MESSAGES_IN),
                    "gen_ai.output.messages": json.dumps(MESSAGES_OUT),
                },
            )
        if verdict is not None:
            _verdict(logger, root, verdict)
    return root


@contextmanager
def _passed_agent(tracer: trace.Tracer) -> Iterator[trace.Span]:
    """An agent span of task ``sum`` whose own attribute says it passed."""
    with tracer.start_as_current_span("invoke_agent calc") as root:
        root.set_attributes(
            {
                "gen_ai.operation.name": "invoke_agent",
                "agentgauge.task.id": "sum",
                "agentgauge.outcome.success": True,
            }
        )
        yield root


def _verdict(logger: Logger, span: trace.Span, label: str) -> None:
    logger.emit(
        event_name="gen_ai.evaluation.result",
        context=trace.set_span_in_context(span),
        attributes={"gen_ai.evaluation.name": "correct", "gen_ai.evaluation.score.label": label},
    )


def test_events_before_the_root_ends_join_the_trial(collector: Collector) -> None:
    tracer_provider, logger_provider = _providers(collector)
    tracer = tracer_provider.get_tracer("agent")
    logger = logger_provider.get_logger("genai")
    _run(tracer, logger, "sum", verdict="pass")
    _run(tracer, logger, "sum", verdict="fail")
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 2 trials from 4 spans and 4 event records in run live" in out
    with Store(collector.db) as db:
        trials = sorted(db.trials("live"), key=lambda t: t.trial)
    assert [t.success for t in trials] == [True, False]  # the verdicts are the outcomes
    said = [(e.role, e.content) for e in trials[0].events if e.type == "message"]
    assert said == [("user", "What is 2 + 2?"), ("assistant", "4")]
    assert [g.grader for g in trials[0].grades] == ["correct"]


def test_a_verdict_on_a_stored_trace_becomes_a_grade_and_late_content_is_refused(
    collector: Collector,
) -> None:
    tracer_provider, logger_provider = _providers(collector)
    tracer = tracer_provider.get_tracer("agent")
    logger = logger_provider.get_logger("genai")
    # The outcome from the trace itself; the evaluator comes after the trial is stored.
    with _passed_agent(tracer) as root:
        pass
    _verdict(logger, root, "fail")
    _verdict(logger, root, "pass")  # the same grader again: the first is kept
    # Content of the stored trace, late: not added, and the sender is told why.
    body = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "eventName": "gen_ai.client.inference.operation.details",
                                "traceId": format(root.get_span_context().trace_id, "032x"),
                                "attributes": [],
                            },
                            {"body": {"stringValue": "an application's log line"}},
                        ]
                    }
                ]
            }
        ]
    }
    status, raw = _post_logs(collector, json.dumps(body).encode(), "application/json")
    assert status == 200
    reply = json_format.Parse(raw, ExportLogsServiceResponse())
    assert reply.partial_success.rejected_log_records == 2
    assert "only evaluations join a stored trial" in reply.partial_success.error_message
    assert "1 record is no span's event (no event name" in reply.partial_success.error_message
    # Two verdicts of one grader in one request: the first is kept, as across requests.
    trace_id = format(root.get_span_context().trace_id, "032x")
    verdicts = [
        {
            "eventName": "gen_ai.evaluation.result",
            "traceId": trace_id,
            "attributes": [
                {"key": "gen_ai.evaluation.name", "value": {"stringValue": "second_opinion"}},
                {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": label}},
            ],
        }
        for label in ("fail", "pass")
    ]
    body = {"resourceLogs": [{"scopeLogs": [{"logRecords": verdicts}]}]}
    status, raw = _post_logs(collector, json.dumps(body).encode(), "application/json")
    reply = json_format.Parse(raw, ExportLogsServiceResponse())
    assert status == 200 and reply.partial_success.rejected_log_records == 1
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 1 trial from 1 span and 2 event records in run live" in out
    assert "log records not kept" in err
    assert "1 evaluations name a grader their trial has already" in err
    with Store(collector.db) as db:
        [trial] = db.trials("live")
    assert trial.success is True  # the stored outcome is not rewritten
    assert sorted((g.grader, g.passed) for g in trial.grades) == [
        ("correct", False),
        ("second_opinion", False),
    ]


def test_bad_logs_requests_get_the_protocols_answers(collector: Collector) -> None:
    assert _post_logs(collector, b"{", "application/json")[0] == 400
    assert _post_logs(collector, b"\xff\xff", "application/x-protobuf")[0] == 400
    assert _post_logs(collector, b"{}", "text/plain")[0] == 415
    bad_id = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{"traceId": "xyz"}]}]}]}
    status, raw = _post_logs(collector, json.dumps(bad_id).encode(), "application/json")
    assert status == 400 and b"logRecords[0].traceId" in raw
    code, out, _ = collector.stop()
    assert code == 0 and "stored 0 trials from 0 spans in run live" in out


def test_events_of_traces_that_never_come_are_said_at_shutdown(collector: Collector) -> None:
    _, logger_provider = _providers(collector)
    tracer = TracerProvider().get_tracer("not exported")  # its spans never reach collect
    with tracer.start_as_current_span("invoke_agent calc") as root:
        pass
    _verdict(logger_provider.get_logger("genai"), root, "pass")
    code, out, err = collector.stop()
    assert code == 0
    assert "1 event record of 1 trace whose spans never came was not stored" in err
    # The summary counts what was stored; the accepted record it dropped is said apart.
    assert "stored 0 trials from 0 spans in run live\n" in out, out
    assert "1 event record accepted while its trace was open was not stored" in out


def _post_logs(collector: Collector, body: bytes, content_type: str) -> tuple[int, bytes]:
    url = collector.url
    collector.url = url.replace("/v1/traces", "/v1/logs")
    try:
        return collector.post(body, content_type)
    finally:
        collector.url = url


def test_with_settle_events_after_the_root_still_join_the_trial(tmp_path: Path) -> None:
    # Batch processors export logs and spans apart: here the root span is sent first and
    # the chat call's messages after it. --settle holds the trace that long after its
    # root, so they join the trial instead of being refused as late.
    collector = Collector(tmp_path / "live.db", "--settle", "1")
    try:
        tracer_provider, logger_provider = _providers(collector)
        tracer = tracer_provider.get_tracer("agent")
        with _passed_agent(tracer), tracer.start_as_current_span("chat m") as chat:
            chat.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"})
        logger_provider.get_logger("genai").emit(
            event_name="gen_ai.client.inference.operation.details",
            context=trace.set_span_in_context(chat),
            attributes={
                "gen_ai.input.messages": json.dumps(MESSAGES_IN),
                "gen_ai.output.messages": json.dumps(MESSAGES_OUT),
            },
        )
        # Written by the receiver's own sweep once the wait is over, not at shutdown.
        for _ in range(200):
            with Store(collector.db, readonly=True) as db:
                trials = db.trials("live")
            if trials:
                break
            time.sleep(0.05)
        assert len(trials) == 1
        said = [(e.role, e.content) for e in trials[0].events if e.type == "message"]
        assert said == [("user", "What is 2 + 2?"), ("assistant", "4")]
        assert trials[0].answer == "4"
        code, out, err = collector.stop()
        assert code == 0, err
        assert "stored 1 trial from 2 spans and 1 event record in run live" in out
        assert "incomplete" not in err
    finally:
        collector.kill()


def test_a_trace_waiting_at_shutdown_is_stored_complete(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "live.db", "--settle", "600")
    tracer_provider, _ = _providers(collector)
    with _passed_agent(tracer_provider.get_tracer("agent")):
        pass
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 1 trial from 1 span in run live" in out and "incomplete" not in err
    with Store(collector.db, readonly=True) as db:
        [trial] = db.trials("live")
    assert (trial.status, trial.success) == ("completed", True)
