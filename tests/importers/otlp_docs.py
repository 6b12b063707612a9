"""Small OTLP JSON documents built by hand, for cases the real fixtures do not hold."""

from __future__ import annotations

from typing import Any

TRACE = "0af7651916cd43dd8448eb211c80319c"


def value(v: Any) -> dict[str, Any]:
    """An OTLP JSON ``AnyValue`` (64-bit ints as strings, as the encoding says)."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def span(
    span_id: str,
    name: str,
    attrs: dict[str, Any],
    *,
    parent: str = "",
    start: int = 1_000_000_000,
    end: int = 2_000_000_000,
    trace: str = TRACE,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
        **extra,
    }


def request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": list(spans)}]}]}


#: A one-call agent trace: its root (task "t", a success) and one chat span under it.
AGENT_ROOT = span(
    "00000000000000a1",
    "invoke_agent bot",
    {
        "gen_ai.operation.name": "invoke_agent",
        "agentgauge.task.id": "t",
        "agentgauge.outcome.success": True,
    },
)
CHAT_CALL = span(
    "00000000000000b1",
    "chat m",
    {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.usage.input_tokens": 5,
        "gen_ai.usage.output_tokens": 2,
    },
    parent="00000000000000a1",
    start=1_100_000_000,
    end=1_400_000_000,
)
