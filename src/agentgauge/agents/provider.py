"""Calling a model provider: bounded retries, and telling the harness a call is in flight.

Two things every adapter that talks to a provider needs, kept in one place:

- `with_retries` retries transient failures (HTTP 429, 5xx, connection resets,
  request timeouts) with exponential backoff and jitter, honouring
  ``Retry-After``; when the retries are spent it raises `ProviderExhausted`, a
  `TransientError`, which the harness records as an *infra* error rather than
  the agent's failure (docs/metrics.md, "Infrastructure errors").
- `provider_call` marks the time a provider call is in flight, the waits before
  its retries included. When a trial's timeout fires during such a call, the
  harness blames the provider (``infra``, which ``--exclude-infra-errors`` can
  remove): a ``Retry-After: 10`` against a 15 s timeout is the provider's doing.
  When it fires while no call is in flight, the agent hung (``agent``).
  The marker lives in a context variable the harness sets per trial, so it
  needs no change to the `Session` protocol and works from threads started with
  `asyncio.to_thread` (which copy the context).

Backoff: attempt ``n`` (0-based) waits ``d = min(max_delay, base * 2**n)``
scaled by a uniform factor in ``[0.5, 1]`` ("equal jitter", AWS Architecture
Blog, *Exponential Backoff and Jitter*, 2015), so synchronized clients spread
out; a ``Retry-After`` header replaces ``d`` (capped at ``max_delay``).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

from agentgauge.agents.base import TransientError
from agentgauge.report.formats import counted

__all__ = [
    "InFlight",
    "ProviderError",
    "ProviderExhausted",
    "RetryPolicy",
    "parse_retry_after",
    "provider_call",
    "trial_in_flight",
    "with_retries",
]

T = TypeVar("T")


class ProviderError(Exception):
    """The provider refused the request for a reason retrying cannot fix (401, 404, a
    malformed response). Not the agent's fault: recorded as an infra error."""


class ProviderExhausted(TransientError):
    """Transient provider errors outlasted the retry budget (infra error)."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


@dataclass
class InFlight:
    """Count of provider calls in flight for one trial."""

    count: int = 0
    """Provider calls running now."""
    calls: int = 0
    """Provider requests started in the trial (each retry counts)."""
    interrupted: bool = False
    """A provider call was cancelled mid-flight (the trial's timeout fired during it)."""


_IN_FLIGHT: ContextVar[InFlight | None] = ContextVar("agentgauge_in_flight", default=None)


@contextmanager
def trial_in_flight() -> Iterator[InFlight]:
    """Used by the harness around one trial: a fresh in-flight counter for its context."""
    marker = InFlight()
    token = _IN_FLIGHT.set(marker)
    try:
        yield marker
    finally:
        _IN_FLIGHT.reset(token)


@contextmanager
def provider_call(*, request: bool = True) -> Iterator[None]:
    """Used by adapters around each provider request (a no-op outside a harness trial).

    ``request=False`` marks a wait the provider imposed (the backoff before a retry, a
    ``Retry-After``): that time is the provider's too, not the agent's."""
    marker = _IN_FLIGHT.get()
    if marker is None:
        yield
        return
    marker.count += 1
    if request:
        marker.calls += 1
    try:
        yield
    except asyncio.CancelledError:
        # The count drops as the cancellation unwinds; remember why it dropped.
        marker.interrupted = True
        raise
    finally:
        marker.count -= 1


@dataclass(frozen=True)
class RetryPolicy:
    """How transient provider errors are retried (bounded)."""

    max_retries: int = 5
    """Retries after the first attempt; 0 disables retrying."""
    base_delay: float = 0.5
    """Delay before the first retry, in seconds (doubles each time)."""
    max_delay: float = 30.0
    """Cap on any single wait, ``Retry-After`` included."""

    def delay(self, attempt: int, rng: random.Random, retry_after: float | None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (0-based)."""
        if retry_after is not None:
            return min(self.max_delay, max(0.0, retry_after))
        d = min(self.max_delay, self.base_delay * 2.0**attempt)
        return d * rng.uniform(0.5, 1.0)


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """``Retry-After`` as seconds: either delta-seconds or an HTTP date (RFC 9110 10.2.3)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds; returns ``(result, attempts)``.

    ``attempt`` raises `TransientError` for a retryable failure (with
    ``retry_after`` when the provider said how long to wait). Anything else
    propagates at once. When ``policy.max_retries`` retries have failed,
    `ProviderExhausted` is raised with the last error's message.
    """
    rng = rng or random.Random()
    n = 0
    while True:
        try:
            return await attempt(), n + 1
        except TransientError as exc:
            if n >= policy.max_retries:
                raise ProviderExhausted(
                    f"gave up after {counted(n + 1, 'attempt')}: {exc}", attempts=n + 1
                ) from exc
            with provider_call(request=False):
                await sleep(policy.delay(n, rng, exc.retry_after))
            n += 1
