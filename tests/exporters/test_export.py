"""``agentgauge export DB:RUN --jsonl FILE | --otel FILE``.

The JSONL export is checked by the round trip (`import jsonl` of it gives the same
``metrics --json``, on a harness run and on real tau-bench trials); the OTLP JSON
export by parsing it with opentelemetry-proto's own classes and reading the spans
and ``gen_ai.evaluation.result`` events back."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from tests.conftest import Cli, metrics_json

from agentgauge.exporters.otel import otlp_json, run_to_otlp
from agentgauge.schema import (
    ControlEvent,
    Grade,
    MessageEvent,
    ModelCallEvent,
    Run,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store import Store
from agentgauge.testing.agent_service import CounterService, counter_tasks, run_against


@pytest.fixture(scope="module")
def retail_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in retail suite, two trials a task, by the simulated careful agent:
    tool calls, control decisions, costs, families and several graders per trial."""
    from agentgauge.harness.runner import run

    db = tmp_path_factory.mktemp("retail") / "s.db"
    run("builtin:retail", "builtin:careful", trials=2, store=db, run_id="r", progress=False)
    return db


def test_jsonl_round_trip_preserves_every_metric(
    cli: Cli, retail_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    code, said, err = cli("export", f"{retail_run}:r", "--jsonl", str(out))
    assert code == 0, err
    assert "exported" in said and str(out) in said
    db2 = tmp_path / "back.db"
    code, _, err = cli("import", "jsonl", str(out), "--store", str(db2), "--run-id", "back")
    assert code == 0, err
    before = metrics_json(cli, f"{retail_run}:r")
    assert metrics_json(cli, f"{db2}:back") == before
    assert metrics_json(cli, str(out)) == before
    with Store(retail_run, readonly=True) as a, Store(db2, readonly=True) as b:
        original, again = a.trials("r"), b.trials("back")
    assert [t.model_dump() for t in again] == [t.model_dump() for t in original]


def test_jsonl_round_trip_of_real_taubench_trials(
    cli: Cli, shared_data: Path, tmp_path: Path
) -> None:
    source = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    db = tmp_path / "s.db"
    assert cli("import", "taubench", str(source), "--store", str(db), "--run-id", "tb")[0] == 0
    out = tmp_path / "tb.jsonl"
    assert cli("export", f"{db}:tb", "--jsonl", str(out))[0] == 0
    assert cli("import", "jsonl", str(out), "--store", str(db), "--run-id", "tb2")[0] == 0
    assert metrics_json(cli, f"{db}:tb2") == metrics_json(cli, f"{db}:tb")


def test_otel_round_trip_preserves_every_metric(cli: Cli, retail_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.otlp.json"
    assert cli("export", f"{retail_run}:r", "--otel", str(out))[0] == 0
    db2 = tmp_path / "back.db"
    code, _, err = cli("import", "otel", str(out), "--store", str(db2), "--run-id", "back")
    assert code == 0, err
    assert metrics_json(cli, f"{db2}:back") == metrics_json(cli, f"{retail_run}:r")
    with Store(retail_run, readonly=True) as a, Store(db2, readonly=True) as b:
        original, again = a.trials("r"), b.trials("back")
        run_a, run_b = a.get_run("r"), b.get_run("back")
    assert run_a is not None and run_b is not None
    # The suite and its version come back from the resource the export names them on:
    # the file's name stood in for the suite, and compare said "suites differ".
    assert run_a.suite_version  # a harness run records it: the check below means something
    assert (run_b.suite, run_b.suite_version) == (run_a.suite, run_a.suite_version)
    code, said, err = cli("compare", f"{retail_run}:r", f"{db2}:back")
    assert code == 0, err
    assert "suites differ" not in said and f"suite {run_a.suite} @ " in said
    for x, y in zip(original, again, strict=True):
        assert (x.task_id, x.trial, x.success, x.score, x.family) == (
            y.task_id,
            y.trial,
            y.success,
            y.score,
            y.family,
        )
        assert [g.model_dump() for g in y.grades] == [g.model_dump() for g in x.grades]
        # The same events in the same order: each span carries its event's place.
        assert [e.type for e in y.events] == [e.type for e in x.events]
        assert [e.t for e in y.events] == pytest.approx([e.t for e in x.events], abs=1e-9)
        # The state at each hand-back comes across too: the checkpoints grader reads it,
        # and without it a re-grade of the import turned passes into unknowns.
        assert y.turns == x.turns
    assert any(x.turns for x in original)
    args = ("import", "otel", str(out), "--suite", "builtin:retail", "--store", str(db2))
    assert cli(*args, "--run-id", "graded")[0] == 0
    code, said, err = cli("grade", f"{db2}:graded")
    assert code == 0, err
    assert "0 trials changed; 0 with an unknown required grade" in said


def test_a_model_call_of_unknown_latency_stays_unknown_through_otel(
    cli: Cli, tmp_path: Path
) -> None:
    # The span needs an end; it came back as a measured 0.00 s.
    source = tmp_path / "t.jsonl"
    calls = [
        {"type": "model_call", "t": 1.0, "model": "m", "input_tokens": 9, "output_tokens": 2},
        {"type": "model_call", "t": 2.0, "model": "m", "latency_s": 0.5},
    ]
    source.write_text(json.dumps({"task_id": "t", "success": True, "events": calls}) + "\n")
    db = tmp_path / "s.db"
    assert cli("import", "jsonl", str(source), "--store", str(db), "--run-id", "a")[0] == 0
    out = tmp_path / "a.otlp.json"
    assert cli("export", f"{db}:a", "--otel", str(out))[0] == 0
    assert cli("import", "otel", str(out), "--store", str(db), "--run-id", "b")[0] == 0
    with Store(db, readonly=True) as store:
        (trial,) = store.trials("b")
    assert [e.latency_s for e in trial.events] == [None, pytest.approx(0.5)]


def _tool_trials() -> list[Trial]:
    """Transcripts whose results a call id does not pair: none has ids (OpenInference
    TOOL spans seldom carry ``tool_call.id``), one id is used twice, a result answers no
    call, events share an instant or have no time, and a result is JSON."""
    lookup = {"name": "lookup", "arguments": {"q": 1}}
    return [
        Trial(
            task_id="no-ids",
            trial=0,
            success=True,
            events=[
                MessageEvent(t=0.0, role="user", content="find it"),
                ModelCallEvent(t=0.5, model="m", input_tokens=100, output_tokens=10, latency_s=0.4),
                ToolCallEvent(t=0.6, **lookup),
                ToolResultEvent(t=0.7, content="db down", is_error=True),
                ToolCallEvent(t=0.8, **lookup),
                ToolResultEvent(t=0.9, content="found"),
                MessageEvent(t=1.0, role="assistant", content="found"),
            ],
        ),
        Trial(
            task_id="one-id-twice",
            trial=0,
            success=False,
            events=[
                ToolCallEvent(t=0.1, call_id="c1", **lookup),
                ToolResultEvent(
                    t=0.2, call_id="c1", content={"error_type": "timeout"}, is_error=True
                ),
                ToolCallEvent(t=0.3, call_id="c1", **lookup),
                ToolResultEvent(t=0.4, call_id="c1", content="found"),
                ToolResultEvent(t=0.5, call_id="c9", content="nobody asked", is_error=True),
                ToolCallEvent(t=0.6, call_id="c2", **lookup),  # the trial ended first
            ],
        ),
        Trial(
            task_id="same-instant",
            trial=0,
            success=True,
            events=[
                ToolCallEvent(name="pay", arguments={}),
                ToolResultEvent(name="pay", content="card declined", is_error=True),
                ControlEvent(decision="recover"),
                ModelCallEvent(model="m", latency_s=0.3),
                ToolCallEvent(t=1.0, name="pay", arguments={}),
                ControlEvent(t=1.0, decision="confirm"),
                ToolResultEvent(t=1.0, content=None, is_error=True),
            ],
        ),
    ]


def test_otel_round_trip_pairs_every_tool_result_and_keeps_the_transcript(
    cli: Cli, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at="2026-12-01T00:00:00+00:00"))
        store.add_trials("r", _tool_trials())
    out = tmp_path / "r.otlp.json"
    assert cli("export", f"{db}:r", "--otel", str(out))[0] == 0
    back = tmp_path / "back.db"
    code, _, err = cli("import", "otel", str(out), "--store", str(back), "--run-id", "r")
    assert code == 0, err
    before = metrics_json(cli, f"{db}:r")
    assert before["groups"][0]["recovery"]["with_tool_error"]["count"] == 3
    assert metrics_json(cli, f"{back}:r") == before
    with Store(db, readonly=True) as a, Store(back, readonly=True) as b:
        original, again = a.trials("r"), b.trials("r")
    for x, y in zip(original, again, strict=True):
        # Every event, in its place, with its time (none where it had none).
        assert [e.model_dump() for e in y.events] == [e.model_dump() for e in x.events]


def test_import_openinference_of_an_otel_export_reads_its_genai_spans(
    cli: Cli, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at="2026-12-01T00:00:00+00:00"))
        store.add_trials("r", _tool_trials()[:1])
    out = tmp_path / "r.otlp.json"
    assert cli("export", f"{db}:r", "--otel", str(out))[0] == 0
    back = tmp_path / "back.db"
    code, _, err = cli("import", "openinference", str(out), "--store", str(back))
    assert code == 0, err
    with Store(db, readonly=True) as a, Store(back, readonly=True) as b:
        (run,) = b.list_runs()
        assert b.trials(run.run_id)[0].events == a.trials("r")[0].events


