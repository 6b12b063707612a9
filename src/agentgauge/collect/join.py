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
from typing import NamedTuple

from agentgauge.agents.prices import PriceTable
from agentgauge.errors import InputError
from agentgauge.importers.otlp import Span, span_digest
from agentgauge.importers.spans import TraceOptions, events_from_trace
from agentgauge.store import Store

__all__ = ["Joined", "attach_held", "join_spans"]


class Joined(NamedTuple):
    """What `join_spans` did with the spans it was given."""

    rest: list[Span]
    """The spans left for the buffer: their trace is no stored trial's."""
    joined: dict[str, str]
    """The run of the trial each trace joined (one that added spans to it)."""
    conflicts: list[Span]
    """Spans not kept: the trial holds other content under their ids."""
    repeats: list[Span]
    """Spans the trial holds already, the same (nothing added)."""
    refused: list[tuple[list[Span], str]]
    """A trace's new spans that cannot join its trial, and why: a span the importer
    refuses (``gen_ai.usage.input_tokens: -5``), or totals past what a trial holds.
    The trial is left as it was; the other traces join."""


def join_spans(
    store: Store,
    spans: list[Span],
    held: MutableMapping[str, list[Span]],
    options: TraceOptions | None = None,
    prices: PriceTable | None = None,
) -> Joined:
    """``spans`` minus those of traces a stored trial records, which are attached to it
    (with any spans of the same trace in ``held``, taken out of it); `Joined` says
    what became of each.

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
        return Joined(spans, {}, [], [], [])
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
    refused: list[tuple[list[Span], str]] = []
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
            t0 = metadata.get("trace_t0_ns")
            if not isinstance(t0, int) or isinstance(t0, bool):
                t0 = min(s.start_ns for s in fresh)
            metadata["trace_spans"] = [*have, *(s.span_id for s in fresh)]
            metadata["trace_span_digests"] = {
                **digests,
                **{s.span_id: span_digest(s) for s in fresh},
            }
            metadata["trace_t0_ns"] = t0
            try:
                events = events_from_trace(
                    fresh, options=options, t0_ns=t0, known=existing, prices=prices
                )
                if events:
                    metadata["trace_events"] = int(metadata.get("trace_events", 0)) + len(events)
                # Refuses totals past what the trial holds before it writes anything.
                store.append_events(pk, events, metadata)
            except InputError as exc:
                refused.append((fresh, f"trace {trace_id}: not joined to its trial: {exc}"))
                continue
            added[trace_id] = run
    return Joined(rest, added, conflicts, repeats, refused)


def attach_held(
    store: Store,
    held: MutableMapping[str, list[Span]],
    options: TraceOptions | None = None,
    prices: PriceTable | None = None,
) -> Joined:
    """Attach the held traces whose trial is now stored (`join_spans` with no new
    spans)."""
    return join_spans(store, [], held, options, prices)
