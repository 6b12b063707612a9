"""Joining an ``http:`` agent's own spans to the trial that started them.

The ``http:`` adapter sends each request with a W3C ``traceparent`` naming a
fresh trace, and records that trace id in the trial's metadata (``trace_id``).
A service instrumented with OpenTelemetry continues the trace: the spans of the
tools it really ran carry the same trace id. When those spans reach
``agentgauge collect``, it turns them into transcript events (tool calls and
results, model calls) and hands them to `attach_trace`, which adds them to that
trial's transcript in the store.

Why after the fact, and not by the harness waiting for spans: the receiver and
the run are separate processes that may see a trace in either order (an SDK's
batch exporter sends spans seconds after the reply; a service that flushes before
replying sends them first). The store is the one place both see; so the trial
is written when the reply comes, the spans are added when they come, and
``agentgauge grade DB:RUN --activate`` re-grades the run with every tool call the
agent made. A receiver that gets a trace before its trial is written (`attach_trace`
returns ``None``) keeps it and tries again.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentgauge.schema import Event
from agentgauge.store import Store

__all__ = ["attach_trace"]


def attach_trace(
    store: Store, trace_id: str, events: Sequence[Event], *, run_id: str | None = None
) -> int | None:
    """Add ``events`` (from the spans of trace ``trace_id``) to the trial that sent it.

    Returns the number of events added, or ``None`` when no stored trial (of
    ``run_id``, when given) records that trace id. Idempotent: an event already in
    the trial's transcript (the same spans received twice) is not added again. The
    trial's tool-call and model-call counts follow; its grades do not change until
    it is re-graded (``agentgauge grade``). ``trace_id``: 32 lowercase hex digits.
    """
    trace_id = trace_id.lower()
    found = store.trial_by_trace(trace_id, run_id)
    if found is None:
        return None
    _, pk = found
    with store.transaction():
        existing, metadata = store.trial_events(pk)
        seen = {e.model_dump_json() for e in existing}
        new: list[Event] = []
        for event in events:
            key = event.model_dump_json()
            if key not in seen:
                seen.add(key)
                new.append(event)
        if new:
            metadata["trace_events"] = int(metadata.get("trace_events", 0)) + len(new)
            store.append_events(pk, new, metadata)
    return len(new)
