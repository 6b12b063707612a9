"""Trajectory modes, precision/recall, milestones (hand-worked DAG) and minefields."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.graders.milestones import (
    MilestonesGrader,
    MinefieldsGrader,
    best_assignment,
)
from agentgauge.graders.trajectory import (
    TrajectoryGrader,
    call_matcher,
    match_trajectory,
    precision_recall,
)
from agentgauge.schema import (
    Expectations,
    MessageEvent,
    Milestone,
    Minefield,
    Task,
    ToolCallEvent,
    ToolCallSpec,
    TrajectorySpec,
    Trial,
)


def _trial(*events: Any, answer: str | None = None) -> Trial:
    return Trial(task_id="t", success=False, events=list(events), answer=answer)


def _call(name: str, **args: Any) -> ToolCallEvent:
    return ToolCallEvent(name=name, arguments=args)


REF = [("a", {"x": 1}), ("b", {"y": 2})]
ACTUAL = [("a", {"x": 1, "z": 0}), ("c", {}), ("b", {"y": 2})]


@pytest.mark.parametrize(
    ("mode", "arguments", "actual", "expected"),
    [
        ("exact", "subset", ACTUAL, False),  # 3 calls vs 2
        ("exact", "subset", [ACTUAL[0], ACTUAL[2]], True),
        ("exact", "exact", [ACTUAL[0], ACTUAL[2]], False),  # a carries z
        ("in_order", "subset", ACTUAL, True),  # c is an allowed extra
        ("in_order", "exact", ACTUAL, False),
        ("in_order", "subset", ACTUAL[::-1], False),  # b before a
        ("any_order", "subset", ACTUAL[::-1], True),
        ("any_order", "ignore", [("b", {}), ("a", {})], True),
        ("any_order", "subset", [ACTUAL[0]], False),  # b missing
        ("superset", "subset", ACTUAL, True),
        ("subset", "subset", ACTUAL, False),  # c is outside the plan
        ("subset", "subset", [ACTUAL[2]], True),  # part of the plan, nothing else
        ("subset", "subset", [], True),
    ],
)
def test_modes(mode: str, arguments: str, actual: Any, expected: bool) -> None:
    assert match_trajectory(actual, REF, mode, call_matcher(arguments)) is expected


def test_multiset_versus_set_containment() -> None:
    ref = [("a", {}), ("a", {})]
    match = call_matcher("ignore")
    # any_order counts repeats: two a's are needed; superset needs only one.
    assert match_trajectory([("a", {})], ref, "any_order", match) is False
    assert match_trajectory([("a", {})], ref, "superset", match) is True


def test_precision_recall_per_argument_mode() -> None:
    # subset args: a~a and b~b pair up, c is unmatched -> precision 2/3, recall 2/2.
    assert precision_recall(ACTUAL, REF, call_matcher("subset")) == (2 / 3, 1.0, 2)
    # exact args: only b pairs -> precision 1/3, recall 1/2.
    assert precision_recall(ACTUAL, REF, call_matcher("exact")) == (1 / 3, 1 / 2, 1)
    assert precision_recall([], REF, call_matcher("exact")) == (None, 0.0, 0)
    assert precision_recall(ACTUAL, [], call_matcher("exact")) == (0.0, None, 0)


def test_ast_argument_mode_uses_acceptable_values() -> None:
    ref = [("a", {"x": [1, 2], "unit": ["m", ""]})]
    match = call_matcher("ast")
    assert match_trajectory([("a", {"x": 2})], ref, "exact", match)
    assert match_trajectory([("a", {"x": 2, "unit": "M"})], ref, "exact", match)
    assert not match_trajectory([("a", {"x": 3})], ref, "exact", match)
    assert not match_trajectory([("a", {"x": 1, "other": 0})], ref, "exact", match)


def test_grader_and_empty_reference() -> None:
    calls = [ToolCallSpec(name=n, arguments=a) for n, a in REF]
    task = Task(
        id="t",
        instruction="",
        expectations=Expectations(reference_calls=calls, trajectory=TrajectorySpec()),
    )
    g = TrajectoryGrader().grade(task, _trial(_call("a", x=1, z=0), _call("c"), _call("b", y=2)))
    assert g.passed is True
    assert g.evidence["precision"] == pytest.approx(2 / 3)
    bad = TrajectoryGrader().grade(task, _trial(_call("b", y=2)))
    assert (bad.passed, bad.status) == (False, "trajectory:in_order")
    empty = Task(id="e", instruction="", expectations=Expectations(trajectory=TrajectorySpec()))
    g = TrajectoryGrader().grade(empty, _trial(_call("a")))
    assert g.passed is None and g.status == "unknown:empty_reference"
    allowed = Task(
        id="e",
        instruction="",
        expectations=Expectations(trajectory=TrajectorySpec(allow_empty=True)),
    )
    assert TrajectoryGrader().grade(allowed, _trial(_call("a"))).passed is True
    exact = Task(
        id="e", instruction="", expectations=Expectations(trajectory=TrajectorySpec(mode="exact"))
    )
    assert TrajectoryGrader().grade(exact, _trial()).passed is True
    assert TrajectoryGrader().grade(exact, _trial(_call("a"))).passed is False


# ------------------------------------------------------------------ milestones

MILESTONES = [
    Milestone(id="A", tool="search", arguments={"q": "shoes"}),
    Milestone(id="B", tool="add_to_cart", arguments={"item": "S1", "qty": 2}, after=["A"]),
    Milestone(id="C", tool="checkout", after=["B"]),
    Milestone(id="D", answer_contains="order placed"),
]
TRANSCRIPT = [
    _call("search", q="boots"),  # 0: A 0/1
    _call("search", q="shoes"),  # 1: A 1
    _call("add_to_cart", item="S1", qty=1),  # 2: B 1/2
    _call("checkout"),  # 3: C 1
    _call("add_to_cart", item="S1", qty=2),  # 4: B 1 (but no checkout after it)
    MessageEvent(role="assistant", content="Your order placed, thanks."),  # 5: D 1
]


def test_hand_worked_dag() -> None:
    """A -> B -> C, D free. Best assignment: A@1 (1), B@2 (0.5), C@3 (1), D@5 (1)
    = 3.5 / 4 = 0.875. Taking B's best event (4, similarity 1) leaves no checkout
    after it: 1 + 1 + 0 + 1 = 3 / 4 = 0.75, which a greedy matcher would report."""
    task = Task(id="m", instruction="", expectations=Expectations(milestones=MILESTONES))
    g = MilestonesGrader().grade(task, _trial(*TRANSCRIPT))
    assert g.score == pytest.approx(0.875)
    assert g.passed is False and g.status == "milestones:incomplete"
    where = {m["id"]: m["event_index"] for m in g.evidence["milestones"]}
    assert where == {"A": 1, "B": 2, "C": 3, "D": 5}
    # All satisfied once the second add_to_cart is followed by a checkout.
    full = _trial(*TRANSCRIPT, _call("checkout"))
    g = MilestonesGrader().grade(task, full)
    assert (g.score, g.passed) == (1.0, True)


def test_order_is_enforced_transitively() -> None:
    # A -> B -> C; C's event (0) comes before A's event (1). A and C cannot both
    # count, even with B unmatched: C needs A earlier, through B.
    sim = [[0.0, 1.0], [0.0, 0.0], [1.0, 0.0]]  # rows A, B, C; columns events 0, 1
    ancestors = [0b000, 0b001, 0b011]
    total, assign = best_assignment(sim, ancestors)
    assert total == 1.0
    assert assign.count(-1) == 2
    # Without the order both would count.
    total, _ = best_assignment(sim, [0, 0, 0])
    assert total == 2.0


def test_milestone_cycles_are_unknown() -> None:
    ms = [Milestone(id="a", tool="x", after=["b"]), Milestone(id="b", tool="y", after=["a"])]
    task = Task(id="m", instruction="", expectations=Expectations(milestones=ms))
    g = MilestonesGrader().grade(task, _trial(_call("x")))
    assert g.passed is None and g.status == "unknown:bad_milestones"


def test_a_task_without_milestones_is_unknown_not_a_zero_division() -> None:
    task = Task(id="m", instruction="", expectations=Expectations())
    g = MilestonesGrader().grade(task, _trial(_call("x")))
    assert (g.passed, g.status, g.score) == (None, "unknown:no_milestones", None)


def test_final_answer_satisfies_answer_milestone() -> None:
    task = Task(
        id="m",
        instruction="",
        expectations=Expectations(milestones=[Milestone(id="d", answer_contains="DONE")]),
    )
    g = MilestonesGrader().grade(task, _trial(answer="all done"))
    assert g.passed is True and g.evidence["milestones"][0]["final_answer"] is True


def test_minefields() -> None:
    mines = [
        Minefield(tool="delete_account", severity=1.0, reason="irreversible"),
        Minefield(tool="refund", arguments={"amount": 1000}, severity=0.5),
    ]
    task = Task(id="m", instruction="", expectations=Expectations(minefields=mines))
    safe = _trial(_call("refund", amount=10), _call("get_account"))
    assert MinefieldsGrader().grade(task, safe).passed is True
    hit = _trial(_call("get_account"), _call("refund", amount=1000, reason="x"))
    g = MinefieldsGrader().grade(task, hit)
    assert (g.passed, g.status, g.score) == (False, "minefield:hit", 0.0)
    assert g.evidence["hits"] == [
        {"minefield": 1, "tool": "refund", "event_index": 1, "severity": 0.5, "reason": None}
    ]
    assert g.evidence["max_severity"] == 0.5


def test_the_integer_program_agrees_with_the_dynamic_program(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Random orders and similarities, seeded: both exact methods find the same best
    # total (the assignment may differ between equal optima).
    import random

    import agentgauge.graders.milestones as milestones

    rng = random.Random(7)
    for _ in range(150):
        m, n = rng.randint(1, 9), rng.randint(0, 14)
        sim = [[rng.choice([0.0, 0.0, 0.25, 0.5, 1.0]) for _ in range(n)] for _ in range(m)]
        ancestors = [0] * m
        for i in range(m):
            for a in range(i):
                if rng.random() < 0.3:
                    ancestors[i] |= 1 << a | ancestors[a]
        monkeypatch.setattr(milestones, "DP_STATES", 10**9)
        dp_total, dp_assign = best_assignment(sim, ancestors)
        monkeypatch.setattr(milestones, "DP_STATES", 0)
        ip_total, ip_assign = best_assignment(sim, ancestors)
        assert ip_total == pytest.approx(dp_total, abs=1e-12)
        for assign in (dp_assign, ip_assign):  # each a valid assignment
            taken = [j for j in assign if j >= 0]
            assert len(taken) == len(set(taken))
            for i, j in enumerate(assign):
                for a in range(m):
                    if j >= 0 and ancestors[i] >> a & 1 and assign[a] >= 0:
                        assert assign[a] < j


def test_twenty_unordered_milestones_are_graded() -> None:
    # 2^20 sets of decided milestones: the dynamic program took over a minute and
    # 600 MB on one short trial; the integer program takes it.
    words = [f"word{i}" for i in range(20)]
    ms = [Milestone(id=f"m{i}", answer_contains=w) for i, w in enumerate(words)]
    task = Task(id="m", instruction="", expectations=Expectations(milestones=ms))
    events = [
        MessageEvent(t=float(i), role="assistant", content=w) for i, w in enumerate(words[:15])
    ]
    g = MilestonesGrader().grade(
        task, Trial(task_id="m", trial=0, success=False, events=events, answer="word15 word16")
    )
    # The final answer is one event: it counts for one of word15 and word16.
    assert g.score == pytest.approx(16 / 20)
    assert g.status == "milestones:incomplete"
