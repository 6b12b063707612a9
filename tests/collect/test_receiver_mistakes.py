"""`agentgauge collect` and the mistakes a new user makes pointing an exporter at it.

The exporter's terminal is not the one the user watches: a request the receiver
refuses for its path, method or media type (an endpoint without ``/v1/traces``, a
wrong ``Content-Type``) is said on collect's stderr too, and a 404 says which paths
the receiver takes."""

from __future__ import annotations

import json
import sqlite3
import urllib.error
import urllib.parse
import urllib.request

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.collect.test_receiver import Collector

from agentgauge.store import Store


def _send(url: str, body: bytes, content_type: str, method: str = "POST") -> tuple[int, bytes]:
    req = urllib.request.Request(
        url, data=body, headers={"Content-Type": content_type}, method=method
    )
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_an_endpoint_without_v1_traces_is_said_on_collects_stderr(collector: Collector) -> None:
    # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given: a base URL sends to "/".
    base = urllib.parse.urljoin(collector.url, "/")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=base)))
    with provider.get_tracer("t").start_as_current_span("invoke_agent bot") as root:
        root.set_attribute("agentgauge.task.id", "a")
    provider.shutdown()
    status, body = _send(base + "v1/trace", b"{}", "application/json")
    assert status == 404
    assert "/v1/traces" in json.loads(body)["message"]
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 0 trials from 0 spans" in out
    lines = [line for line in err.splitlines() if "(404)" in line]
    assert len(lines) == 2, err
    assert "POST '/':" in lines[0] and "POST '/v1/trace':" in lines[1], lines
    assert "/v1/traces" in lines[0] and "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" in lines[0]


def test_a_wrong_method_or_media_type_is_said_on_collects_stderr(collector: Collector) -> None:
    status, body = _send(collector.url, b"{}", "text/plain")
    assert status == 415 and "unsupported Content-Type" in json.loads(body)["message"]
    status, _ = _send(collector.url, b"", "application/json", method="GET")
    assert status == 405
    code, _, err = collector.stop()
    assert code == 0, err
    assert "refused a request (415): unsupported Content-Type 'text/plain'" in err, err
    assert "refused a request (405): GET '/v1/traces': send spans and logs with POST" in err, err
    assert "Traceback" not in err


def test_one_open_trace_is_said_in_the_singular(collector: Collector) -> None:
    child = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203332",
        "parentSpanId": "b7ad6b7169203331",
        "name": "execute_tool add",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "agentgauge.task.id", "value": {"stringValue": "a"}}],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [child]}]}]}
    status, _ = collector.post(json.dumps(doc).encode(), "application/json")
    assert status == 200
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 1 trial from 1 span" in out
    assert "1 open trace stored as an incomplete trial\n" in err, err


@pytest.mark.slow
def test_a_trial_the_busy_store_cannot_take_yet_is_kept_and_written_later(
    collector: Collector,
) -> None:
    # Another command holds the store's write lock past SQLite's 30 s busy wait (a
    # large `import` into the same store, say): the trace's trial is kept in memory
    # and written once the store is free, not rejected for good in partial_success
    # (which an exporter never sends again).
    root = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent bot",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [
            {"key": "agentgauge.task.id", "value": {"stringValue": "a"}},
            {"key": "agentgauge.outcome.success", "value": {"boolValue": True}},
        ],
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [root]}]}]}
    other = sqlite3.connect(collector.db, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        status, body = _send(collector.url, json.dumps(doc).encode(), "application/json")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert (status, json.loads(body)) == (200, {})
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 1 trial from 1 span in run live" in out, out + err
    assert "the store is busy" in err and "rejected" not in err, err
    with Store(collector.db) as db:
        [trial] = db.trials("live")
    assert (trial.task_id, trial.success) == ("a", True)


def test_a_trace_naming_no_task_says_how_an_http_service_joins_its_trial(
    collector: Collector,
) -> None:
    # An http: agent's service that did not continue the request's traceparent sends
    # a trace of its own, with no task: the fix is the propagation, not a task id
    # (which would make its spans a second trial beside the http: one).
    root = {
        "traceId": "1af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent svc",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [root]}]}]}
    status, body = collector.post(json.dumps(doc).encode(), "application/json")
    assert status == 200
    said = json.loads(body)["partialSuccess"]["errorMessage"]
    assert "names no task" in said and "traceparent" in said, said
    code, _, err = collector.stop()
    assert code == 0, err
    assert "continue the trace the request's traceparent header names" in err, err


def test_a_json_body_that_is_not_utf8_names_the_byte(collector: Collector) -> None:
    # UTF-16 (a Windows tool's default) or Latin-1 text: orjson's "str is not valid
    # UTF-8: surrogates not allowed" spoke of surrogates the body did not hold.
    for body, said in (
        (b'{"resourceSpans": [], "x": "caf\xe9"}', "byte 31 (0xe9) is not valid UTF-8"),
        ('{"resourceSpans": []}'.encode("utf-16"), "byte 0 (0xff) is not valid UTF-8"),
    ):
        status, answer = collector.post(body, "application/json")
        assert status == 400
        message = json.loads(answer)["message"]
        assert message.startswith("request: the body is not UTF-8 text: ") and said in message
        assert "surrogates" not in message, message
    code, _, err = collector.stop()
    assert code == 0 and "byte 31 (0xe9) is not valid UTF-8" in err, err


def test_spans_of_a_trial_in_another_store_say_so(collector: Collector) -> None:
    # The service continued the request's trace, but `agentgauge run` wrote its http:
    # trials to another store: the spans' root (the adapter's request) never comes,
    # and the fix is the store, not the propagation.
    child = {
        "traceId": "2af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203332",
        "parentSpanId": "b7ad6b7169203331",
        "name": "invoke_agent svc",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
    }
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [child]}]}]}
    status, _ = collector.post(json.dumps(doc).encode(), "application/json")
    assert status == 200
    code, _, err = collector.stop()
    assert code == 0, err
    assert "names no task" in err and "traceparent" not in err, err
    assert "no run of this store holds that trial" in err, err
