"""``openai:MODEL``: any OpenAI-compatible chat-completions endpoint as an agent.

Works with hosted providers and with local servers that speak the same
protocol (vLLM, llama.cpp server, Ollama). The adapter runs the tool loop:

1. messages start as ``system`` = the environment's policy and ``user`` = the
   instruction; the environment's tools are offered as functions;
2. each assistant turn that calls tools has them run through
   ``session.call_tool`` and their results sent back as ``tool`` messages;
3. an assistant turn with text only is sent to the simulated user with
   ``session.say``; the reply continues the conversation, ``None`` (the user
   left) or an empty turn ends it.

Every model call is recorded with its tokens (cached prompt and reasoning
tokens too, when the server reports them), cost and where the price came from
(`agentgauge.agents.prices`: the user's ``--prices`` file, else genai-prices'
bundled snapshot; unknown price -> ``None``), latency (retries included) and
attempts. A call with an attempt whose request was sent and whose reply was never
read (a timeout) may have been billed for it: its cost and tokens are ``None`` with
the reason in ``price_source`` (`agentgauge.agents.http.unread_cost`, the judge's
rule too), answered or not.

Errors, and whose they are:

- a tool call whose arguments are not a JSON object, or that names a tool the
  environment does not offer, is a `MalformedToolCall` (the agent's error)
  — unless ``on_malformed="feedback"``, which sends the error back to the model
  as the tool's result and lets it try again;
- 429, 408 and 5xx responses, connection errors, responses that are not
  HTTP, and request timeouts (``request_timeout``, one per request) are
  retried with backoff (`agentgauge.agents.provider`); when retries run out
  the trial is an infra error (`ProviderExhausted`);
- a reply whose ``finish_reason`` is ``length`` (cut off at the token limit) or
  ``content_filter`` is an `IncompleteReply`, and a 4xx saying the conversation
  outgrew the model's context window a `ContextLengthExceeded` (both the agent's
  error: its model did not finish its turn);
- other 4xx responses, unparseable response bodies and replies that are not
  in the chat-completions shape (``tool_calls`` not a list of calls with a
  function name, ``content`` not text) are `ProviderError` (infra: a
  misconfigured key or model name, or a broken server, is not the agent's
  failure).

Text that accompanies tool calls in the same turn is kept in the model's
context but not sent to the user (the turn's action is the tool calls).
"""

from __future__ import annotations

import json
import os
import random
import time
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp

from agentgauge._version import __version__
from agentgauge.agents.base import AgentError, Session, TransientError
from agentgauge.agents.http import (
    TRANSPORT_ERRORS,
    LoopSession,
    check_base_url,
    check_header,
    new_session,
    sent_unread,
    transport_failure,
    unread_cost,
)
from agentgauge.agents.prices import PriceTable, Usage, default_prices
from agentgauge.agents.provider import (
    ProviderError,
    RetryPolicy,
    parse_retry_after,
    provider_call,
    with_retries,
)
from agentgauge.bounds import OutOfBounds, check_count
from agentgauge.components import ENVIRONMENT_POLICY, NOT_SENT
from agentgauge.errors import AgentUnavailable, InputError

__all__ = [
    "DEFAULT_BASE_URL",
    "ContextLengthExceeded",
    "IncompleteReply",
    "MalformedToolCall",
    "OpenAIAgent",
    "RouteProblem",
    "check_chat_route",
]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
#: Seconds the preflight request may take (less when ``request_timeout`` is shorter).
PREFLIGHT_TIMEOUT_S = 30.0
#: Not JSON: rejected by the server's parser before any model could run.
_PREFLIGHT_BODY = b"{"


class MalformedToolCall(AgentError):
    """The model asked for a tool call the harness cannot run as given."""


class IncompleteReply(AgentError):
    """The model's turn did not end: its reply was cut off at a token limit
    (``finish_reason`` ``length``) or withheld by the provider's content filter
    (``content_filter``). What came back is not a turn to act on: a fragment of a
    message sent to the user as said, or a blank read as the model choosing to stop."""


