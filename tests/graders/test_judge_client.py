"""The judge client's retries and prices come from the shared provider helpers."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from agentgauge.graders.judge_client import (
    JudgeClient,
    JudgeConfig,
    JudgeUnavailable,
    judge_cost_usd,
)
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion

MESSAGES = [{"role": "user", "content": "judge this"}]


@contextmanager
def client_for(replies: list[Reply], sleeps: list[float], **kw: Any) -> Iterator[JudgeClient]:
    """A client of a loopback server that sends ``replies`` in order."""
    queue = iter(replies)
    with (
        OpenAIServer(lambda request: next(queue)) as server,
        JudgeClient(config(base_url=server.base_url, **kw), sleep=sleeps.append) as client,
    ):
        yield client


def config(base_url: str = "http://judge.invalid/v1", **kw: Any) -> JudgeConfig:
    return JudgeConfig(base_url=base_url, model="judge-x", api_key_env=None, **kw)


def test_retry_after_as_http_date_is_honoured() -> None:
    # 100 s from now as an HTTP date (RFC 9110 10.2.3), under a 1000 s cap. Our own
    # backoff would wait at most backoff_s = 0.5 s, so anything near 100 s is the header.
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=100), usegmt=True)
    sleeps: list[float] = []
    replies = [
        Reply(503, {"error": "busy"}, headers={"Retry-After": when}),
        Reply(200, completion("ok", model="judge-x")),
    ]
    with client_for(replies, sleeps, max_backoff_s=1000.0) as client:
        reply = client.complete(MESSAGES)
    assert reply.attempts == 2
    assert len(sleeps) == 1 and 50.0 <= sleeps[0] <= 100.0


def test_retry_after_is_capped_and_retries_are_bounded() -> None:
    sleeps: list[float] = []
    replies = [Reply(429, {}, headers={"Retry-After": "600"})] * 3
    with (
        client_for(replies, sleeps, max_retries=2, max_backoff_s=3.0) as client,
        pytest.raises(JudgeUnavailable, match="3 attempts") as err,
    ):
        client.complete(MESSAGES)
    assert err.value.attempts == 3
    assert sleeps == [3.0, 3.0]  # min(max_backoff_s = 3, 600)


def test_prices_from_config_yaml_lists_and_env_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "prices.json"
    env_file.write_text(json.dumps({"judge-x": {"input": 1.0, "output": 1.0}}))
    monkeypatch.setenv("AGENTGAUGE_PRICES", str(env_file))
    body = completion("ok", model="judge-x", prompt_tokens=1000, completion_tokens=500)

    # The shared table with AGENTGAUGE_PRICES: (1000·1 + 500·1) / 1e6 = 1.5e-3.
    with client_for([Reply(200, body)], []) as client:
        assert client.complete(MESSAGES).cost_usd == pytest.approx(1.5e-3)
    # JudgeConfig.prices wins, given as a YAML list: (1000·2 + 500·4) / 1e6 = 4e-3.
    with client_for([Reply(200, body)], [], prices={"judge-x": [2.0, 4.0]}) as client:
        assert client.complete(MESSAGES).cost_usd == pytest.approx(4e-3)


def test_unknown_price_is_none_and_names_are_normalised() -> None:
    assert judge_cost_usd("nobody/unknown-model", 10, 10) is None
    assert judge_cost_usd("gpt-4o-mini", None, 10) is None
    # provider prefix dropped: claude-sonnet-4 at (3, 15) USD per 1M, (1e6·3 + 0·15) / 1e6 = 3.
    assert judge_cost_usd("anthropic/claude-sonnet-4", 1_000_000, 0) == pytest.approx(3.0)
    # prefix and date stamp dropped: gpt-4o at (2.50, 10), (1e6·2.5) / 1e6 = 2.5.
    assert judge_cost_usd("openai/gpt-4o-2024-08-06", 1_000_000, 0) == pytest.approx(2.5)
    # gpt-4o-mini must not be billed as gpt-4o: 1e6 output tokens · 0.60 / 1e6.
    assert judge_cost_usd("gpt-4o-mini", 0, 1_000_000) == pytest.approx(0.60)


def test_bad_price_override_is_rejected() -> None:
    with pytest.raises(ValueError, match="input, output"):
        JudgeClient(config(prices={"judge-x": (1.0, 2.0, 3.0)}))


def test_works_inside_a_running_event_loop_and_close_stops_its_thread() -> None:
    # Graders are synchronous, and may be called from a thread whose event loop is
    # running (the harness's): the client's own loop runs on its own thread.
    replies = [Reply(200, completion("ok", model="judge-x"))] * 2
    before = set(threading.enumerate())
    with client_for(replies, []) as client:

        async def grade() -> list[str | None]:
            return [client.complete(MESSAGES).text for _ in range(2)]

        assert asyncio.run(grade()) == ["ok", "ok"]
        (thread,) = [
            t
            for t in threading.enumerate()
            if t not in before and t.name == "agentgauge-judge-http"
        ]
        assert thread.is_alive()
    assert not thread.is_alive()


def test_a_request_timeout_is_retried_and_named() -> None:
    sleeps: list[float] = []
    replies = [Reply(200, completion("late"), delay_s=2.0)] * 2
    with (
        client_for(replies, sleeps, timeout_s=0.2, max_retries=1) as client,
        pytest.raises(JudgeUnavailable) as err,
    ):
        client.complete(MESSAGES)
    assert str(err.value) == (
        "judge endpoint failed after 2 attempts: request timed out after 0.2 s (timeout_s)"
    )
    assert len(sleeps) == 1


def test_a_judge_nobody_answers_is_given_up_on_after_one_call() -> None:
    # A port nothing listens on: the first call spends its retries, the next ones fail
    # at once instead of each waiting out the same retries (hours over a whole run).
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    base = f"http://127.0.0.1:{port}/v1"
    with JudgeClient(config(base_url=base, max_retries=2), sleep=sleeps.append) as client:
        with pytest.raises(JudgeUnavailable, match="after 3 attempts") as first:
            client.complete(MESSAGES)
        assert first.value.attempts == 3 and len(sleeps) == 2
        with pytest.raises(JudgeUnavailable, match="unreachable") as again:
            client.complete(MESSAGES)
        assert again.value.attempts == 0 and len(sleeps) == 2


def test_a_judge_that_answered_is_asked_again_after_a_call_times_out() -> None:
    # Before, one slow criterion (its attempts all timed out) turned the judge off for
    # the rest of the grading ("not tried again after: request timed out"), though it
    # had answered the call before and would answer the next.
    sleeps: list[float] = []
    late = Reply(200, completion("late"), delay_s=2.0)
    replies = [Reply(200, completion("before")), late, late, Reply(200, completion("after"))]
    with client_for(replies, sleeps, timeout_s=0.3, max_retries=1) as client:
        assert client.complete(MESSAGES).text == "before"
        with pytest.raises(JudgeUnavailable, match="after 2 attempts: request timed out"):
            client.complete(MESSAGES)
        assert client.complete(MESSAGES).text == "after"


def test_a_judge_that_never_answers_in_time_is_still_asked_on_every_call() -> None:
    # It accepts the connection: a server that is there but slow, not a dead address.
    sleeps: list[float] = []
    late = Reply(200, completion("late"), delay_s=2.0)
    replies = [late, Reply(200, completion("in time"))]
    with client_for(replies, sleeps, timeout_s=0.3, max_retries=0) as client:
        with pytest.raises(JudgeUnavailable, match="timed out"):
            client.complete(MESSAGES)
        assert client.complete(MESSAGES).text == "in time"


def test_what_a_failed_call_cost_is_zero_when_refused_and_unknown_when_unread() -> None:
    # Prices (1, 2) USD per 1M tokens: 100 in, 20 out = (100 · 1 + 20 · 2)/1e6 = 1.4e-4.
    prices = {"judge-x": (1.0, 2.0)}
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    cases: list[tuple[Reply, Any, tuple[int | None, int | None], str]] = [
        # an error status: no completion delivered, not billed
        (Reply(503, {"error": "busy"}), 0.0, (0, 0), "no completion delivered: not billed"),
        # sent, and the reply never read: maybe billed, for what nobody knows
        (
            Reply(200, completion("late"), delay_s=2.0),
            None,
            (None, None),
            "unknown: a request was sent and its reply not read (request timed out",
        ),
        # a 200 that is no chat completion: priced from its usage when it reports one
        (Reply(200, {"choices": [], "usage": usage}), pytest.approx(1.4e-4), (100, 20), "user"),
        (
            Reply(200, {"choices": [{"message": "hello"}]}),
            None,
            (None, None),
            "unknown: it answered HTTP 200 with no token counts",
        ),
    ]
    for reply, cost, tokens, source in cases:
        with (
            client_for([reply], [], timeout_s=0.3, max_retries=0, prices=prices) as client,
            pytest.raises(JudgeUnavailable) as err,
        ):
            client.complete(MESSAGES)
        failed = err.value
        assert failed.cost_usd == cost, reply
        assert (failed.input_tokens, failed.output_tokens) == tokens, reply
        assert (failed.price_source or "").startswith(source), failed.price_source


def test_a_call_answered_after_an_attempt_timed_out_has_an_unknown_cost() -> None:
    # The first attempt's request was sent and its reply never read: the endpoint may
    # have billed that completion too. Before, the call recorded the answer's own cost,
    # (10 · 1 + 5 · 2)/1e6 = 2e-5, half of what two billed answers cost.
    prices = {"judge-x": (1.0, 2.0)}
    replies = [Reply(200, completion("late"), delay_s=2.0), Reply(200, completion("on time"))]
    with client_for(replies, [], timeout_s=0.3, max_retries=1, prices=prices) as client:
        reply = client.complete(MESSAGES)
    assert reply.text == "on time" and reply.attempts == 2
    assert reply.cost_usd is None
    assert (reply.input_tokens, reply.output_tokens) == (None, None)
    assert reply.price_source == (
        "unknown: an attempt before the one that answered was sent and its reply not read "
        "(request timed out after 0.3 s (timeout_s)); what the endpoint billed for it is "
        "unknown"
    )
    # An attempt refused with an error status delivered nothing: the answer is the cost.
    replies = [Reply(503, {"error": "busy"}), Reply(200, completion("on time"))]
    with client_for(replies, [], max_retries=1, prices=prices) as client:
        reply = client.complete(MESSAGES)
    assert reply.cost_usd == pytest.approx(2e-5)
    assert (reply.input_tokens, reply.output_tokens) == (10, 5)


def test_a_busy_judge_is_still_tried_on_every_call() -> None:
    # An endpoint that answers (503) is there: each call gets its own retries.
    sleeps: list[float] = []
    replies = [Reply(503, {"error": "busy"})] * 2 + [Reply(200, completion("ok"))]
    with client_for(replies, sleeps, max_retries=1) as client:
        with pytest.raises(JudgeUnavailable, match="after 2 attempts"):
            client.complete(MESSAGES)
        assert client.complete(MESSAGES).attempts == 1


def test_cached_prompt_tokens_are_billed_at_the_cache_price_and_recorded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The judge read only prompt_tokens and completion_tokens: 8000 cached prompt tokens
    # were billed as uncached, 2.4 times the spend (as the agents' calls are priced).
    monkeypatch.delenv("AGENTGAUGE_PRICES", raising=False)
    body = completion("ok", model="gpt-4.1-mini", prompt_tokens=10_000, completion_tokens=100)
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 8000}
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": 60}
    judge = JudgeConfig(base_url="", model="gpt-4.1-mini", api_key_env=None)
    with OpenAIServer(lambda request: Reply(200, body)) as server:
        judge.base_url = server.base_url
        with JudgeClient(judge) as client:
            reply = client.complete(MESSAGES)
    # gpt-4.1-mini per 1M tokens: $0.40 input, $0.10 cached input, $1.60 output (the
    # reasoning tokens are output tokens): 2000 · 0.40 + 8000 · 0.10 + 100 · 1.60 = 1760
    # per 1M, $0.00176 (the uncached price was $0.00416).
    assert reply.cost_usd == pytest.approx(0.00176)
    assert (reply.input_tokens, reply.output_tokens) == (10_000, 100)
    assert (reply.cached_tokens, reply.reasoning_tokens) == (8000, 60)
    assert reply.price_source is not None and "openai/gpt-4.1-mini" in reply.price_source
