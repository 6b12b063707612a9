"""`agentgauge collect` and content codings it cannot decode, and spans sent again.

Real HTTP requests to the receiver run as the command a user runs: a body that is not
valid in its content coding is a 400 with a ``google.rpc.Status`` that says so, a
coding the receiver does not read a 415, and stderr never holds a traceback. A span
is identified by (traceId, spanId): an exporter's retry, or a span twice in one
request, counts once; a different span with the same ids is rejected in
``partial_success`` and the first kept."""

from __future__ import annotations

import base64
import gzip
import json
import zlib

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import AGENT_ROOT as ROOT
from tests.importers.otlp_docs import CHAT_CALL as CHAT
from tests.importers.otlp_docs import TRACE, request, span

from agentgauge.collect import TraceBuffer
from agentgauge.collect.server import inflate
from agentgauge.errors import InputError
from agentgauge.importers.otlp import spans_from_json
from agentgauge.schema import ModelCallEvent
from agentgauge.store import Store

JSON = "application/json"


def _body(doc: dict) -> bytes:  # type: ignore[type-arg]
    return json.dumps(doc).encode()


def test_bodies_not_valid_in_their_coding_are_400s_that_say_so(collector: Collector) -> None:
    valid = gzip.compress(_body(request(ROOT)))
    cases = [
        (b"hi", "gzip", "the body is not valid gzip"),
        (b"hi", "deflate", "the body is not valid deflate"),
        (valid[:-6], "gzip", "the body is not valid gzip"),  # cut short: no trailer
        (valid[:20], "gzip", "the body is not valid gzip"),
        (valid + b"junk", "gzip", "the body is not valid gzip"),
        (zlib.compress(b"{}") + b"x", "deflate", "the body is not valid deflate"),
        (b"", "gzip", "the body is not valid gzip"),
    ]
    for body, coding, said in cases:
        status, answer = collector.post(body, JSON, **{"Content-Encoding": coding})
        assert status == 400, (body, coding)
        message = json.loads(answer)
        assert message["code"] == 3 and said in message["message"], message
    # Protobuf: the Status encoded as the request.
    status, answer = collector.post(b"hi", "application/x-protobuf", **{"Content-Encoding": "gzip"})
    assert status == 400
    assert "not valid gzip" in status_pb2.Status.FromString(answer).message
    code, out, err = collector.stop()
    assert code == 0, err
    assert "Traceback" not in err and "Unhandled exception" not in err, err
    assert "stored 0 trials from 0 spans" in out


def test_codings_the_receiver_does_not_read_are_415s(collector: Collector) -> None:
    for coding in ("br", "zstd", "compress", "gzip, br", "gzip, gzip"):
        status, answer = collector.post(b"{}", JSON, **{"Content-Encoding": coding})
        assert status == 415, coding
        assert "unsupported Content-Encoding" in json.loads(answer)["message"]
    code, _, err = collector.stop()
    assert code == 0 and "Traceback" not in err, err


def test_gzip_deflate_and_identity_bodies_are_read(collector: Collector) -> None:
    docs = [
        request(span(f"00000000000000{i:02x}", "r", {"agentgauge.task.id": "t",
                                                      "agentgauge.outcome.success": True},
                     trace=f"{i:032x}"))
        for i in range(1, 7)
    ]  # fmt: skip
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    sent = [
        (gzip.compress(_body(docs[0])), "gzip"),
        (gzip.compress(_body(docs[1])[:10]) + gzip.compress(_body(docs[1])[10:]), "gzip"),
        (zlib.compress(_body(docs[2])), "deflate"),  # the zlib format RFC 9110 names
        (raw.compress(_body(docs[3])) + raw.flush(), "deflate"),  # bare deflate data
        (_body(docs[4]), "identity"),
        (gzip.compress(_body(docs[5])), "X-GZIP"),
    ]
    for body, coding in sent:
        status, answer = collector.post(body, JSON, **{"Content-Encoding": coding})
        assert (status, json.loads(answer)) == (200, {}), coding
    code, out, err = collector.stop()
    assert code == 0, err
    assert "stored 6 trials from 6 spans" in out


