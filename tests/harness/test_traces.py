"""`attach_trace`: an ``http:`` agent's spans, as events, join the trial that sent them.

The trial is run against a real agent service that reports nothing of its tool calls
in its reply; the calls arrive afterwards, keyed by the trace id the request carried
(as ``agentgauge collect`` hands them over), and a re-grade sees them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentgauge.graders.regrade import regrade
from agentgauge.harness.traces import attach_trace
from agentgauge.schema import MessageEvent, ToolCallEvent, ToolResultEvent
from agentgauge.store import Store
from agentgauge.testing.agent_service import CounterService, counter_tasks, run_against


def spans_of_add(n: int) -> list[ToolCallEvent | ToolResultEvent]:
    return [
        ToolCallEvent(name="add", arguments={"amount": n}, call_id="s1", t=0.1),
        ToolResultEvent(call_id="s1", name="add", content={"counter": n}, t=0.2),
    ]


def test_spans_join_their_trial_and_a_regrade_sees_the_calls(tmp_path: Path) -> None:
    (trial,) = run_against(CounterService(transcript=False), tmp_path, counter_tasks(4))
    assert trial.tool_calls == 0 and not trial.success  # the reply named no calls
    trace_id = trial.metadata["trace_id"]
    with Store(tmp_path / "s.db") as db:
        assert attach_trace(db, "0" * 32, spans_of_add(4)) is None  # no such trial
        assert attach_trace(db, trace_id.upper(), spans_of_add(4)) == 2
        assert attach_trace(db, trace_id, spans_of_add(4)) == 0  # the same spans again
        (stored,) = db.trials("r")
        assert stored.tool_calls == 1 and stored.metadata["trace_events"] == 2
        assert stored.metadata["trace_id"] == trace_id
        kinds = [type(e) for e in stored.events]
        assert kinds[-2:] == [ToolCallEvent, ToolResultEvent]
        assert isinstance(stored.events[0], MessageEvent)  # the transcript before is kept
        assert not stored.success  # grades change only when re-graded
        result = regrade(db, "r", activate=True)
        assert result.n_changed == 1
        (graded,) = db.trials("r")
    assert graded.success
    passed = {g.grader: g.passed for g in graded.grades}
    assert passed["tool_calls"] is True and passed["trajectory"] is True
    with sqlite3.connect(tmp_path / "s.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
