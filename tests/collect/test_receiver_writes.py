"""`agentgauge collect` keeps writing after one trace's trial could not be: each trace
is its own client's, and a bad one must not cost the others theirs (the store's writer
writes nothing more once it failed, so the receiver answered 500 to every later request
and lost the open traces at shutdown)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.collect.test_receiver import Collector
from tests.importers.otlp_docs import request, span

from agentgauge.store import Store


def _root(trace: str, task: str, **attrs: Any) -> dict[str, Any]:
    return span(
        "00000000000000a1",
        "invoke_agent bot",
        {
            "gen_ai.operation.name": "invoke_agent",
            "agentgauge.task.id": task,
            "agentgauge.outcome.success": True,
            **attrs,
        },
        trace=trace,
    )


def _open_child(trace: str, task: str) -> dict[str, Any]:
    """A span of a trace whose root never comes: stored as incomplete at shutdown."""
    return span(
        "00000000000000b1",
        "chat m",
        {"gen_ai.operation.name": "chat", "agentgauge.task.id": task},
        parent="00000000000000a1",
        trace=trace,
    )


def _post(collector: Collector, *spans: dict[str, Any]) -> dict[str, Any]:
    status, body = collector.post(json.dumps(request(*spans)).encode(), "application/json")
    assert status == 200, body
    answer: dict[str, Any] = json.loads(body).get("partialSuccess", {})
    return answer


def _stored(db: Path) -> list[tuple[str, int]]:
    with Store(db, readonly=True) as store:
        return sorted((t.task_id, t.trial or 0) for t in store.trials("live"))


def test_a_trial_index_past_the_largest_is_refused_and_later_traces_are_stored(
    collector: Collector,
) -> None:
    # The index after 2^63 - 1, which the next trace of the task took, overflowed SQLite.
    huge = _post(collector, _root("8" * 32, "t1", **{"agentgauge.trial": 2**63 - 1}))
    assert huge["rejectedSpans"] == "1"
    assert "'agentgauge.trial': 9223372036854775807 is past the largest" in huge["errorMessage"]
    assert _post(collector, _root("9" * 32, "t1")) == {}
    assert _post(collector, _root("a" * 32, "other")) == {}
    assert _post(collector, _open_child("b" * 32, "t3")) == {}
    code, out, err = collector.stop()
    assert code == 0, err
    assert "Traceback" not in err
    assert "stored 3 trials" in out
    assert _stored(collector.db) == [("other", 0), ("t1", 0), ("t3", 0)]


def test_a_trial_the_store_refuses_costs_no_other_trace_its_trial(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    assert Collector(db).stop()[0] == 0  # the run, made by collect
    # A store that refuses one trial (as a full disk or a damaged page would).
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER doomed BEFORE INSERT ON trials WHEN NEW.task_id = 'doomed' "
            "BEGIN SELECT RAISE(ABORT, 'the store refuses it'); END"
        )
    collector = Collector(db)
    try:
        refused = _post(collector, _root("1" * 32, "doomed"))
        assert refused["rejectedSpans"] == "1"
        assert f"trace {'1' * 32}: not stored: " in refused["errorMessage"]
        assert "the store refuses it" in refused["errorMessage"]
        assert "writing stopped" not in refused["errorMessage"]  # it did not
        assert _post(collector, _root("2" * 32, "fine")) == {}
        assert _post(collector, _open_child("3" * 32, "open")) == {}
        # An open trace the store refuses at shutdown does not stop the others there.
        assert _post(collector, _open_child("4" * 32, "doomed")) == {}
        assert _post(collector, _open_child("5" * 32, "open too")) == {}
        code, out, err = collector.stop()
    finally:
        if collector.proc.poll() is None:
            collector.proc.kill()
            collector.proc.wait()
    assert code == 0, err
    assert "Traceback" not in err
    assert f"not stored at shutdown: trace {'4' * 32}: not stored: " in err
    assert "stored 3 trials" in out
    assert _stored(db) == [("fine", 0), ("open", 0), ("open too", 0)]
