"""Events sent as log records that join a trace's spans, and what that does to the
spans: the spans sent again as they were are a repeat, and the events of an ``http:``
agent's trace go with its spans to the trial the harness stored."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.collect.test_receiver import Collector
from tests.conftest import Cli
from tests.importers.otlp_docs import AGENT_ROOT, TRACE, request, span

from agentgauge.store import Store


def _verdict(trace: str, span_id: str, grader: str = "judge") -> dict[str, Any]:
    """An evaluator's verdict (``gen_ai.evaluation.result``) on a span, as a log record."""
    return {
        "timeUnixNano": "1500000000",
        "eventName": "gen_ai.evaluation.result",
        "traceId": trace,
        "spanId": span_id,
        "attributes": [
            {"key": "gen_ai.evaluation.name", "value": {"stringValue": grader}},
            {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "pass"}},
        ],
    }


def _logs(*records: dict[str, Any]) -> dict[str, Any]:
    return {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}


def _post(collector: Collector, path: str, doc: dict[str, Any]) -> dict[str, Any]:
    url = collector.url
    collector.url = url.replace("/v1/traces", path)
    try:
        status, body = collector.post(json.dumps(doc).encode(), "application/json")
    finally:
        collector.url = url
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body).get("partialSuccess", {})
    return answer


def test_a_span_sent_again_after_its_events_came_as_logs_is_a_repeat(
    collector: Collector,
) -> None:
    # The verdict, attached to the root span as it became a trial, was digested as the
    # root's own event: the exporter's retry of the same root was refused as a conflict.
    assert _post(collector, "/v1/logs", _logs(_verdict(TRACE, "00000000000000a1"))) == {}
    assert _post(collector, "/v1/traces", request(AGENT_ROOT)) == {}
    assert _post(collector, "/v1/traces", request(AGENT_ROOT)) == {}
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 1 trial from 1 span and 1 event record" in out
    assert "added the spans" not in out  # nothing was added to the stored trial
    assert "1 span came again, the same as before" in err
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    assert [g.grader for g in trial.grades] == ["judge"]


def test_spans_imported_with_their_logs_then_sent_live_add_nothing(
    tmp_path: Path, cli: Cli
) -> None:
    spans_file = tmp_path / "spans.json"
    logs_file = tmp_path / "logs.json"
    spans_file.write_text(json.dumps(request(AGENT_ROOT)))
    logs_file.write_text(json.dumps(_logs(_verdict(TRACE, "00000000000000a1"))))
    db = tmp_path / "live.db"
    code, _out, err = cli(
        "import", "otel", str(spans_file), "--logs", str(logs_file), "--store", str(db)
    )
    assert code == 0, err
    collector = Collector(db)
    try:
        # docs/formats/otel.md: a trace sent live after import otel stored it adds nothing.
        assert _post(collector, "/v1/traces", request(AGENT_ROOT)) == {}
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0, err
    assert "stored 0 trials from 0 spans" in out
    assert "added the spans" not in out


def test_events_of_an_http_agents_trace_become_grades_of_its_stored_trial(
    collector: Collector, cli: Cli, tmp_path: Path
) -> None:
    # The agent service exports its verdict and a span before the harness writes the
    # trial: the span joined the trial, its verdict was dropped at shutdown as if the
    # trace's spans never came.
    trace = "2" * 32
    tool = span(
        "00000000000000b2",
        "execute_tool f",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"},
        parent="00000000000000c1",
        trace=trace,
    )
    assert _post(collector, "/v1/logs", _logs(_verdict(trace, "00000000000000b2"))) == {}
    assert _post(collector, "/v1/traces", request(tool)) == {}
    trials = tmp_path / "http.jsonl"
    trials.write_text(
        json.dumps({"task_id": "t1", "success": True, "metadata": {"trace_id": trace}}) + "\n"
    )
    code, _out, err = cli(
        "import", "jsonl", str(trials), "--store", str(collector.db), "--run-id", "r"
    )
    assert code == 0, err
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # the receiver looks each second (JOIN_EVERY_S)
        with Store(collector.db, readonly=True) as db:
            (trial,) = db.trials("r")
        if trial.grades:
            break
        time.sleep(0.2)
    code, _out, err = collector.stop()
    assert code == 0, err
    assert "never came" not in err
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("r")
    assert [(g.grader, g.passed) for g in trial.grades] == [("judge", True)]
    assert [e.type for e in trial.events] == ["tool_call", "tool_result"]
