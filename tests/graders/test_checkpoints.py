"""The checkpoints grader on hand-built trials (BFCL V3 multi-turn: a state check and
a response check after every user turn), and its evidence as `agentgauge show` reads it."""

from __future__ import annotations

from typing import Any

from agentgauge.graders import grade_trial
from agentgauge.graders.checkpoints import CheckpointsGrader
from agentgauge.graders.trajectory import call_matcher, unmatched_reference
from agentgauge.report.explain import evidence_lines
from agentgauge.schema import (
    Checkpoint,
    Expectations,
    MessageEvent,
    StateAssertion,
    Task,
    ToolCallEvent,
    ToolCallSpec,
    Trial,
)

# A two-turn conversation: "ship W1 to Oxford St", then "actually, what's the status
# of W2?" (a lookup: it leaves no mark on the state).
SHIPPED_OXFORD = {"orders": {"W1": {"street": "Oxford St"}, "W2": {"status": "shipped"}}}
SHIPPED_HOME = {"orders": {"W1": {"street": "Home St"}, "W2": {"status": "shipped"}}}

TASK = Task(
    id="two_turns",
    instruction="Ship W1 to Oxford St.",
    expectations=Expectations(
        final_state=SHIPPED_OXFORD,
        checkpoints=[
            Checkpoint(
                calls=[
                    ToolCallSpec(name="find_customer", arguments={"email": "a@x"}),
                    ToolCallSpec(
                        name="set_address", arguments={"order": "W1", "street": "Oxford St"}
                    ),
                ],
                state_assertions=[StateAssertion(path="orders.W1.street", equals="Oxford St")],
            ),
            Checkpoint(
                calls=[ToolCallSpec(name="get_order", arguments={"order": "W2"})],
                state={"orders": SHIPPED_OXFORD["orders"]},
            ),
        ],
    ),
)


def _call(name: str, **args: Any) -> ToolCallEvent:
    return ToolCallEvent(name=name, arguments=args)


def _say(role: str, text: str) -> MessageEvent:
    return MessageEvent(role=role, content=text)


def _trial(
    turn1: list[Any],
    turn2: list[Any],
    *,
    state1: dict[str, Any] | None,
    final: dict[str, Any] | None,
    record: bool = True,
) -> Trial:
    events = [_say("user", "Ship W1 to Oxford St."), *turn1, _say("assistant", "Done.")]
    end = len(events)
    events += [_say("user", "What's the status of W2?"), *turn2, _say("assistant", "Shipped.")]
    turns = [{"end": end, "state": state1}] if record else None
    return Trial(task_id=TASK.id, success=False, events=events, final_state=final, turns=turns)


REFERENCE_ROUTE = (
    [_call("find_customer", email="a@x"), _call("set_address", order="W1", street="Oxford St")],
    [_call("get_order", order="W2")],
)


def grade(trial: Trial) -> Any:
    return CheckpointsGrader().grade(TASK, trial)


def test_the_reference_route_passes_every_turn() -> None:
    g = grade(_trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD))
    assert g.passed is True and g.status == "passed" and g.score == 1.0
    assert [c["verdict"] for c in g.evidence["checkpoints"]] == ["pass", "pass"]
    # Turn 1 is events 0..3 (user, 2 calls, the hand-back); turn 2 starts at 4.
    assert [c["events"] for c in g.evidence["checkpoints"]] == [[0, 4], [4, 7]]


def test_a_route_the_reference_did_not_take_passes_when_it_reaches_the_same_state() -> None:
    # Extra lookups before and between the required calls, and a wrong address that the
    # agent corrects within the turn: the state at the hand-back is the expected one.
    turn1 = [
        _call("get_customer_details", id="C1"),
        _call("find_customer", email="a@x"),
        _call("set_address", order="W1", street="Home St"),
        _call("set_address", order="W1", street="Oxford St"),
    ]
    turn2 = [_call("get_order", order="W1"), _call("get_order", order="W2")]
    g = grade(_trial(turn1, turn2, state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD))
    assert g.passed is True


def test_skipping_a_read_only_call_fails_the_response_check_naming_call_and_turn() -> None:
    # The agent answers turn 2 without looking W2 up: the state cannot tell.
    g = grade(_trial(REFERENCE_ROUTE[0], [], state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD))
    assert g.passed is False and g.status == "checkpoint:calls"
    assert g.score == 0.5  # 1 of 2 checkpoints held
    second = g.evidence["checkpoints"][1]
    assert second["turn"] == 2 and second["verdict"] == "fail"
    assert second["calls"]["missing"] == [{"name": "get_order", "arguments": {"order": "W2"}}]
    assert second["state"]["n_differences"] == 0  # the state half held
    lines = evidence_lines(g)
    assert lines[0] == "turn 1: held (events 0–3)"
    assert lines[1].startswith("turn 2: failed (events 4–5): missing call(s) get_order")
    assert '{"order": "W2"}' in lines[1] and "0 call(s) made in the turn" in lines[1]


