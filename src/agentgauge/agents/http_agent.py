"""``http:URL``: a black-box agent service over HTTP (protocol ``agentgauge.http/1``).

For each trial the harness POSTs the task to ``URL`` and reads the agent's reply;
the agent runs its own tools in its own service. ``docs/running-agents.md`` ("A
black-box agent over HTTP") describes the contract for the people who write such
a service; in short:

- request body (JSON): ``{"protocol": "agentgauge.http/1", "task_id", "trial",
  "variant", "seed", "instruction", "policy"?, "tools"?}``, ``tools`` in OpenAI
  function-calling form, both left out when the suite's environment has none;
- request headers: ``traceparent`` (W3C Trace Context,
  https://www.w3.org/TR/trace-context/) with a fresh trace id per request, and
  ``baggage`` (W3C Baggage, https://www.w3.org/TR/baggage/) with
  ``agentgauge.task.id`` and ``agentgauge.trial``, so that the spans the service
  exports to ``agentgauge collect`` can be joined to the trial
  (`agentgauge.harness.traces.attach_trace`);
- reply (2xx, JSON object): ``{"answer": str | null, "state"?: object,
  "transcript"?: [events], "cost_usd"?: number, "confidence"?: number}``, events
  in the interchange form (``{"type": "tool_call", "name", "arguments",
  "call_id"}``...); unknown keys are refused, so a misspelt field is not lost.

Whose fault a failure is (as for ``openai:``; docs/running-agents.md, "Timeouts,
retries, and whose fault an error is"): refused or reset connections, 408, 429
and 5xx are retried with backoff and become an infra error when the retries are
spent; other 4xx, and any 3xx (a redirect is not followed: it would resend the task
as a GET with no body), are a `ProviderError` (infra: a wrong URL or key is not the
agent's failure); a 2xx reply that breaks the contract is an `AgentError` naming
the field. The trial's ``--timeout`` bounds the whole exchange: a service that
does not answer in time has hung, which is the agent's failure (the service *is*
the agent, not a provider behind one).
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from typing import Any
from urllib.parse import quote, urlsplit

import aiohttp
from pydantic import TypeAdapter, ValidationError

from agentgauge.agents.base import AgentError, Session, TransientError
from agentgauge.agents.http import (
    TRANSPORT_ERRORS,
    LoopSession,
    check_header,
    new_session,
    transport_failure,
    url_problem,
)
from agentgauge.agents.provider import ProviderError, RetryPolicy, parse_retry_after, with_retries
from agentgauge.errors import AgentUnavailable, InputError, as_float, first_error
from agentgauge.schema import INT64_MAX, Event, ModelCallEvent
from agentgauge.textio import is_digits, loads_json

__all__ = [
    "PROTOCOL",
    "HttpAgent",
    "MalformedReply",
    "baggage_header",
    "new_traceparent",
]

PROTOCOL = "agentgauge.http/1"
_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_REPLY_KEYS = frozenset({"answer", "state", "transcript", "cost_usd", "confidence"})
#: A reply larger than this is refused (aiohttp would otherwise read any size into memory).
MAX_REPLY_BYTES = 64 * 1024 * 1024
#: Seconds the preflight request may take.
PREFLIGHT_TIMEOUT_S = 30.0
_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])
_ZERO_TRACE, _ZERO_SPAN = "0" * 32, "0" * 16


class MalformedReply(AgentError):
    """The service answered 2xx with a body that breaks the ``agentgauge.http/1`` contract."""


def new_traceparent() -> tuple[str, str, str]:
    """A ``traceparent`` header for a new trace, with its trace id and parent span id.

    W3C Trace Context, version 00: ``00-<32 hex trace-id>-<16 hex parent-id>-<flags>``,
    lowercase, neither id all zeros (https://www.w3.org/TR/trace-context/#traceparent-header);
    flags ``01``: sampled, so the service's SDK records its spans."""
    while True:
        # One read of the system's random source for both ids (it is a system call).
        ids = os.urandom(24).hex()
        trace_id, span_id = ids[:32], ids[32:]
        if trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN:  # one chance in 2**64 or less
            return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def baggage_header(task_id: str, trial: int | None) -> str:
    """``baggage`` naming the trial: ``agentgauge.task.id=...,agentgauge.trial=...``.

    W3C Baggage percent-encodes values (https://www.w3.org/TR/baggage/#value); a
    task id may hold any character, commas and spaces included."""
    entries = [f"agentgauge.task.id={quote(task_id, safe='')}"]
    if trial is not None:
        entries.append(f"agentgauge.trial={trial}")
    return ",".join(entries)


class HttpAgent:
    """An agent that is a service: one POST per trial to ``url``.

    ``headers`` are sent with every request (``Authorization`` for the service,
    say); ``api_key_env`` names an environment variable whose value is sent as
    ``Authorization: Bearer ...``. ``request_timeout`` bounds one request
    (connecting, sending, reading the reply); a late one is retried like a dropped
    connection. The trial's own timeout bounds the whole exchange, retries included.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        model: str | None = None,
        headers: dict[str, str] | None = None,
        api_key_env: str | None = None,
        retry: RetryPolicy | None = None,
        request_timeout: float = 600.0,
        max_connections: int | None = None,
    ) -> None:
        self.url = _check_url(url)
        self.name = name or f"http:{url}"
        self.model = model
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        for header, value in self.headers.items():
            check_header(header, "header name")
            check_header(value, f"header {header}")
        secret = os.environ.get(api_key_env) if api_key_env else None
        if api_key_env and secret:
            check_header(secret, api_key_env)
            self.headers["Authorization"] = f"Bearer {secret}"
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        self.max_connections = max_connections
        self._http = LoopSession(
            lambda: new_session(
                self.url, self.headers, self.request_timeout, max_connections=self.max_connections
            )
        )
        self._rng = random.Random()
        # (policy, tools as sent, their JSON): see `_body`.
        self._fixed_json: tuple[Any, Any, str] | None = None

    def _session(self) -> aiohttp.ClientSession:
        return self._http.get()

    async def aclose(self) -> None:
        """Close the HTTP connections (the harness calls this when a run ends)."""
        await self._http.aclose()

    async def preflight(self) -> None:
        """Check once, before a run, that something answers at the URL.

        Sends ``GET URL`` (no task, so the service does no work): any answer shows the
        service is up (a POST-only route answers 405) except 404 (nothing there),
        401/403 (the credentials) and a redirect (the trials' POSTs are not redirected);
        no answer at all is `AgentUnavailable`."""
        limit = min(self.request_timeout, PREFLIGHT_TIMEOUT_S)
        try:
            async with self._session().get(
                self.url, timeout=aiohttp.ClientTimeout(total=limit), allow_redirects=False
            ) as response:
                status, reason = response.status, response.reason or ""
                location = response.headers.get("Location")
        except TRANSPORT_ERRORS as exc:
            raise AgentUnavailable(
                f"{self.name}: no answer from {self.url}: "
                + transport_failure(exc, limit, "request_timeout")
                + "; is the agent service running?"
            ) from None
        if status == 404:
            raise AgentUnavailable(
                f"{self.name}: {self.url} answered HTTP 404 ({_printable(reason)}): "
                "no route there; check the path in http:URL"
            )
        if 300 <= status < 400:
            # The trials' POSTs are not redirected either: every one would fail alike.
            where = f"; Location: {_printable(location)}" if location else ""
            raise AgentUnavailable(
                f"{self.name}: {self.url} answered HTTP {status} (redirects are not "
                f"followed{where}): give the URL the service answers at"
            )
        if status in (401, 403):
            raise AgentUnavailable(
                f"{self.name}: {self.url} refused the request (HTTP {status}); "
                "send credentials with --api-key-env NAME or agent_options={'headers': ...}"
            )

    async def __call__(self, session: Session) -> None:
        # When the trial began, on the wall clock the service's spans are timed by: its
        # spans joined to the trial (`agentgauge.collect.join`) count from it, so they
        # fall where they happened in the transcript (before the reply). A session
        # that does not say is taken to have begun now.
        started = getattr(session, "started_ns", None)
        if not isinstance(started, int):
            started = time.time_ns()
        trial = getattr(session, "trial", None)
        data = self._body(session, trial)
        baggage = baggage_header(session.task_id, trial)
        note = getattr(session, "note", None)
        attempts = 0

        async def attempt() -> dict[str, Any]:
            nonlocal attempts
            attempts += 1
            # A fresh trace per attempt: spans of an attempt that failed are not the
            # trial's (their tool calls may be half done), so they must not join it.
            traceparent, trace_id, span_id = new_traceparent()
            if note is not None:
                # Noted before the request, each attempt over the last: a trial that
                # ends in an error (a malformed reply, its timeout, retries spent)
                # keeps its last attempt's trace too, so the spans the service sent
                # for that attempt join it rather than being dropped by collect.
                note("trace_id", trace_id)
                note("span_id", span_id)
                if attempts == 1:
                    note("trace_t0_ns", started)  # the trial's, the same for every attempt
                else:
                    note("http_attempts", attempts)
            headers = {"traceparent": traceparent, "baggage": baggage}
            return await self._post_once(data, headers)

        reply, _ = await with_retries(attempt, self.retry, rng=self._rng)
        _apply(reply, session)

    def _body(self, session: Session, trial: int | None) -> bytes:
        """The request body as JSON bytes.

        The policy and the tool list, often several kilobytes of JSON schema and the
        same for every trial of a suite, are encoded when they change, not per trial:
        the last ones are kept with a copy of the tools as sent (read back from their
        JSON, so a list the environment changes in place is not mistaken for the one
        sent), and a trial whose policy and tools equal them is sent the same text."""
        head = json.dumps(
            {
                "protocol": PROTOCOL,
                "task_id": session.task_id,
                "trial": trial,
                "variant": getattr(session, "variant", "base"),
                "seed": int(session.rng.integers(0, 2**31 - 1)),
                "instruction": session.instruction,
            },
            default=str,
        )
        policy, tools = session.policy, session.tools
        cached = self._fixed_json
        if cached is None or cached[0] != policy or cached[1] != tools:
            fixed: dict[str, Any] = {"policy": policy} if policy else {}
            if tools:
                fixed["tools"] = tools
            text = json.dumps(fixed, default=str)
            # Not ``tools`` itself: a copy, and one of what was sent (an object JSON
            # cannot hold was sent as its str(), so it never equals the copy).
            sent = json.loads(text)["tools"] if tools else ([] if tools == [] else None)
            cached = self._fixed_json = (policy, sent, text[1:-1])
        if not cached[2]:
            return head.encode()
        return (head[:-1] + ", " + cached[2] + "}").encode()

    async def _post_once(self, data: bytes, headers: dict[str, str]) -> dict[str, Any]:
        try:
            # Redirects are not followed: aiohttp would follow a 301/302/303 as a GET
            # with no body, and the target's reply would be graded as the agent's.
            async with self._session().post(
                self.url, data=data, headers=headers, allow_redirects=False
            ) as response:
                status, reason = response.status, response.reason or ""
                retry_after = response.headers.get("Retry-After")
                location = response.headers.get("Location")
                media = response.headers.get("Content-Type")
                length = response.content_length
                if length and length > MAX_REPLY_BYTES:
                    if 200 <= status < 300:
                        raise MalformedReply(
                            f"reply of {length} bytes is larger than {MAX_REPLY_BYTES} bytes"
                        )
                    # An error page past the cap: its status says what happened (a 5xx
                    # is retried, then an infra error), its body is not read.
                    content = b""
                elif length is not None and "Content-Encoding" not in response.headers:
                    # Content-Length bounds what is read (and it is within the cap):
                    # read at once. A compressed body may inflate past its length, and
                    # one without a length may be any size: those are read in chunks.
                    content = await response.read()
                else:
                    content = await _read_capped(response, MAX_REPLY_BYTES + 1)
        except TRANSPORT_ERRORS as exc:
            raise TransientError(
                transport_failure(exc, self.request_timeout, "request_timeout")
            ) from exc
        if status in _RETRY_STATUS:
            raise TransientError(
                f"HTTP {status}: {_said(content, reason)}",
                retry_after=parse_retry_after(retry_after),
            )
        if 300 <= status < 400:
            moved = f"; Location: {_printable(location)}" if location else ""
            raise ProviderError(
                f"HTTP {status} from {self.url} (redirects are not followed{moved})"
            )
        if not 200 <= status < 300:
            raise ProviderError(f"HTTP {status} from {self.url}: {_said(content, reason)}")
        if len(content) > MAX_REPLY_BYTES:
            raise MalformedReply(f"reply is larger than {MAX_REPLY_BYTES} bytes")
        return parse_reply(content, media)


async def _read_capped(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, or its first ``limit`` bytes when it is longer (a hostile service
    could otherwise send gigabytes into memory)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(1 << 16):
        chunks.append(chunk)
        size += len(chunk)
        if size >= limit:
            break
    return b"".join(chunks)[:limit]


def parse_reply(content: bytes, media: str | None = None) -> dict[str, Any]:
    """The reply body checked against the contract, or `MalformedReply` naming the field.
    ``media``: the reply's Content-Type, said with the start of a body that is no JSON
    (an HTML page a proxy or a default route answered with)."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedReply(f"reply: byte {exc.start} is not valid UTF-8") from None
    if not text.strip():
        raise MalformedReply(
            "reply is empty: the service answered with no body, where a JSON object with "
            "'answer' is required"
        )
    try:
        reply = loads_json(text, file="reply", line=None)
    except InputError as exc:
        if exc.field:  # a number past a double's range, which JSON reads as infinity
            raise MalformedReply(f"reply.{exc.field}: {exc.reason}") from None
        sent = f"Content-Type {_printable(media, 60)}; " if media else ""
        begins = _printable(text[:200], 60)
        raise MalformedReply(
            f"reply is not JSON: {exc.reason} ({sent}it begins {begins!r})"
            if begins
            else f"reply is not JSON: {exc.reason}"
        ) from None
    if not isinstance(reply, dict):
        raise MalformedReply(f"reply must be a JSON object, got {_kind(reply)}")
    unknown = sorted(set(reply) - _REPLY_KEYS)
    if unknown:
        raise MalformedReply(
            f"reply.{unknown[0]}: unknown key (the reply holds {', '.join(sorted(_REPLY_KEYS))})"
        )
    if "answer" not in reply:
        raise MalformedReply("reply.answer: required (a string, or null for no answer)")
    if reply["answer"] is not None and not isinstance(reply["answer"], str):
        raise MalformedReply(
            f"reply.answer: must be a string or null, got {_kind(reply['answer'])}"
        )
    if "state" in reply and reply["state"] is not None and not isinstance(reply["state"], dict):
        raise MalformedReply(f"reply.state: must be an object, got {_kind(reply['state'])}")
    for key, low, high in (("cost_usd", 0.0, math.inf), ("confidence", 0.0, 1.0)):
        value = reply.get(key)
        if value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        # as_float: an int past any float (10**400) is out of range, not an OverflowError.
        if not number or not low <= as_float(value) <= high or not math.isfinite(as_float(value)):
            shown = "a number >= 0" if high == math.inf else f"a number in [{low:g}, {high:g}]"
            raise MalformedReply(f"reply.{key}: must be {shown}, got {json.dumps(value)[:60]}")
    transcript = reply.get("transcript")
    if transcript is not None:
        if not isinstance(transcript, list):
            raise MalformedReply(f"reply.transcript: must be a list, got {_kind(transcript)}")
        try:
            reply["transcript"] = _EVENTS.validate_python(transcript)
        except ValidationError as exc:
            where, reason = first_error(exc, metadata_hint=False)
            raise MalformedReply(f"reply.transcript{_path(where)}: {reason}") from None
        calls = [e for e in reply["transcript"] if isinstance(e, ModelCallEvent)]
        for attr in ("input_tokens", "output_tokens"):
            # Each count fits the store; their sum, the trial's total, must too.
            if sum(getattr(c, attr) or 0 for c in calls) > INT64_MAX:
                raise MalformedReply(f"reply.transcript: {attr} add up to more than 2^63")
        # So must the trial's cost: two model calls of $1e308 add up to infinity.
        costs = [c.cost_usd for c in calls if c.cost_usd is not None]
        if not math.isfinite(sum(costs, float(reply.get("cost_usd") or 0.0))):
            raise MalformedReply(
                "reply: cost_usd and the transcript's model_call costs add up to more "
                "than the largest float (about 1.8e308)"
            )
    return reply


def _apply(reply: dict[str, Any], session: Session) -> None:
    """Put what the service reported into the trial's record."""
    record = getattr(session, "record_event", None)
    events: list[Any] = reply.get("transcript") or []
    if events and record is None:
        raise AgentError("this session cannot record a remote agent's transcript")
    for event in events:
        record(event)  # type: ignore[misc]
    state = reply.get("state")
    if state is not None:
        report = getattr(session, "report_state", None)
        if report is None:
            raise AgentError("this session cannot take a remote agent's final state")
        report(state)
    if reply.get("cost_usd") is not None:
        session.record_cost(float(reply["cost_usd"]))
    if reply.get("confidence") is not None:
        session.report_confidence(float(reply["confidence"]))
    if reply["answer"] is not None:
        session.answer(reply["answer"])


def _path(dotted: str | None) -> str:
    """``0.tool_call.name`` (pydantic's path) as ``[0].name`` (the reply's)."""
    if not dotted:
        return ""
    out = ""
    for part in dotted.split("."):
        if is_digits(part):
            out += f"[{part}]"
        elif part not in ("message", "model_call", "tool_call", "tool_result", "control"):
            out += f".{part}"
    return out


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _said(content: bytes, reason: str) -> str:
    """What an error reply says: the start of its body, else its reason phrase."""
    return _printable(content[:200].decode("utf-8", "replace")) or reason


def _printable(text: str, limit: int = 200) -> str:
    flat = "".join(c if c.isprintable() else " " for c in text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _check_url(url: str) -> str:
    """``url`` if a request can be sent to it; else one `InputError` when the spec is
    read: an impossible port (``:99999``) or a URL that does not parse (``[::1``) once
    came as a traceback from the first request's proxy lookup."""
    try:
        parts = urlsplit(url)
    except ValueError:  # "Invalid IPv6 URL": said below, in yarl's words
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        problem = url_problem(url) if parts is None else None
        raise InputError(
            f"http: needs an absolute http:// or https:// URL after the prefix, got {url!r} "
            + (f"({problem}; " if problem else "(")
            + "e.g. --agent http:http://127.0.0.1:8000/run)",
            field="agent",
        )
    problem = url_problem(url)
    if problem is not None:
        raise InputError(f"agent URL {url!r} cannot be used: {problem}", field="agent")
    check_header(url, "the agent URL")
    return url
