"""Spans held per trace until the trace can become a trial.

A trace is complete when its root span (the one with no parent) arrives: SDKs
export a span when it ends, and a root ends after everything under it. Spans
of an unfinished trace wait here, within bounds (traces open at once, spans per
trace), so a client that never ends its traces cannot exhaust memory.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentgauge.agents.prices import PriceTable, default_prices
from agentgauge.errors import InputError
from agentgauge.importers.otlp import Span, same_span
from agentgauge.importers.otlp_logs import LogEvent, attach_log_events
from agentgauge.importers.spans import Outcome, TraceOptions, trial_from_trace
from agentgauge.report.formats import counted
from agentgauge.schema import MAX_TRIAL_INDEX, Task, Trial
from agentgauge.sources import trial_cell_words

__all__ = ["MAX_HELD_BYTES", "Accepted", "TraceBuffer", "conflict_message"]

Cell = tuple[str | None, str | None, str, str]


@dataclass
class Accepted:
    """What one request's spans did."""

    trials: list[Trial] = field(default_factory=list)
    """Trials completed by this request, to be written before it is answered."""
    rejected: int = 0
    """Spans of this request not kept (``partial_success.rejected_spans``)."""
    errors: list[str] = field(default_factory=list)
    """Why, one sentence per cause."""
    repeats: int = 0
    """Spans of this request held already, the same: dropped, not rejected."""


#: The default bound on the bytes held for open traces and their events (`held_bytes`).
MAX_HELD_BYTES = 512 * 1024 * 1024


class _Trace(list[Span]):
    """An open trace's spans, and each by its span id (a repeat is found in one look)."""

    __slots__ = ("bytes", "ids")

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, Span] = {}
        self.bytes = 0
        """What its spans took in the requests they came in (`TraceBuffer.held_bytes`)."""