def test_a_skipped_lookup_is_the_only_call_named_missing() -> None:
    # The turn skips find_customer and makes set_address with the reference's exact
    # arguments: only the lookup is missing (a longest common subsequence), not both.
    turn1 = [_call("set_address", order="W1", street="Oxford St")]
    g = grade(_trial(turn1, REFERENCE_ROUTE[1], state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD))
    first = g.evidence["checkpoints"][0]
    assert (g.status, first["verdict"]) == ("checkpoint:calls", "fail")
    assert first["calls"]["missing"] == [{"name": "find_customer", "arguments": {"email": "a@x"}}]
    line = evidence_lines(g)[0]
    assert line.startswith("turn 1: failed (events 0–2): missing call(s) find_customer")
    assert "set_address" not in line.split("missing call(s)")[1].split(";")[0]


def test_the_missing_calls_in_order_are_those_outside_a_longest_common_subsequence() -> None:
    match = call_matcher("exact")
    a, b, c = ("a", {}), ("b", {}), ("c", {})
    assert unmatched_reference([a, b, c], [a, b, c], "in_order", match) == []
    assert unmatched_reference([b, c], [a, b, c], "in_order", match) == [0]
    assert unmatched_reference([a, c], [a, b, c], "in_order", match) == [1]
    assert unmatched_reference([c, a], [a, b, c], "in_order", match) in ([1, 2], [0, 1])
    assert len(unmatched_reference([c, b, a], [a, b, c], "in_order", match)) == 2  # one kept
    assert unmatched_reference([], [a, b], "in_order", match) == [0, 1]
    # Out of order is no order: b after c keeps one of the two.
    assert len(unmatched_reference([a, c, b], [a, b, c], "in_order", match)) == 1


def test_a_wrong_state_at_turn_1_fails_though_the_final_state_is_right() -> None:
    trial = _trial(*REFERENCE_ROUTE, state1=SHIPPED_HOME, final=SHIPPED_OXFORD)
    g = grade(trial)
    assert g.passed is False and g.status == "checkpoint:state"
    first = g.evidence["checkpoints"][0]
    assert first["state"]["failed"] == ["orders.W1.street: expected 'Oxford St', got 'Home St'"]
    assert g.evidence["checkpoints"][1]["verdict"] == "pass"
    # The final-state grader alone passes it; the default success rule requires both.
    outcome = grade_trial(TASK, trial)
    by_name = {gr.grader: gr for gr in outcome.grades}
    assert by_name["state"].passed is True and outcome.success is False
    assert "assertion failed: " in evidence_lines(g)[0]


def test_a_named_table_is_compared_whole_and_others_not_at_all() -> None:
    # Turn 2 names the orders table: a changed W2 differs; an extra table does not count.
    extra = {**SHIPPED_OXFORD, "refunds": {"R1": {}}}
    ok = grade(_trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final=extra))
    assert ok.passed is True
    changed = {"orders": {"W1": {"street": "Oxford St"}, "W2": {"status": "cancelled"}}}
    bad = grade(_trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final=changed))
    second = bad.evidence["checkpoints"][1]
    assert second["status"] == "checkpoint:state"
    assert second["state"]["paths"] == ["orders.W2.status"]
    gone = grade(_trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final={"refunds": {}}))
    assert gone.evidence["checkpoints"][1]["state"]["paths"] == ["orders"]


def test_a_conversation_that_ended_early_fails_the_turns_it_never_reached() -> None:
    events = [_say("user", "Ship W1 to Oxford St."), *REFERENCE_ROUTE[0], _say("assistant", "x")]
    trial = Trial(
        task_id=TASK.id,
        success=False,
        events=events,
        final_state=SHIPPED_OXFORD,
        turns=[],  # recorded: no follow-up ever came
    )
    g = grade(trial)
    assert g.status == "checkpoint:turn_missing" and g.score == 0.5
    assert evidence_lines(g)[1] == "turn 2: failed: the conversation ended before this turn"


def test_without_a_turn_record_the_grade_is_unknown_not_a_verdict() -> None:
    g = grade(_trial(*REFERENCE_ROUTE, state1=None, final=SHIPPED_OXFORD, record=False))
    assert g.passed is None and g.score is None and g.status == "unknown:no_turn_record"


def test_turn_boundaries_without_states_check_the_calls_and_leave_the_state_unknown() -> None:
    # An importer that knows where turns ended but not the state then.
    skipped = grade(_trial(REFERENCE_ROUTE[0], [], state1=None, final=SHIPPED_OXFORD))
    assert skipped.passed is False and skipped.status == "checkpoint:calls"
    followed = grade(_trial(*REFERENCE_ROUTE, state1=None, final=SHIPPED_OXFORD))
    assert followed.passed is None and followed.status == "unknown:no_state_snapshot"
    first = followed.evidence["checkpoints"][0]
    assert first["verdict"] == "unknown" and first["state"] == {"recorded": False}
    assert evidence_lines(followed)[0] == (
        "turn 1: unknown (events 0–3): no state was recorded at the end of the turn"
    )


