"""The judge's connection to a model: any OpenAI-compatible chat-completions endpoint.

One synchronous `JudgeClient.complete` per judge call, over httpx, with bounded
retries for transient failures (HTTP 429 and 5xx, connection errors, request
timeouts). The waits are the agents' `RetryPolicy` with ``base_delay=backoff_s``
and ``max_delay=max_backoff_s``: attempt ``n`` (0-based) waits
``min(max_backoff_s, backoff_s · 2**n)`` scaled by a uniform factor in [0.5, 1]
("equal jitter", AWS Architecture Blog, *Exponential Backoff and Jitter*, 2015);
a ``Retry-After`` header (seconds or an HTTP date, `parse_retry_after`) replaces
the delay (capped at ``max_backoff_s``). The loop itself stays synchronous (the
judge runs inside synchronous graders). When the retries are spent the
call raises `JudgeUnavailable`, which the rubric grader records as an
``unknown`` verdict — a provider outage is never read as the agent's failure.

``response_format: {"type": "json_object"}`` is requested when
``JudgeConfig.json_mode`` is on, but never relied upon: a server that rejects
it (HTTP 400 naming ``response_format``) is asked again without it, and the
parser accepts JSON however it arrives.

Judge spend is priced from the same `PriceTable` as the agents' model calls
(`agentgauge.agents.prices`: the built-in list prices, extended by
``AGENTGAUGE_PRICES``), with ``JudgeConfig.prices`` as overrides; a model
missing from the table has an unknown cost (``None``), never 0 (SPEC 5.3).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from agentgauge.agents.prices import Price, PriceTable, default_prices
from agentgauge.agents.provider import RetryPolicy, parse_retry_after

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
    """``base`` (default: the built-in `PriceTable`) with ``prices`` entries laid over it."""
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

    ``prices`` entries override the built-in table. The model is looked up as
    given, then without a ``provider/`` prefix (then each without a date stamp,
    `PriceTable.lookup`). Unknown model or missing token counts give ``None``:
    a missing price is never counted as 0.
    """
    return judge_price_table(prices).cost(_price_names(model), input_tokens, output_tokens)


class JudgeUnavailable(Exception):
    """The judge endpoint failed (retries spent, or a non-retryable HTTP error)."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


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
    max_tokens: int = 512
    """Upper bound on the judge's answer length."""
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
    """Priced with the configured model's entry; ``None`` when unknown."""
    attempts: int
    """HTTP attempts made (retries + 1)."""
    latency_s: float
    """Wall-clock seconds, retries and waits included."""


class JudgeClient:
    """Calls the judge endpoint; reusable across criteria and trials (keeps the connection)."""

    def __init__(
        self,
        config: JudgeConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        transport: httpx.BaseTransport | None = None,
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
        self._http = httpx.Client(
            base_url=config.base_url.rstrip("/"), timeout=config.timeout_s, transport=transport
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> JudgeClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _headers(self) -> dict[str, str]:
        env = self.config.api_key_env
        key = os.environ.get(env) if env else None
        auth = {"Authorization": f"Bearer {key}"} if key else {}
        return {**self.config.headers, **auth}

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
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
        return body

    def _wait(self, attempt: int, response: httpx.Response | None) -> None:
        hinted = parse_retry_after(response.headers.get("retry-after")) if response else None
        self._sleep(self._retry.delay(attempt, self._rng, hinted))

    def complete(self, messages: list[dict[str, str]]) -> JudgeReply:
        """Send one chat-completions request; retry transient failures.

        Raises `JudgeUnavailable` when retries are spent, on a non-retryable
        HTTP status (401, 404, ...), or when the body is not a chat completion.
        """
        start = time.monotonic()
        attempts = 0
        retries = 0
        last = ""
        while True:
            attempts += 1
            response: httpx.Response | None = None
            try:
                response = self._http.post(
                    "/chat/completions", json=self._body(messages), headers=self._headers()
                )
            except (httpx.TransportError, httpx.TimeoutException) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                status = response.status_code
                if status == 200:
                    return self._reply(response, attempts, time.monotonic() - start)
                last = f"HTTP {status}: {response.text[:200]}"
                if status == 400 and self._json_mode and "response_format" in response.text:
                    # The server does not support JSON mode: ask again without it,
                    # without spending a retry (the prompt still asks for JSON).
                    self._json_mode = False
                    continue
                if status != 429 and status < 500:
                    raise JudgeUnavailable(f"judge endpoint refused: {last}", attempts=attempts)
            if retries >= self._retry.max_retries:
                raise JudgeUnavailable(
                    f"judge endpoint failed after {attempts} attempts: {last}", attempts=attempts
                )
            self._wait(retries, response)
            retries += 1

    def _reply(self, response: httpx.Response, attempts: int, latency: float) -> JudgeReply:
        try:
            body = response.json()
            choice = body["choices"][0]
            message = choice.get("message") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise JudgeUnavailable(
                "judge endpoint sent a body that is not a chat completion: "
                f"{response.text[:200]!r}",
                attempts=attempts,
            ) from None
        usage = body.get("usage") or {}
        tin = usage.get("prompt_tokens")
        tout = usage.get("completion_tokens")
        tin = tin if isinstance(tin, int) else None
        tout = tout if isinstance(tout, int) else None
        content = message.get("content")
        refusal = message.get("refusal")
        # Price by the configured name: servers often answer with a dated snapshot
        # ("gpt-4o-2024-08-06") that the price table does not list.
        cost = self._prices.cost(_price_names(self.config.model), tin, tout)
        return JudgeReply(
            text=content if isinstance(content, str) else None,
            model=str(body.get("model") or self.config.model),
            finish_reason=choice.get("finish_reason"),
            refusal=refusal if isinstance(refusal, str) else None,
            input_tokens=tin,
            output_tokens=tout,
            cost_usd=cost,
            attempts=attempts,
            latency_s=latency,
        )
