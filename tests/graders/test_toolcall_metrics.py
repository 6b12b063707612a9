"""SPEC 5.5 tool-call metrics on hand-built grades."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.metrics.toolcalls import taxonomy, toolcall_metrics
from agentgauge.schema import Grade


def _g(
    grader: str, passed: bool | None, status: str = "passed", score: Any = None, **ev: Any
) -> Grade:
    if score is None and passed is not None:
        score = 1.0 if passed else 0.0
    return Grade(grader=grader, passed=passed, status=status, score=score, evidence=ev)


TRIALS = [
    [
        _g("tool_calls", True, category="simple"),
        _g("trajectory", True, mode="in_order", precision=0.5, recall=1.0),
    ],
    [
        _g("tool_calls", False, "value_error:string", category="simple"),
        _g("trajectory", False, "trajectory:in_order", mode="in_order", precision=1.0, recall=0.5),
        _g("milestones", False, "milestones:incomplete", score=0.875),
    ],
    [
        _g("tool_calls", False, "wrong_count", category="parallel", n_calls=1, n_expected=2),
        _g("trajectory", False, "trajectory:exact", mode="exact", precision=None, recall=0.0),
        _g("milestones", False, "milestones:incomplete", score=0.25),
        _g("minefields", False, "minefield:hit", max_severity=0.6),
    ],
    [_g("tool_calls", True, category="irrelevance"), _g("minefields", True)],
    [
        _g("tool_calls", False, "irrelevance:called", category="irrelevance"),
        _g("trajectory", None, "unknown:empty_reference", mode="in_order"),
        _g("rubric:polite", False, "failed"),
    ],
]
TASKS = ["A", "A", "B", "C", "C"]


def test_hand_computed() -> None:
    m = toolcall_metrics(TRIALS, task_ids=TASKS, tool_calls=[1, 2, 0, 0, 3])
    # 2 of 5 tool_calls grades pass; per task A 1/2, B 0, C 1/2 -> mean 1/3
    assert m["ast_match_rate"]["per_trial"] == pytest.approx(0.4)
    assert m["ast_match_rate"]["per_task"] == pytest.approx(1 / 3)
    assert m["error_types"] == {"irrelevance:called": 1, "value_error:string": 1, "wrong_count": 1}
    # wrong_count with 1 of 2 calls made is a partial resolution (tau-bench)
    assert m["error_classes"] == {"wrong_arguments": 1, "wrong_call": 1, "partial_resolution": 1}
    assert m["irrelevance_pass_rate"] == pytest.approx(0.5)
    # in_order: 1 pass of 2 known (the unknown one is left out); exact: 0 of 1
    assert m["trajectory_match_rate"] == {"exact": 0.0, "in_order": 0.5}
    assert m["action_precision"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2
    assert m["action_recall"] == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3
    assert m["milestone_score"] == pytest.approx(0.5625)  # (0.875 + 0.25) / 2
    assert m["minefield_hit_rate"] == pytest.approx(0.5)
    assert m["minefield_mean_severity"] == pytest.approx(0.6)
    assert m["tool_calls_per_trial"] == pytest.approx(1.2)
    assert m["turns_per_trial"] is None
    assert m["n_unknown"] == {"trajectory": 1}


def test_empty_and_dict_grades() -> None:
    m = toolcall_metrics([[], []])
    assert m["ast_match_rate"]["per_trial"] is None and m["milestone_score"] is None
    as_dicts = [[g.model_dump() for g in trial] for trial in TRIALS]
    assert toolcall_metrics(as_dicts, task_ids=TASKS) == toolcall_metrics(TRIALS, task_ids=TASKS)
    with pytest.raises(ValueError, match="task_ids"):
        toolcall_metrics(TRIALS, task_ids=["A"])


def test_failed_calls_nobody_counted_are_null_with_the_reason() -> None:
    # No tool_calls grade (the retail suite grades trajectories and milestones): the
    # failed calls were never counted, and "0 failed" or "wrong_call: 0" claimed they were.
    m = toolcall_metrics([[_g("milestones", True, score=1.0)], [_g("trajectory", False)]])
    assert m["ast_match_rate"]["per_trial"] is None
    assert m["error_types"] is None and m["error_classes"] is None
    why = "no trial has a tool_calls (AST) grade"
    ast = ("ast_match_rate", "error_types", "error_classes")
    assert {k: m["null_reasons"][k] for k in ast} == {k: why for k in ast}
    # Every other null figure says why too (a gate on one read "... is null").
    nulls = {k for k, v in m.items() if v is None}
    assert nulls <= set(m["null_reasons"]) and "minefield_hit_rate" in nulls
    assert m["null_reasons"]["minefield_hit_rate"] == "no trial has a decided minefields grade"
    unknown = toolcall_metrics([[_g("tool_calls", None, "unknown:no_reference")]])
    assert unknown["error_types"] is None
    assert unknown["null_reasons"]["error_types"] == "every tool_calls grade is unknown (1)"
    # Counted and none failed: an empty histogram and zero classes, no reason.
    passed = toolcall_metrics([[_g("tool_calls", True)]])
    assert passed["error_types"] == {} and passed["error_classes"]["wrong_call"] == 0
    assert not set(passed["null_reasons"]) & {"ast_match_rate", "error_types", "error_classes"}
    assert {k for k, v in passed.items() if v is None} == set(passed["null_reasons"])


def test_taxonomy() -> None:
    assert taxonomy("wrong_func_name") == "wrong_call"
    assert taxonomy("wrong_count", {"n_calls": 3, "n_expected": 2}) == "wrong_call"
    assert taxonomy("wrong_count", {"n_calls": 0, "n_expected": 2}) == "wrong_call"
    assert taxonomy("type_error:simple") == "wrong_arguments"


def test_mean_severity_reads_the_hits_when_the_grade_gives_no_max() -> None:
    """A hit of severity 0.5 in a grade without ``max_severity``: the mean severity is
    0.5, as safety's harmlessness (1 − 0.5) reads it, not 1.0; a hit naming no severity
    at all counts 1.0, in both."""
    from agentgauge.metrics.reliability import reliability_from_trials
    from agentgauge.schema import Trial

    hit = _g("minefields", False, "minefield:hit", hits=[{"tool": "f", "severity": 0.5}])
    assert toolcall_metrics([[hit], [_g("minefields", True)]])["minefield_mean_severity"] == 0.5
    bare = _g("minefields", False, "minefield:hit", hits=[{"tool": "f"}])
    # (0.5 + 1.0)/2 = 0.75 in both figures
    assert toolcall_metrics([[hit], [bare]])["minefield_mean_severity"] == pytest.approx(0.75)
    trials = [Trial(task_id="a", success=False, grades=[g]) for g in (hit, bare)]
    safe = reliability_from_trials(trials).safety
    assert safe is not None and safe.harmlessness == pytest.approx(0.25)


def test_the_per_task_rate_is_the_exact_mean_of_the_task_shares() -> None:
    # 1,1,1,2,2,2 of 3 per task: 9/18 is 0.5 exactly (the float mean of the rounded
    # shares read 0.49999999999999994, and a gate `min: 0.5` failed on it).
    tasks = [f"t{t}" for t, c in enumerate([1, 1, 1, 2, 2, 2]) for _ in range(3)]
    hits = [i < c for c in [1, 1, 1, 2, 2, 2] for i in range(3)]
    trials = [[_g("tool_calls", ok, "passed" if ok else "wrong_count")] for ok in hits]
    m = toolcall_metrics(trials, task_ids=tasks)
    assert m["ast_match_rate"]["per_task"] == 0.5