def test_a_model_call_keeps_its_time_and_latency_through_export_and_import(
    cli: Cli, tmp_path: Path
) -> None:
    # A chat span from 0.1 s to 0.5 s into the trace: the call returned at 0.5 s.
    spans = [
        {
            "traceId": "5af7651916cd43dd8448eb211c80319c",
            "spanId": "b7ad6b7169203331",
            "name": "invoke_agent a",
            "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000001000000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
                {"key": "agentgauge.task.id", "value": {"stringValue": "t"}},
                {"key": "agentgauge.outcome.success", "value": {"boolValue": True}},
            ],
        },
        {
            "traceId": "5af7651916cd43dd8448eb211c80319c",
            "spanId": "c7ad6b7169203331",
            "parentSpanId": "b7ad6b7169203331",
            "name": "chat m",
            "kind": 3,
            "startTimeUnixNano": "1700000000100000000",
            "endTimeUnixNano": "1700000000500000000",
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "m"}},
            ],
        },
    ]
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    db = tmp_path / "s.db"
    assert cli("import", "otel", str(source), "--store", str(db), "--run-id", "a")[0] == 0
    out = tmp_path / "a.otlp.json"
    assert cli("export", f"{db}:a", "--otel", str(out))[0] == 0
    assert cli("import", "otel", str(out), "--store", str(db), "--run-id", "b")[0] == 0
    with Store(db, readonly=True) as store:
        for run_id in ("a", "b"):
            (call,) = [e for e in store.trials(run_id)[0].events if e.type == "model_call"]
            assert (call.t, call.latency_s) == (pytest.approx(0.5), pytest.approx(0.4))