class ContextLengthExceeded(AgentError):
    """The server refused the request because the conversation no longer fits the
    model's context window: the agent's transcript outgrew its model, which is the
    agent's failure, not a server that is down or misconfigured."""


#: How servers say the request is longer than the model's context window, in a 4xx body:
#: OpenAI's error code (and providers copying it), llama.cpp server's error type, and
#: the message OpenAI, vLLM and Mistral write.
_CONTEXT_OVERFLOW = ("context_length_exceeded", "exceed_context_size", "maximum context length")

#: ``finish_reason`` values that say the model's turn did not end, and what each means.
_UNFINISHED = {
    "length": "the model's reply was cut off at its token limit (its max_tokens, or the "
    "end of its context window)",
    "content_filter": "the provider's content filter withheld or cut off the model's reply",
}


class OpenAIAgent:
    """An agent backed by a chat-completions endpoint.

    ``api_key`` defaults to the environment variable named by ``api_key_env``
    (``OPENAI_API_KEY``); without a key no ``Authorization`` header is sent,
    which is what local servers expect. ``params`` are extra request fields
    (``temperature``, ``max_tokens``, ...). ``max_turns`` caps the model calls of one
    trial (default 50; ``--max-turns``): a conversation still going after that many is
    the agent's error.

    HTTP goes through one `aiohttp.ClientSession` per event loop
    (`agentgauge.agents.http`): keep-alive connections, TLS with aiohttp's
    default (verifying) context, the proxy named by ``HTTP_PROXY``/``HTTPS_PROXY``
    unless ``NO_PROXY`` covers the host. Each request, connecting included, must
    finish within ``request_timeout`` seconds; a late one is retried like a
    connection error. ``max_connections`` caps the open connections (default: no
    cap; under the harness there are never more than its concurrency, since each
    trial has at most one request in flight).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        prices: PriceTable | None = None,
        retry: RetryPolicy | None = None,
        request_timeout: float = 120.0,
        max_turns: int = 50,
        on_malformed: Literal["error", "feedback"] = "error",
        params: dict[str, Any] | None = None,
        name: str | None = None,
        max_connections: int | None = None,
    ) -> None:
        if not model:
            raise ValueError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        self.model: str | None = model
        self.name = name or f"openai:{model}"
        self.base_url = _base_url(base_url).rstrip("/")
        self.api_key_env = api_key_env
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        if self._api_key:
            check_header(self._api_key, "api_key" if api_key is not None else api_key_env)
        self.prices = prices or default_prices()
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
            raise InputError(f"must be a whole number >= 1, got {max_turns!r}", field="max_turns")
        self.max_turns = max_turns
        self.on_malformed = on_malformed
        self.params = dict(params or {})
        self.max_connections = max_connections
        self._http = LoopSession(self._new_session)
        self._url = ""  # set with the session, from the base URL at that time
        self._rng = random.Random()
        self._tools_json: tuple[list[dict[str, Any]], str] | None = None

    def components(self) -> dict[str, Any]:
        """This agent's part of the run's configuration (`agentgauge.components`): the
        model, the adapter's version, its system prompt (the environment's policy, as
        it is) and the sampling settings it sends; one it does not send is the
        server's default."""
        sent = self.params
        max_tokens = sent.get("max_tokens", sent.get("max_completion_tokens", NOT_SENT))
        return {
            "model": self.model,
            "agent_version": f"openai adapter (agentgauge {__version__})",
            "system_prompt": ENVIRONMENT_POLICY,
            "temperature": sent.get("temperature", NOT_SENT),
            "top_p": sent.get("top_p", NOT_SENT),
            "max_tokens": max_tokens,
            "seed": sent.get("seed", NOT_SENT),
        }

    # ------------------------------------------------------------------ lifecycle

    def _session(self) -> aiohttp.ClientSession:
        return self._http.get()

    def _new_session(self) -> aiohttp.ClientSession:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        self._url = self.base_url + "/chat/completions"
        return new_session(
            self.base_url, headers, self.request_timeout, max_connections=self.max_connections
        )

    async def aclose(self) -> None:
        """Close the HTTP connections (the harness calls this when a run ends)."""
        await self._http.aclose()

    async def preflight(self) -> None:
        """Check once, before a run, that the chat route answers; `AgentUnavailable` if not.

        Sends one ``POST {base_url}/chat/completions`` whose body is not JSON (the
        single byte ``{``), so no model can run and nothing is billed: a server with
        the route answers 400 (or 422), and the status says the rest. Stops on no
        answer (refused, timed out), 401/403 (the key) and 404/405/501 (no such
        route); any other answer, 429 and 5xx included, shows the route is there, and
        the trials' own retries deal with a busy server.
        """
        http = self._session()  # sets ``self._url``
        limit = min(self.request_timeout, PREFLIGHT_TIMEOUT_S)
        problem = await check_chat_route(http, self._url, limit, "request_timeout")
        if problem is None:
            return
        if problem.kind == "no_answer":
            raise AgentUnavailable(
                f"{self.name}: no answer from {self._url}: {problem.detail}; "
                "is the server running, and is --base-url right?"
            )
        if problem.kind == "refused":
            where = f"the key in ${self.api_key_env}" if self._api_key else "no API key was sent"
            raise AgentUnavailable(
                f"{self.name}: {self._url} refused the request ({problem.detail}); "
                f"{where}; set --api-key-env to the variable holding the key"
            )
        raise AgentUnavailable(
            f"{self.name}: {self._url} answered {problem.detail}: no "
            "chat-completions route there; check --base-url (it usually ends in /v1)"
        )

    # ------------------------------------------------------------------ one call

    async def _post_once(self, body: bytes, tried: _Attempts) -> dict[str, Any]:
        http = self._session()
        tried.n += 1
        try:
            with provider_call():
                async with http.post(self._url, data=body) as response:
                    content = await response.read()
        except TRANSPORT_ERRORS as exc:
            failure = transport_failure(exc, self.request_timeout, "request_timeout")
            if sent_unread(exc):
                tried.unread = failure
            raise TransientError(failure) from exc
        return _reply_body(
            response.status, response.reason, response.headers.get("Retry-After"), content
        )

    async def complete(
        self, session: Session, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """One chat completion with retries; records the model call on the session."""
        body = self._body(messages, tools)
        start = time.monotonic()
        tried = _Attempts()
        try:
            data, attempts = await with_retries(
                lambda: self._post_once(body, tried), self.retry, rng=self._rng
            )
        except Exception:
            if tried.unread is not None:
                # No answer, but an attempt was sent and its reply not read: it may have
                # been billed. The call is on the record with its cost unknown, so the
                # trial's is too; a call refused at every attempt cost nothing.
                session.record_model_call(
                    model=self.model,
                    input_tokens=None,
                    output_tokens=None,
                    cost_usd=None,
                    price_source=unread_cost(tried.unread, answered=False),
                    latency_s=time.monotonic() - start,
                    attempts=tried.n,
                )
            raise
        if tried.unread is not None:
            # An attempt before the one that answered was sent and its reply not read:
            # the provider may have billed it too, so what the call cost, and the tokens
            # it was billed for, are unknown (as for the judge's calls). Before, the
            # answer's own cost was counted as the call's.
            session.record_model_call(
                model=_reported(data) or self.model,
                input_tokens=None,
                output_tokens=None,
                cost_usd=None,
                price_source=unread_cost(tried.unread, answered=True),
                latency_s=time.monotonic() - start,
                attempts=attempts,
            )
            return _message(data)
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        inp = _count(usage, "prompt_tokens")
        out = _count(usage, "completion_tokens")
        # OpenAI's usage details: cached prompt tokens bill lower, reasoning ones as output.
        cached = _count(_detail(usage, "prompt_tokens_details"), "cached_tokens")
        reasoning = _count(_detail(usage, "completion_tokens_details"), "reasoning_tokens")
        reported = _reported(data)
        quote = self.prices.quote(
            (reported, self.model),
            None if inp is None or out is None else Usage(inp, out, cached, None, reasoning),
        )
        session.record_model_call(
            model=reported or self.model,
            input_tokens=inp,
            output_tokens=out,
            cache_read_tokens=cached,
            reasoning_tokens=reasoning,
            cost_usd=quote.usd,
            price_source=quote.source,
            latency_s=time.monotonic() - start,
            attempts=attempts,
        )
        return _message(data)

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bytes:
        """The request as JSON bytes. An environment offers the same tool list on
        every call of a trial, often several kilobytes of JSON schema: its JSON
        is made when the list changes and spliced in. The list is compared with a
        copy of what was sent (read back from its JSON), not by identity, so a list
        an environment changes in place between calls is sent as it now is."""
        fixed = json.dumps({"model": self.model, **self.params})
        text = fixed[:-1] + ', "messages": ' + json.dumps(messages)
        if tools:
            cached = self._tools_json
            if cached is None or cached[0] != tools:
                encoded = json.dumps(tools)
                cached = self._tools_json = (json.loads(encoded), encoded)
            text += ', "tools": ' + cached[1]
        return (text + "}").encode()

    # ------------------------------------------------------------------ the tool loop

    async def __call__(self, session: Session) -> None:
        tools = session.tools
        names = {t.get("function", {}).get("name") for t in tools}
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.policy},
            {"role": "user", "content": session.instruction},
        ]
        call_ids = _CallIds()
        for _ in range(self.max_turns):
            message = await self.complete(session, messages, tools)
            calls = call_ids.given(message.get("tool_calls") or [])
            content = message.get("content")
            text = content if isinstance(content, str) else None
            refusal = message.get("refusal")  # OpenAI's refusals come here, content null
            if not (text and text.strip()) and isinstance(refusal, str) and refusal.strip():
                text = refusal
            turn: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                turn["tool_calls"] = calls
            messages.append(turn)
            if calls:
                for call in calls:
                    messages.append(await self._run_tool_call(session, call, names))
                continue
            if not text or not text.strip():
                return  # the model ended its turn with nothing to say
            reply = await session.say(text)
            if reply is None:
                return
            messages.append({"role": "user", "content": reply})
        raise AgentError(
            f"no end to the conversation after {self.max_turns} model "
            f"call{'' if self.max_turns == 1 else 's'} (the openai: "
            "adapter's limit; raise it with --max-turns N, or agent_options={'max_turns': N} "
            "from Python)"
        )

    async def _run_tool_call(self, session: Session, call: Any, names: set[Any]) -> dict[str, Any]:
        call_id = call.get("id") if isinstance(call, dict) else None
        try:
            name, arguments = _parse_tool_call(call, names)
        except MalformedToolCall as exc:
            if self.on_malformed == "error":
                raise
            return {"role": "tool", "tool_call_id": call_id, "content": f"Error: {exc}"}
        outcome = await session.call_tool(name, arguments)
        content = outcome.content
        text = content if isinstance(content, str) else json.dumps(content, default=str)
        return {"role": "tool", "tool_call_id": call_id, "content": text}