class TraceBuffer:
    """Open traces, and the trial cells already taken (so a trial is written once)."""

    def __init__(
        self,
        *,
        options: TraceOptions | None = None,
        outcomes: Mapping[str, Outcome] | None = None,
        tasks: Mapping[str, Task] | None = None,
        taken: set[tuple[str, int, str, str | None, str | None]] | None = None,
        max_open_traces: int = 10_000,
        max_spans_per_trace: int = 10_000,
        max_held_events: int = 100_000,
        max_held_bytes: int = MAX_HELD_BYTES,
        settle_s: float = 0.0,
        prices: PriceTable | None = None,
    ) -> None:
        self.options = options or TraceOptions()
        self.prices = prices if prices is not None else default_prices(warm=False)
        """What prices model calls that carry tokens and no cost (genai-prices' snapshot
        is loaded by the first such call)."""
        self.outcomes = outcomes or {}
        self.tasks = tasks or {}
        self.max_open_traces = max_open_traces
        self.max_spans_per_trace = max_spans_per_trace
        self.open: dict[str, list[Span]] = {}
        """Spans of open traces, by trace id (lists this buffer made: `_Trace`)."""
        self.max_held_events = max_held_events
        self.held_events: dict[str, list[LogEvent]] = {}
        """Events sent as log records, by trace, until the trace's trial is built."""
        self._held = 0  # events in held_events: counted, not summed per request
        self.max_held_bytes = max_held_bytes
        """Bytes of spans and events held (as they came in their requests) past which
        a request that would hold more is refused for now (`has_room`)."""
        self._event_bytes: dict[str, int] = {}  # by trace, as held_events
        self._event_bytes_total = 0
        self.settle_s = settle_s
        """Seconds a trace whose root has come waits before its trial is built, for
        its spans and event records still on the way (`due`); 0: built at once."""
        self.ended: dict[str, float] = {}
        """Traces whose root has come, waiting, with the time (`time.monotonic`) due."""
        self.spans_dropped = 0
        """Spans held (accepted in an earlier answer) that became no trial: their
        trace was refused when its trial was built (`_build`, `drain`)."""
        self.events_dropped = 0
        """Event records held (accepted) that went to no trial (`drain`, `_trial`)."""
        self._events_of: dict[str, int] = {}
        """Held event records that went into a built trial not yet written, by trace:
        dropped with it if the store refuses it (`stored`)."""
        self._taken: set[tuple[Cell, int]] = set()
        self._next: dict[Cell, int] = {}
        self._chosen: set[str] = set()
        """Traces whose trial this buffer numbered (they named no index) and that are
        not yet stored: on a clash with another session's trial, `renumber` may give
        them the next free index, which a trace that named its own may not take."""
        for task, index, variant, agent, model in taken or ():
            self._take((agent, model, variant, task), index)

    @property
    def open_spans(self) -> int:
        return sum(len(spans) for spans in self.open.values())

    @property
    def held_bytes(self) -> int:
        """Bytes the held spans and events took in the requests they came in: what
        they hold in memory, roughly (decoded, they take about as much again)."""
        spans = sum(t.bytes for t in self.open.values() if isinstance(t, _Trace))
        return spans + self._event_bytes_total

    def has_room(self, incoming: int) -> bool:
        """Whether ``incoming`` more bytes may be held: within `max_held_bytes`, or
        nothing is held (so that a request larger than the bound is not refused
        forever)."""
        if incoming <= 0:
            return True
        held = self.held_bytes
        return held == 0 or held + incoming <= self.max_held_bytes

    def accept(self, spans: list[Span], span_bytes: int = 0) -> Accepted:
        """Hold ``spans``; build the trial of every trace whose root is among them.
        ``span_bytes``: what each took in its request (`held_bytes`)."""
        out = Accepted()
        ended: dict[str, None] = {}  # trace ids in order, once each
        conflicts: list[Span] = []
        for span in spans:
            trace = self.open.get(span.trace_id)
            if trace is None:
                if len(self.open) >= self.max_open_traces:
                    out.rejected += 1
                    _once(out.errors, f"more than {self.max_open_traces} traces open at once")
                    continue
                trace = self.open[span.trace_id] = _Trace()
            ids = trace.ids if isinstance(trace, _Trace) else None
            first = ids.get(span.span_id) if ids is not None else None
            if first is not None:
                if same_span(first, span):
                    out.repeats += 1
                else:
                    out.rejected += 1
                    conflicts.append(span)
                continue
            if len(trace) >= self.max_spans_per_trace:
                out.rejected += 1
                _once(
                    out.errors, f"trace {span.trace_id} has over {self.max_spans_per_trace} spans"
                )
                continue
            trace.append(span)
            if ids is not None:
                ids[span.span_id] = span
            if isinstance(trace, _Trace):
                trace.bytes += span_bytes
            if span.parent_id is None:
                ended[span.trace_id] = None
        if conflicts:
            out.errors.append(conflict_message(conflicts))
        if self.settle_s > 0:
            due = time.monotonic() + self.settle_s
            for trace_id in ended:
                self.ended.setdefault(trace_id, due)
            return out
        self._build(ended, spans, out)
        return out

    def due(self, now: float | None = None) -> Accepted:
        """The trials of the traces whose wait is over (all of them with ``now`` of
        infinity): what `accept` builds at once when there is no wait."""
        now = time.monotonic() if now is None else now
        ready = {t: None for t, at in self.ended.items() if at <= now}
        for trace_id in ready:
            del self.ended[trace_id]
        out = Accepted()
        self._build(ready, [], out)
        return out

    def _build(self, ended: dict[str, None], spans: list[Span], out: Accepted) -> None:
        """The trials of ``ended`` traces into ``out``; ``spans``: the request's, so a
        rejected trace's count says how many of them were dropped."""
        for trace_id in ended:
            trace = self.open.pop(trace_id, [])
            if not trace:  # joined a stored trial while it waited (`attach_held`)
                continue
            try:
                out.trials.append(self._trial(trace, incomplete=False))
            except InputError as exc:
                in_request = sum(1 for s in spans if s.trace_id == trace_id)
                out.rejected += in_request
                earlier = len(trace) - in_request
                self.spans_dropped += earlier
                more = f" ({earlier} earlier spans of it dropped too)" if earlier > 0 else ""
                out.errors.append(f"{_of_trace(trace_id, exc, trace)}{more}")

    def hold_events(self, events: list[LogEvent], event_bytes: int = 0) -> tuple[int, list[str]]:
        """Hold ``events`` until their trace's trial is built (they may come before its
        spans: the SDK exports logs and spans apart). Returns how many were not held,
        over the bound, and why. ``event_bytes``: what each took in its request."""
        room = max(self.max_held_events - self._held, 0)
        for event in events[:room]:
            self.held_events.setdefault(event.trace_id, []).append(event)
            self._event_bytes[event.trace_id] = (
                self._event_bytes.get(event.trace_id, 0) + event_bytes
            )
            self._event_bytes_total += event_bytes
        self._held += min(len(events), room)
        over = len(events) - min(len(events), room)
        return over, [f"more than {self.max_held_events} event records held"] if over else []

    def take_events(self, trace_id: str) -> list[LogEvent]:
        """The held events of ``trace_id``, no longer held (its spans joined a trial
        stored already, which they go to instead)."""
        events = self.held_events.pop(trace_id, [])
        self._held -= len(events)
        self._event_bytes_total -= self._event_bytes.pop(trace_id, 0)
        return events

    def drain(self) -> tuple[list[Trial], list[str]]:
        """Trials of every open trace, marked incomplete (at shutdown), and the
        reasons for those that could not become one."""
        settled = self.due(float("inf"))  # traces whose root came: complete trials
        trials, errors = settled.trials, settled.errors
        for trace_id, trace in list(self.open.items()):
            del self.open[trace_id]
            try:
                trials.append(self._trial(trace, incomplete=True))
            except InputError as exc:
                self.spans_dropped += len(trace)
                errors.append(
                    f"{_of_trace(trace_id, exc, trace)} ({counted(len(trace), 'span')} not stored)"
                )
        orphans = self._held
        if orphans:
            self.events_dropped += orphans
            errors.append(
                f"{counted(orphans, 'event record')} of {counted(len(self.held_events), 'trace')} "
                f"whose spans never came {'was' if orphans == 1 else 'were'} not stored"
            )
            self.held_events.clear()
            self._held = 0
            self._event_bytes.clear()
            self._event_bytes_total = 0
        return trials, errors

    def _trial(self, trace: list[Span], *, incomplete: bool) -> Trial:
        held = self.take_events(trace[0].trace_id)
        if held:
            attach_log_events(trace, held)
        try:
            trial = self._numbered(trace, incomplete=incomplete)
        except InputError:
            self.events_dropped += len(held)  # they went with the trace
            raise
        if held:
            self._events_of[trace[0].trace_id] = len(held)
        return trial

    def _numbered(self, trace: list[Span], *, incomplete: bool) -> Trial:
        """The trace's trial, with its index: its own, or the next of its cell."""
        trial = trial_from_trace(
            trace,
            options=self.options,
            outcome=self.outcomes.get(trace[0].trace_id),
            tasks=self.tasks,
            incomplete=incomplete,
            prices=self.prices,
        )
        cell: Cell = (trial.agent, trial.model, trial.variant, trial.task_id)
        if trial.trial is None:
            trial.trial = self._next.get(cell, 0)
            if trial.trial > MAX_TRIAL_INDEX:  # one stored before has the largest index
                raise InputError(
                    f"no trial index is left for task {trial.task_id!r} "
                    f"({trial_cell_words(trial.agent, trial.model)}): a trial of it in this "
                    "run has the largest, "
                    f"{MAX_TRIAL_INDEX}",
                    file=f"trace {trial.metadata.get('trace_id')}",
                    field=self.options.trial_attr,
                )
            self._chosen.add(trace[0].trace_id)
        elif (cell, trial.trial) in self._taken:
            raise InputError(
                f"trial {trial.trial} of task {trial.task_id!r} "
                f"({trial_cell_words(trial.agent, trial.model)}) is already stored in this run",
                file=f"trace {trial.metadata.get('trace_id')}",
                field=self.options.trial_attr,
            )
        self._take(cell, trial.trial)
        return trial

    def renumber(self, trial: Trial, free: int) -> bool:
        """Give ``trial``, whose index this buffer chose and another session has
        stored since (another ``collect`` on the run), the next index free both here
        and in the store (``free``: the store's next, `Store.next_trial_index`).
        False, leaving it as it is, for a trial that named its own index (the clash
        is its client's) or when no index is left."""
        if trial.metadata.get("trace_id") not in self._chosen:
            return False
        cell: Cell = (trial.agent, trial.model, trial.variant, trial.task_id)
        index = max(self._next.get(cell, 0), free)
        if index > MAX_TRIAL_INDEX:
            return False
        trial.trial = index
        self._take(cell, index)
        return True

    def stored(self, trials: list[Trial], refused: Sequence[Trial] = ()) -> None:
        """``trials`` are written, but ``refused`` (failed for good): their numbers are
        settled, and the event records held for a refused one were not stored."""
        for trial in trials:
            self._chosen.discard(str(trial.metadata.get("trace_id")))
        for trial in refused:
            self.events_dropped += self._events_of.get(str(trial.metadata.get("trace_id")), 0)
        for trial in trials:
            self._events_of.pop(str(trial.metadata.get("trace_id")), None)

    def _take(self, cell: Cell, index: int) -> None:
        self._taken.add((cell, index))
        self._next[cell] = max(self._next.get(cell, 0), index + 1)


