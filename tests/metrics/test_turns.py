"""Pass rate per user turn on hand-built verdicts and trials."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agentgauge.api import metrics
from agentgauge.metrics.behaviour import behaviour_by_group
from agentgauge.metrics.outcome import success_interval
from agentgauge.metrics.turns import NO_CHECKPOINTS, pass_rate_by_turn, turns_from_trials
from agentgauge.report.explain import evidence_lines
from agentgauge.schema import Grade, Trial


def test_one_trial_per_task_gives_the_wilson_interval_of_the_count() -> None:
    # Turn 1 held in tasks a and b, not c: 2/3 = 0.667, Wilson 95% on (2, 3):
    # centre (2/3 + 1.96²/6) / (1 + 1.96²/3) = 0.5731, half-width 0.3654 -> [0.2077, 0.9385].
    (row,) = pass_rate_by_turn(["a", "b", "c"], [1, 1, 1], [True, True, False])
    assert row["turn"] == 1 and row["pass_rate"] == pytest.approx(2 / 3)
    assert row["ci_method"] == "wilson"
    assert row["ci95"] == pytest.approx([0.2077, 0.9385], abs=1e-4)
    assert (row["n_trials"], row["n_tasks"], row["n_held"], row["n_unknown"]) == (3, 3, 2, 0)


def test_tasks_weigh_the_same_whatever_their_trials() -> None:
    # Task a: 2 trials, turn 1 held in both, turn 2 in one. Task b: 1 trial, turn 1 held,
    # turn 2 failed. Turn 1: mean(2/2, 1/1) = 1. Turn 2: mean(1/2, 0/1) = 0.25 (pooled
    # it would be 1/3). One trial of b left turn 2 unknown.
    ids = ["a", "a", "b", "a", "a", "b"]
    turns = [1, 1, 1, 2, 2, 2]
    held = [True, True, True, True, False, False]
    first, second = pass_rate_by_turn(ids, turns, held, unknown_turn=[2])
    assert first["pass_rate"] == 1.0 and second["pass_rate"] == 0.25
    assert (second["n_trials"], second["n_tasks"], second["n_held"]) == (3, 2, 1)
    assert second["n_unknown"] == 1
    # The outcome metrics' interval rule, tasks as the clusters.
    ci, method, _ = success_interval(np.array([0.5, 0.0]), np.array([2, 1]), np.array([1, 0]), None)
    assert second["ci95"] == pytest.approx(list(ci or ())) and second["ci_method"] == method


def test_a_turn_of_only_unknown_checkpoints_has_no_rate_and_says_why() -> None:
    (row,) = pass_rate_by_turn([], [], [], unknown_turn=[3, 3])
    assert row["turn"] == 3 and row["pass_rate"] is None and row["n_unknown"] == 2
    assert row["reason"] == "every checkpoint of this turn is unknown"
    (one_task,) = pass_rate_by_turn(["a", "a"], [1, 1], [True, False])
    assert one_task["pass_rate"] == 0.5 and one_task["ci95"] is None and one_task["reason"]


def test_mismatched_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="one entry per checkpoint"):
        pass_rate_by_turn(["a"], [1, 2], [True])


def _graded(task: str, verdicts: list[str] | None, agent: str = "x") -> Trial:
    evidence: Any
    if verdicts is None:
        evidence = {"reason": "the trial recorded no turn boundaries (imported, or older)"}
    else:
        evidence = {"checkpoints": [{"turn": i + 1, "verdict": v} for i, v in enumerate(verdicts)]}
    return Trial(
        task_id=task,
        success=verdicts is not None and all(v == "pass" for v in verdicts),
        agent=agent,
        grades=[Grade(grader="checkpoints", passed=None, evidence=evidence)],
    )


def test_from_the_grades_of_trials_and_null_with_a_reason_without_checkpoints() -> None:
    trials = [
        _graded("a", ["pass", "fail"]),
        _graded("b", ["pass", "unknown"]),
        _graded("b", None),  # no turn record: counted, not rated
    ]
    out = turns_from_trials(trials)
    assert out is not None and out["n_trials"] == 3 and out["n_without_turns"] == 1
    first, second = out["per_turn"]
    assert first["pass_rate"] == 1.0 and first["n_tasks"] == 2
    assert second["pass_rate"] == 0.0 and second["n_unknown"] == 1 and second["n_tasks"] == 1
    assert turns_from_trials([Trial(task_id="a", success=True)]) is None
    section = behaviour_by_group([Trial(task_id="a", success=True)], ())[()]
    assert section["turns"] is None and section["null_reasons"]["turns"] == NO_CHECKPOINTS


def test_the_metrics_json_carries_the_section_per_group() -> None:
    trials = [_graded("a", ["pass", "fail"], "x"), _graded("a", ["fail", "fail"], "y")]
    groups = {g["agent"]: g for g in metrics(trials, by=("agent",)).to_dict()["groups"]}
    assert groups["x"]["turns"]["per_turn"][0]["pass_rate"] == 1.0
    assert groups["y"]["turns"]["per_turn"][0]["pass_rate"] == 0.0
    assert "turns" not in groups["x"]["null_reasons"]


def test_hostile_checkpoint_evidence_neither_crashes_nor_counts() -> None:
    # Grades arrive in imported JSONL too: evidence of any shape must be read safely.
    weird: list[Any] = [
        None,
        3,
        "x",
        {"turn": "1", "verdict": "pass"},
        {"turn": True, "verdict": "pass"},
        {"turn": 2, "verdict": "maybe", "events": ["a", 1], "state": [1],
         "calls": {"missing": [1, {"name": "x"}]}},
    ]  # fmt: skip
    grade = Grade(grader="checkpoints", passed=False, evidence={"checkpoints": weird})
    lines = evidence_lines(grade)  # the objects are shown as written; the rest skipped
    assert len(lines) == 3 and lines[-1].startswith("turn 2: maybe: missing call(s) x null")
    out = turns_from_trials([Trial(task_id="a", success=False, grades=[grade])])
    assert out is not None
    (row,) = out["per_turn"]
    assert row["turn"] == 2 and row["pass_rate"] is None and row["n_unknown"] == 1


_CRASH_SUITE = """\
name: turns-crash
tasks:
  - id: ta
    environment: retail
    instruction: "Ana Silva (ana.silva@example.com). Please cancel my order W1001."
    user_scenario:
      known: {email: ana.silva@example.com, order_id: W1001, reason: no longer needed}
      follow_ups: ["Thanks. Also, what's the tracking number of my order W1030?"]
    expectations:
      checkpoints:
        - calls:
            - name: cancel_pending_order
              arguments: {order_id: W1001, reason: no longer needed}
        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]