class _Attempts:
    """The HTTP attempts of one model call: how many, and the last one sent whose reply
    was not read (`agentgauge.agents.http.sent_unread`), in words."""

    def __init__(self) -> None:
        self.n = 0
        self.unread: str | None = None


def _reported(data: dict[str, Any]) -> str | None:
    """The model the server says answered, when it says."""
    model = data.get("model")
    return model if isinstance(model, str) else None


def _message(data: dict[str, Any]) -> dict[str, Any]:
    """The assistant message of a chat completion (`_reply_body` checked its shape), or
    `IncompleteReply` when the model's turn did not end."""
    choice = data["choices"][0]
    finish = choice.get("finish_reason")
    if isinstance(finish, str) and finish in _UNFINISHED:
        raise IncompleteReply(f"{_UNFINISHED[finish]}; finish_reason {finish!r}")
    message: dict[str, Any] = choice["message"]
    return message


class _CallIds:
    """Tool-call ids for one trial's conversation. A call the model sent without one
    (some local servers leave ``id`` out, or send ``null`` or ``""``) gets
    ``call_agentgauge_N``, numbered in the trial and unlike any id the model gave, in
    the assistant turn and in the ``tool`` message that answers it alike: OpenAI's API
    requires a string ``tool_call_id`` matching a call of the turn before, and the
    adapter sent ``null``."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._next = 0

    def given(self, calls: list[Any]) -> list[Any]:
        """``calls`` (checked by `_message_problem`: objects whose ``id`` is a string or
        absent), each with an id."""
        for call in calls:
            if isinstance(call, dict) and isinstance(call.get("id"), str) and call["id"]:
                self._taken.add(call["id"])
        out: list[Any] = []
        for call in calls:
            if isinstance(call, dict) and not (isinstance(call.get("id"), str) and call["id"]):
                call = {**call, "id": self._new()}
            out.append(call)
        return out

    def _new(self) -> str:
        while True:
            self._next += 1
            made = f"call_agentgauge_{self._next}"
            if made not in self._taken:
                self._taken.add(made)
                return made


def _base_url(given: str | None) -> str:
    """The endpoint, from the argument (``--base-url``), else ``$OPENAI_BASE_URL``, else
    OpenAI's; checked here, where it enters, so a bad one stops the run before it starts."""
    if given:
        return check_base_url(given, "from --base-url")
    from_env = os.environ.get("OPENAI_BASE_URL")
    if from_env:
        return check_base_url(from_env, "from $OPENAI_BASE_URL")
    return DEFAULT_BASE_URL


