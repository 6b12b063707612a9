"""Recovery from tool errors (HAL, Kapoor et al. 2025), on hand-built transcripts."""

from __future__ import annotations

from typing import Any

import pytest

import agentgauge
from agentgauge.metrics.behaviour import behaviour_by_group
from agentgauge.metrics.recovery import error_type, recovery_metrics, trial_recovery
from agentgauge.schema import (
    ControlEvent,
    Event,
    MessageEvent,
    ToolCallEvent,
    ToolResultEvent,
    Trial,
)

_ids = iter(range(10**6))


def call(name: str, *, error: bool = False, content: Any = None) -> list[Event]:
    """A tool call and its result (an error when asked)."""
    cid = f"c{next(_ids)}"
    text = content if content is not None else ("Error: internal error" if error else "ok")
    # The result names its tool only through the call id, as OpenAI transcripts do.
    return [
        ToolCallEvent(name=name, arguments={}, call_id=cid),
        ToolResultEvent(call_id=cid, content=text, is_error=error),
    ]


def recover() -> list[Event]:
    return [ControlEvent(decision="recover", reason="retrying")]


def trial(task: str, success: bool, *events: list[Event], i: int = 0) -> Trial:
    flat = [MessageEvent(role="user", content="help")] + [e for es in events for e in es]
    return Trial(task_id=task, trial=i, success=success, agent="a", events=flat)


# --------------------------------------------------------------------------- one trial


def test_a_later_success_of_the_same_tool_is_recovery() -> None:
    facts = trial_recovery(trial("t", True, call("lookup", error=True), call("lookup")).events)
    assert (facts.n_errors, facts.recovered) == (1, True)


def test_an_error_never_retried_is_not_recovered() -> None:
    facts = trial_recovery(trial("t", False, call("lookup"), call("refund", error=True)).events)
    assert (facts.n_errors, facts.recovered) == (1, False)


def test_a_retry_of_a_different_tool_is_not_recovery() -> None:
    facts = trial_recovery(trial("t", True, call("lookup", error=True), call("search")).events)
    assert facts.recovered is False


def test_a_success_before_the_error_does_not_recover_it() -> None:
    facts = trial_recovery(trial("t", True, call("lookup"), call("lookup", error=True)).events)
    assert facts.recovered is False


def test_a_recover_decision_counts() -> None:
    facts = trial_recovery(trial("t", True, call("refund", error=True), recover()).events)
    assert facts.recovered is True
    # ...but only after the error it answers.
    facts = trial_recovery(trial("t", True, recover(), call("refund", error=True)).events)
    assert facts.recovered is False


def test_every_error_must_be_recovered() -> None:
    events = trial(
        "t", False, call("a", error=True), call("a"), call("b", error=True), call("c")
    ).events
    facts = trial_recovery(events)
    assert (facts.n_errors, facts.recovered) == (2, False)


def test_result_named_without_call_id_is_matched_by_name() -> None:
    events: list[Event] = [
        ToolResultEvent(name="lookup", content="Error: 429 Too Many Requests", is_error=True),
        ToolResultEvent(name="lookup", content="ok"),
    ]
    facts = trial_recovery(events)
    assert facts.recovered is True and facts.error_types == {"rate_limit": 1}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("Error: 429 Too Many Requests for lookup; retry after 1 s.", "rate_limit"),
        ("Error: the call timed out", "timeout"),
        ("Error: internal error in lookup (transient)", "transient"),
        ("Error: unknown tool 'x'", "unknown_tool"),
        ("Error: customer '' not found", "not_found"),
        ("Error: argument 'reason' must be one of ['damaged']", "invalid_arguments"),
        ({"error_type": "quota", "message": "429"}, "quota"),
        ("Error: the order is already paid", "precondition"),
        ("Error: order W1010 is shipped, not pending", "precondition"),
        ("Error: the moon is made of cheese", "other"),
        # A status code counts where the text calls it one, not as a bare number.
        ("Error: order 512 not found", "not_found"),
        ("Error: order 429 is shipped, not pending", "precondition"),
        ("Error: 503 rooms left, none free", "other"),
        ("HTTP 503", "transient"),
        ("HTTP/1.1 502 Bad Gateway", "transient"),
        ("HTTPError: 500 Internal Server Error", "transient"),
        ("upstream said status code: 504", "transient"),
        ("status 429", "rate_limit"),
        ("503 Service Unavailable", "transient"),
        ({"status": 503, "message": "upstream"}, "transient"),
    ],
)
def test_error_types(content: Any, expected: str) -> None:
    assert error_type(content) == expected


# --------------------------------------------------------------------------- rates


def test_hand_computed_rates() -> None:
    # Task A, 4 trials: (1) error, recovered, success; (2) error, not recovered, fail;
    # (3) no error, success; (4) error, recovered, fail.
    # Task B, 2 trials: (5) error, not recovered, success; (6) no error, fail.
    trials = [
        trial("A", True, call("x", error=True), call("x"), i=0),
        trial("A", False, call("x", error=True), i=1),
        trial("A", True, call("x"), i=2),
        trial("A", False, call("y", error=True), recover(), i=3),
        trial("B", True, call("x", error=True), call("z"), i=0),
        trial("B", False, call("x"), i=1),
    ]
    rec = behaviour_by_group(trials, ("agent",))[("a",)]["recovery"]
    # with error: A 3/4, B 1/2 -> task mean (0.75 + 0.5)/2 = 0.625; 4 trials in all.
    assert rec["with_tool_error"]["value"] == pytest.approx(0.625)
    assert rec["with_tool_error"]["count"] == 4 and rec["with_tool_error"]["n_trials"] == 6
    # recovered among those: A 2/3, B 0/1 -> (2/3 + 0)/2 = 1/3.
    assert rec["recovered"]["value"] == pytest.approx(1 / 3)
    assert rec["recovered"]["n_trials"] == 4 and rec["recovered"]["count"] == 2
    # success with recovery: only task A, trials 1 and 4 -> 1/2.
    assert rec["success_with_recovery"]["value"] == pytest.approx(0.5)
    assert rec["success_with_recovery"]["n_tasks"] == 1
    # without recovery: A trial 2 fails (0/1), B trial 5 succeeds (1/1) -> 0.5.
    assert rec["success_without_recovery"]["value"] == pytest.approx(0.5)
    assert rec["recovery_ratio"] == pytest.approx(1.0)
    # Errors by type, in successful trials too: every error here reads "internal error".
    assert rec["error_types"] == {"transient": {"in_successful": 2, "in_failed": 2}}
    for key in ("with_tool_error", "recovered", "success_without_recovery"):
        lo, hi = rec[key]["ci95"]
        assert lo <= rec[key]["value"] <= hi and rec[key]["ci_method"]


