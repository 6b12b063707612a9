"""An OTLP/HTTP trace receiver on 127.0.0.1 that writes each trace as a trial.

It speaks OTLP/HTTP as the OpenTelemetry protocol specification says
(opentelemetry-proto ``docs/specification.md``, "OTLP/HTTP"): ``POST /v1/traces``
with a protobuf (``application/x-protobuf``) or JSON (``application/json``)
``ExportTraceServiceRequest``, optionally gzip- (or deflate-) compressed, which the
receiver inflates itself (`inflate`) (and ``POST /v1/logs``
with an ``ExportLogsServiceRequest``, whose GenAI event records join their traces:
`Receiver._logs_reply`); the answer is encoded
like the request. A request that cannot be decoded gets 400 with a
``google.rpc.Status`` body naming the element; one in another media type or
content coding 415 (RFC 9110, 15.5.16); a body over the limit 413. A decoded
request gets 200 with an ``ExportTraceServiceResponse`` whose ``partial_success``
counts the spans not kept and says why (too many open traces, a trace that
names no task, a span with the ids of one received before and other content; one
received again the same is kept once). A request that would hold more than
``max_held_bytes`` of open traces' spans and events in memory is answered 503 with
``Retry-After`` (OTLP/HTTP's throttling): nothing of it kept, the exporter sends it
again later, when traces under way may have ended.

The guarantee: a request is answered only once every trial it completed is
committed to the store, so a 200 means each accepted span is either in a stored
trial or held for its still-open trace. Open traces are written as incomplete
trials when the receiver stops on SIGINT or SIGTERM, first thing, before it waits
(at most `SHUTDOWN_WAIT_S`, twice: for requests to finish, then for them to be
cut off) for requests still under way, which a client that stalls mid-body would
otherwise hold for aiohttp's default minute: those are answered 503, or not at
all, so their spans were never accepted, and the client sends them again. A
second Ctrl-C while the open traces are written does not stop the writing; after
it, it ends the wait. A crash (SIGKILL, power loss) loses the spans of traces still
open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import zlib
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError, HttpProcessingError
from aiohttp.web_protocol import RequestPayloadError
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from agentgauge.agents.prices import PriceTable
from agentgauge.collect.buffer import MAX_HELD_BYTES, TraceBuffer, conflict_message
from agentgauge.collect.join import attach_held, join_spans
from agentgauge.errors import InputError
from agentgauge.importers.otlp import Span, sort_repeats, spans_from_json, spans_from_protobuf
from agentgauge.importers.otlp_logs import (
    LogEvent,
    log_events_from_json,
    log_events_from_protobuf,
)
from agentgauge.importers.spans import Outcome, TraceOptions, evaluation_grade
from agentgauge.otel_record import EVALUATION_EVENT
from agentgauge.report.formats import counted
from agentgauge.schema import Grade, Task, Trial
from agentgauge.store import Store
from agentgauge.store.writer import TrialWriter

__all__ = ["MAX_BODY_BYTES", "SHUTDOWN_WAIT_S", "Receiver", "collect"]

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
TRACES_PATH = "/v1/traces"
LOGS_PATH = "/v1/logs"
#: Seconds between looks for the trials of held ``http:`` agent traces.
JOIN_EVERY_S = 1.0
#: Largest request body, compressed or not (the SDK exporters send batches of 512 spans).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Content codings a body may come in (OTLP/HTTP asks for gzip; deflate is read too).
CODINGS = ("identity", "gzip", "deflate")
_ALIASES = {"x-gzip": "gzip"}
#: Compressed bodies larger than this are inflated in a thread, off the event loop.
INFLATE_IN_THREAD_BYTES = 1024 * 1024
#: Seconds a stopping receiver waits for requests under way to finish, and then again
#: for those it cut off to end (aiohttp's default is a minute).
SHUTDOWN_WAIT_S = 1.0
#: Seconds an exporter is asked to wait (Retry-After) when the held bytes are at their
#: bound: about the time for a trace under way to end.
THROTTLE_RETRY_S = 5
#: Where `TrialWriter`'s error says that it stopped writing: the receiver does not.
_STOPPED_MARK = "; writing stopped there"


_T = TypeVar("_T")


@dataclass
class _Reply:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] | None = None


class Receiver:
    """The receiver's state: the store's writer and the open traces.

    ``log`` receives one line per problem a client should hear about (a rejected
    trace), since an exporter rarely shows ``partial_success`` to anyone."""

    def __init__(
        self,
        writer: TrialWriter,
        buffer: TraceBuffer,
        *,
        log: Callable[[str], None] | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        store: Store | None = None,
    ) -> None:
        self.writer = writer
        self.buffer = buffer
        self.store = store
        """Where ``http:`` trials are looked up by trace id (`agentgauge.collect.join`)."""
        self.traces_joined: dict[str, str] = {}
        """Traces whose spans were added to a trial already stored, with the trial's
        run: an ``http:`` agent's, or late spans of a trace stored before they came."""
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.max_body_bytes = max_body_bytes
        self.spans_accepted = 0
        """Spans answered as accepted (joined to a stored trial, or held)."""
        self._spans_dropped = 0  # of those, held ones that were not stored after all
        self.spans_repeated = 0
        """Spans received again, the same as one received before: kept once."""
        self.events_accepted = 0
        self.trials_written = 0
        self._deferred: list[Trial] = []  # built, waiting for a store another holds
        self._busy_said = False  # the store's being busy is said once per spell
        self.in_flight = 0
        """Requests being handled (a stalled client's among them)."""
        self.cut_off = 0
        """Requests the server cancelled unanswered as it stopped."""
        self.closed = False
        """Set once the open traces are written at shutdown: nothing is accepted after."""
        self._lock = asyncio.Lock()
        self._refusing = False  # said once per spell of 503s over the held bytes

    def app(self) -> web.Application:
        """The application; serve it with ``auto_decompress=False`` (as `collect` does):
        the receiver inflates bodies itself (`_body`)."""
        app = web.Application(client_max_size=self.max_body_bytes)
        app.router.add_post(TRACES_PATH, self.handle)
        app.router.add_post(LOGS_PATH, self.handle_logs)
        app.router.add_route("*", "/{path:.*}", self.handle_other)
        return app

    async def handle_other(self, request: web.Request) -> web.StreamResponse:
        """Any other path or method: 404 or 405, said on stderr too (the exporter's
        complaint goes to the agent's terminal, not to the one watching `collect`).
        The likeliest cause: a traces endpoint given without ``/v1/traces``, which
        ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is used as, while
        ``OTEL_EXPORTER_OTLP_ENDPOINT`` gets the path added."""
        media = request.content_type if request.content_type in (PROTOBUF, JSON) else JSON
        what = f"{request.method} {_printable(request.path)}"
        if request.path in (TRACES_PATH, LOGS_PATH):
            reply = self._refused(405, media, f"{what}: send spans and logs with POST")
            reply.headers = {"Allow": "POST"}
            return _response(reply)
        return _response(
            self._refused(
                404,
                media,
                f"{what}: no such path; this receiver takes POST {TRACES_PATH} and POST "
                f"{LOGS_PATH} (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as given, so end "
                f"it with {TRACES_PATH}; OTEL_EXPORTER_OTLP_ENDPOINT takes the base URL)",
            )
        )

    def _refused(self, http: int, media: str, message: str) -> _Reply:
        """The answer refusing a request, said on stderr too."""
        self.log(f"agentgauge collect: refused a request ({http}): {message}")
        return _status(http, media, message)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        return await self._counted(self._reply(request))

    async def handle_logs(self, request: web.Request) -> web.StreamResponse:
        return await self._counted(self._logs_reply(request))

    async def _counted(self, reply: Awaitable[_Reply]) -> web.StreamResponse:
        """``reply``'s response, with the request counted while under way, and as cut
        off if the stopping server cancels it unanswered."""
        self.in_flight += 1
        try:
            return _response(await reply)
        except asyncio.CancelledError:
            self.cut_off += 1
            raise
        finally:
            self.in_flight -= 1

    @property
    def spans_stored(self) -> int:
        """Spans accepted and in a stored trial, or held for an open trace: those
        accepted but those dropped since (`spans_dropped`)."""
        return self.spans_accepted - self.spans_dropped

    @property
    def spans_dropped(self) -> int:
        """Spans answered as accepted while their trace was open that were not stored
        after all: the trace became no trial (it names no task), its trial could not
        be written, or the stored trial it joined refused them. Each is said on stderr."""
        return self._spans_dropped + self.buffer.spans_dropped

    @property
    def events_stored(self) -> int:
        """Event records accepted, but those held that went to no trial."""
        return self.events_accepted - self.buffer.events_dropped

    def _log_held_conflicts(self, spans: list[Span]) -> None:
        """Held spans (answered 200 while their trace was open) that the trial they join
        holds with other content: the stored ones are kept, and the user hears it."""
        if spans:
            self._spans_dropped += len(spans)
            self.log(f"agentgauge collect: not kept: {conflict_message(spans)}")

    def _stopping(self, media: str) -> _Reply:
        """The answer to a request that comes after the open traces were written: 503,
        which OTLP/HTTP exporters retry, rather than spans accepted and never stored."""
        reply = _status(503, media, "agentgauge collect is stopping: nothing was stored")
        reply.headers = {"Retry-After": "1"}
        return reply

    def _throttled(self, media: str, what: str) -> _Reply:
        """The answer to a request that would hold more than the receiver holds at
        most (``--max-held-mib``): 503 with Retry-After, which OTLP/HTTP exporters
        retry after that wait (the protocol's throttling), by which time traces may
        have ended and their trials been written. Nothing of it was kept."""
        limit = self.buffer.max_held_bytes
        held = self.buffer.held_bytes
        message = (
            f"agentgauge collect holds {held} bytes of open traces (at most {limit}, "
            f"--max-held-mib): {what} not accepted now; send them again later"
        )
        if not self._refusing:
            self.log(f"agentgauge collect: refusing requests for now (503): {message}")
        self._refusing = True
        reply = _status(503, media, message)
        reply.headers = {"Retry-After": str(THROTTLE_RETRY_S)}
        return reply

    async def _decoded(
        self,
        request: web.Request,
        from_protobuf: Callable[..., _T],
        from_json: Callable[..., _T],
    ) -> tuple[str, _T, int] | _Reply:
        """The request's media type, its body read by the decoder of that type
        (``from_protobuf(body, source=...)`` or ``from_json(doc, file=...)``) and the
        body's size (inflated), or the answer refusing it (400 says why, and so does
        stderr)."""
        got = await self._body(request)
        if isinstance(got, _Reply):
            return got
        media, body = got
        try:
            if media == PROTOBUF:
                return media, from_protobuf(body, source="request"), len(body)
            try:
                doc = orjson.loads(body)
            except orjson.JSONDecodeError as exc:
                try:
                    body.decode("utf-8")
                except UnicodeDecodeError as bad:
                    # orjson calls any such byte a surrogate, which it rarely is.
                    raise InputError(
                        f"the body is not UTF-8 text: byte {bad.start} "
                        f"(0x{body[bad.start]:02x}) is not valid UTF-8 (OTLP/JSON is UTF-8)",
                        file="request",
                    ) from None
                raise InputError(f"invalid JSON: {exc}", file="request") from None
            return media, from_json(doc, file="request"), len(body)
        except InputError as exc:
            return self._refused(400, media, exc.message)

    async def _body(self, request: web.Request) -> tuple[str, bytes] | _Reply:
        """The request's media type and (inflated) body, or the answer refusing it.

        The server does not inflate bodies itself (``auto_decompress=False``, `collect`):
        a content coding it cannot decode is a 415 here, and a corrupt body a 400 that
        says so, instead of aiohttp's own answers and tracebacks."""
        media = request.content_type
        if media not in (PROTOBUF, JSON):
            return self._refused(
                415, JSON, f"unsupported Content-Type {media!r}; send {PROTOBUF} or {JSON}"
            )
        header = request.headers.get("Content-Encoding", "")
        parts = (part.strip().lower() for part in header.split(","))
        # x-gzip is gzip (RFC 9110, 8.4.1.3); identity is no coding at all.
        codings = [_ALIASES.get(c, c) for c in parts if c and c != "identity"]
        coding = codings[0] if codings else "identity"
        if len(codings) > 1 or coding not in CODINGS:
            refused = self._refused(
                415,
                media,
                f"unsupported Content-Encoding {header.strip()!r}; send gzip, deflate or none",
            )
            refused.headers = {"Accept-Encoding": "gzip, deflate"}  # RFC 9110, 15.5.16
            return refused
        try:
            raw = await request.read()  # at most client_max_size bytes as sent
        except web.HTTPRequestEntityTooLarge:
            return self._refused(413, media, f"request body over {self.max_body_bytes} bytes")
        except (RequestPayloadError, ContentEncodingError, ConnectionError) as exc:
            # The body ended early (the client went away) or its framing is broken.
            return self._refused(400, media, f"the request body could not be read: {_reason(exc)}")
        if coding == "identity":
            return media, raw
        try:
            # Inflated with a bound, so a small bomb is stopped at the limit, not in
            # memory; off the event loop when large, so other requests are not held up.
            if len(raw) > INFLATE_IN_THREAD_BYTES:
                body = await asyncio.to_thread(inflate, raw, coding, self.max_body_bytes)
            else:
                body = inflate(raw, coding, self.max_body_bytes)
        except InputError as exc:
            return self._refused(400, media, exc.message)
        if body is None:
            return self._refused(
                413, media, f"request body over {self.max_body_bytes} bytes once inflated"
            )
        return media, body

    async def _reply(self, request: web.Request) -> _Reply:
        got = await self._decoded(request, spans_from_protobuf, spans_from_json)
        if isinstance(got, _Reply):
            return got
        media, spans, size = got
        # What each span took of the request: what holding it costs (`_throttled`).
        span_bytes = size // max(len(spans), 1)
        # One request at a time through the buffer and the writer: the trials of a
        # request are committed before it is answered, in arrival order.
        received = len(spans)
        # A span is identified by its ids: sent twice in one request it counts once
        # (the buffer does the same across requests for open traces; the events of a
        # stored trial are added once, `attach_traces`).
        found = sort_repeats(spans)
        spans = found.kept
        conflicting = [repeat for _, repeat in found.conflicting]
        stored_repeats = join_refused = 0
        join_errors: list[str] = []
        async with self._lock:
            if self.closed:
                return self._stopping(media)
            if self.store is not None:
                request_spans = {id(s) for s in spans}
                done = join_spans(
                    self.store, spans, self.buffer.open, self.buffer.options, self.buffer.prices
                )
                spans = done.rest
                self.traces_joined.update(done.joined)
                self._grade_held(done.joined)
                # Spans of this request the trial holds already: a retry, nothing new.
                stored_repeats = sum(1 for s in done.repeats if id(s) in request_spans)
                # Spans of this request that a stored trial holds with other content;
                # a held span (answered before) that does is logged, not counted here.
                conflicting += [s for s in done.conflicts if id(s) in request_spans]
                self._log_held_conflicts([s for s in done.conflicts if id(s) not in request_spans])
                for lost, why in done.refused:
                    in_request = sum(1 for s in lost if id(s) in request_spans)
                    if in_request:
                        join_refused += in_request
                        join_errors.append(why)
                    if in_request < len(lost):
                        self._spans_dropped += len(lost) - in_request
                        self.log(f"agentgauge collect: not kept: {why}")
            ends = (
                set()
                if self.buffer.settle_s > 0
                else {s.trace_id for s in spans if s.parent_id is None}
            )
            held = sum(1 for s in spans if s.trace_id not in ends)
            if not self.buffer.has_room(held * span_bytes):
                return self._throttled(media, f"{counted(held, 'span')} of open traces")
            accepted = self.buffer.accept(spans, span_bytes)
            self._refusing = self._refusing and not held
            failed = await self._write(accepted.trials)
        for trial, why in failed:
            trace_id = trial.metadata.get("trace_id")
            in_request = sum(1 for s in spans if s.trace_id == trace_id)
            accepted.rejected += in_request
            earlier = _span_count(trial) - in_request
            self._spans_dropped += max(earlier, 0)
            more = f" ({earlier} earlier spans of it dropped too)" if earlier > 0 else ""
            accepted.errors.append(f"{why}{more}")
        rejected = accepted.rejected + len(conflicting) + join_refused
        errors = [*join_errors, *accepted.errors]
        if conflicting:
            errors = [conflict_message(conflicting), *errors]
        repeated = found.identical + accepted.repeats + stored_repeats
        self.spans_accepted += received - rejected - repeated  # joined spans too
        self.spans_repeated += repeated
        for error in errors:
            self.log(f"agentgauge collect: rejected: {error}")
        response = ExportTraceServiceResponse()
        if rejected:
            response.partial_success.rejected_spans = rejected
            response.partial_success.error_message = "; ".join(errors)
        return _encoded(200, media, response)

    async def _logs_reply(self, request: web.Request) -> _Reply:
        """Event records (GenAI events sent through the Logs API) join their traces:
        held until the trace's trial is built, or, for a trace already stored, an
        evaluation becomes a grade of its trial (`_grade_stored`). Other records are
        not kept, and the response says so."""
        got = await self._decoded(request, log_events_from_protobuf, log_events_from_json)
        if isinstance(got, _Reply):
            return got
        media, found, size = got
        event_bytes = size // max(len(found.events) + found.not_events, 1)
        rejected, errors = found.not_events, []
        if found.not_events:
            one = found.not_events == 1
            errors.append(
                f"{counted(found.not_events, 'record')} "
                + ("is no span's event" if one else "are no span's events")
                + " (no event name or trace id)"
            )
        async with self._lock:
            if self.closed:
                return self._stopping(media)
            ids = {e.trace_id for e in found.events if e.trace_id not in self.buffer.open}
            stored = self.store.trials_by_trace(ids) if self.store is not None and ids else {}
            early = [e for e in found.events if e.trace_id not in stored]
            late = [e for e in found.events if e.trace_id in stored]
            if not self.buffer.has_room(len(early) * event_bytes):
                return self._throttled(
                    media, f"{counted(len(early), 'event record')} of open traces"
                )
            over, why = self.buffer.hold_events(early, event_bytes)
            self._refusing = self._refusing and not early
            rejected += over
            errors += why
            if late:
                not_kept, why = self._grade_stored(late, stored)
                rejected += not_kept
                errors += why
        self.events_accepted += len(found.events) + found.not_events - rejected
        for error in errors:
            self.log(f"agentgauge collect: log records not kept: {error}")
        response = ExportLogsServiceResponse()
        if rejected:
            response.partial_success.rejected_log_records = rejected
            response.partial_success.error_message = "; ".join(errors)
        return _encoded(200, media, response)

    def _grade_held(self, trace_ids: Iterable[str]) -> None:
        """The held events of those of ``trace_ids`` whose trial is stored go to it, as
        those that come after it do (`_grade_stored`): its spans joined it (an ``http:``
        agent's trace), and the events are no longer waiting for them."""
        ids = {t for t in trace_ids if t in self.buffer.held_events}
        if self.store is None or not ids:
            return
        stored = self.store.trials_by_trace(ids)
        events = [e for trace_id in stored for e in self.buffer.take_events(trace_id)]
        if events:
            not_kept, errors = self._grade_stored(events, stored)
            self.events_accepted -= not_kept
            for error in errors:
                self.log(f"agentgauge collect: log records not kept: {error}")

    def _grade_stored(
        self, events: list[LogEvent], stored: Mapping[str, tuple[int, str]]
    ) -> tuple[int, list[str]]:
        """Evaluations of traces already stored, as grades of their trials (the
        recorded grade version; a grader the trial already has is not replaced). Other
        events of a stored trace are not kept. Returns how many were not, and why."""
        assert self.store is not None
        grades: dict[int, list[Grade]] = {}
        refused: list[str] = []
        not_kept = 0
        for item in events:
            pk, _run = stored[item.trace_id]
            if item.event.name != EVALUATION_EVENT:
                not_kept += 1
                continue
            try:
                grade = evaluation_grade(
                    item.event.attributes,
                    span_name=f"span {item.span_id}" if item.span_id else "the trace",
                    where=f"request: trace {item.trace_id}",
                )
            except InputError as exc:
                not_kept += 1
                refused.append(str(exc))
                continue
            grades.setdefault(pk, []).append(grade)
        taken = 0
        with self.store.transaction():
            for pk, new in grades.items():
                have = self.store.grader_names(pk, version=1)
                fresh = []
                for g in new:  # the first verdict of each grader, here as in the store
                    if g.grader not in have:
                        have.add(g.grader)
                        fresh.append(g)
                taken += len(new) - len(fresh)
                if fresh:
                    self.store.add_grades(pk, 1, fresh)
        errors = refused
        if not_kept - len(refused):
            errors.append(
                f"{counted(not_kept - len(refused), 'event')} of traces stored already (their "
                f"root span ended first) {'is' if not_kept - len(refused) == 1 else 'are'} not "
                "added: only evaluations join a stored trial; send the "
                "logs before the spans end, or import both files (import otel --logs)"
            )
        if taken:
            errors.append(f"{taken} evaluations name a grader their trial has already")
        return not_kept + taken, errors

    async def _write(self, trials: list[Trial], *, defer: bool = True) -> list[tuple[Trial, str]]:
        """Write ``trials``, all committed when this returns, but those the store
        refused: each with why. A trial that fails does not stop the others (the
        writer, which writes nothing more after an error, is replaced): each trace is
        its own client's, and the next one's spans are as good as before.

        A store another connection holds locked past SQLite's busy wait (another
        command writing it) refuses nothing for good: with ``defer``, the trial at
        the lock and those after it are kept in memory, as an open trace's spans are,
        and `sweep` tries them again every second."""
        failed: list[tuple[Trial, str]] = []
        deferred: list[Trial] = []
        deferred_why = ""
        rest = trials
        while rest:
            before = self.writer.committed
            try:
                for trial in rest:
                    await self.writer.submit(trial)
                await self.writer.flush()
            except Exception as exc:  # any error of the store: said for its trace
                # Trials are committed in order: those before the one at fault are in.
                done = self.writer.committed - before
                if done >= len(rest):  # not any one trial's (all of them are in)
                    self.log(f"agentgauge collect: {exc}")
                    self.writer = self.writer.fresh()
                    break
                trial = rest[done]
                old, self.writer = self.writer, self.writer.fresh()
                with contextlib.suppress(Exception):
                    await old.close()  # lets its thread go; raises the error said below
                if self._renumbered(trial, exc):
                    rest = rest[done:]  # again, under the index now free
                    continue
                busy = _busy(exc)
                if defer and busy:
                    deferred, deferred_why = rest[done:], busy
                    break
                reason = str(exc).split(_STOPPED_MARK)[0]
                failed.append(
                    (trial, f"trace {trial.metadata.get('trace_id')}: not stored: {reason}")
                )
                rest = rest[done + 1 :]
            else:
                break
        if deferred:
            if not self._busy_said:
                self._busy_said = True
                self.log(
                    f"agentgauge collect: the store is busy ({deferred_why}: another "
                    "command is writing it); trials are kept in memory and written once it is "
                    "free, tried every second (stopping collect tries once more)"
                )
            self._deferred += deferred
        waiting = {id(trial) for trial in deferred}
        self.buffer.stored(
            [t for t in trials if id(t) not in waiting], [trial for trial, _ in failed]
        )
        self.trials_written += len(trials) - len(failed) - len(deferred)
        return failed

    def _renumbered(self, trial: Trial, exc: Exception) -> bool:
        """Whether ``trial``, refused by the store with ``exc``, was given another
        index to be written under: its index was the receiver's choice (its trace
        named none), and another session (a second ``collect`` on the run) has stored
        a trial under it since this receiver read the run's trials. A trace that named
        its own index keeps it, and the clash is said."""
        clash = isinstance(exc, InputError) and exc.field == "trial"  # `Store.add_trial`
        if not clash or self.store is None or trial.trial is None:
            return False
        free = self.store.next_trial_index(
            self.writer.run_id, trial.task_id, trial.variant, trial.agent, trial.model
        )
        return free > trial.trial and self.buffer.renumber(trial, free)

    async def sweep(self) -> None:
        """Attach held traces whose ``http:`` trial has been stored since they came,
        and write the trials of traces whose wait after their root is over."""
        if not (self.buffer.open or self.buffer.held_events or self._deferred) or self.closed:
            return
        async with self._lock:
            if self._deferred:  # first: late spans of their traces, held, then join them
                waiting, self._deferred = self._deferred, []
                failed = await self._write(waiting)
                self._spans_dropped += sum(_span_count(trial) for trial, _ in failed)
                for _, why in failed:  # answered 200 when they came: said here only
                    self.log(f"agentgauge collect: {why}")
                if not self._deferred:
                    self._busy_said = False
                    self.log(
                        "agentgauge collect: the store is free again: the trials kept "
                        "meanwhile are written"
                    )
            if self.store is not None:
                done = attach_held(
                    self.store, self.buffer.open, self.buffer.options, self.buffer.prices
                )
                self.traces_joined.update(done.joined)
                self._log_held_conflicts(done.conflicts)
                for lost, why in done.refused:
                    self._spans_dropped += len(lost)
                    self.log(f"agentgauge collect: not kept: {why}")
                # Events held for a trace none of whose spans are held: its trial may
                # have been stored since (an ``http:`` agent's), its spans joined to it.
                self._grade_held(t for t in self.buffer.held_events if t not in self.buffer.open)
            if self.buffer.ended:
                settled = self.buffer.due()
                failed = await self._write(settled.trials)
                self._spans_dropped += sum(_span_count(trial) for trial, _ in failed)
                for error in [*settled.errors, *(why for _, why in failed)]:
                    self.log(f"agentgauge collect: rejected: {error}")

    async def shutdown(self) -> None:
        """Write every trace still waiting after its root as its trial and every open
        trace as an incomplete one, then close the writer: from then on a request is
        answered 503 (`_stopping`)."""
        if self._deferred:
            self.log(
                f"agentgauge collect: stopping: writing the {counted(len(self._deferred), 'trial')}"
                " kept while the store was busy (SQLite waits up to 30 s for its lock)"
            )
        await self.sweep()
        async with self._lock:
            if self.closed:
                return
            self.closed = True
            trials, errors = self.buffer.drain()
            failed = await self._write(trials, defer=False)
            # Tried again by the sweep just now, and the store still busy: not a second
            # busy wait at the exit.
            stuck, self._deferred = self._deferred, []
            self.buffer.stored([], stuck)
            failed += [
                (trial, f"trace {trial.metadata.get('trace_id')}: not stored: the store was "
                 "still busy (another command held its write lock)")
                for trial in stuck
            ]  # fmt: skip
            await self.writer.close()
        if failed:
            self._spans_dropped += sum(_span_count(trial) for trial, _ in failed)
            lost = {id(trial) for trial, _ in failed}
            trials = [t for t in trials if id(t) not in lost]
            errors += [why for _, why in failed]
        for error in errors:
            self.log(f"agentgauge collect: not stored at shutdown: {error}")
        if self.spans_repeated:
            self.log(
                f"agentgauge collect: {counted(self.spans_repeated, 'span')} came again, the "
                "same as before (an exporter's retry): each was kept once"
            )
        incomplete = sum(1 for t in trials if t.metadata.get("incomplete"))
        if incomplete:
            self.log(
                f"agentgauge collect: {counted(incomplete, 'open trace')} stored as "
                + ("an incomplete trial" if incomplete == 1 else "incomplete trials")
            )


