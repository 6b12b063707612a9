"""A span is identified by (traceId, spanId): one read twice counts once, two different
spans with the same ids are refused; a span with no usable end has an unknown latency."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan
from tests.importers.otlp_docs import AGENT_ROOT as ROOT
from tests.importers.otlp_docs import CHAT_CALL as CHAT
from tests.importers.otlp_docs import TRACE, request

from agentgauge.errors import InputError
from agentgauge.importers import read_import
from agentgauge.importers.otlp import (
    read_otlp_spans,
    spans_from_json,
    spans_from_protobuf,
    unique_spans,
)
from agentgauge.importers.spans import trials_from_spans
from agentgauge.schema import ModelCallEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SUITE = str(FIXTURES / "otel" / "suite.yaml")


def _write(path: Path, *docs: dict) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_a_file_concatenated_twice_makes_the_trials_of_the_file(tmp_path: Path) -> None:
    once = FIXTURES / "otel" / "genai.jsonl"
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(once.read_bytes() * 2)
    want = read_import("otel", once, {"suite": SUITE}).trials
    got = read_import("otel", twice, {"suite": SUITE}).trials
    assert [t.model_dump() for t in got] == [t.model_dump() for t in want]
    spans, repeats = read_otlp_spans(twice)
    assert repeats == len(spans) > 0
    # The run says so, and so does the command.
    assert read_import("otel", twice, {"suite": SUITE}).config["repeated_spans"] == repeats
    assert "repeated_spans" not in read_import("otel", once, {"suite": SUITE}).config


def test_one_span_twice_in_a_request_counts_once(tmp_path: Path) -> None:
    path = _write(tmp_path / "t.jsonl", request(ROOT, CHAT, CHAT))
    (trial,) = read_import("otel", path, {}).trials
    assert (trial.input_tokens, trial.output_tokens, trial.model_calls) == (5, 2, 1)
    assert sum(isinstance(e, ModelCallEvent) for e in trial.events) == 1


def test_a_repeat_with_other_content_is_refused_naming_both(tmp_path: Path) -> None:
    other = {**CHAT, "name": "chat other"}
    path = _write(tmp_path / "t.jsonl", request(ROOT, CHAT), request(other))
    with pytest.raises(InputError) as caught:
        read_import("otel", path, {})
    message = str(caught.value)
    assert message.startswith(f"{path}:2: resourceSpans[0].scopeSpans[0].spans[0]: ")
    assert f"span 00000000000000b1 of trace {TRACE} was read before with other content" in message
    assert f"({path}:1: resourceSpans[0].scopeSpans[0].spans[1])" in message


def test_the_command_exits_2_on_a_conflicting_repeat(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    other = {**CHAT, "attributes": [*CHAT["attributes"]][:-1]}  # one attribute fewer
    path = _write(tmp_path / "t.jsonl", request(ROOT, CHAT, other))
    db = tmp_path / "s.db"
    code, _, err = cli("import", "otel", str(path), "--store", str(db), "--run-id", "r")
    assert code == 2
    assert "spans[2]: span 00000000000000b1" in err and "Traceback" not in err


def _pb_request(*spans: PbSpan) -> bytes:
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])]
    ).SerializeToString()


def _pb_root(**times: int) -> PbSpan:
    return PbSpan(
        trace_id=bytes.fromhex(TRACE),
        span_id=bytes.fromhex("00000000000000a1"),
        name="invoke_agent bot",
        attributes=[
            KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="invoke_agent")),
            KeyValue(key="agentgauge.task.id", value=AnyValue(string_value="t")),
            KeyValue(key="agentgauge.outcome.success", value=AnyValue(bool_value=True)),
        ],
        **times,
    )


def test_the_same_span_from_json_and_protobuf_is_one_span() -> None:
    from_json = spans_from_json(request(ROOT), file="f")
    pb = _pb_root(start_time_unix_nano=1_000_000_000, end_time_unix_nano=2_000_000_000)
    from_pb = spans_from_protobuf(_pb_request(pb), source="request")
    kept, repeats = unique_spans([*from_json, *from_pb])
    assert (len(kept), repeats) == (1, 1)


def test_trials_from_spans_counts_a_span_given_twice_once() -> None:
    spans = spans_from_json(request(ROOT, CHAT), file="f")
    (trial,) = trials_from_spans([*spans, *spans])
    assert (trial.model_calls, trial.input_tokens) == (1, 5)


@pytest.mark.parametrize(
    ("times", "why"),
    [
        ({"endTimeUnixNano": None}, "no end"),
        ({"endTimeUnixNano": "0"}, "end 0 (not set)"),
        ({"endTimeUnixNano": "900000000"}, "end before start"),
        ({"startTimeUnixNano": "0"}, "no start"),
    ],
)
def test_a_span_without_a_usable_end_has_an_unknown_latency(
    tmp_path: Path, times: dict[str, str | None], why: str
) -> None:
    def timed(doc: dict[str, Any]) -> dict[str, Any]:
        out = {**doc, **times}
        return {k: v for k, v in out.items() if v is not None}

    path = _write(tmp_path / "t.jsonl", request(timed(ROOT), timed(CHAT)))
    (trial,) = read_import("otel", path, {}).trials
    assert trial.latency_s is None, why
    (call,) = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert call.latency_s is None, why
    assert (call.input_tokens, trial.input_tokens) == (5, 5)  # the rest is read as before


def test_a_protobuf_span_without_an_end_has_an_unknown_latency() -> None:
    no_end = _pb_root(start_time_unix_nano=1_000_000_000)  # an end of 0 is "not set"
    (trial,) = trials_from_spans(spans_from_protobuf(_pb_request(no_end), source="request"))
    assert trial.latency_s is None
    ended = _pb_root(start_time_unix_nano=1_000_000_000, end_time_unix_nano=1_250_000_000)
    (trial,) = trials_from_spans(spans_from_protobuf(_pb_request(ended), source="request"))
    assert trial.latency_s == 0.25
