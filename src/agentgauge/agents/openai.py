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

Every model call is recorded with its tokens, cost (from a `PriceTable`;
unknown price -> ``None``), latency (retries included) and attempts.

Errors, and whose they are:

- a tool call whose arguments are not a JSON object, or that names a tool the
  environment does not offer, is a `MalformedToolCall` (the agent's error)
  — unless ``on_malformed="feedback"``, which sends the error back to the model
  as the tool's result and lets it try again;
- 429, 408 and 5xx responses, connection errors and request timeouts are
  retried with backoff (`agentgauge.agents.provider`); when retries run out
  the trial is an infra error (`ProviderExhausted`);
- other 4xx responses and unparseable response bodies are `ProviderError`
  (infra: a misconfigured key or model name is not the agent's failure).

Text that accompanies tool calls in the same turn is kept in the model's
context but not sent to the user (the turn's action is the tool calls).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import ssl
import time
from typing import Any, Literal

import httpx

from agentgauge.agents._http import HttpPool, Reply
from agentgauge.agents.base import AgentError, Session, TransientError
from agentgauge.agents.prices import PriceTable, default_prices
from agentgauge.agents.provider import (
    ProviderError,
    RetryPolicy,
    parse_retry_after,
    provider_call,
    with_retries,
)

__all__ = ["DEFAULT_BASE_URL", "MalformedToolCall", "OpenAIAgent"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_RETRY_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))


class MalformedToolCall(AgentError):
    """The model asked for a tool call the harness cannot run as given."""


class OpenAIAgent:
    """An agent backed by a chat-completions endpoint.

    ``api_key`` defaults to the environment variable named by ``api_key_env``
    (``OPENAI_API_KEY``); without a key no ``Authorization`` header is sent,
    which is what local servers expect. ``params`` are extra request fields
    (``temperature``, ``max_tokens``, ...).
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
    ) -> None:
        if not model:
            raise ValueError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        self.model: str | None = model
        self.name = name or f"openai:{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip(
            "/"
        )
        self._api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.prices = prices or default_prices()
        self.retry = retry or RetryPolicy()
        self.request_timeout = request_timeout
        self.max_turns = max_turns
        self.on_malformed = on_malformed
        self.params = dict(params or {})
        self._pool: _ClientPool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._rng = random.Random()
        self._tools_json: tuple[list[dict[str, Any]], int, str] | None = None

    # ------------------------------------------------------------------ lifecycle

    def _clients(self) -> _ClientPool:
        # One pool per event loop: a client cannot outlive its loop, and
        # `agentgauge.run` starts a new loop per call.
        loop = asyncio.get_running_loop()
        if self._pool is None or self._pool_loop is not loop:
            headers = {"Content-Type": "application/json"}
            if self._api_key:
                headers["Authorization"] = f"Bearer {self._api_key}"
            self._pool = _ClientPool(self.base_url, headers, self.request_timeout)
            self._pool_loop = loop
        return self._pool

    async def aclose(self) -> None:
        """Close the HTTP connections (the harness calls this when a run ends)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.aclose()

    # ------------------------------------------------------------------ one call

    async def _post_once(self, body: bytes) -> dict[str, Any]:
        try:
            with provider_call():
                response = await self._clients().post("/chat/completions", body)
        except httpx.TransportError as exc:  # connect/read errors, resets, request timeouts
            raise TransientError(f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if status in _RETRY_STATUS:
            raise TransientError(
                f"HTTP {status}: {_error_message(response)}",
                retry_after=parse_retry_after(response.headers.get("retry-after")),
            )
        if status >= 400:
            raise ProviderError(f"HTTP {status}: {_error_message(response)}")
        try:
            data = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise ProviderError(
                f"malformed chat-completions response: {response.text[:200]!r}"
            ) from None
        if not isinstance(message, dict):
            raise ProviderError("malformed chat-completions response: message is not an object")
        return dict(data)

    async def complete(
        self, session: Session, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """One chat completion with retries; records the model call on the session."""
        body = self._body(messages, tools)
        start = time.monotonic()
        data, attempts = await with_retries(
            lambda: self._post_once(body), self.retry, rng=self._rng
        )
        usage = data.get("usage") or {}
        inp = _count(usage.get("prompt_tokens"))
        out = _count(usage.get("completion_tokens"))
        reported = data.get("model") if isinstance(data.get("model"), str) else None
        session.record_model_call(
            model=reported or self.model,
            input_tokens=inp,
            output_tokens=out,
            cost_usd=self.prices.cost((reported, self.model), inp, out),
            latency_s=time.monotonic() - start,
            attempts=attempts,
        )
        message: dict[str, Any] = data["choices"][0]["message"]
        return message

    def _body(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> bytes:
        """The request as JSON bytes. An environment offers the same tool list on
        every call of a trial, often several kilobytes of JSON schema: its JSON
        is made once per list and spliced in (environments do not change their
        tool lists while a trial runs)."""
        fixed = json.dumps({"model": self.model, **self.params})
        text = fixed[:-1] + ', "messages": ' + json.dumps(messages)
        if tools:
            cached = self._tools_json
            if cached is None or cached[0] is not tools or cached[1] != len(tools):
                cached = self._tools_json = (tools, len(tools), json.dumps(tools))
            text += ', "tools": ' + cached[2]
        return (text + "}").encode()

    # ------------------------------------------------------------------ the tool loop

    async def __call__(self, session: Session) -> None:
        tools = session.tools
        names = {t.get("function", {}).get("name") for t in tools}
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.policy},
            {"role": "user", "content": session.instruction},
        ]
        for _ in range(self.max_turns):
            message = await self.complete(session, messages, tools)
            calls = message.get("tool_calls") or []
            content = message.get("content")
            text = content if isinstance(content, str) else None
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
        raise AgentError(f"no end to the conversation after {self.max_turns} model calls")

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


class _ClientPool:
    """HTTP clients for one endpoint.

    ``http://`` endpoints (local servers, where speed matters) go through one
    lean client, `agentgauge.agents._http.HttpPool`. ``https://`` endpoints use httpx's own
    transport (TLS, proxies), as many single-connection clients, an idle one
    picked per request: httpcore 1.0's pool re-scans every connection for every
    queued request on each state change, which costs milliseconds per request at
    tens of concurrent requests, while a one-connection pool scans one entry.
    Those clients are created on demand, so there are never more than the peak
    number of concurrent requests (bounded by the harness's concurrency). The
    measurements behind both choices are in `agentgauge.agents._http`.
    """

    def __init__(self, base_url: str, headers: dict[str, str], timeout: float) -> None:
        self._base_url = base_url
        self._headers = headers
        self._timeout = timeout
        self._idle: list[httpx.AsyncClient] = []
        self._all: list[httpx.AsyncClient] = []
        self._native: HttpPool | None = None
        self._ssl: ssl.SSLContext | None = None
        if base_url.startswith("http://"):
            # Requests go straight to the lean client: httpx's request and response
            # objects alone would cost a fifth of a millisecond per call.
            url = httpx.URL(base_url)
            self._native = HttpPool()
            self._host, self._port = url.host, url.port or 80
            self._prefix = url.raw_path.rstrip(b"/").decode("ascii")
            lines = [f"{k}: {v}" for k, v in headers.items()]
            self._head_tail = "\r\n".join([f"Host: {url.netloc.decode('ascii')}", *lines])
        else:
            # Loading the CA bundle takes tens of milliseconds and httpx does it for
            # every client: do it once per pool.
            self._ssl = httpx.create_ssl_context()

    async def post(self, path: str, content: bytes) -> httpx.Response | Reply:
        """POST a JSON body (already encoded) to ``path`` under the base URL."""
        if self._native is not None:
            head = (
                f"POST {self._prefix}{path} HTTP/1.1\r\n{self._head_tail}\r\n"
                f"Content-Length: {len(content)}\r\n\r\n"
            ).encode("latin-1")
            return await self._native.request(
                self._host, self._port, head, content, timeout=self._timeout
            )
        if self._idle:
            client = self._idle.pop()
        else:
            client = httpx.AsyncClient(
                base_url=self._base_url,
                headers=self._headers,
                timeout=self._timeout,
                limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
                verify=self._ssl or True,
            )
            self._all.append(client)
        try:
            return await client.post(path, content=content)
        finally:
            self._idle.append(client)

    async def aclose(self) -> None:
        if self._native is not None:
            await self._native.aclose()
        for client in self._all:
            await client.aclose()
        self._all.clear()
        self._idle.clear()


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


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_message(response: httpx.Response | Reply) -> str:
    try:
        err = response.json().get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    except (ValueError, AttributeError):
        pass
    return response.text[:200] or response.reason_phrase