#: What SQLite says of a lock another connection held past the busy wait.
_BUSY = ("database is locked", "database table is locked", "database is busy")


def _busy(exc: BaseException) -> str | None:
    """SQLite's words when ``exc`` is a write refused for a lock another connection
    holds (a transient refusal, `Receiver._write`); else None."""
    text = str(exc)
    return next((words for words in _BUSY if words in text), None)


def _span_count(trial: Trial) -> int:
    """How many spans ``trial`` was read from (``metadata.trace_spans``)."""
    spans = trial.metadata.get("trace_spans")
    return len(spans) if isinstance(spans, list) else 0


def inflate(raw: bytes, coding: str, limit: int) -> bytes | None:
    """``raw`` decoded from its content coding (``gzip``, RFC 1952, one member or
    several; ``deflate``, the zlib format RFC 9110 names, or the bare deflate data some
    clients send), or ``None`` when it inflates to more than ``limit`` bytes. A body
    that is not valid in its coding (corrupt, cut short, followed by other bytes) is
    an `InputError` that says so."""
    if coding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    else:  # a zlib header's first byte says "deflate" in its low four bits
        wbits = zlib.MAX_WBITS if raw[:1] and raw[0] & 0x0F == 8 else -zlib.MAX_WBITS
    out: list[bytes] = []
    size = 0
    data = raw
    while True:
        inflater = zlib.decompressobj(wbits)
        try:
            chunk = inflater.decompress(data, limit - size + 1)
        except zlib.error as exc:
            why = str(exc).removeprefix("Error -3 while decompressing data: ")
            raise _not_valid(coding, why) from None
        size += len(chunk)
        if size > limit:
            return None
        out.append(chunk)
        if not inflater.eof:
            raise _not_valid(coding, "it ends before the compressed data does")
        data = inflater.unused_data
        if not data:
            return b"".join(out)
        if coding != "gzip":  # gzip may hold several members, one after another
            raise _not_valid(coding, f"{len(data)} bytes follow the compressed data")


