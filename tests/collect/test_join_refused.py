"""Spans that cannot join their stored trial are refused for that trace and said; the
receiver goes on. A chat span of an ``http:`` service's trace with a negative token
count was an InputError out of the request handler (a 500 and the spans lost), and
one held until the trial was stored raised out of the receiver's sweep, which ended
``agentgauge collect``; two calls of 2^62 tokens made sqlite3 raise OverflowError."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.collect.test_join_spans import http_trial, paris_trace
from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import TRACE, request, span

from agentgauge.collect.join import join_spans
from agentgauge.importers.otlp import Span
from agentgauge.store import Store


def _chat(span_id: str, tokens: int) -> dict[str, Any]:
    return span(
        span_id,
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "m",
            "gen_ai.usage.input_tokens": tokens,
            "gen_ai.usage.output_tokens": 1,
        },
        parent="00000000000000ff",
    )


def _with_tokens(spans: list[Span], tokens: int) -> list[Span]:
    import dataclasses

    return [
        dataclasses.replace(s, attributes={**s.attributes, "gen_ai.usage.input_tokens": tokens})
        if s.name.startswith("chat")
        else s
        for s in spans
    ]


@pytest.mark.parametrize(
    ("tokens", "said"),
    [
        (-5, "'gen_ai.usage.input_tokens': expected an integer >= 0, got -5"),
        (2**62 + 5, "input tokens add up past 9223372036854775807"),
    ],
)
def test_a_trace_that_cannot_join_leaves_its_trial_as_it_was(
    tmp_path: Path, tokens: int, said: str
) -> None:
    spans = _with_tokens(paris_trace(), tokens)
    with Store(tmp_path / "s.db") as db:
        http_trial(db, spans[0].trace_id)
        (before,) = db.trials("r")
        done = join_spans(db, spans, {})
        (after,) = db.trials("r")
    assert done.joined == {} and done.rest == []
    ((lost, why),) = done.refused
    assert len(lost) == len(spans)
    assert why.startswith(f"trace {spans[0].trace_id}: not joined to its trial: ")
    assert said in why
    assert after == before


def _store_with_http_trial(db: Path) -> None:
    with Store(db) as s:
        http_trial(s, TRACE)


def test_the_receiver_refuses_the_span_and_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    _store_with_http_trial(db)
    c = Collector(db)
    try:
        status, body = c.post(
            json.dumps(request(_chat("00000000000000b1", -5))).encode(), "application/json"
        )
        assert status == 200
        answer = json.loads(body)
        assert answer["partialSuccess"]["rejectedSpans"] == "1"
        assert "not joined to its trial" in answer["partialSuccess"]["errorMessage"]
        # A good span of the same trace joins after it.
        status, body = c.post(
            json.dumps(request(_chat("00000000000000b2", 7))).encode(), "application/json"
        )
        assert (status, json.loads(body)) == (200, {})
    finally:
        code, _out, err = c.stop()
    assert code == 0, err
    assert "Traceback" not in err
    with Store(db) as s:
        (trial,) = s.trials("r")
    assert trial.input_tokens == 7 and trial.model_calls == 1


def test_a_held_span_that_cannot_join_is_said_and_the_receiver_lives(tmp_path: Path) -> None:
    """The service's spans came before its trial was stored (held), and one is bad."""
    db = tmp_path / "live.db"
    Store(db).close()
    c = Collector(db)
    try:
        status, _ = c.post(
            json.dumps(request(_chat("00000000000000b1", -5))).encode(), "application/json"
        )
        assert status == 200  # held: its trace is open, no trial to join yet
        _store_with_http_trial(db)
        time.sleep(2.5)  # the receiver's sweep looks for the trial every second
        assert c.proc.poll() is None, c.proc.stderr.read() if c.proc.stderr else ""
    finally:
        code, _out, err = c.stop()
    assert code == 0, err
    assert "Traceback" not in err
    assert "not kept: trace " + TRACE + ": not joined to its trial" in err
