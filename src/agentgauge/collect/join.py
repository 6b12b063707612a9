"""Spans that belong to a trial already recorded: an ``http:`` agent's own spans.

The ``http:`` adapter starts a trace per request and keeps its id on the trial
(`agentgauge.harness.traces`). The agent service's spans continue that trace,
under a parent span (the harness's request) that never reaches the receiver, so
their trace never "ends" the way a trace with its own root does. Before spans go
to the trace buffer, `join_spans` takes out those whose trace id a stored trial
records, turns them into events with the importer's own mapping
(`agentgauge.importers.spans.events_from_trace`) and attaches them to that
trial. Held spans of open traces are looked up again each time (`attach_held`): the
service may flush its spans before it replies, so they arrive before the harness
has written the trial.
"""

from __future__ import annotations

from collections.abc import MutableMapping

from agentgauge.agents.prices import PriceTable
from agentgauge.importers.otlp import Span, span_digest
from agentgauge.importers.spans import TraceOptions, events_from_trace
from agentgauge.store import Store

__all__ = ["attach_held", "join_spans"]


def join_spans(
    store: Store,
    spans: list[Span],
    held: MutableMapping[str, list[Span]],
    options: TraceOptions | None = None,
    prices: PriceTable | None = None,
) -> tuple[list[Span], dict[str, str], list[Span], list[Span]]:
    """``spans`` minus those of traces a stored trial records, which are attached to it
    (with any spans of the same trace in ``held``, taken out of it). Returns the spans
    left for the buffer, the run of the trial each trace joined (one that added spans
    to it), the spans not kept because the trial holds other content under their ids,
    and those it holds already, the same (repeats: nothing added).

    A trial keeps the ids of the spans it was read from (metadata ``trace_spans``), a
    digest of each one's content (``trace_span_digests``, `span_digest`) and the time
    its transcript counts from (``trace_t0_ns``): a span it has already, the same (an
    exporter's retry of a batch the receiver committed, a trace imported and then sent
    live), adds nothing; one with its ids and other content is a conflict, refused as
    it is while the trace is open (the first one received is kept); and the events of
    new spans are timed as the first ones were. A trial stored before digests were
    kept has none to compare: a repeat of its spans is taken as the same. A message
    the transcript holds already, repeated as history in a later model call's input,
    is not added again (`events_from_trace`)."""
    ids = {s.trace_id for s in spans} | set(held)
    found = store.trials_by_trace(ids)
    if not found:
        return spans, {}, [], []
    traces = {trace_id: held.pop(trace_id, []) for trace_id in found}
    rest: list[Span] = []
    for span in spans:
        if span.trace_id in traces:
            traces[span.trace_id].append(span)
        else:
            rest.append(span)
    conflicts: list[Span] = []
    repeats: list[Span] = []
    added: dict[str, str] = {}
    with store.transaction():
        for trace_id, (pk, run) in found.items():
            existing, metadata = store.trial_events(pk)
            have = metadata.get("trace_spans")
            have = list(have) if isinstance(have, list) else []
            digests = metadata.get("trace_span_digests")
            digests = dict(digests) if isinstance(digests, dict) else {}
            seen = set(have)
            fresh: list[Span] = []
            for span in traces[trace_id]:
                if span.span_id in seen:
                    kept = digests.get(span.span_id)
                    if kept is not None and kept != span_digest(span):
                        conflicts.append(span)
                    else:
                        repeats.append(span)
                    continue
                seen.add(span.span_id)
                fresh.append(span)
            if not fresh:
                continue
            added[trace_id] = run
            t0 = metadata.get("trace_t0_ns")
            if not isinstance(t0, int) or isinstance(t0, bool):
                t0 = min(s.start_ns for s in fresh)
            events = events_from_trace(
                fresh, options=options, t0_ns=t0, known=existing, prices=prices
            )
            metadata["trace_spans"] = [*have, *(s.span_id for s in fresh)]
            metadata["trace_span_digests"] = {
                **digests,
                **{s.span_id: span_digest(s) for s in fresh},
            }
            metadata["trace_t0_ns"] = t0
            if events:
                metadata["trace_events"] = int(metadata.get("trace_events", 0)) + len(events)
            store.append_events(pk, events, metadata)
    return rest, added, conflicts, repeats


def attach_held(
    store: Store,
    held: MutableMapping[str, list[Span]],
    options: TraceOptions | None = None,
    prices: PriceTable | None = None,
) -> tuple[dict[str, str], list[Span]]:
    """Attach the held traces whose trial is now stored; the run each joined, and the
    held spans not kept (`join_spans`: their ids hold other content in the trial)."""
    _rest, joined, conflicts, _repeats = join_spans(store, [], held, options, prices)
    return joined, conflicts
