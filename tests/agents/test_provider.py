from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime
from email.utils import format_datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentgauge.agents.base import TransientError
from agentgauge.agents.provider import (
    ProviderExhausted,
    RetryPolicy,
    parse_retry_after,
    provider_call,
    trial_in_flight,
    with_retries,
)


def drive(policy: RetryPolicy, failures: list[TransientError]) -> tuple[object, list[float]]:
    waits: list[float] = []
    pending = list(failures)

    async def attempt() -> str:
        if pending:
            raise pending.pop(0)
        return "ok"

    async def sleep(s: float) -> None:
        waits.append(s)

    out = asyncio.run(with_retries(attempt, policy, rng=random.Random(1), sleep=sleep))
    return out, waits


def test_retries_until_success_with_growing_jittered_waits() -> None:
    policy = RetryPolicy(max_retries=5, base_delay=1.0, max_delay=100.0)
    out, waits = drive(policy, [TransientError("429")] * 3)
    assert out == ("ok", 4)
    # Attempt n waits base * 2^n scaled into [0.5, 1]: [0.5,1], [1,2], [2,4].
    for n, w in enumerate(waits):
        assert 0.5 * 2**n <= w <= 2**n


def test_retry_after_is_honoured_and_capped() -> None:
    policy = RetryPolicy(max_retries=3, base_delay=1.0, max_delay=10.0)
    _, waits = drive(
        policy, [TransientError("429", retry_after=7.0), TransientError("429", retry_after=99.0)]
    )
    assert waits == [7.0, 10.0]


def test_retries_are_bounded() -> None:
    policy = RetryPolicy(max_retries=2, base_delay=0.0)
    with pytest.raises(ProviderExhausted, match="gave up after 3 attempts: HTTP 503") as info:
        drive(policy, [TransientError("HTTP 503")] * 10)
    assert info.value.attempts == 3


def test_other_errors_are_not_retried() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise KeyError("bug")

    with pytest.raises(KeyError):
        asyncio.run(with_retries(attempt, RetryPolicy()))
    assert calls == 1


@given(st.integers(0, 30), st.floats(0.001, 10), st.floats(0.01, 60))
def test_delay_never_exceeds_the_cap(attempt: int, base: float, cap: float) -> None:
    policy = RetryPolicy(base_delay=base, max_delay=cap)
    d = policy.delay(attempt, random.Random(attempt), None)
    assert 0 <= d <= cap


def test_parse_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    later = format_datetime(datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC), usegmt=True)
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(30.0)
    assert parse_retry_after("-5") == 0.0


def test_in_flight_marker_counts_and_notes_interruptions() -> None:
    async def main() -> tuple[int, int, bool]:
        with trial_in_flight() as marker:
            with provider_call():
                assert marker.count == 1

            async def stuck() -> None:
                with provider_call():
                    await asyncio.sleep(10)

            task = asyncio.create_task(stuck())
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            return marker.count, marker.calls, marker.interrupted

    assert asyncio.run(main()) == (0, 2, True)
    with provider_call():  # outside a trial: a no-op
        pass