def test_a_bomb_is_stopped_at_the_limit() -> None:
    assert inflate(gzip.compress(b" " * 1000), "gzip", 999) is None
    assert inflate(gzip.compress(b" " * 1000), "gzip", 1000) == b" " * 1000
    with pytest.raises(InputError, match="not valid gzip"):
        inflate(gzip.compress(b"x")[:-1], "gzip", 100)


def test_a_retried_request_and_a_span_sent_twice_count_once(collector: Collector) -> None:
    # The exporter sends the chat span, misses the answer and sends it again; the
    # root comes with the chat span once more in the same request.
    for doc in (request(CHAT), request(CHAT), request(CHAT, ROOT, ROOT)):
        status, answer = collector.post(_body(doc), JSON)
        assert (status, json.loads(answer)) == (200, {})
    code, out, err = collector.stop()
    assert code == 0, err
    assert "3 spans came again, the same as before" in err
    assert "stored 1 trial from 2 spans" in out
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    assert (trial.input_tokens, trial.output_tokens, trial.model_calls) == (5, 2, 1)
    assert sum(isinstance(e, ModelCallEvent) for e in trial.events) == 1


def test_a_different_span_with_the_same_ids_is_rejected_the_first_kept(
    collector: Collector,
) -> None:
    other = {**CHAT, "attributes": [a for a in CHAT["attributes"] if "input" not in a["key"]]}
    status, answer = collector.post(_body(request(CHAT)), JSON)
    assert (status, json.loads(answer)) == (200, {})
    status, answer = collector.post(_body(request(other, ROOT)), JSON)
    partial = json.loads(answer)["partialSuccess"]
    assert status == 200 and partial["rejectedSpans"] == "1"
    assert f"span 00000000000000b1 of trace {TRACE}" in partial["errorMessage"]
    assert "the first one received is kept" in partial["errorMessage"]
    # In one request, too: the second of two is the one rejected.
    late = {**ROOT, "traceId": "1" * 32}
    status, answer = collector.post(_body(request(late, {**late, "name": "other"})), JSON)
    partial = json.loads(answer)["partialSuccess"]
    assert status == 200 and partial["rejectedSpans"] == "1"
    code, _, err = collector.stop()
    assert code == 0, err
    assert "rejected: span 00000000000000b1" in err
    with Store(collector.db, readonly=True) as db:
        trials = sorted(db.trials("live"), key=lambda t: t.metadata["trace_id"])
    assert [t.input_tokens for t in trials] == [5, None]  # the first chat span's
    assert trials[1].metadata["trace_id"] == "1" * 32 and trials[1].status == "completed"


def test_the_buffer_holds_a_span_once() -> None:
    buffer = TraceBuffer()
    chat = spans_from_json(request(CHAT), file="request")
    assert buffer.accept(chat).repeats == 0
    again = buffer.accept(spans_from_json(request(CHAT, CHAT), file="request"))
    assert (again.repeats, again.rejected, buffer.open_spans) == (2, 0, 1)
    changed = spans_from_json(request({**CHAT, "name": "x"}), file="request")
    refused = buffer.accept(changed)
    assert (refused.repeats, refused.rejected, buffer.open_spans) == (0, 1, 1)
    done = buffer.accept(spans_from_json(request(ROOT), file="request"))
    (trial,) = done.trials
    assert trial.model_calls == 1 and not buffer.open


def test_an_open_trace_of_spans_without_an_end_is_still_incomplete() -> None:
    # A root that never came is an incomplete trial at shutdown; a child with no end
    # time has an unknown latency, not 0.
    no_end = {k: v for k, v in CHAT.items() if k != "endTimeUnixNano"}
    no_end["attributes"] = [*no_end["attributes"], *ROOT["attributes"][1:2]]  # its task
    buffer = TraceBuffer()
    buffer.accept(spans_from_json(request(no_end), file="request"))
    (trial,), errors = buffer.drain()
    assert errors == []
    assert (trial.status, trial.error_kind, trial.metadata["incomplete"]) == (
        "error",
        "infra",
        True,
    )
    (call,) = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert call.latency_s is None and trial.latency_s is None


