"""``collect``'s summary counts the spans it stored. Spans answered 200 while their trace
was open and dropped later (the trace named no task, when its trial was built at
shutdown or after ``--settle``) were counted as if stored: "stored 0 trials from 2
spans", then stderr said those 2 spans were not stored."""

from __future__ import annotations

import json
from pathlib import Path

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

NO_TASK = {"gen_ai.operation.name": "chat"}


def _json(doc: dict[str, object]) -> bytes:
    return json.dumps(doc).encode()


def test_an_open_trace_that_becomes_no_trial_is_not_counted_as_stored(
    collector: Collector,
) -> None:
    stored = request(
        span(
            "00000000000000a1",
            "r",
            {"agentgauge.task.id": "t", "agentgauge.outcome.success": True},
            trace="a" * 32,
        )
    )
    assert collector.post(_json(stored), "application/json") == (200, b"{}")
    open_trace = request(
        span("00000000000000b1", "chat", NO_TASK, parent="00000000000000bf", trace="b" * 32),
        span("00000000000000b2", "chat", NO_TASK, parent="00000000000000bf", trace="b" * 32),
    )
    assert collector.post(_json(open_trace), "application/json") == (200, b"{}")  # held
    code, out, err = collector.stop()
    assert code == 0
    assert f"trace {'b' * 32} names no task" in err and "(2 spans not stored)" in err
    assert out.splitlines() == [
        "stored 1 trial from 1 span in run live",
        "2 spans accepted while their traces were open were not stored (stderr says why)",
    ]


def test_a_settled_trace_that_becomes_no_trial_is_not_counted_as_stored(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "live.db", "--settle", "0.1")
    try:
        ended = request(
            span("00000000000000c1", "invoke_agent", NO_TASK, trace="c" * 32),
            span("00000000000000c2", "chat", NO_TASK, parent="00000000000000c1", trace="c" * 32),
        )
        assert collector.post(_json(ended), "application/json") == (200, b"{}")  # waits
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0
    # Built when its wait was over (or at shutdown, whichever came first), and refused.
    assert f"trace {'c' * 32} names no task" in err
    assert "(2 earlier spans of it dropped too)" in err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "2 spans accepted while their traces were open were not stored (stderr says why)",
        "run live holds no trial: not kept",
    ]
    assert not (tmp_path / "live.db").exists()  # nor the store it made for it


def test_held_spans_of_a_trial_the_store_refuses_are_not_counted_as_stored(
    tmp_path: Path,
) -> None:
    """A second receiver on the run holds an open trace that names trial 0, which the
    first stored meanwhile: written at shutdown, the store refuses it."""
    db = tmp_path / "live.db"
    first, second = Collector(db), Collector(db)
    named = {"agentgauge.task.id": "t", "agentgauge.trial": 0}
    try:
        child = span("00000000000000d2", "chat", named, parent="00000000000000d1", trace="d" * 32)
        assert second.post(_json(request(child)), "application/json") == (200, b"{}")  # held
        root = span("00000000000000e1", "r", {**named, "agentgauge.outcome.success": True})
        assert first.post(_json(request(root)), "application/json") == (200, b"{}")
        assert first.stop()[0] == 0
        code, out, err = second.stop()
    finally:
        first.kill()
        second.kill()
    assert code == 0
    assert "trial 0 of task 't' (variant 'base') is already stored" in err, err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "1 span accepted while its trace was open was not stored (stderr says why)",
    ]


def _verdict(trace: str, span_id: str) -> dict[str, object]:
    """An evaluator's verdict on a span, as a log record (``gen_ai.evaluation.result``)."""
    return {
        "eventName": "gen_ai.evaluation.result",
        "traceId": trace,
        "spanId": span_id,
        "attributes": [
            {"key": "gen_ai.evaluation.name", "value": {"stringValue": "judge"}},
            {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "pass"}},
        ],
    }


def _post_logs(collector: Collector, *records: dict[str, object]) -> tuple[int, bytes]:
    logs = {"resourceLogs": [{"scopeLogs": [{"logRecords": list(records)}]}]}
    url = collector.url
    collector.url = url.replace("/v1/traces", "/v1/logs")
    try:
        return collector.post(_json(logs), "application/json")
    finally:
        collector.url = url


def test_events_of_a_trial_the_store_refuses_are_not_counted_as_stored(tmp_path: Path) -> None:
    """The event records held for a trace went with its trial; when the store refused the
    trial (its index stored meanwhile by another session), they were counted in the
    summary's "and N event records" all the same."""
    db = tmp_path / "live.db"
    first, second = Collector(db), Collector(db)
    named = {"agentgauge.task.id": "t", "agentgauge.trial": 0}
    try:
        assert _post_logs(second, _verdict("d" * 32, "00000000000000d1")) == (200, b"{}")
        root = span("00000000000000e1", "r", {**named, "agentgauge.outcome.success": True})
        assert first.post(_json(request(root)), "application/json") == (200, b"{}")
        assert first.stop()[0] == 0
        ended = span(
            "00000000000000d1",
            "r",
            {**named, "agentgauge.outcome.success": True},
            trace="d" * 32,
        )
        status, body = second.post(_json(request(ended)), "application/json")
        assert status == 200
        assert json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
        code, out, err = second.stop()
    finally:
        first.kill()
        second.kill()
    assert code == 0
    assert "trial 0 of task 't' (variant 'base') is already stored" in err, err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "1 event record accepted while its trace was open was not stored (stderr says why)",
    ]


def test_events_of_a_trace_refused_for_its_trial_index_are_not_counted_as_stored(
    collector: Collector,
) -> None:
    named = {"agentgauge.task.id": "t", "agentgauge.trial": 0, "agentgauge.outcome.success": True}
    assert (
        collector.post(_json(request(span("00000000000000a1", "r", named))), "application/json")[0]
        == 200
    )
    assert _post_logs(collector, _verdict("b" * 32, "00000000000000b1")) == (200, b"{}")
    refused = request(span("00000000000000b1", "r", named, trace="b" * 32))
    status, body = collector.post(_json(refused), "application/json")
    assert status == 200 and json.loads(body)["partialSuccess"]["rejectedSpans"] == "1"
    code, out, err = collector.stop()
    assert code == 0
    assert "is already stored in this run" in err, err
    assert out.splitlines() == [
        "stored 1 trial from 1 span in run live",
        "1 event record accepted while its trace was open was not stored (stderr says why)",
    ]


def test_events_of_a_trace_refused_for_a_bad_attribute_are_not_counted_as_stored(
    collector: Collector,
) -> None:
    bad = {"agentgauge.task.id": "t", "agentgauge.trial": -1, "agentgauge.outcome.success": True}
    assert _post_logs(collector, _verdict("b" * 32, "00000000000000b1")) == (200, b"{}")
    refused = request(span("00000000000000b1", "r", bad, trace="b" * 32))
    status, body = collector.post(_json(refused), "application/json")
    assert status == 200 and json.loads(body)["partialSuccess"]["rejectedSpans"] == "1", body
    code, out, err = collector.stop()
    assert code == 0
    assert "agentgauge.trial" in err, err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "1 event record accepted while its trace was open was not stored (stderr says why)",
        "run live holds no trial: not kept",
    ]