def conflict_message(spans: list[Span]) -> str:
    """Why ``spans``, each with the ids of a span received before and other content,
    were not kept (``partial_success.error_message``)."""
    first = spans[0]
    which = (
        f"span {first.span_id} of trace {first.trace_id}"
        if len(spans) == 1
        else f"{len(spans)} spans (the first: span {first.span_id} of trace {first.trace_id})"
    )
    return (
        f"{which}: the traceId and spanId of a span received before, with other content; "
        "the first one received is kept"
    )


def _once(errors: list[str], message: str) -> None:
    if message not in errors:
        errors.append(message)


def _of_trace(trace_id: str, exc: InputError, trace: Sequence[Span]) -> str:
    """Why a trace became no trial, naming the trace: a span's place in the request
    that brought it (``request: resourceSpans[0]...``) means nothing once answered,
    and its trace id is what the agent's own logs and backend show."""
    text = str(exc)
    if f"trace {trace_id} names no task" in exc.reason:
        # Most often an `http:` agent's service's: naming a task on its spans would make
        # them a second trial, where they were meant to join the http: one.
        if any(span.parent_id is None for span in trace):
            text += (  # its own root: the service began a trace of its own
                "; if these are the spans of an http: agent's service, continue the trace "
                "the request's traceparent header names (opentelemetry.propagate.extract) "
                'and they join its trial (docs/running-agents.md, "The agent\'s own spans")'
            )
        else:
            text += (  # no root here: it continues a trace begun elsewhere
                "; its spans continue a trace begun elsewhere (its root span is not among "
                "them): if it is an http: agent's trial, no run of this store holds that "
                "trial: run the agent with the --store that collect writes to"
            )
    return text if trace_id in text else f"trace {trace_id}: {text}"
