"""The judge's connection to a model: any OpenAI-compatible chat-completions endpoint.

One synchronous `JudgeClient.complete` per judge call, with bounded retries for
transient failures (HTTP 429 and 5xx, connection errors, request timeouts). The
waits are the agents' `RetryPolicy` with ``base_delay=backoff_s`` and
``max_delay=max_backoff_s``: attempt ``n`` (0-based) waits
``min(max_backoff_s, backoff_s · 2**n)`` scaled by a uniform factor in [0.5, 1]
("equal jitter", AWS Architecture Blog, *Exponential Backoff and Jitter*, 2015);
a ``Retry-After`` header (seconds or an HTTP date, `parse_retry_after`) replaces
the delay (capped at ``max_backoff_s``). When the retries are spent the call
raises `JudgeUnavailable`, which the rubric grader records as an ``unknown``
verdict — a provider outage is never read as the agent's failure.

HTTP is aiohttp's, as for the agents (`agentgauge.agents.http`: one session,
keep-alive, the environment's proxy, one timeout per request). The interface
stays synchronous, because graders are: the client owns one event loop on a
background thread, started with the first request and stopped by `close`, and
each request is handed to it (`asyncio.run_coroutine_threadsafe`) while the
caller waits. That works from any thread, including one whose own event loop is
running (a grader called from the harness), where ``asyncio.run`` would refuse,
and it keeps the connection alive from one call to the next, which a new loop
per call could not. The retry loop and its waits stay in the caller's thread.

``response_format: {"type": "json_object"}`` is requested when
``JudgeConfig.json_mode`` is on, but never relied upon: a server that rejects
it (HTTP 400 naming ``response_format``) is asked again without it, and the
parser accepts JSON however it arrives.

Judge spend is priced by the same rule as the agents' model calls
(`agentgauge.agents.prices`: ``JudgeConfig.prices``, then ``AGENTGAUGE_PRICES``,
then genai-prices' bundled snapshot); a model none of them knows has an
unknown cost (``None``), never 0 (docs/metrics.md, *cost of pass*).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from agentgauge.agents.prices import Price, PriceTable, Usage, default_prices
from agentgauge.agents.provider import RetryPolicy, parse_retry_after

if TYPE_CHECKING:
    import aiohttp

    from agentgauge.agents.openai import RouteProblem

# The HTTP modules (`agentgauge.agents.http`, aiohttp: a tenth of a second to import) are
# imported by a client when it is made: every grading loads this module, few use a judge.

__all__ = [
    "JudgeClient",
    "JudgeConfig",
    "JudgeReply",
    "JudgeUnavailable",
    "judge_cost_usd",
    "judge_price_table",
]

#: A price override: ``(input, output)`` USD per 1M tokens, or a `Price`.
PriceOverride = tuple[float, float] | Sequence[float] | Price | Mapping[str, float]


def judge_price_table(
    prices: Mapping[str, PriceOverride] | None = None, *, base: PriceTable | None = None
) -> PriceTable:
    """``base`` (default: a `PriceTable` over genai-prices) with ``prices`` entries laid over it."""
    table = PriceTable() if base is None else base
    if prices:
        table.update({name: _as_override(value) for name, value in prices.items()})
    return table


def _as_override(value: PriceOverride) -> Price | Mapping[str, Any]:
    # ``(input, output)`` pairs (tuples in Python, lists from YAML) become `Price`s;
    # mappings go through the table's own validation.
    if isinstance(value, Price | Mapping):
        return value
    pair = list(value)
    if len(pair) != 2:
        raise ValueError(f"a judge price is (input, output) USD per 1M tokens, got {value!r}")
    return {"input": pair[0], "output": pair[1]}


def _token_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _price_names(model: str) -> tuple[str, str]:
    """The model as given, then without a ``provider/`` prefix (``openai/gpt-4o``)."""
    return model, model.rsplit("/", 1)[-1]


def judge_cost_usd(
    model: str,
    input_tokens: int | None,
    output_tokens: int | None,
    prices: Mapping[str, PriceOverride] | None = None,
) -> float | None:
    """Cost of one judge call: (in · p_in + out · p_out) / 1e6, or ``None`` when unknown.

    ``prices`` entries override genai-prices' snapshot. The model is looked up as
    given, then without a ``provider/`` prefix (then each without a date stamp,
    `PriceTable.lookup`). Unknown model or missing token counts give ``None``:
    a missing price is never counted as 0.
    """
    return judge_price_table(prices).cost(_price_names(model), input_tokens, output_tokens)


class JudgeUnavailable(Exception):
    """The judge endpoint failed (retries spent, a non-retryable HTTP error, or a body
    that is not a chat completion), with what the failed call is known to have cost.

    A call whose every attempt was refused (no connection, or an HTTP error status)
    delivered no completion and is taken as unbilled: cost 0, no tokens. A call with an
    attempt whose request was sent and whose reply was never read (a timeout, a
    connection cut mid-reply) may have been billed for a completion nobody saw: its
    cost and tokens are unknown (``None``). A reply that is not a chat completion but
    reports its token counts is priced from them.
    """

    def __init__(
        self,
        message: str,
        *,
        attempts: int,
        cost_usd: float | None = 0.0,
        input_tokens: int | None = 0,
        output_tokens: int | None = 0,
        price_source: str | None = "no completion delivered: not billed",
        cached_tokens: int | None = 0,
        reasoning_tokens: int | None = 0,
    ) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.cost_usd = cost_usd
        """What the call cost: 0 when nothing was billed, ``None`` when unknown."""
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.cached_tokens = cached_tokens
        """Of ``input_tokens``, those read from the prompt cache (as `JudgeReply`'s)."""
        self.reasoning_tokens = reasoning_tokens
        self.price_source = price_source
        """Where ``cost_usd`` came from, or why it is unknown (``unknown: ...``)."""


#: `JudgeConfig.max_tokens` by default: room for a reasoning judge's thinking before
#: its verdict (at 512 a reasoning model's answers were mostly cut off, unknown), and
#: within the context of small local models (a server refuses a request whose prompt
#: and limit together exceed it).
DEFAULT_JUDGE_MAX_TOKENS = 2048


@dataclass
class JudgeConfig:
    """Where the judge lives and how to call it."""

    base_url: str
    """Base URL of the OpenAI-compatible API, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str
    """The judge model's name; recorded with every grade."""
    api_key_env: str | None = "OPENAI_API_KEY"
    """Environment variable holding the API key (read at call time; unset = no header)."""
    timeout_s: float = 60.0
    """Per-request timeout in seconds."""
    max_retries: int = 4
    """Retries after the first attempt for 429, 5xx, connection errors and timeouts."""
    backoff_s: float = 0.5
    """Base of the exponential backoff."""
    max_backoff_s: float = 20.0
    """Cap on one wait, ``Retry-After`` included."""
    temperature: float = 0.0
    """Sampling temperature (0: as repeatable as the server allows)."""
    max_tokens: int = DEFAULT_JUDGE_MAX_TOKENS
    """Upper bound on the judge's answer length, its reasoning included (a reasoning
    model's ``<think>`` block or ``reasoning_content``): an answer cut off there is
    ``unknown:truncated``. A cap, not a length: a judge that answers in 100 tokens
    costs the same under any limit."""
    json_mode: bool = True
    """Request ``response_format: json_object`` (dropped if the server rejects it)."""
    prices: dict[str, PriceOverride] = field(default_factory=dict)
    """Overrides of the shared price table: ``{model: (USD per 1M input, per 1M output)}``."""
    seed: int | None = None
    """Passed to servers that support a sampling seed."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers (some gateways want their own, e.g. ``api-key``)."""


@dataclass
class JudgeReply:
    """One judge answer with what it cost."""

    text: str | None
    """The message content (``None`` when the server sent none)."""
    model: str
    """The model the server says answered (falls back to the configured one)."""
    finish_reason: str | None
    """``stop``, ``length``, ``content_filter``..."""
    refusal: str | None
    """The message's ``refusal`` field, for servers that report refusals apart."""
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    """The call's cost, priced with the configured model's entry; ``None`` when unknown:
    no price, no token counts, or an earlier attempt of the call was sent and its reply
    never read (it may have been billed; the tokens are then ``None`` too)."""
    attempts: int
    """HTTP attempts made (retries + 1)."""
    latency_s: float
    """Wall-clock seconds, retries and waits included."""
    price_source: str | None = None
    """Where ``cost_usd`` came from (`agentgauge.agents.prices.Quote.source`), or why it
    is unknown (``unknown: ...``)."""
    cached_tokens: int | None = None
    """Of ``input_tokens``, those read from the prompt cache
    (``usage.prompt_tokens_details.cached_tokens``); ``None`` when not reported."""
    reasoning_tokens: int | None = None
    """Of ``output_tokens``, the reasoning ones
    (``usage.completion_tokens_details.reasoning_tokens``); ``None`` when not reported."""
    thinking: str | None = None
    """The reasoning a model wrote before its answer: a leading ``<think>...</think>``
    block, or the text up to a ``</think>`` whose ``<think>`` was in the prompt
    (DeepSeek-R1, Qwen3, QwQ through an OpenAI-compatible server), set apart from
    ``text`` (`agentgauge.graders.judge_prompt.split_thinking`); else the message's
    ``reasoning_content`` (vLLM, DeepSeek's API) or ``reasoning`` (OpenRouter) field,
    which is never read as the answer; ``None`` without any."""


def _failed(message: str, attempts: int, unread: str | None) -> JudgeUnavailable:
    """A failed call's error: unbilled (cost 0) unless an attempt's request was sent and
    its reply not read (``unread`` says why), when its cost and tokens are unknown."""
    if unread is None:
        return JudgeUnavailable(message, attempts=attempts)
    from agentgauge.agents.http import unread_cost

    return _unknown_cost(message, attempts, unread_cost(unread, answered=False))


def _unknown_cost(message: str, attempts: int, source: str) -> JudgeUnavailable:
    return JudgeUnavailable(
        message,
        attempts=attempts,
        cost_usd=None,
        input_tokens=None,
        output_tokens=None,
        price_source=source,
        cached_tokens=None,
        reasoning_tokens=None,
    )


T = TypeVar("T")


class _Background:
    """An event loop on a daemon thread and the aiohttp session that lives on it.

    Holds no reference to its `JudgeClient`, so a client that is dropped without
    `JudgeClient.close` can still be collected, and its finalizer stops the thread.
    """

    def __init__(self, base_url: str, timeout_s: float) -> None:
        self._base_url = base_url
        self._timeout_s = timeout_s
        self._session: aiohttp.ClientSession | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="agentgauge-judge-http", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the background loop and wait for its result."""
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # interrupted while waiting (^C): do not leave it running
            raise

    async def post(
        self, url: str, body: bytes, headers: dict[str, str]
    ) -> tuple[int, str | None, bytes]:
        """POST ``body``; the status, the ``Retry-After`` header and the body."""
        if self._session is None:  # made here: a session belongs to the loop it is made in
            from agentgauge.agents.http import new_session

            self._session = new_session(
                self._base_url, {"Content-Type": "application/json"}, self._timeout_s
            )
        async with self._session.post(url, data=body, headers=headers) as response:
            return response.status, response.headers.get("Retry-After"), await response.read()

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()

    def close(self) -> None:
        if self._loop.is_closed():
            return
        if threading.current_thread() is self._thread:  # only from a finalizer run there
            self._loop.call_soon(self._loop.stop)
            return
        self.run(self._close_session())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class JudgeClient:
    """Calls the judge endpoint; reusable across criteria and trials (keeps the connection).

    Safe to call from several threads at once. `close` (or a ``with`` block) stops
    its background thread and closes the connections; a client that is never
    closed is closed when it is garbage-collected or when the interpreter exits.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self._rng = rng or random.Random(0)
        self._json_mode = config.json_mode
        self._retry = RetryPolicy(
            max_retries=config.max_retries,
            base_delay=config.backoff_s,
            max_delay=config.max_backoff_s,
        )
        self._prices = judge_price_table(config.prices, base=default_prices())
        from agentgauge.agents.http import check_base_url

        # A base URL, key or header that cannot be used fails here, before any grading.
        check_base_url(config.base_url, "judge base URL")
        self._url = config.base_url.rstrip("/") + "/chat/completions"
        self._headers()
        self._background: _Background | None = None
        self._lock = threading.Lock()
        # Set when a call spent its retries without ever connecting (refused, no such
        # host, a connect that timed out) and no call before had an answer: the next
        # calls fail at once instead of each waiting out the same retries, which made
        # grading a run against a dead judge take hours. A judge that has answered is
        # there: a call of it that times out (a slow criterion) is that call's failure,
        # not a reason to stop asking, which left every later criterion unknown.
        self._unreachable: str | None = None
        self._answered = False

    @property
    def unreachable(self) -> str | None:
        """Why the endpoint is taken to be down — a call spent its retries without ever
        connecting, and no call has had an answer — else ``None``. A re-grade stops on
        it rather than store a grade version of nothing but unknowns."""
        return self._unreachable

    @property
    def route(self) -> str:
        """The URL every call is sent to: ``{base_url}/chat/completions``."""
        return self._url

    async def preflight(self) -> RouteProblem | None:
        """Check once, before a run, that the chat route answers: ``None`` if it does,
        else why not. The `agentgauge.agents.openai.check_chat_route` rule of the
        ``openai:`` agents' preflight (one request whose body is not JSON: no model runs,
        nothing is billed), sent with this judge's key and headers from the caller's
        event loop, within ``timeout_s`` (at most 30 s). Touches none of the client's
        state: a judge that fails later is that call's failure, as without a check."""
        from agentgauge.agents.http import new_session
        from agentgauge.agents.openai import PREFLIGHT_TIMEOUT_S, check_chat_route

        limit = min(self.config.timeout_s, PREFLIGHT_TIMEOUT_S)
        headers = {"Content-Type": "application/json", **self._headers()}
        http = new_session(self.config.base_url, headers, limit)
        try:
            return await check_chat_route(http, self._url, limit, "timeout_s")
        finally:
            await http.close()

    def close(self) -> None:
        with self._lock:
            background, self._background = self._background, None
        if background is not None:
            background.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, body: bytes) -> tuple[int, str | None, bytes]:
        with self._lock:
            if self._background is None:
                background = _Background(self.config.base_url, self.config.timeout_s)
                weakref.finalize(self, background.close)
                self._background = background
            background = self._background
        return background.run(background.post(self._url, body, self._headers()))

    def _headers(self) -> dict[str, str]:
        from agentgauge.agents.http import check_header

        env = self.config.api_key_env
        key = os.environ.get(env) if env else None
        if key and env:
            check_header(key, env)
        for name, value in self.config.headers.items():
            check_header(f"{name}{value}", f"judge header {name!r}")
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        return {**self.config.headers, **auth}

    def _body(self, messages: list[dict[str, str]]) -> bytes:
        cfg = self.config
        body: dict[str, Any] = {
            "model": cfg.model,
            "messages": messages,
            "temperature": cfg.temperature,
            "max_tokens": cfg.max_tokens,
        }
        if cfg.seed is not None:
            body["seed"] = cfg.seed
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        return json.dumps(body).encode()

    def complete(self, messages: list[dict[str, str]]) -> JudgeReply:
        """Send one chat-completions request; retry transient failures.

        Raises `JudgeUnavailable` when retries are spent, on a non-retryable
        HTTP status (401, 404, ...), or when the body is not a chat completion.
        """
        if self._unreachable is not None:
            raise JudgeUnavailable(
                f"judge endpoint unreachable (not tried again after: {self._unreachable})",
                attempts=0,
            )
        from agentgauge.agents.http import TRANSPORT_ERRORS, sent_unread, transport_failure

        start = time.monotonic()
        attempts = 0
        retries = 0
        last = ""
        connected = False  # whether any attempt of this call got as far as a connection
        unread: str | None = None  # an attempt sent whose reply was not read, and why
        while True:
            attempts += 1
            retry_after: str | None = None
            try:
                status, retry_after, content = self._post(self._body(messages))
            except TRANSPORT_ERRORS as exc:
                last = transport_failure(exc, self.config.timeout_s, "timeout_s")
                if sent_unread(exc):  # else refused before a byte of the request was sent
                    connected = True
                    unread = last
            else:
                self._answered = connected = True
                if status == 200:
                    return self._reply(content, attempts, time.monotonic() - start, unread)
                text = content.decode("utf-8", errors="replace")
                last = f"HTTP {status}: {text[:200]}"
                if status == 400 and self._json_mode and "response_format" in text:
                    # The server does not support JSON mode: ask again without it,
                    # without spending a retry (the prompt still asks for JSON).
                    self._json_mode = False
                    continue
                if status != 429 and status < 500:
                    raise _failed(f"judge endpoint refused: {last}", attempts, unread)
            if retries >= self._retry.max_retries:
                if not connected and not self._answered:
                    self._unreachable = last
                raise _failed(
                    f"judge endpoint failed after {attempts} attempts: {last}", attempts, unread
                )
            hinted = parse_retry_after(retry_after)
            self._sleep(self._retry.delay(retries, self._rng, hinted))
            retries += 1

    def _reply(
        self, content: bytes, attempts: int, latency: float, unread: str | None
    ) -> JudgeReply:
        # Every shape is checked before use: a list for ``usage`` or a string for the
        # message once ended a whole `agentgauge grade` with an AttributeError, where
        # a broken reply is one criterion's unknown (docs/judge.md).
        try:
            body = json.loads(content)
        except (ValueError, RecursionError):
            body = None
        usage = body.get("usage") if isinstance(body, dict) else None
        # A usage that is not an object gives no token counts: the cost is unknown.
        usage = usage if isinstance(usage, dict) else {}
        tin = usage.get("prompt_tokens")
        tout = usage.get("completion_tokens")
        tin = tin if _token_count(tin) else None
        tout = tout if _token_count(tout) else None
        # Imported here, as the HTTP modules are (a reply means they are loaded).
        from agentgauge.agents.openai import _detail

        # OpenAI's usage details, read as the `openai:` adapter reads them: cached
        # prompt tokens bill lower, reasoning ones as output (docs/running-agents.md,
        # "Prices"). Before, the judge billed every prompt token as uncached.
        cached = _detail(usage, "prompt_tokens_details")
        cached = cached.get("cached_tokens") if cached is not None else None
        cached = cached if _token_count(cached) else None
        reasoning = _detail(usage, "completion_tokens_details")
        reasoning = reasoning.get("reasoning_tokens") if reasoning is not None else None
        reasoning = reasoning if _token_count(reasoning) else None
        # Price by the configured name: servers often answer with a dated snapshot
        # ("gpt-4o-2024-08-06") that the user's price file does not list.
        quote = self._prices.quote(
            _price_names(self.config.model),
            None if tin is None or tout is None else Usage(tin, tout, cached, None, reasoning),
        )
        choices = body.get("choices") if isinstance(body, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(choice, dict) or not (message is None or isinstance(message, dict)):
            failure = (
                "judge endpoint sent a body that is not a chat completion: "
                f"{content.decode('utf-8', errors='replace')[:200]!r}"
            )
            if unread is not None:
                raise _failed(failure, attempts, unread)
            if tin is None or tout is None:
                # An answer of 200 may have been billed; without token counts, for what
                # is unknown (a reply with no ``choices`` but a ``usage`` is priced).
                from agentgauge.agents.http import billed_unknown

                raise _unknown_cost(
                    failure, attempts, billed_unknown("it answered HTTP 200 with no token counts")
                )
            raise JudgeUnavailable(
                failure,
                attempts=attempts,
                cost_usd=quote.usd,
                input_tokens=tin,
                output_tokens=tout,
                price_source=quote.source,
                cached_tokens=cached,
                reasoning_tokens=reasoning,
            )
        message = message or {}
        content_text = message.get("content")
        from agentgauge.graders.judge_prompt import split_thinking

        # A reasoning model's thinking is not its answer: read apart, so a draft verdict
        # in it does not make the answer ambiguous. Servers that parse it out themselves
        # send it in a field of its own, kept for a human as a <think> block is.
        thinking, content_text = split_thinking(
            content_text if isinstance(content_text, str) else None
        )
        if thinking is None:
            for name in ("reasoning_content", "reasoning"):
                apart = message.get(name)
                if isinstance(apart, str) and apart.strip():
                    thinking = apart.strip()
                    break
        refusal = message.get("refusal")
        finish = choice.get("finish_reason")
        model = body.get("model")
        reply = JudgeReply(
            text=content_text if isinstance(content_text, str) else None,
            model=model if isinstance(model, str) and model else self.config.model,
            finish_reason=finish if isinstance(finish, str) else None,
            refusal=refusal if isinstance(refusal, str) else None,
            input_tokens=tin,
            output_tokens=tout,
            cost_usd=quote.usd,
            attempts=attempts,
            latency_s=latency,
            price_source=quote.source,
            cached_tokens=cached,
            reasoning_tokens=reasoning,
            thinking=thinking,
        )
        if unread is not None:
            # An earlier attempt was sent and its reply never read (a timeout): the
            # endpoint may have billed a completion for it too, so the call's cost and
            # tokens are unknown, as for a call that failed so (`_failed`). Before, the
            # answer's own cost was recorded as the call's: half of two billed answers.
            from agentgauge.agents.http import unread_cost

            reply.cost_usd = None
            reply.price_source = unread_cost(unread, answered=True)
            reply.input_tokens = reply.output_tokens = None
            reply.cached_tokens = reply.reasoning_tokens = None
        return reply
