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
      follow_ups: ["Thanks. Also, what's the tracking number of my order W1030?",
                   "And what's the status of W1014?"]
    expectations:
      checkpoints:
        - calls:
            - name: cancel_pending_order
              arguments: {order_id: W1001, reason: no longer needed}
        - calls: [{name: get_order_details, arguments: {order_id: W1030}}]
        - calls: [{name: get_order_details, arguments: {order_id: W1014}}]
"""


async def _ends_in_turn(session: Any) -> None:
    """Three user turns, done right but where the trial number says otherwise:
    0 finishes; 1 raises in turn 2; 2 gets turn 1 wrong (another reason), turn 2
    right, and raises in turn 3; 3 ends in turn 3 in an infra error (the provider's
    retries ran out); 4 hangs in turn 2 until the timeout."""
    import asyncio

    from agentgauge.agents.base import TransientError

    n = session.trial
    reason = "ordered by mistake" if n == 2 else "no longer needed"
    await session.call_tool("cancel_pending_order", {"order_id": "W1001", "reason": reason})
    await session.say("Done, cancelled.")
    if n == 1:
        raise RuntimeError("crashed in turn 2")
    if n == 4:
        await asyncio.sleep(60)
    await session.call_tool("get_order_details", {"order_id": "W1030"})
    await session.say("Tracking 1Z1030.")
    if n == 2:
        raise RuntimeError("crashed in turn 3")
    if n == 3:
        raise TransientError("503 from the provider")
    await session.call_tool("get_order_details", {"order_id": "W1014"})
    await session.say("W1014 is pending.")


def _per_turn(cli: Any, source: str, *options: str) -> tuple[dict[str, Any], list[Any]]:
    import json

    code, out, err = cli("metrics", source, "--json", *options)
    assert code == 0, err
    (group,) = json.loads(out)["groups"]
    rows = [(r["turn"], r["pass_rate"], r["n_trials"], r["n_held"], r["n_unknown"])
            for r in group["turns"]["per_turn"]]  # fmt: skip
    return group, rows


#: Turn 1 held by trials 0, 1, 3, 4 (2 gave another reason): 4/5. Turn 2 held by 0,
#: 2, 3 (1 raised in it, 4 hung in it): 3/5. Turn 3 held by 0 alone (1 and 4 never
#: reached it, 2 and 3 ended in it): 1/5, the success rate.
_EVERY_TRIAL = [(1, 0.8, 5, 4, 0), (2, 0.6, 5, 3, 0), (3, 0.2, 5, 1, 0)]
#: --exclude-infra-errors drops trial 3, as from the success rate: 3/4, 2/4, 1/4.
_NO_INFRA = [(1, 0.75, 4, 3, 0), (2, 0.5, 4, 2, 0), (3, 0.25, 4, 1, 0)]


def test_trials_that_ended_in_an_error_count_the_turns_they_completed(
    cli: Any, tmp_path: Any
) -> None:
    # The turns an unfinished trial handed back are decided from its record; the turn
    # it ended in and every later one fail, as the success rate counts it a failure
    # (an infra error too, unless excluded, when it is dropped from both). They were
    # all unknown, whatever the trial had done.
    from agentgauge.harness.runner import run
    from agentgauge.suite import load_suite

    (tmp_path / "suite.yaml").write_text(_CRASH_SUITE)
    db = tmp_path / "s.db"
    suite = load_suite(tmp_path / "suite.yaml")
    run(suite, _ends_in_turn, trials=5, timeout=2, store=db, run_id="r", progress=False)
    group, rows = _per_turn(cli, f"{db}:r")
    assert rows == _EVERY_TRIAL
    assert group["success_rate"]["value"] == 0.2 and group["infra_errors"] == 1
    assert (group["turns"]["n_trials"], group["turns"]["n_ungraded"]) == (5, 0)
    assert "turns.n_ungraded" not in group["null_reasons"]
    group, rows = _per_turn(cli, f"{db}:r", "--exclude-infra-errors")
    assert rows == _NO_INFRA and group["success_rate"]["value"] == 0.25

    # What each trial's grade says, turn by turn: `agentgauge show` prints it.
    from agentgauge.store import Store

    with Store(db) as store:
        trials = {t.trial: t for t in store.trials("r")}
    assert [(t.status, t.error_kind, t.success) for _, t in sorted(trials.items())] == [
        ("completed", None, True),
        ("error", "agent", False),
        ("error", "agent", False),
        ("error", "infra", False),
        ("timeout", "agent", False),
    ]
    statuses = {
        n: [r["status"] for r in t.grades[0].evidence["checkpoints"]] for n, t in trials.items()
    }
    assert statuses[1] == ["passed", "checkpoint:unfinished", "checkpoint:turn_missing"]
    assert statuses[2] == ["checkpoint:calls", "passed", "checkpoint:unfinished"]
    grade = trials[2].grades[0]
    assert (grade.passed, grade.status, grade.score) == (False, "checkpoint:calls", 1 / 3)
    assert grade.evidence["ended_in_turn"] == 3
    code, out, err = cli("show", f"{db}:r", "--task", "ta", "--trial", "1")
    assert code == 0, err
    assert "turn 2: failed: the trial ended in an error in this turn" in out
    assert "turn 3: failed: the conversation ended before this turn" in out

    # Every trial raises in turn 1: each fails every turn (0%), as it fails the task.
    async def crash_always(session: Any) -> None:
        raise RuntimeError("crashed")

    run(suite, crash_always, trials=2, store=db, run_id="all", progress=False)
    group, rows = _per_turn(cli, f"{db}:all")
    assert rows == [(1, 0.0, 2, 0, 0), (2, 0.0, 2, 0, 0), (3, 0.0, 2, 0, 0)]


def test_a_regrade_and_a_parquet_export_give_the_run_s_per_turn_rates(
    cli: Any, tmp_path: Any
) -> None:
    from agentgauge.harness.runner import run
    from agentgauge.schema import Run
    from agentgauge.store import Store, utc_now
    from agentgauge.suite import load_suite

    (tmp_path / "suite.yaml").write_text(_CRASH_SUITE)
    db = tmp_path / "s.db"
    suite = load_suite(tmp_path / "suite.yaml")
    run(suite, _ends_in_turn, trials=5, timeout=2, store=db, run_id="r", progress=False)
    code, out, err = cli("grade", f"{db}:r", "--activate")
    assert code == 0, err
    assert (
        "left ungraded, as the run left them: 4 trials that ended in an error or a timeout "
        "(their outcomes stand; 4 of them checked on the checkpoints of the turns they "
        "completed, as the run checks them)"
    ) in " ".join(out.split())
    assert _per_turn(cli, f"{db}:r")[1] == _EVERY_TRIAL
    assert cli("export", f"{db}:r", "--parquet", str(tmp_path / "pq"))[0] == 0
    assert _per_turn(cli, str(tmp_path / "pq"))[1] == _EVERY_TRIAL
    assert _per_turn(cli, str(tmp_path / "pq"), "--exclude-infra-errors")[1] == _NO_INFRA

    # A run stored before unfinished trials were graded: they are unknown at every
    # turn (n_ungraded), never a pass or a fail from nothing, until a re-grade grades
    # them as a run now does.
    with Store(db) as store:
        trials = store.trials("r")
        with store.transaction():
            store.create_run(Run(run_id="old", created_at=utc_now()))
            store.add_tasks("old", suite.tasks)
        for t in trials:
            if t.status != "completed":
                t.grades = []
        store.add_trials("old", trials)
    group, rows = _per_turn(cli, f"{db}:old")
    assert rows == [(1, 1.0, 1, 1, 4), (2, 1.0, 1, 1, 4), (3, 1.0, 1, 1, 4)]
    assert group["turns"]["n_ungraded"] == 4
    assert group["null_reasons"]["turns.n_ungraded"].startswith(
        "4 trials of tasks with checkpoints ended in an error or a timeout without a "
        "checkpoints grade"
    )
    assert cli("grade", f"{db}:old", "--activate")[0] == 0
    group, rows = _per_turn(cli, f"{db}:old")
    assert rows == _EVERY_TRIAL and group["turns"]["n_ungraded"] == 0
    # The checkpoints grader named alone grades them the same.
    assert cli("grade", f"{db}:old", "--graders", "checkpoints", "--activate")[0] == 0
    assert _per_turn(cli, f"{db}:old")[1] == _EVERY_TRIAL


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