def test_a_malformed_turn_record_is_unknown_with_the_reason() -> None:
    for record, why in (
        ("x", "must be a list"),
        ([{"end": 99, "state": None}], "event index from 0 to 7"),
        ([{"end": True, "state": None}], "event index"),
        ([{"end": 2, "state": [1]}], "object or null"),
        ([{"end": 3, "state": None}, {"end": 2, "state": None}], "comes before"),
        ([{"end": 2, "stat": None}], "with 'end' and 'state'"),
    ):
        trial = _trial(*REFERENCE_ROUTE, state1=None, final=SHIPPED_OXFORD)
        trial = trial.model_construct(**{**dict(trial), "turns": record})
        g = grade(trial)
        assert g.passed is None and g.status == "unknown:bad_turn_record", record
        assert why in g.evidence["reason"], (record, g.evidence)


def test_any_order_takes_the_calls_as_a_multiset() -> None:
    task = TASK.model_copy(deep=True)
    second = task.expectations.checkpoints[1]
    second.calls = [
        ToolCallSpec(name="get_order", arguments={"order": "W2"}),
        ToolCallSpec(name="get_order", arguments={"order": "W3"}),
    ]
    reversed_calls = [_call("get_order", order="W3"), _call("get_order", order="W2")]
    trial = _trial(REFERENCE_ROUTE[0], reversed_calls, state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD)
    assert CheckpointsGrader().grade(task, trial).status == "checkpoint:calls"  # in_order
    second.mode = "any_order"
    assert CheckpointsGrader().grade(task, trial).passed is True
    # One W2 lookup cannot stand for two reference calls.
    once = _trial(
        REFERENCE_ROUTE[0], [_call("get_order", order="W2")] * 2, state1=SHIPPED_OXFORD,
        final=SHIPPED_OXFORD,
    )  # fmt: skip
    missing = CheckpointsGrader().grade(task, once).evidence["checkpoints"][1]["calls"]
    assert missing["missing"] == [{"name": "get_order", "arguments": {"order": "W3"}}]


def test_the_grader_runs_by_default_only_where_checkpoints_are_declared() -> None:
    plain = Task(id="p", instruction="x", expectations=Expectations(final_state={}))
    trial = Trial(task_id="p", success=False, final_state={})
    assert "checkpoints" not in {g.grader for g in grade_trial(plain, trial).grades}
    both = grade_trial(TASK, _trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD))
    assert both.success is True
    assert {g.grader for g in both.grades} == {"checkpoints", "state"}


def test_an_unfinished_trial_is_checked_on_the_turns_it_handed_back() -> None:
    from agentgauge.graders.checkpoints import grade_unfinished

    right = _trial(*REFERENCE_ROUTE, state1=SHIPPED_OXFORD, final=SHIPPED_OXFORD)
    # Ended in turn 2 (whose calls and state would hold): turn 1 held, turn 2 failed.
    for status, kind in (("error", "agent"), ("timeout", "agent"), ("error", "infra")):
        ended = right.model_copy(update={"status": status, "error_kind": kind})
        grade = grade_unfinished(TASK, ended)
        assert grade is not None and grade == CheckpointsGrader().grade(TASK, ended)
        assert (grade.passed, grade.status, grade.score) == (False, "checkpoint:unfinished", 0.5)
        verdicts = [(r["verdict"], r["status"]) for r in grade.evidence["checkpoints"]]
        assert verdicts == [("pass", "passed"), ("fail", "checkpoint:unfinished")]
        assert grade.evidence["ended_in_turn"] == 2
        how = "a timeout" if status == "timeout" else "an error"
        assert f"turn 2: failed: the trial ended in {how} in this turn" in evidence_lines(grade)
    # Ended in turn 1 (no hand-back): both fail, turn 2 never reached.
    first = Trial(
        task_id=TASK.id, success=False, status="error", error_kind="agent",
        events=[_say("user", "Ship W1 to Oxford St.")], turns=[],
    )  # fmt: skip
    grade = grade_unfinished(TASK, first)
    assert grade is not None and grade.score == 0.0
    assert [r["status"] for r in grade.evidence["checkpoints"]] == [
        "checkpoint:unfinished",
        "checkpoint:turn_missing",
    ]
    # Nothing says how far it got: no grade (the per-turn rates count it unknown).
    for no_record in (
        right.model_copy(update={"status": "error", "turns": None}),
        right.model_copy(update={"status": "error", "turns": [{"end": 99, "state": None}]}),
    ):
        assert grade_unfinished(TASK, no_record) is None
    # Finished, or no checkpoints: not this rule's.
    assert grade_unfinished(TASK, right) is None
    plain = Task(id="p", instruction="x", expectations=Expectations(final_state=SHIPPED_OXFORD))
    assert grade_unfinished(plain, right.model_copy(update={"status": "error"})) is None
    # An imported agent error whose record says it passed is a pass in the success rate
    # (its harness graded the state it reached): its turns are checked as recorded.
    passed = right.model_copy(update={"status": "error", "error_kind": "agent", "success": True})
    grade = grade_unfinished(TASK, passed)
    assert grade is not None and grade.passed and grade.status == "passed"
