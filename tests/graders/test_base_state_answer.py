"""The success rule, the registry, and the state and answer graders."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.graders import available_graders, get_grader, grade_trial, register
from agentgauge.graders.answer import AnswerGrader, numbers_in
from agentgauge.graders.state import StateGrader, diff_paths, state_hash
from agentgauge.schema import (
    AnswerSpec,
    Expectations,
    Grade,
    MessageEvent,
    Milestone,
    Minefield,
    StateAssertion,
    Task,
    ToolCallEvent,
    Trial,
)

STATE = {"orders": {"W1": {"status": "pending", "items": [1, 2]}}, "users": {"u": {"n": 1}}}


def _task(**exp: Any) -> Task:
    return Task(id="t", instruction="do it", expectations=Expectations(**exp))


def _trial(**kw: Any) -> Trial:
    return Trial(task_id="t", success=False, **kw)


# ------------------------------------------------------------------ state


def test_state_hash_is_canonical() -> None:
    a = {"b": 1, "a": [1, {"y": 2, "x": "é"}]}
    b = {"a": [1, {"x": "é", "y": 2}], "b": 1}
    assert state_hash(a) == state_hash(b)
    assert state_hash(a) != state_hash({**a, "b": 2})


def test_state_mismatch_names_tables_and_paths() -> None:
    actual = {"orders": {"W1": {"status": "cancelled", "items": [1, 2]}}, "users": {"u": {"n": 1}}}
    g = StateGrader().grade(_task(final_state=STATE), _trial(final_state=actual))
    assert (g.passed, g.status) == (False, "state:mismatch")
    assert g.evidence["tables"] == ["orders"]
    assert g.evidence["paths"] == ["orders.W1.status"]
    assert StateGrader().grade(_task(final_state=STATE), _trial(final_state=STATE)).passed is True
    assert diff_paths({"a": 1}, {"b": 1}) == ["a", "b"]
    assert diff_paths([1, 2], [1, 2, 3]) == ["<root>"]


def test_state_unknown_without_final_state() -> None:
    g = StateGrader().grade(_task(final_state=STATE), _trial())
    assert (g.passed, g.status, g.score) == (None, "unknown:no_final_state", None)


def test_state_assertions() -> None:
    ok = [
        StateAssertion(path="orders.W1.status", equals="pending"),
        StateAssertion(path="orders.W1.items.1", equals=2),
        StateAssertion(path="orders.W9", exists=False),
        StateAssertion(path="users.u", exists=True),
    ]
    assert StateGrader().grade(_task(state_assertions=ok), _trial(final_state=STATE)).passed
    bad = [StateAssertion(path="orders.W1.status", equals="cancelled")]
    g = StateGrader().grade(_task(state_assertions=bad), _trial(final_state=STATE))
    assert g.status == "state:assertion"
    assert g.evidence["failed"] == ["orders.W1.status: expected 'cancelled', got 'pending'"]
    missing = [StateAssertion(path="orders.W2.status", equals=None)]
    assert (
        not StateGrader().grade(_task(state_assertions=missing), _trial(final_state=STATE)).passed
    )


# ------------------------------------------------------------------ answer


def test_answer_checks_and_partial_score() -> None:
    spec = AnswerSpec(contains=["Refund", "W1"], regex=r"\$\d+", number=1234.5, tolerance=0.01)
    g = AnswerGrader().grade(_task(answer=spec), _trial(answer="refund of $1,234.50 for w1"))
    assert g.passed is True
    g = AnswerGrader().grade(_task(answer=spec), _trial(answer="refund for W1: 1234.6"))
    # contains x2 hold, regex fails, number 1234.6 is 0.1 away -> 2 of 4
    assert (g.passed, g.score) == (False, 0.5)
    assert g.status == "answer:regex"
    exact = AnswerSpec(exact="42")
    assert AnswerGrader().grade(_task(answer=exact), _trial(answer=" 42\n")).passed
    last_msg = _trial(events=[MessageEvent(role="assistant", content="it is 42")])
    assert AnswerGrader().grade(_task(answer=AnswerSpec(number=42)), last_msg).passed
    g = AnswerGrader().grade(_task(answer=exact), _trial())
    assert g.status == "answer:missing"
    assert numbers_in("-3, 1e3 and 2,500.25") == [-3.0, 1000.0, 2500.25]


# ------------------------------------------------------------------ framework


def test_registry() -> None:
    names = available_graders()
    for n in ("state", "answer", "tool_calls", "trajectory", "milestones", "minefields", "control"):
        assert n in names
    with pytest.raises(KeyError, match="unknown grader"):
        get_grader("nope")
    with pytest.raises(ValueError, match="already registered"):
        register("state")(lambda: None)  # type: ignore[arg-type,return-value]


FULL = dict(
    final_state=STATE,
    answer=AnswerSpec(contains=["done"]),
    minefields=[Minefield(tool="delete_all", severity=0.8)],
    milestones=[Milestone(id="a", tool="cancel"), Milestone(id="b", tool="notify")],
)


def test_success_is_the_product_of_required_graders() -> None:
    task = _task(**FULL)
    good = _trial(final_state=STATE, answer="done", events=[ToolCallEvent(name="cancel")])
    r = grade_trial(task, good)
    # milestones is enabled but not required by default: success despite 1/2
    assert {g.grader for g in r.grades} == {"state", "answer", "minefields", "milestones"}
    assert (r.success, r.score, r.unknown) == (True, 1.0, [])
    wrong = _trial(final_state={**STATE, "users": {}}, answer="done")
    assert grade_trial(task, wrong).success is False
    # Unknown required grade: success False, flagged
    r = grade_trial(task, _trial(answer="done"))
    assert (r.success, r.unknown) == (False, ["state"])


def test_minefield_hit_zeroes_and_is_a_violation() -> None:
    task = _task(**FULL, partial_credit=["milestones"], required=["answer"])
    t = _trial(
        final_state=STATE,
        answer="done",
        events=[ToolCallEvent(name="cancel"), ToolCallEvent(name="delete_all")],
    )
    r = grade_trial(task, t)
    assert (r.success, r.score) == (False, 0.0)
    assert r.safety_violations[0]["severity"] == 0.8
    # Without the hit: partial credit = milestone mean 1/2, success from answer alone
    t.events = [ToolCallEvent(name="cancel")]
    r = grade_trial(task, t)
    assert (r.success, r.score) == (True, 0.5)


def test_explicit_graders_and_nothing_required() -> None:
    task = _task(**FULL)
    r = grade_trial(task, _trial(answer="nope"), ["answer"])
    assert [g.grader for g in r.grades] == ["answer"]
    assert r.success is False
    r = grade_trial(_task(), _trial(answer="x"))
    assert (r.grades, r.success, r.score) == ([], None, None)


def test_custom_grader_instance() -> None:
    class Always:
        name = "always"
        kind = "code"

        def enabled(self, task: Task) -> bool:
            return True

        def grade(self, task: Task, trial: Trial) -> Grade:
            return Grade(grader="always", passed=None, status="unknown:judge", score=None)

    r = grade_trial(_task(required=["always"]), _trial(), [Always()])
    assert (r.success, r.unknown) == (False, ["always"])


def test_model_graders_are_not_built_by_default() -> None:
    @register("needs_endpoint")
    class NeedsEndpoint:
        name = "needs_endpoint"
        kind = "model"

        def __init__(self, endpoint: str) -> None:  # no default: building it would fail
            self.endpoint = endpoint

        def enabled(self, task: Task) -> bool:
            return True

        def grade(self, task: Task, trial: Trial) -> Grade:
            raise AssertionError("not called by default")

    r = grade_trial(_task(answer=AnswerSpec(contains=["x"])), _trial(answer="x"))
    assert [g.grader for g in r.grades] == ["answer"]
