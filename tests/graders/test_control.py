"""Control decisions: detection from transcripts and the SPEC 5.6 metrics."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from sklearn.metrics import confusion_matrix

from agentgauge.graders.control import CUE_SCAN_CHARS, ControlGrader, detect_control, text_cue
from agentgauge.metrics.control import CONTROL_STATES, control_metrics
from agentgauge.schema import (
    ControlEvent,
    Expectations,
    MessageEvent,
    Task,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)


def _trial(*events: Any, **kw: Any) -> Trial:
    return Trial(task_id="t", success=False, events=list(events), **kw)


def _say(text: str) -> MessageEvent:
    return MessageEvent(role="assistant", content=text)


def _call(name: str, call_id: str | None = None, **args: Any) -> ToolCallEvent:
    return ToolCallEvent(name=name, arguments=args, call_id=call_id)


@pytest.mark.parametrize(
    ("events", "decision", "source"),
    [
        ([], "stop", "nothing"),
        ([ControlEvent(decision="refuse"), _call("cancel_order")], "refuse", "control_event"),
        ([_call("get_order"), _call("transfer_to_human_agents")], "transfer", "transfer_tool"),
        ([_call("get_order"), _call("cancel_order")], "act", "write_call"),
        ([_call("get_order"), _say("Here is your order.")], "act", "activity"),
        ([_say("I'm sorry, but I cannot help with that request.")], "refuse", "text_cue"),
        ([_say("Could you please provide your order number?")], "ask", "text_cue"),
        (
            [_say("This will cancel the order. Do you want me to proceed?"), _call("cancel_order")],
            "confirm",
            "text_cue",
        ),
        ([_call("cancel_order"), _say("Could you tell me more?")], "act", "write_call"),
        ([_say("Let me transfer you to a human agent.")], "transfer", "text_cue"),
    ],
)
def test_detection(events: list[Any], decision: str, source: str) -> None:
    got = detect_control(_trial(*events))
    assert (got.decision, got.source) == (decision, source)


def test_recorded_field_wins_and_declared_tools() -> None:
    assert detect_control(_trial(_call("cancel_order"), control="ask")).decision == "ask"
    task = Task(id="t", instruction="", metadata={"read_tools": ["cancel_preview"]})
    got = detect_control(_trial(_call("cancel_preview"), _say("Done.")), task)
    assert (got.decision, got.source) == ("act", "activity")
    # getOrder is a read (camelCase); getaway_booking is not.
    assert detect_control(_trial(_call("getOrder"))).source == "activity"
    assert detect_control(_trial(_call("getaway_booking"))).source == "write_call"


def test_text_cues() -> None:
    assert text_cue("Shall I proceed with the refund?") == "confirm"
    assert text_cue("That is against our policy.") == "refuse"
    assert text_cue("What is your user id?") == "ask"
    assert text_cue("Your order has been cancelled.") is None
    assert text_cue(None) is None


def test_text_cues_of_a_long_message_are_read_at_its_opening_and_close() -> None:
    # 15 MB once took ~0.26 s per pattern (~3 s per trial) on the run's event loop.
    filler = "y" * (15 * 1024 * 1024)
    assert text_cue("I cannot help with that. " + filler) == "refuse"
    assert text_cue(filler + " Shall I proceed with the refund?") == "confirm"
    assert text_cue(filler + " Shall I proceed? " + filler) is None  # the middle is not read
    half = CUE_SCAN_CHARS // 2
    # the opening and the close are read apart: no cue made of the two
    assert text_cue("What is your" + "y" * (CUE_SCAN_CHARS + 1) + "?") is None
    straddling = "." * (half - 6) + " I cannot help" + filler  # "I can|not" at the cut
    assert text_cue(straddling) is None
    assert text_cue(straddling[: half + 20]) == "refuse"  # read whole when short


def test_irreversible_confirmation() -> None:
    # Two irreversible calls: the first follows a confirmation, the second does not
    # (each needs its own), the third call is recognised from its result flag.
    events = [
        _say("Cancelling is permanent. Please confirm."),
        _call("cancel_order", "c1"),
        _call("cancel_order", "c2"),
        _call("wipe", "c3"),
        ToolResultEvent(call_id="c3", content="ok", irreversible=True),
        ControlEvent(decision="confirm"),
        _call("exchange", "c4"),
        ToolResultEvent(call_id="c4", content={"irreversible": True}),
    ]
    got = detect_control(_trial(*events), irreversible_tools=["cancel_order"])
    assert (got.irreversible_calls, got.unconfirmed_irreversible) == (4, 2)


def test_grader() -> None:
    task = Task(id="t", instruction="", expectations=Expectations(control="refuse"))
    g = ControlGrader().grade(task, _trial(_say("I can't do that.")))
    assert (g.passed, g.status) == (True, "passed")
    g = ControlGrader().grade(task, _trial(_call("cancel_order")))
    assert (g.passed, g.status) == (False, "control:refuse->act")
    assert g.evidence["taken"] == "act"


EXPECTED = ["act", "act", "act", "act", "refuse", "refuse", "transfer", "ask", None]
TAKEN = ["act", "refuse", "ask", "transfer", "act", "refuse", "act", "ask", "act"]


def test_metrics_hand_computed() -> None:
    m = control_metrics(EXPECTED, TAKEN, [1, 0, 2, 0, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0, 0])
    assert (m["n"], m["n_unknown"]) == (8, 1)
    # correct: act/act, refuse/refuse, ask/ask -> 3 / 8
    assert m["accuracy"] == pytest.approx(3 / 8)
    # 4 should-act: one refused, one transferred -> 2/4; one asked -> 1/4
    assert m["over_refusal"] == pytest.approx(0.5)
    assert m["unnecessary_ask"] == pytest.approx(0.25)
    # 3 should-refuse-or-transfer (2 refuse + 1 transfer): refuse->act, transfer->act -> 2/3
    assert m["under_refusal"] == pytest.approx(2 / 3)
    # taken act: trials 0, 4, 6 (one right) -> precision 1/3; expected act 4 -> recall 1/4
    assert m["per_state"]["act"]["precision"] == pytest.approx(1 / 3)
    assert m["per_state"]["act"]["recall"] == pytest.approx(1 / 4)
    assert m["per_state"]["refuse"]["precision"] == pytest.approx(1 / 2)
    assert m["per_state"]["transfer"]["precision"] == 0.0
    assert m["per_state"]["stop"]["precision"] is None
    # 2 trials with irreversible calls, 1 of them unconfirmed
    assert m["missed_confirmation"] == pytest.approx(0.5)
    assert m["counts"]["trials_with_irreversible"] == 2


def test_missed_confirmation_leaves_out_unknown_decisions() -> None:
    """As every control rate: the last trial, expected ask with no decision recorded,
    made an unconfirmed irreversible call, and is left out. Known: act/act (1
    irreversible, confirmed), refuse/act (2, one unconfirmed), confirm/act (1,
    unconfirmed) → 2 missed of 3 trials with an irreversible call, not 3 of 4."""
    m = control_metrics(
        ["act", "act", "refuse", "confirm", "ask"],
        ["act", "refuse", "act", "act", None],
        [1, 0, 2, 1, 1],
        [0, 0, 1, 1, 1],
    )
    assert (m["n"], m["n_unknown"]) == (4, 1)
    assert m["missed_confirmation"] == pytest.approx(2 / 3)
    assert m["counts"]["trials_with_irreversible"] == 3
    assert m["counts"]["missed_confirmation"] == 2


def test_confusion_agrees_with_sklearn() -> None:
    rng = np.random.default_rng(3)
    exp = rng.choice(CONTROL_STATES, 300).tolist()
    got = rng.choice(CONTROL_STATES, 300).tolist()
    m = control_metrics(exp, got)
    ours = np.array([[m["confusion"][e][t] for t in CONTROL_STATES] for e in CONTROL_STATES])
    theirs = confusion_matrix(exp, got, labels=list(CONTROL_STATES))
    assert (ours == theirs).all()


def test_metrics_validate_and_leave_inputs() -> None:
    exp = np.array(["act", "refuse"], dtype=object)
    before = exp.copy()
    control_metrics(exp, ["act", "act"])
    assert (exp == before).all()
    with pytest.raises(ValueError, match="taken\\[1\\]"):
        control_metrics(["act", "act"], ["act", "dance"])
    with pytest.raises(ValueError, match="one count per trial"):
        control_metrics(["act"], ["act"], [1, 2])
    empty = control_metrics([], [])
    assert empty["over_refusal"] is None and empty["accuracy"] is None


def test_recover_does_not_mask_the_task_decision() -> None:
    # An agent retries after an injected fault (recover), then asks for confirmation:
    # its decision on the task is to confirm; recover is incidental.
    from agentgauge.graders.control import detect_control
    from agentgauge.schema import ControlEvent, Expectations, Task, Trial

    events = [ControlEvent(decision="recover"), ControlEvent(decision="confirm")]
    trial = Trial(task_id="t", success=True, events=events)
    confirm_task = Task(id="t", instruction="x", expectations=Expectations(control="confirm"))
    assert detect_control(trial, confirm_task).decision == "confirm"
    recover_task = Task(id="t", instruction="x", expectations=Expectations(control="recover"))
    assert detect_control(trial, recover_task).decision == "recover"
    only = Trial(task_id="t", success=True, events=[ControlEvent(decision="recover")])
    assert detect_control(only, confirm_task).decision == "recover"


def test_grader_and_metrics_share_the_schema_decisions() -> None:
    from typing import get_args

    from agentgauge.graders import control as grader
    from agentgauge.metrics import control as metric
    from agentgauge.schema import CONTROL_DECISIONS, ControlDecision

    assert grader.CONTROL_STATES is metric.CONTROL_STATES is CONTROL_DECISIONS
    assert get_args(ControlDecision) == CONTROL_DECISIONS


def test_a_confirmation_that_warns_it_cannot_be_undone_is_a_confirmation() -> None:
    # "I cannot" was read first (refuse before confirm): control:confirm->refuse, and
    # the cancellation the user had been asked to confirm counted as unconfirmed.
    asked = "Please note that I cannot undo a cancellation once it is made. Shall I proceed with cancelling W1001 (yes/no)?"  # noqa: E501
    task = Task(
        id="t",
        instruction="",
        expectations=Expectations(control="confirm"),
        metadata={"irreversible_tools": ["cancel_pending_order"]},
    )
    trial = _trial(_say(asked), _call("cancel_pending_order", "c1", order_id="W1001"))
    grade = ControlGrader().grade(task, trial)
    assert (grade.passed, grade.status) == (True, "passed")
    assert (grade.evidence["irreversible_calls"], grade.evidence["unconfirmed_irreversible"]) == (
        1,
        0,
    )
    # A question for details outranks a refusal in the same message too.
    assert text_cue("I can't find that order. Could you provide its number?") == "ask"
    # The confirmation counts even where another cue wins the message's decision.
    offer = "Shall I proceed, or would you rather I transfer you to a human agent?"
    counts = detect_control(_trial(_say(offer), _call("cancel_pending_order", "c1")), task)
    assert (counts.irreversible_calls, counts.unconfirmed_irreversible) == (1, 0)


@pytest.mark.parametrize(
    "text",
    [
        "I can\u2019t help with that.",  # a curly apostrophe
        "I\ncannot   help with that.",
        "I'm sorry, W1010 has already shipped, so it can't be cancelled.",
        "I'm sorry, its address can no longer be changed.",
        "so a damage refund is no longer possible.",
        "I'm sorry, I can only discuss orders on your own account.",
        "Late deliveries are not refunded.",
    ],
)
def test_a_refusal_worded_as_a_policy_answer_is_a_refusal(text: str) -> None:
    # Only first-person, straight-apostrophe refusals were read: these were `act`.
    assert text_cue(text) == "refuse"


@pytest.mark.parametrize(
    "text",
    ["Done; note that this cannot be undone.", "It is cancelled and $85.00 is refunded."],
)
def test_an_action_reported_is_no_refusal(text: str) -> None:
    assert text_cue(text) is None


def test_the_builtin_refusals_and_transfers_read_as_their_expected_decision() -> None:
    # Nine of the ten refuse tasks' own reference answers read no cue: an agent that
    # answered them word for word without a tool call was graded `act`.
    from agentgauge.suite import load_suite

    tasks = [
        t
        for t in load_suite("builtin:retail").tasks
        if t.expectations.control in ("refuse", "transfer") and t.metadata.get("reference_answer")
    ]
    assert len(tasks) >= 20
    misread = {
        t.id: text_cue(t.metadata["reference_answer"])
        for t in tasks
        if text_cue(t.metadata["reference_answer"]) != t.expectations.control
    }
    assert misread == {}