def test_protobuf_requests_answer_repeats_in_protobuf(collector: Collector) -> None:
    def root(name: str) -> PbSpan:
        return PbSpan(
            trace_id=bytes.fromhex(TRACE),
            span_id=bytes.fromhex("00000000000000a1"),
            name=name,
            start_time_unix_nano=1_000_000_000,
            end_time_unix_nano=2_000_000_000,
            attributes=[
                KeyValue(key="agentgauge.task.id", value=AnyValue(string_value="t")),
                KeyValue(key="agentgauge.outcome.success", value=AnyValue(bool_value=True)),
            ],
        )

    body = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[root("r"), root("x")])])]
    ).SerializeToString()
    status, answer = collector.post(body, "application/x-protobuf")
    assert status == 200
    response = ExportTraceServiceResponse.FromString(answer)
    assert response.partial_success.rejected_spans == 1
    assert "the first one received is kept" in response.partial_success.error_message
    assert collector.stop()[0] == 0


def test_broken_framing_and_a_client_hanging_up_log_no_traceback(collector: Collector) -> None:
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(collector.url)
    head = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with socket.create_connection((where.hostname, where.port)) as s:
        s.sendall(head + b"Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.")
    with socket.create_connection((where.hostname, where.port)) as s:  # hangs up mid-body
        s.sendall(head + b"Content-Encoding: gzip\r\nContent-Length: 1000\r\n\r\n\x1f\x8b")
    status, _ = collector.post(_body(request(ROOT)), JSON)  # still serving
    assert status == 200
    code, out, err = collector.stop()
    assert code == 0 and "stored 1 trial" in out
    assert "Traceback" not in err, err
    assert "refused a request (400): Invalid character in chunk size" in err


def test_bad_and_all_zero_ids_are_400s_naming_the_element(collector: Collector) -> None:
    for key, bad in (("traceId", "0x" + TRACE[2:]), ("traceId", "0" * 32), ("spanId", "0" * 16)):
        status, body = collector.post(_body(request({**ROOT, key: bad})), "application/json")
        assert status == 400
        said = json.loads(body)["message"]
        assert f"resourceSpans[0].scopeSpans[0].spans[0].{key}" in said, said
    pb = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                scope_spans=[ScopeSpans(spans=[PbSpan(trace_id=b"\0" * 16, span_id=b"\1" * 8)])]
            )
        ]
    ).SerializeToString()
    status, body = collector.post(pb, "application/x-protobuf")
    assert status == 400
    assert "spans[0].traceId" in status_pb2.Status.FromString(body).message
    code, out, err = collector.stop()
    assert code == 0 and "stored 0 trials" in out, err


@pytest.mark.parametrize("encoding", ["json", "protobuf"])
def test_a_root_with_an_all_zero_parent_ends_its_trace(collector: Collector, encoding: str) -> None:
    # It was never taken for a root: the trace stayed open and was stored at shutdown
    # as an incomplete trial, an infra error, while import otel read it whole.
    root = {**ROOT, "parentSpanId": "0" * 16}
    if encoding == "json":
        status, _ = collector.post(_body(request(root, CHAT)), "application/json")
    else:
        from google.protobuf import json_format

        doc = request(root, CHAT)
        for s in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
            for key in ("traceId", "spanId", "parentSpanId"):
                s[key] = base64.b64encode(bytes.fromhex(s[key])).decode() if s.get(key) else ""
        message = json_format.ParseDict(doc, ExportTraceServiceRequest())
        status, _ = collector.post(message.SerializeToString(), "application/x-protobuf")
    assert status == 200
    code, _, err = collector.stop()
    assert code == 0, err
    assert "incomplete" not in err
    with Store(collector.db, readonly=True) as db:
        (trial,) = db.trials("live")
    assert (trial.task_id, trial.status, trial.model_calls) == ("t", "completed", 1)