def _not_valid(coding: str, why: str) -> InputError:
    return InputError(
        f"the body is not valid {coding} (Content-Encoding: {coding}): {why}", file="request"
    )


class _ClientFaults(logging.Handler):
    """aiohttp's log, as the receiver says things: a request the HTTP parser refused
    (broken framing, a header past its limits) or a client that hung up is the client's
    fault, one line on stderr; anything else is a bug and keeps its traceback."""

    def __init__(self, log: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self._log = log
        self.setFormatter(logging.Formatter("agentgauge collect: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            why = " ".join(str(exc.message).split()) or type(exc).__name__
            self._log(f"agentgauge collect: refused a request ({exc.code}): {why}")
        elif isinstance(exc, ConnectionError | RequestPayloadError):
            self._log(f"agentgauge collect: {record.getMessage()}: {_reason(exc)}")
        else:
            self._log(self.format(record))


def _http_logger(log: Callable[[str], None]) -> logging.Logger:
    """A logger of its own for the HTTP server (not in the logging tree, so nothing
    configured elsewhere sees it or adds to it), writing through ``log``."""
    logger = logging.Logger("agentgauge.collect.http")
    logger.addHandler(_ClientFaults(log))
    return logger


def _reason(exc: BaseException) -> str:
    """An aiohttp payload error's message, on one line."""
    text = str(exc).replace("\n", " ").strip()
    return " ".join(text.split()) or type(exc).__name__


def _printable(text: str, limit: int = 200) -> str:
    """A client's text (a path) quoted on one line, control characters escaped."""
    quoted = ascii(text)
    return quoted if len(quoted) <= limit else quoted[: limit - 3] + "..."


def _response(reply: _Reply) -> web.Response:
    return web.Response(
        status=reply.status, body=reply.body, content_type=reply.content_type, headers=reply.headers
    )


#: The google.rpc code a refusal carries with its HTTP status, as gRPC pairs them
#: (https://github.com/grpc/grpc/blob/master/doc/http-grpc-status-mapping.txt): 503 is
#: UNAVAILABLE, the code clients retry (OTLP says to retry a 503 after Retry-After).
_RPC_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    404: code_pb2.NOT_FOUND,
    405: code_pb2.UNIMPLEMENTED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.UNIMPLEMENTED,
    503: code_pb2.UNAVAILABLE,
}


def _status(http: int, media: str, message: str) -> _Reply:
    code = _RPC_CODES.get(http, code_pb2.FAILED_PRECONDITION)
    return _encoded(http, media, status_pb2.Status(code=code, message=message))


def _encoded(http: int, media: str, message: Any) -> _Reply:
    if media == PROTOBUF:
        return _Reply(http, message.SerializeToString(), PROTOBUF)
    doc = json_format.MessageToDict(message)
    return _Reply(http, orjson.dumps(doc), JSON)


async def collect(
    store: Store,
    run_id: str,
    *,
    port: int,
    options: TraceOptions | None = None,
    outcomes: Mapping[str, Outcome] | None = None,
    tasks: Mapping[str, Task] | None = None,
    ready: Callable[[int], None] | None = None,
    stop: asyncio.Event | None = None,
    log: Callable[[str], None] | None = None,
    settle_s: float = 0.0,
    max_held_bytes: int = MAX_HELD_BYTES,
    prices: PriceTable | None = None,
) -> Receiver:
    """Receive traces on 127.0.0.1:``port`` into run ``run_id`` (which must exist)
    until SIGINT/SIGTERM (or ``stop`` is set); ``ready`` is told the bound port.
    ``settle_s``: how long a trace whose root has come waits before its trial is
    written, for its spans and event records still on the way. ``max_held_bytes``:
    past this, requests that would hold more of open traces are answered 503.
    ``prices``: what prices model calls with tokens and no cost (default:
    `default_prices`)."""
    buffer = TraceBuffer(
        options=options,
        prices=prices,
        outcomes=outcomes,
        tasks=tasks,
        taken=store.existing_cells(run_id),
        settle_s=settle_s,
        max_held_bytes=max_held_bytes,
    )
    receiver = Receiver(TrialWriter(store, run_id), buffer, log=log, store=store)
    # Bodies are inflated by the receiver (`Receiver._body`), not by aiohttp, which
    # refuses a coding it lacks before the handler runs and logs a traceback for a
    # corrupt body; client_max_size then bounds the body as sent.
    # aiohttp's own log (a request its parser refused) goes through the receiver's.
    runner = web.AppRunner(
        receiver.app(),
        access_log=None,
        handle_signals=False,
        auto_decompress=False,
        logger=_http_logger(receiver.log),
        shutdown_timeout=SHUTDOWN_WAIT_S,
    )
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise InputError(
            f"cannot listen on 127.0.0.1:{port}: {exc.strerror} (choose another --port; "
            "0 picks a free one)",
            field="--port",
        ) from None
    bound = runner.addresses[0][1]
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready is not None:
        ready(bound)
    try:
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), JOIN_EVERY_S)
            except TimeoutError:
                await receiver.sweep()
    finally:
        await _stop(receiver, site, runner, loop)
    return receiver