def test_a_rate_over_one_task_says_why_it_has_no_interval() -> None:
    """The worked example's success with recovery rests on task A alone (trials 1 and
    4): 0.5 with no SE and no interval, and null_reasons says why (it said nothing, and
    the terminal showed "[no interval]" unexplained). Rates over two tasks have both."""
    trials = [
        trial("A", True, call("x", error=True), call("x"), i=0),
        trial("A", False, call("x", error=True), i=1),
        trial("A", True, call("x"), i=2),
        trial("A", False, call("y", error=True), recover(), i=3),
        trial("B", True, call("x", error=True), call("z"), i=0),
        trial("B", False, call("x"), i=1),
    ]
    group = behaviour_by_group(trials, ("agent",))[("a",)]
    rate = group["recovery"]["success_with_recovery"]
    assert (rate["value"], rate["se"], rate["ci95"], rate["n_tasks"]) == (0.5, None, None, 1)
    reasons = group["null_reasons"]
    assert reasons["recovery.success_with_recovery.se"] == "one task: no spread to estimate"
    assert reasons["recovery.success_with_recovery.ci95"] == (
        "fewer than 2 clusters: no interval can be estimated"
    )
    assert not [k for k in reasons if k.startswith("recovery.with_tool_error")]


def test_ratio_of_recovered_to_unrecovered_success() -> None:
    # Task T: recovered trials succeed 3 of 4, unrecovered 1 of 4: ratio 0.75/0.25 = 3.
    ok = [True, True, True, False, True, False, False, False]
    out = recovery_metrics(["T"] * 8, ok, [True] * 8, [True] * 4 + [False] * 4)
    assert out["success_with_recovery"]["value"] == pytest.approx(0.75)
    assert out["success_without_recovery"]["value"] == pytest.approx(0.25)
    assert out["recovery_ratio"] == pytest.approx(3.0)


def test_empty_groups_are_null_with_a_reason() -> None:
    out = recovery_metrics(["T", "T"], [True, False], [False, False], [False, False])
    assert out["with_tool_error"]["value"] == 0.0
    for key in ("recovered", "success_with_recovery", "success_without_recovery"):
        assert out[key]["value"] is None and out[key]["n_trials"] == 0
        assert out["null_reasons"][key] == "no trial has a tool error"
    assert out["recovery_ratio"] is None and out["null_reasons"]["recovery_ratio"]


def test_no_recovered_trial_and_zero_denominator() -> None:
    out = recovery_metrics(["T", "U"], [False, False], [True, True], [False, False])
    assert out["recovered"]["value"] == 0.0
    assert out["success_with_recovery"]["value"] is None
    assert out["null_reasons"]["success_with_recovery"] == "no trial recovered from its errors"
    out = recovery_metrics(["T", "U"], [True, False], [True, True], [True, False])
    assert out["success_without_recovery"]["value"] == 0.0
    assert out["recovery_ratio"] is None
    assert "division by 0" in out["null_reasons"]["recovery_ratio"]


def test_recovered_without_error_is_ignored() -> None:
    out = recovery_metrics(["T"], [True], [False], [True])
    assert out["recovered"]["value"] is None


def test_trials_without_a_transcript_are_left_out() -> None:
    bare = Trial(task_id="t", success=True, agent="a")
    groups = behaviour_by_group([bare], ("agent",))
    assert groups[("a",)]["recovery"] is None
    assert groups[("a",)]["null_reasons"]["recovery"] == "no trial has a transcript"
    mixed = behaviour_by_group([bare, trial("t", False, call("x", error=True))], ("agent",))
    rec = mixed[("a",)]["recovery"]
    assert rec["n_trials"] == 1 and rec["n_without_transcript"] == 1


def test_recovery_reaches_the_metrics_json() -> None:
    trials = [
        trial("A", True, call("x", error=True), call("x"), i=0),
        trial("A", False, call("x", error=True), i=1),
    ]
    data = agentgauge.metrics(trials, by=("agent",)).to_dict()
    rec = data["groups"][0]["recovery"]
    assert rec["recovered"]["value"] == 0.5
    assert data["groups"][0]["null_reasons"]["recovery.recovery_ratio"]


def test_transcripts_without_tool_results_have_no_recovery_section() -> None:
    # Single-turn function calling: calls are graded, never run, so nothing could fail.
    calls_only = Trial(
        task_id="f",
        success=True,
        agent="a",
        events=[ToolCallEvent(name="get_weather", arguments={"city": "Oslo"}, call_id="c")],
    )
    group = behaviour_by_group([calls_only], ("agent",))[("a",)]
    assert group["recovery"] is None
    assert group["null_reasons"]["recovery"] == "no transcript has a tool result"