def test_otel_round_trip_of_real_taubench_trials(
    cli: Cli, shared_data: Path, tmp_path: Path
) -> None:
    source = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    db = tmp_path / "s.db"
    assert cli("import", "taubench", str(source), "--store", str(db), "--run-id", "tb")[0] == 0
    out = tmp_path / "tb.otlp.json"
    assert cli("export", f"{db}:tb", "--otel", str(out))[0] == 0
    code, _, err = cli("import", "otel", str(out), "--store", str(db), "--run-id", "tb2")
    assert code == 0, err
    assert metrics_json(cli, f"{db}:tb2") == metrics_json(cli, f"{db}:tb")


def parse_otlp(text: str) -> ExportTraceServiceRequest:
    """OTLP/JSON parsed by the proto classes: ids go back from hex to protobuf's base64,
    and unknown fields are refused, so a misspelt key fails the test."""
    data = json.loads(text)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        assert len(span[key]) == (32 if key == "traceId" else 16)
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    request = ExportTraceServiceRequest()
    json_format.ParseDict(data, request, ignore_unknown_fields=False)
    return request


def attributes(holder: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in holder.attributes:
        kind = kv.value.WhichOneof("value")
        out[kv.key] = getattr(kv.value, kind)
    return out


def test_otel_export_is_valid_otlp_with_an_evaluation_event_per_grade(
    cli: Cli, retail_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.otlp.json"
    code, _, err = cli("export", f"{retail_run}:r", "--otel", str(out))
    assert code == 0, err
    text = out.read_text()
    assert text.count("\n") == 1  # one export request a line, as the Collector's file exporter
    raw = json.loads(text)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert isinstance(raw["startTimeUnixNano"], str)  # int64 as a string (OTLP/JSON)
    assert isinstance(raw["kind"], int)  # enums as integers
    request = parse_otlp(text)
    (rs,) = request.resource_spans
    assert attributes(rs.resource)["agentgauge.run.id"] == "r"
    spans = list(rs.scope_spans[0].spans)
    with Store(retail_run, readonly=True) as db:
        trials = db.trials("r")
    roots = [s for s in spans if not s.parent_span_id]
    assert len(roots) == len(trials)
    assert len({s.trace_id for s in roots}) == len(trials)  # one trace per trial
    by_trace = {s.trace_id: s for s in roots}
    for trial, root in zip(trials, roots, strict=True):
        attrs = attributes(root)
        assert root.name == "invoke_agent builtin:careful"
        assert attrs["gen_ai.operation.name"] == "invoke_agent"
        assert attrs["gen_ai.agent.name"] == "builtin:careful"
        assert attrs["agentgauge.task.id"] == trial.task_id
        assert attrs["agentgauge.trial"] == trial.trial
        assert attrs["agentgauge.outcome.success"] == trial.success
        assert attrs["agentgauge.outcome.score"] == trial.score
        assert attrs.get("agentgauge.family") == trial.family
        evaluations = [e for e in root.events if e.name == "gen_ai.evaluation.result"]
        assert len(evaluations) == len(trial.grades) > 0
        for event, grade in zip(evaluations, trial.grades, strict=True):
            ev = attributes(event)
            assert ev["gen_ai.evaluation.name"] == grade.grader
            label = {True: "pass", False: "fail", None: "unknown"}[grade.passed]
            assert ev["gen_ai.evaluation.score.label"] == label
            if grade.score is None:
                assert "gen_ai.evaluation.score.value" not in ev  # unknown is left out, not 0
            else:
                assert ev["gen_ai.evaluation.score.value"] == grade.score
        children = [s for s in spans if s.trace_id == root.trace_id and s.parent_span_id]
        assert all(s.parent_span_id == root.span_id for s in children)
        tools = [s for s in children if s.name.startswith("execute_tool ")]
        calls = [e for e in trial.events if isinstance(e, ToolCallEvent)]
        assert [attributes(s)["gen_ai.tool.name"] for s in tools] == [c.name for c in calls]
        for span, call in zip(tools, calls, strict=True):
            a = attributes(span)
            assert json.loads(a["gen_ai.tool.call.arguments"]) == call.arguments
            assert a["gen_ai.tool.call.id"] == call.call_id
            assert span.kind == Span.SPAN_KIND_INTERNAL
            failed = a.get("error.type") == "tool_error"
            assert failed == (span.status.code == Status.STATUS_CODE_ERROR)
            assert span.start_time_unix_nano <= span.end_time_unix_nano
        chats = [s for s in children if s.name.startswith("chat")]
        assert len(chats) == trial.model_calls
        assert all(s.kind == Span.SPAN_KIND_CLIENT for s in chats)
    assert set(by_trace) == {s.trace_id for s in spans}


def test_otel_export_is_stable(cli: Cli, retail_run: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert cli("export", f"{retail_run}:r", "--otel", str(a))[0] == 0
    assert cli("export", f"{retail_run}:r", "--otel", str(b))[0] == 0
    assert a.read_bytes() == b.read_bytes()


def test_an_http_trial_keeps_the_trace_its_request_carried(cli: Cli, tmp_path: Path) -> None:
    (trial,) = run_against(CounterService(), tmp_path, counter_tasks(3))
    out = tmp_path / "h.json"
    assert cli("export", f"{tmp_path / 's.db'}:r", "--otel", str(out))[0] == 0
    spans = list(parse_otlp(out.read_text()).resource_spans[0].scope_spans[0].spans)
    (root,) = [s for s in spans if not s.parent_span_id]
    # The service's own spans are children of the span id the request named: they sit
    # under this root in a trace viewer.
    assert root.trace_id.hex() == trial.metadata["trace_id"]
    assert root.span_id.hex() == trial.metadata["span_id"]
    (tool,) = [s for s in spans if s.name == "execute_tool add"]
    assert json.loads(attributes(tool)["gen_ai.tool.call.result"]) == {"counter": 3}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --jsonl FILE or --otel FILE"),
        (["--jsonl", "a", "--otel", "b"], "give exactly one of --jsonl FILE or --otel FILE"),
        (["--parquet", "d", "--otel", "b"], "give exactly one of --jsonl FILE or --otel FILE"),
        # --grade-version goes with every format now (as #grade=N): a version the run
        # lacks is the same one line as metrics' `DB:RUN#grade=2`.
        (
            ["--jsonl", "a", "--grade-version", "2"],
            "--grade-version: run 'r' has no grade version 2 (it has 1)",
        ),
        (
            ["--parquet", "d", "--grade-version", "2"],
            "--grade-version: run 'r' has no grade version 2 (it has 1)",
        ),
    ],
)
def test_bad_export_options_are_one_line_exit_2(
    cli: Cli, retail_run: Path, args: list[str], message: str
) -> None:
    code, _, err = cli("export", f"{retail_run}:r", *args)
    assert code == 2 and message in err and err.count("\n") == 1


def test_export_of_a_missing_run_or_without_a_run_id(
    cli: Cli, retail_run: Path, tmp_path: Path
) -> None:
    code, _, err = cli("export", f"{retail_run}:nope", "--jsonl", "x.jsonl")
    assert code == 2 and "nope" in err and "Traceback" not in err
    assert not Path("x.jsonl").exists()
    # A store of one run: DB alone is that run (before: refused, "export needs DB:RUN").
    whole, named = tmp_path / "whole.jsonl", tmp_path / "named.jsonl"
    code, out, err = cli("export", str(retail_run), "--jsonl", str(whole))
    assert code == 0, err
    assert f"{retail_run}:r" in out
    assert cli("export", f"{retail_run}:r", "--jsonl", str(named))[0] == 0
    assert whole.read_text() == named.read_text() and whole.read_text().count("\n") > 1
    # Several runs, or none: which one is the user's choice; nothing is written.
    two = tmp_path / "two.db"
    with Store(two) as db:
        for run_id in ("first", "second"):
            db.create_run(Run(run_id=run_id, created_at="2026-12-03T00:00:00+00:00"))
    code, _, err = cli("export", str(two), "--otel", str(tmp_path / "x.json"))
    assert code == 2 and "holds 2 runs" in err and f"{two}:second" in err and "first" in err
    empty = tmp_path / "empty.db"
    Store(empty).close()
    code, _, err = cli("export", str(empty), "--parquet", str(tmp_path / "pq"))
    assert code == 2 and "holds no run" in err
    assert not (tmp_path / "x.json").exists() and not (tmp_path / "pq").exists()


texts = st.text(max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=10,
)
events = st.lists(
    st.one_of(
        st.builds(
            ToolCallEvent,
            name=texts,
            arguments=st.dictionaries(texts, json_values),
            call_id=st.none() | texts,
        ),
        st.builds(
            ToolResultEvent, call_id=st.none() | texts, content=json_values, is_error=st.booleans()
        ),
        st.builds(MessageEvent, role=texts, content=st.none() | texts),
        st.builds(
            ModelCallEvent,
            model=st.none() | texts,
            input_tokens=st.none() | st.integers(0, 2**63 - 1),
            latency_s=st.none() | st.floats(0, 1e6),
        ),
    ),
    max_size=6,
)
grades = st.lists(
    st.builds(
        Grade,
        grader=texts,
        score=st.none() | st.floats(0, 1),
        passed=st.none() | st.booleans(),
        evidence=json_values,
    ),
    max_size=3,
)


@settings(max_examples=100, deadline=None)
@given(
    task_id=texts.filter(bool),
    agent=st.none() | texts,
    events=events,
    grades=grades,
    seed=st.none() | st.integers(0, 2**63 - 1),
    metadata=st.dictionaries(st.sampled_from(["trace_id", "span_id", "x"]), json_values),
)
def test_hostile_transcripts_export_as_valid_otlp(
    task_id: str,
    agent: str | None,
    events: list[Any],
    grades: list[Grade],
    seed: int | None,
    metadata: dict[str, Any],
) -> None:
    trial = Trial(
        task_id=task_id,
        agent=agent,
        success=False,
        trial=0,
        events=events,
        grades=grades,
        seed=seed,
        metadata=metadata,
        latency_s=1.0,
    )
    header = Run(run_id="r", created_at="2026-12-01T00:00:00+00:00")
    request = parse_otlp(otlp_json(run_to_otlp(header, [trial])))
    spans = list(request.resource_spans[0].scope_spans[0].spans)
    (root,) = [s for s in spans if not s.parent_span_id]
    assert attributes(root)["agentgauge.task.id"] == task_id
    evaluations = [e for s in spans for e in s.events if e.name == "gen_ai.evaluation.result"]
    assert len(evaluations) == len(grades)


@pytest.mark.parametrize("deeper", [False, True])
def test_a_record_deeper_than_import_reads_is_refused_not_exported(
    cli: Cli, tmp_path: Path, deeper: bool
) -> None:
    """Metadata nested 100 levels exported with exit 0 (the line adds one level) and
    `import jsonl` then refused the file; the export now refuses it and writes nothing."""
    from agentgauge.schema import Run, Trial
    from agentgauge.store import Store
    from agentgauge.textio import MAX_DEPTH

    metadata: dict[str, Any] = {}
    inner = metadata
    for _ in range(MAX_DEPTH - 2 + deeper):  # with the record's own level: MAX_DEPTH, or one more
        inner["a"] = inner = {}
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="p", created_at="2026-01-01T00:00:00+00:00"))
        store.add_trials("p", [Trial(task_id="t", trial=0, success=True, metadata=metadata)])
    out = tmp_path / "x.jsonl"
    code, _, err = cli("export", f"{db}:p", "--jsonl", str(out))
    if deeper:
        assert code == 2 and not out.exists()
        assert err == (
            f"agentgauge: error: --jsonl: trial 0 of task 't' is nested too deeply to export: "
            f"more than {MAX_DEPTH} levels of arrays and objects in its record, which "
            "`agentgauge import jsonl` does not take back\n"
        )
        return
    assert code == 0, err
    code, _, err = cli("import", "jsonl", str(out), "--store", str(tmp_path / "b.db"))
    assert code == 0, err


def test_a_grade_version_the_run_lacks_names_the_selector_typed(
    cli: Cli, retail_run: Path, tmp_path: Path
) -> None:
    # As `metrics` names it: `#grade:` for a version asked in SOURCE (it said
    # `grade_version:`, the Python parameter, whichever was typed).
    code, _, err = cli("export", f"{retail_run}:r#grade=2", "--jsonl", str(tmp_path / "a"))
    assert code == 2
    assert err == (
        f"agentgauge: error: {retail_run}: #grade: run 'r' has no grade version 2 (it has 1)\n"
    )
