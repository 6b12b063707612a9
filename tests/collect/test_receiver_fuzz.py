"""Hostile request bodies reach the receiver's decoder and trace buffer: every one
ends in a located `InputError` (a 400) or a partial success, never a traceback."""

from __future__ import annotations

import contextlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from agentgauge.collect import TraceBuffer
from agentgauge.errors import InputError
from agentgauge.importers.otlp import spans_from_json, spans_from_protobuf

_KEYS = [
    "agentgauge.task.id",
    "agentgauge.trial",
    "agentgauge.outcome.success",
    "agentgauge.outcome.score",
    "gen_ai.operation.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.input.messages",
    "gen_ai.tool.call.arguments",
    "openinference.span.kind",
    "llm.input_messages.0.message.role",
    "llm.cost.total",
]


def _value(v: object) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=str(v))


_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(["invoke_agent", "chat", "execute_tool", "AGENT", "LLM", "TOOL", "[{", "[]"])
    | st.text(max_size=10)
)


@st.composite
def _requests(draw: st.DrawFn) -> bytes:
    spans = []
    for i in range(draw(st.integers(min_value=0, max_value=4))):
        attrs = draw(st.dictionaries(st.sampled_from(_KEYS), _scalars, max_size=6))
        spans.append(
            Span(
                trace_id=draw(st.sampled_from([b"\x01" * 16, b"\x02" * 16, b"", b"\x03" * 5])),
                span_id=bytes([i + 1]) * 8,
                parent_span_id=draw(st.sampled_from([b"", b"\x01" * 8, b"\x09" * 8, b"\x01"])),
                start_time_unix_nano=draw(st.integers(min_value=0, max_value=2**64 - 1)),
                end_time_unix_nano=draw(st.integers(min_value=0, max_value=2**64 - 1)),
                attributes=[KeyValue(key=k, value=_value(v)) for k, v in attrs.items()],
            )
        )
    req = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])]
    )
    return req.SerializeToString()


def _through(spans: list) -> None:  # type: ignore[type-arg]
    buffer = TraceBuffer()
    accepted = buffer.accept(spans)
    assert accepted.rejected <= len(spans)
    buffer.drain()


@settings(max_examples=200, deadline=None)
@given(body=_requests())
def test_protobuf_requests_never_end_in_a_traceback(body: bytes) -> None:
    with contextlib.suppress(InputError):
        _through(spans_from_protobuf(body, source="request"))


@settings(max_examples=150, deadline=None)
@given(body=st.binary(max_size=300))
def test_random_bytes_never_end_in_a_traceback(body: bytes) -> None:
    with contextlib.suppress(InputError):
        _through(spans_from_protobuf(body, source="request"))


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=15,
)


@settings(max_examples=150, deadline=None)
@given(doc=_json)
def test_json_documents_never_end_in_a_traceback(doc: object) -> None:
    with contextlib.suppress(InputError):
        _through(spans_from_json(json.loads(json.dumps(doc)), file="request"))
