"""``collect``'s summary counts the spans it stored. Spans answered 200 while their trace
was open and dropped later (the trace named no task, when its trial was built at
shutdown or after ``--settle``) were counted as if stored: "stored 0 trials from 2
spans", then stderr said those 2 spans were not stored."""

from __future__ import annotations

import json
from pathlib import Path

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.store import Store

NO_TASK = {"gen_ai.operation.name": "chat"}


def _json(doc: dict[str, object]) -> bytes:
    return json.dumps(doc).encode()


def test_an_open_trace_that_becomes_no_trial_is_not_counted_as_stored(
    collector: Collector,
) -> None:
    stored = request(
        span(
            "00000000000000a1",
            "r",
            {"agentgauge.task.id": "t", "agentgauge.outcome.success": True},
            trace="a" * 32,
        )
    )
    assert collector.post(_json(stored), "application/json") == (200, b"{}")
    open_trace = request(
        span("00000000000000b1", "chat", NO_TASK, parent="00000000000000bf", trace="b" * 32),
        span("00000000000000b2", "chat", NO_TASK, parent="00000000000000bf", trace="b" * 32),
    )
    assert collector.post(_json(open_trace), "application/json") == (200, b"{}")  # held
    code, out, err = collector.stop()
    assert code == 0
    assert f"trace {'b' * 32} names no task" in err and "(2 spans not stored)" in err
    assert out.splitlines() == [
        "stored 1 trials from 1 spans in run live",
        "2 spans accepted while their traces were open were not stored (stderr says why)",
    ]


def test_a_settled_trace_that_becomes_no_trial_is_not_counted_as_stored(tmp_path: Path) -> None:
    collector = Collector(tmp_path / "live.db", "--settle", "0.1")
    try:
        ended = request(
            span("00000000000000c1", "invoke_agent", NO_TASK, trace="c" * 32),
            span("00000000000000c2", "chat", NO_TASK, parent="00000000000000c1", trace="c" * 32),
        )
        assert collector.post(_json(ended), "application/json") == (200, b"{}")  # waits
        code, out, err = collector.stop()
    finally:
        collector.kill()
    assert code == 0
    # Built when its wait was over (or at shutdown, whichever came first), and refused.
    assert f"trace {'c' * 32} names no task" in err
    assert "(2 earlier spans of it dropped too)" in err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "2 spans accepted while their traces were open were not stored (stderr says why)",
    ]
    with Store(tmp_path / "live.db", readonly=True) as db:
        assert db.trials("live") == []


def test_held_spans_of_a_trial_the_store_refuses_are_not_counted_as_stored(
    tmp_path: Path,
) -> None:
    """A second receiver on the run holds an open trace that names trial 0, which the
    first stored meanwhile: written at shutdown, the store refuses it."""
    db = tmp_path / "live.db"
    first, second = Collector(db), Collector(db)
    named = {"agentgauge.task.id": "t", "agentgauge.trial": 0}
    try:
        child = span("00000000000000d2", "chat", named, parent="00000000000000d1", trace="d" * 32)
        assert second.post(_json(request(child)), "application/json") == (200, b"{}")  # held
        root = span("00000000000000e1", "r", {**named, "agentgauge.outcome.success": True})
        assert first.post(_json(request(root)), "application/json") == (200, b"{}")
        assert first.stop()[0] == 0
        code, out, err = second.stop()
    finally:
        first.kill()
        second.kill()
    assert code == 0
    assert "trial 0 of task 't' (variant 'base') is already stored" in err, err
    assert out.splitlines() == [
        "stored 0 trials from 0 spans in run live",
        "1 spans accepted while their traces were open were not stored (stderr says why)",
    ]
