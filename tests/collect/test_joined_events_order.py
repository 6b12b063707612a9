"""Events added to a stored trial (an ``http:`` agent's spans joined by ``collect``)
take their place in time order, and the grades stored with the trial keep citing the
events they cited (`Store.append_events`)."""

from __future__ import annotations

from pathlib import Path

from agentgauge.schema import (
    Grade,
    MessageEvent,
    Run,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)
from agentgauge.store import Store, utc_now


def test_added_events_go_where_they_happened_and_grades_follow(tmp_path: Path) -> None:
    hit = ToolCallEvent(t=0.5, name="delete_all", arguments={}, call_id="d")
    trial = Trial(
        task_id="t",
        trial=0,
        success=False,
        events=[
            MessageEvent(t=0.0, role="user", content="clean up"),
            hit,
            MessageEvent(t=2.0, role="assistant", content="done"),
        ],
        grades=[
            Grade(
                grader="minefields",
                passed=False,
                evidence={"hits": [{"tool": "delete_all", "event_index": 1}]},
            )
        ],
    )
    with Store(tmp_path / "s.db") as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trials("r", [trial])
        (pk,) = db.trial_keys("r")
        _known, metadata = db.trial_events(pk)
        added = [
            ToolCallEvent(t=0.2, name="look", arguments={}, call_id="a"),
            ToolResultEvent(t=0.5, call_id="a", name="look", content="ok"),  # a tie: after
            ToolCallEvent(t=None, name="late", arguments={}, call_id="b"),  # no time: last
        ]
        with db.transaction():
            db.append_events(pk, added, metadata)
        (after,) = db.trials("r")
    assert [(e.type, e.t) for e in after.events] == [
        ("message", 0.0),
        ("tool_call", 0.2),
        ("tool_call", 0.5),
        ("tool_result", 0.5),
        ("message", 2.0),
        ("tool_call", None),
    ]
    (grade,) = after.grades
    assert isinstance(grade.evidence, dict)
    index = grade.evidence["hits"][0]["event_index"]
    assert after.events[index] == hit  # the hit it cited, now one place later
