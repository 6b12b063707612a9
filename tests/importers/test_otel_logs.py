"""GenAI events sent as log records (the OpenTelemetry Logs API's ``event_name``, with
the trace and span they happened in) join their spans: ``import otel TRACES --logs
LOGS``. An evaluator's ``gen_ai.evaluation.result`` becomes a grade (and, named with
``--outcome-evaluation``, the outcome), and the 1.27-1.36 message events
(``gen_ai.user.message``, ``gen_ai.choice``, the message in the body) the transcript,
exactly as when the span carries them. Traces and logs are made by the OpenTelemetry
SDK and encoded by its own OTLP encoders."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.fixtures.otel.otlp_json import otlp_json, otlp_logs_json
from tests.test_fuzz_inputs import json_values

from agentgauge.store import Store

EVAL = "gen_ai.evaluation.result"


def _agent(task: str, *, other_trace_log: bool = False) -> tuple[list[Any], list[Any]]:
    """One agent run: an invoke_agent span with a chat span whose messages go out as
    log events, and, after the agent ended, an evaluator's verdict on the agent span
    sent as a log event too (and an application log line with no event name)."""
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    tracer = tracer_provider.get_tracer("agent")
    events = logger_provider.get_logger("gen_ai")
    with tracer.start_as_current_span("invoke_agent helper") as root:
        root.set_attributes({"gen_ai.operation.name": "invoke_agent", "agentgauge.task.id": task})
        with tracer.start_as_current_span("chat fake-model") as chat:
            chat.set_attributes(
                {"gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model"}
            )
            events.emit(event_name="gen_ai.user.message", body={"content": "Capital of France?"})
            events.emit(
                event_name="gen_ai.choice",
                body={"index": 0, "finish_reason": "stop", "message": {"content": "Paris."}},
            )
            events.emit(body="an application's own log line")
    # The evaluator runs later, on the agent span's context.
    context = trace.set_span_in_context(root)
    if other_trace_log:
        context = trace.set_span_in_context(
            trace.NonRecordingSpan(
                trace.SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=trace.TraceFlags(1))
            )
        )
    events.emit(
        event_name=EVAL,
        context=context,
        attributes={
            "gen_ai.evaluation.name": "task_completion",
            "gen_ai.evaluation.score.label": "pass",
            "gen_ai.evaluation.explanation": "answered the question",
        },
    )
    return list(spans.get_finished_spans()), list(logs.get_finished_logs())


def _files(tmp_path: Path, runs: list[tuple[list[Any], list[Any]]]) -> tuple[Path, Path]:
    traces, logs = tmp_path / "traces.jsonl", tmp_path / "logs.jsonl"
    traces.write_text("".join(json.dumps(otlp_json(s)) + "\n" for s, _ in runs))
    logs.write_text("".join(json.dumps(otlp_logs_json(r)) + "\n" for _, r in runs))
    return traces, logs


def _import(cli: Any, traces: Path, logs: Path, db: Path) -> tuple[int, str, str]:
    """``import otel TRACES --logs LOGS`` with the evaluation as the outcome, as run r."""
    return cli(  # type: ignore[no-any-return]
        "import", "otel", str(traces), "--logs", str(logs), "--outcome-evaluation",
        "task_completion", "--store", str(db), "--run-id", "r",
    )  # fmt: skip


def test_log_events_join_their_spans_as_grades_outcome_and_transcript(
    cli: Any, tmp_path: Path
) -> None:
    traces, logs = _files(tmp_path, [_agent("capital"), _agent("capital")])
    db = tmp_path / "s.db"
    code, out, err = _import(cli, traces, logs, db)
    assert code == 0, err
    said = " ".join(out.split())
    assert "imported 2 trials" in said
    assert "with 6 event records from" in said
    assert "left out: 2 with no event name or trace id" in said
    with Store(db, readonly=True) as store:
        trials = store.trials("r")
        run = store.require_run("r")
    assert [t.success for t in trials] == [True, True]
    for t in trials:
        [grade] = t.grades
        assert grade.grader == "task_completion" and grade.passed is True
        assert grade.evidence["explanation"] == "answered the question"
        said = [(e.role, e.content) for e in t.events if e.type == "message"]
        assert said == [("user", "Capital of France?"), ("assistant", "Paris.")]
        assert t.answer == "Paris."
    assert run.config["logs"]["events"] == 6
    # The run records which logs file it read, by content as well as by name.
    assert run.config["logs"]["sha256"] == hashlib.sha256(logs.read_bytes()).hexdigest()


def test_without_the_logs_the_same_traces_have_no_outcome(cli: Any, tmp_path: Path) -> None:
    traces, _ = _files(tmp_path, [_agent("capital")])
    code, _, err = cli(
        "import", "otel", str(traces), "--outcome-evaluation", "task_completion",
        "--store", str(tmp_path / "s.db"),
    )  # fmt: skip
    assert code == 2 and "has no outcome" in err


def test_logs_of_other_traces_are_refused_and_nothing_is_written(cli: Any, tmp_path: Path) -> None:
    spans, _ = _agent("capital")
    _, other_logs = _agent("capital", other_trace_log=True)
    other_logs = [r for r in other_logs if r.log_record.event_name == EVAL]
    traces, logs = _files(tmp_path, [(spans, other_logs)])
    db = tmp_path / "s.db"
    code, _, err = cli("import", "otel", str(traces), "--logs", str(logs), "--store", str(db))
    assert code == 2
    assert "--logs: none of its 1 event records belongs to a trace in" in err
    assert "00000000000000000000000000000abc" in err
    assert not db.exists()


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({"traceId": "zz", "eventName": EVAL}, "logRecords[0].traceId"),
        ({"traceId": "ab" * 16, "eventName": 3}, "logRecords[0].eventName"),
        ({"traceId": "ab" * 16, "eventName": EVAL, "attributes": {}}, "logRecords[0].attributes"),
    ],
)
def test_a_malformed_log_record_is_named(
    cli: Any, tmp_path: Path, record: dict[str, Any], field: str
) -> None:
    traces, _ = _files(tmp_path, [_agent("capital")])
    logs = tmp_path / "bad.jsonl"
    logs.write_text(json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}))
    code, _, err = cli(
        "import", "otel", str(traces), "--logs", str(logs), "--store", str(tmp_path / "s.db")
    )
    assert code == 2 and f"{logs}:1: resourceLogs[0].scopeLogs[0].{field}" in err
    assert err.count("\n") == 1 and not (tmp_path / "s.db").exists()


_RECORD_KEYS = ["traceId", "spanId", "eventName", "attributes", "body", "timeUnixNano"]
_RECORD_KEYS += ["observedTimeUnixNano", "severityNumber"]
_any_value = st.recursive(
    st.fixed_dictionaries({"stringValue": json_values})
    | st.fixed_dictionaries({"intValue": json_values})
    | json_values,
    lambda inner: st.fixed_dictionaries(
        {"kvlistValue": st.fixed_dictionaries({"values": st.lists(
            st.fixed_dictionaries({"key": json_values, "value": inner}), max_size=3)})}
    ) | st.fixed_dictionaries({"arrayValue": st.fixed_dictionaries(
        {"values": st.lists(inner, max_size=3)})}),
    max_leaves=8,
)  # fmt: skip
_records = st.lists(
    st.dictionaries(
        st.sampled_from(_RECORD_KEYS),
        json_values | _any_value | st.sampled_from(["ab" * 16, "cd" * 8, EVAL]),
        max_size=6,
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(records=_records)
def test_hostile_log_records_never_end_in_a_traceback(records: list[Any]) -> None:
    import tempfile

    from agentgauge.errors import InputError
    from agentgauge.importers.otlp_logs import read_otlp_logs_file

    doc = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "logs.jsonl"
        path.write_text(json.dumps(doc) + "\n")
        try:
            got = read_otlp_logs_file(path)
        except InputError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(str(path))
        else:
            assert len(got.events) + got.not_events == len(records)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "otel"


def test_openai_v2_content_sent_as_log_records_is_the_transcript(cli: Any, tmp_path: Path) -> None:
    # Made by opentelemetry-instrumentation-openai-v2 with content capture EVENT_ONLY
    # (fixtures/otel/make_log_fixture.py): the chat spans carry no messages; each call's
    # messages are a gen_ai.client.inference.operation.details log record, and each
    # run's verdict a gen_ai.evaluation.result one.
    traces, logs = FIXTURES / "events.traces.jsonl", FIXTURES / "events.logs.jsonl"
    db = tmp_path / "s.db"
    code, out, err = _import(cli, traces, logs, db)
    assert code == 0, err
    assert "with 8 event records" in " ".join(out.split())  # 5 calls, 3 verdicts
    with Store(db, readonly=True) as store:
        trials = {t.task_id: t for t in store.trials("r")}
    assert {k: t.success for k, t in trials.items()} == {
        "weather-paris": True,
        "weather-atlantis": False,
        "capital-france": True,
    }
    paris = trials["weather-paris"]
    said = [(e.role, e.content) for e in paris.events if e.type == "message"]
    assert said == [
        ("system", "Answer weather questions."),
        ("user", "What is the weather in Paris?"),
        ("assistant", "It is 18 C."),
    ]
    assert paris.answer == "It is 18 C."
    assert [e.type for e in paris.events].count("tool_call") == 1  # from the tool span
    # Without the logs the same traces have no messages and no outcome.
    code, _, err = cli(
        "import", "otel", str(traces), "--outcome-evaluation", "task_completion",
        "--store", str(tmp_path / "t.db"),
    )  # fmt: skip
    assert code == 2 and "has no outcome" in err


def _read_or_refused_in_one_line(body: bytes) -> None:
    from agentgauge.errors import InputError
    from agentgauge.importers.otlp_logs import log_events_from_protobuf

    try:
        got = log_events_from_protobuf(body, source="request")
    except InputError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("request")
    else:
        assert all(len(e.trace_id) == 32 for e in got.events)


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=200))
def test_any_protobuf_body_is_read_or_refused_in_one_line(body: bytes) -> None:
    # What collect's POST /v1/logs decodes: bytes off the network.
    _read_or_refused_in_one_line(body)


@st.composite
def _pb_requests(draw: st.DrawFn) -> bytes:
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue

    request = ExportLogsServiceRequest()
    scope = request.resource_logs.add().scope_logs.add()
    for _ in range(draw(st.integers(0, 3))):
        record = scope.log_records.add()
        record.trace_id = draw(st.sampled_from([b"", b"\x01" * 8, b"\x02" * 16, b"\x03" * 20]))
        record.span_id = draw(st.sampled_from([b"", b"\x04" * 4, b"\x05" * 8]))
        record.event_name = draw(st.sampled_from(["", EVAL, "gen_ai.choice"]) | st.text(max_size=5))
        record.time_unix_nano = draw(st.integers(0, 2**64 - 1))
        value: AnyValue = record.body
        for _depth in range(draw(st.integers(0, 40))):  # bodies nested deep
            value = value.kvlist_value.values.add(key="k").value
        value.string_value = draw(st.text(max_size=10))
        kv = record.attributes.add(key=draw(st.text(max_size=6)))
        kv.value.int_value = draw(st.integers(-(2**63), 2**63 - 1))
    return request.SerializeToString()


@settings(max_examples=150, deadline=None)
@given(body=_pb_requests())
def test_structured_protobuf_log_requests_are_read_or_refused_in_one_line(body: bytes) -> None:
    _read_or_refused_in_one_line(body)


def test_a_traces_file_for_logs_or_a_logs_file_for_traces_is_named(
    cli: Any, tmp_path: Path
) -> None:
    traces, logs = FIXTURES / "events.traces.jsonl", FIXTURES / "events.logs.jsonl"
    db = tmp_path / "s.db"
    code, _, err = cli("import", "otel", str(traces), "--logs", str(traces), "--store", str(db))
    assert code == 2
    assert f"{traces}:1: resourceSpans: this is an OTLP traces request, not logs" in err
    code, _, err = cli("import", "otel", str(logs), "--store", str(db))
    assert code == 2
    assert f"{logs}:1: resourceLogs: this is an OTLP logs request, not traces" in err
    assert not db.exists()


def test_a_log_record_with_all_zero_ids_belongs_to_no_trace() -> None:
    # logs.proto: an all-zero trace id is invalid and ties the record to no trace (it is
    # optional on a log record); an all-zero span id, to no span.
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs

    from agentgauge.importers.otlp_logs import log_events_from_json, log_events_from_protobuf

    def record(trace_id: str, span_id: str) -> dict[str, Any]:
        return {"traceId": trace_id, "spanId": span_id, "eventName": "gen_ai.choice"}

    doc = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            record("0" * 32, "b7ad6b7169203331"),
                            record("0af7651916cd43dd8448eb211c80319c", "0" * 16),
                        ]
                    }
                ]
            }
        ]
    }
    got = log_events_from_json(doc, file="request")
    assert got.not_events == 1 and [e.span_id for e in got.events] == [None]
    pb = ExportLogsServiceRequest(
        resource_logs=[
            ResourceLogs(
                scope_logs=[
                    ScopeLogs(
                        log_records=[
                            LogRecord(trace_id=b"\0" * 16, span_id=b"\1" * 8, event_name="e"),
                            LogRecord(trace_id=b"\1" * 16, span_id=b"\0" * 8, event_name="e"),
                        ]
                    )
                ]
            )
        ]
    )
    got = log_events_from_protobuf(pb.SerializeToString(), source="request")
    assert got.not_events == 1 and [e.span_id for e in got.events] == [None]