def _parse_tool_call(call: Any, names: set[Any]) -> tuple[str, dict[str, Any]]:
    """Name and arguments of a tool call, or `MalformedToolCall` saying what is wrong.

    Arguments are parsed as JSON only (never evaluated)."""
    fn = call.get("function") if isinstance(call, dict) else None
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise MalformedToolCall(f"tool call without a function name: {_short(call)}")
    name = fn["name"]
    if name not in names:
        raise MalformedToolCall(f"call to unknown tool {name!r}")
    raw = fn.get("arguments")
    if raw is None or raw == "":
        return name, {}
    if isinstance(raw, dict):
        return name, raw
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError as exc:
        raise MalformedToolCall(
            f"arguments of {name!r} are not valid JSON ({exc.msg}): {_short(raw)}"
        ) from None
    if not isinstance(arguments, dict):
        raise MalformedToolCall(f"arguments of {name!r} are not a JSON object: {_short(raw)}")
    return name, arguments


def _detail(usage: dict[str, Any], group: str) -> Any:
    details = usage.get(group)
    return details if isinstance(details, dict) else None


def _count(usage: Any, key: str) -> int | None:
    """A token count of the usage report; ``None`` (unknown) when absent or not a
    count. One too large for the store (2**64 prompt tokens) is a broken server's
    report, not the agent's doing: `ProviderError`, an infra error."""
    value = usage.get(key) if isinstance(usage, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return None
    try:
        return check_count(f"usage.{key}", value)
    except OutOfBounds as exc:
        raise ProviderError(f"malformed chat-completions response: {exc}") from None


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reply_body(
    status: int, reason: str | None, retry_after: str | None, content: bytes
) -> dict[str, Any]:
    """The body of a 2xx chat-completions response, or the error its status calls for:
    `TransientError` for 408, 429 and 5xx (with the ``Retry-After`` wait), `ProviderError`
    for other failures and for a body that is not a chat completion."""
    if status in _RETRY_STATUS:
        raise TransientError(
            f"HTTP {status}: {_error_message(content, reason)}",
            retry_after=parse_retry_after(retry_after),
        )
    if status >= 400:
        said = f"HTTP {status}: {_error_message(content, reason)}"
        if any(mark in _text(content).lower() for mark in _CONTEXT_OVERFLOW):
            raise ContextLengthExceeded(
                f"the conversation no longer fits the model's context window ({said})"
            )
        raise ProviderError(said)
    try:
        data = json.loads(content)
        message = data["choices"][0]["message"]
    # RecursionError: JSON nested deeper than the parser goes (a hostile body)
    except (ValueError, KeyError, IndexError, TypeError, RecursionError):
        raise ProviderError(
            f"malformed chat-completions response: {_text(content)[:200]!r}"
        ) from None
    if not isinstance(message, dict):
        raise ProviderError("malformed chat-completions response: message is not an object")
    problem = _message_problem(message)
    if problem is not None:
        raise ProviderError(f"malformed chat-completions response: choices[0].message.{problem}")
    return dict(data)


def _message_problem(message: dict[str, Any]) -> str | None:
    """What in the assistant message breaks the chat-completions shape (``content`` a
    string or null; ``tool_calls`` a list of objects, each with a ``function`` object
    whose ``name`` is a string and whose ``arguments`` are a string, or an object as
    some servers send, or absent), or ``None``. What the server sent as that shape is
    the model's doing (arguments that are not JSON, an unknown tool: `MalformedToolCall`);
    a reply not in it is the server's (`ProviderError`): ``tool_calls: 5`` was iterated
    as a bare TypeError, ``"add"`` as the tool calls ``a``, ``d``, ``d``."""
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        return f"content is {_kind(content)}, not a string or null"
    calls = message.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"tool_calls is {_kind(calls)}, not a list"
    for i, call in enumerate(calls):
        where = f"tool_calls[{i}]"
        if not isinstance(call, dict):
            return f"{where} is {_kind(call)}, not an object"
        if call.get("id") is not None and not isinstance(call["id"], str):
            return f"{where}.id is {_kind(call['id'])}, not a string"
        fn = call.get("function")
        if not isinstance(fn, dict):
            return f"{where}.function is {_kind(fn)}, not an object"
        if not isinstance(fn.get("name"), str):
            return f"{where}.function.name is {_kind(fn.get('name'))}, not a string"
        arguments = fn.get("arguments")
        if arguments is not None and not isinstance(arguments, str | dict):
            return f"{where}.function.arguments is {_kind(arguments)}, not a string"
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "missing"
    kinds = {bool: "a boolean", str: "a string", list: "a list", dict: "an object"}
    return kinds.get(type(value), "a number" if isinstance(value, int | float) else "a value")


@dataclass(frozen=True)
class RouteProblem:
    """Why `check_chat_route` found no usable chat-completions route."""

    kind: Literal["no_answer", "refused", "no_route"]
    """``no_answer``: no connection or no reply in time; ``refused``: HTTP 401/403 (the
    key); ``no_route``: HTTP 404/405/501 (nothing there: the base URL)."""
    detail: str
    """What happened, in words: the transport failure, or ``HTTP 404 (the server's
    words)``."""


async def check_chat_route(
    http: aiohttp.ClientSession, url: str, limit: float, setting: str
) -> RouteProblem | None:
    """The preflight of a chat-completions endpoint, for the ``openai:`` agents and the
    model judge alike: ``None`` when the route at ``url`` answers, else why not.

    Sends one ``POST url`` whose body is not JSON (the single byte ``{``), so no model
    can run and nothing is billed: a server with the route answers 400 (or 422), and
    the status says the rest. A problem is no answer within ``limit`` seconds
    (``setting`` names the option that set it), 401/403 and 404/405/501; any other
    answer, 429 and 5xx included, shows the route is there, and the calls' own
    retries deal with a busy server."""
    try:
        async with http.post(
            url, data=_PREFLIGHT_BODY, timeout=aiohttp.ClientTimeout(total=limit)
        ) as response:
            status, reason = response.status, response.reason
            content = await response.read()
    except TRANSPORT_ERRORS as exc:
        return RouteProblem("no_answer", transport_failure(exc, limit, setting))
    said = _terminal_safe(_error_message(content, reason))
    if status in (401, 403):
        return RouteProblem("refused", f"HTTP {status}: {said}")
    if status in (404, 405, 501):
        return RouteProblem("no_route", f"HTTP {status} ({said})")
    return None


def _terminal_safe(text: str, limit: int = 200) -> str:
    """A server's words on one line, without control characters, at most ``limit`` long."""
    flat = "".join(c if c.isprintable() else " " for c in text).strip()
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _text(content: bytes) -> str:
    return content.decode("utf-8", errors="replace")


def _error_message(content: bytes, reason: str | None) -> str:
    try:
        err = json.loads(content).get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    except (ValueError, AttributeError, RecursionError):
        pass
    return _text(content)[:200] or reason or ""