"""


def test_trials_that_raised_are_counted_at_every_turn_not_left_out(cli: Any, tmp_path: Any) -> None:
    # Turn 1 right in all 4 trials; the even ones raise in turn 2, so the harness
    # grades only the odd ones. The 2 ungraded trials count as unknown at turns 1 and
    # 2 (their facts cannot say how far they got), and n_ungraded says so.
    import json

    from agentgauge.harness.runner import run
    from agentgauge.suite import load_suite

    async def crash_in_turn2(session: Any) -> None:
        args = {"order_id": "W1001", "reason": "no longer needed"}
        await session.call_tool("cancel_pending_order", args)
        await session.say("Done, cancelled.")
        if session.trial % 2 == 0:
            raise RuntimeError("crashed in turn 2")
        await session.call_tool("get_order_details", {"order_id": "W1030"})
        await session.say("Tracking 1Z1030.")

    (tmp_path / "suite.yaml").write_text(_CRASH_SUITE)
    db = tmp_path / "s.db"
    suite = load_suite(tmp_path / "suite.yaml")
    run(suite, crash_in_turn2, trials=4, store=db, run_id="r", progress=False)
    code, out, err = cli("metrics", f"{db}:r", "--json")
    assert code == 0, err
    (group,) = json.loads(out)["groups"]
    turns = group["turns"]
    assert (turns["n_trials"], turns["n_ungraded"]) == (4, 2)
    assert [(r["turn"], r["n_trials"], r["n_held"], r["n_unknown"]) for r in turns["per_turn"]] == [
        (1, 2, 2, 2),
        (2, 2, 2, 2),
    ]
    assert group["null_reasons"]["turns.n_ungraded"].startswith(
        "2 trials of tasks with checkpoints ended before grading"
    )

    # Every trial raises: no grade shows the checkpoints, and the reason says what the
    # trials show rather than that no task declares any.
    async def crash_always(session: Any) -> None:
        raise RuntimeError("crashed")

    run(suite, crash_always, trials=2, store=db, run_id="all", progress=False)
    code, out, err = cli("metrics", f"{db}:all", "--json")
    assert code == 0, err
    (group,) = json.loads(out)["groups"]
    assert group["turns"] is None and group["null_reasons"]["turns"] == NO_CHECKPOINTS
    assert "none of its trials was graded" in NO_CHECKPOINTS


def test_both_reasons_are_given_when_trials_are_ungraded_and_checkpoints_left_out() -> None:
    # Task a: one trial graded at turn 1, one that ended before grading (unknown at
    # turn 1). Task b: a stored checkpoint at turn 0 (no user turn): left out. Each
    # reason explains its own part of the per-turn figures; one hid the other.
    bad = Grade(
        grader="checkpoints",
        passed=False,
        evidence={"checkpoints": [{"turn": 0, "verdict": "fail"}]},
    )
    trials = [
        _graded("a", ["pass"]),
        Trial(task_id="a", success=False, agent="x"),
        Trial(task_id="b", success=False, agent="x", grades=[bad]),
    ]
    (group,) = metrics(trials).to_dict()["groups"]
    assert (group["turns"]["n_ungraded"], group["turns"]["n_left_out"]) == (1, 1)
    reasons = group["null_reasons"]
    assert reasons["turns.n_ungraded"].startswith("1 trial of tasks with checkpoints ended")
    assert (
        reasons["turns.per_turn"]
        == "1 checkpoint names no user turn (below 1, or past 2^63): left out"
    )
