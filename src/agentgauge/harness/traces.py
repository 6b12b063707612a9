"""Joining an ``http:`` agent's own spans to the trial that started them.

The ``http:`` adapter sends each request with a W3C ``traceparent`` naming a
fresh trace, and records that trace id in the trial's metadata (``trace_id``).
A service instrumented with OpenTelemetry continues the trace: the spans of the
tools it really ran carry the same trace id. When those spans reach
``agentgauge collect`` (`agentgauge.collect.join`), they are turned into
transcript events (tool calls and results, model calls) and `attach_traces`
adds them to that trial's transcript in the store, whichever run of the store
the trial belongs to.

Why after the fact, and not by the harness waiting for spans: the receiver and
the run are separate processes that may see a trace in either order (an SDK's
batch exporter sends spans seconds after the reply; a service that flushes before
replying sends them first). The store is the one place both see; so the trial
is written when the reply comes, the spans are added when both are there, and
``agentgauge grade DB:RUN --activate`` re-grades the run with every tool call the
agent made. A trace whose trial is not stored yet is not attached (its id is
missing from the result); the receiver holds its spans and tries again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from agentgauge.schema import Event
from agentgauge.store import Store

__all__ = ["attach_trace", "attach_traces"]


def attach_traces(
    store: Store,
    traces: Mapping[str, Sequence[Event]],
    found: Mapping[str, tuple[int, str]] | None = None,
) -> dict[str, int]:
    """Add each trace's events to the stored trial that records its trace id, in one
    transaction; returns the number of events added per trace id attached. ``found``:
    the trials `Store.trials_by_trace` gave for these (lowercase) ids, when the caller
    has looked them up already.

    Trace ids are 32 hex digits (any case). Idempotent: an event already in the
    trial's transcript (the same spans received twice) is not added again. The
    trial's call counts, tokens and cost follow (`Store.append_events`); its grades
    do not change until it is re-graded (``agentgauge grade``)."""
    wanted = {trace_id.lower(): events for trace_id, events in traces.items()}
    if found is None:
        found = store.trials_by_trace(wanted)
    added: dict[str, int] = {}
    if not found:
        return added
    with store.transaction():
        for trace_id, (pk, _run) in found.items():
            existing, metadata = store.trial_events(pk)
            seen = {e.model_dump_json() for e in existing}
            new: list[Event] = []
            for event in wanted[trace_id]:
                key = event.model_dump_json()
                if key not in seen:
                    seen.add(key)
                    new.append(event)
            if new:
                metadata["trace_events"] = int(metadata.get("trace_events", 0)) + len(new)
                store.append_events(pk, new, metadata)
            added[trace_id] = len(new)
    return added


def attach_trace(store: Store, trace_id: str, events: Sequence[Event]) -> int | None:
    """`attach_traces` for one trace: the number of events added, or ``None`` when no
    stored trial records ``trace_id``."""
    return attach_traces(store, {trace_id: events}).get(trace_id.lower())