async def _stop(
    receiver: Receiver, site: web.TCPSite, runner: web.AppRunner, loop: asyncio.AbstractEventLoop
) -> None:
    """Stop receiving: no new connection; the open traces written at once (what a 200
    accepted is stored before anything can hold the exit up); then a bounded wait for
    the requests under way, which a second SIGINT or SIGTERM ends."""
    hurry = asyncio.Event()

    def again() -> None:
        if not hurry.is_set():
            hurry.set()
            writing = "" if receiver.closed else "the open traces are written first, then "
            receiver.log(f"agentgauge collect: stopping: {writing}it exits without waiting")

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, again)
    try:
        await site.stop()  # the port closes: no new connection
        await receiver.shutdown()
        busy = receiver.in_flight
        if busy and not hurry.is_set():
            receiver.log(
                f"agentgauge collect: waiting up to {2 * SHUTDOWN_WAIT_S:g} s for {busy} "
                "requests under way (answered 503: their spans are not stored; Ctrl-C "
                "again to stop waiting)"
            )
        cleanup = asyncio.ensure_future(runner.cleanup())
        hurried = asyncio.ensure_future(hurry.wait())
        await asyncio.wait({cleanup, hurried}, return_when=asyncio.FIRST_COMPLETED)
        hurried.cancel()
        if not cleanup.done():
            cleanup.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await cleanup
        cut = receiver.cut_off + receiver.in_flight
        if cut:
            receiver.log(
                f"agentgauge collect: {counted(cut, 'request')} under way "
                f"{'was' if cut == 1 else 'were'} cut off unanswered (a client that stalled "
                "mid-request): their spans were not accepted, and an exporter sends them again"
            )
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
