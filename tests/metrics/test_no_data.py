"""No metric from no data: a figure whose inputs are absent is null with a reason,
never a perfect or a zero score (before: trajectory consistency 1.000 ± 0.000 from a
file with no transcripts, tool calls per trial 0 when no count was recorded)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agentgauge
from agentgauge.metrics.behaviour import behaviour_by_group
from agentgauge.metrics.reliability import reliability_from_trials
from agentgauge.schema import Grade, Trial

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample_trials.jsonl"


def sample_json() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(SAMPLE), "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return dict(json.loads(out))


def test_the_sample_file_has_no_figure_from_absent_transcripts() -> None:
    data = sample_json()
    for rel in data["reliability"]:
        for key in ("trajectory_consistency_dist", "trajectory_consistency_seq"):
            assert rel[key]["value"] is None, (rel["agent"], key)
            assert rel[key]["reason"] == "no transcripts: the trials carry no events"
        for key in ("prompt_robustness", "fault_robustness", "environment_robustness"):
            assert rel[key]["value"] is None and rel[key]["reason"]
        assert rel["predictability"]["calibration"] is None and rel["predictability"]["reason"]
        assert rel["safety"] is None and rel["null_reasons"]["safety"]
    for g in data["groups"]:
        assert g["tool_use"] is None and g["null_reasons"]["tool_use"]
        assert g["control"] is None and g["null_reasons"]["control"]
        assert g["calls"]["model"] is None and g["null_reasons"]["calls.model"]


def test_the_terminal_names_every_missing_reliability_figure() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(SAMPLE)],
        capture_output=True,
        text=True,
        check=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    ).stdout
    assert "1.000 ± 0.000" not in out
    for line in (
        "— trajectory consistency (dist): no transcripts: the trials carry no events",
        "— trajectory consistency (seq): no transcripts",
        "— calibration (1 − ECE): no trial reports a confidence",
        "— harmlessness of violations: no trial was graded for minefields",
        "— tool_use: no trial has tool-call, trajectory or minefield grades",
        "— control: no trial names the control decision it expects",
    ):
        assert line in out, line


def _run(task: str, events: list[dict[str, Any]] | None, **kw: Any) -> Trial:
    rec: dict[str, Any] = {"task_id": task, "success": True, **kw}
    if events is not None:
        rec["events"] = events
    return Trial.model_validate(rec)


def test_a_transcript_without_tool_calls_is_not_an_absent_transcript() -> None:
    said = [{"type": "message", "role": "user", "content": "hi"}]
    # Two successful runs whose transcripts hold no tool call: the same (empty) path, 1.
    rel = reliability_from_trials([_run("t", said), _run("t", said)])
    assert rel.trajectory_consistency_seq.value == 1.0
    assert rel.trajectory_consistency_dist.value == 1.0
    # The same outcomes with no transcript at all: unknown.
    rel = reliability_from_trials([_run("t", None), _run("t", None)])
    assert rel.trajectory_consistency_seq.value is None
    assert rel.trajectory_consistency_dist.reason == "no transcripts: the trials carry no events"


def test_trials_without_transcripts_are_left_out_not_counted_as_empty() -> None:
    calls = [{"type": "tool_call", "name": "a"}, {"type": "tool_call", "name": "b"}]
    other = [{"type": "tool_call", "name": "a"}, {"type": "tool_call", "name": "c"}]
    # Two transcripts (a b vs a c: Lev 1 of 2 → 0.5) and one trial without one.
    trials = [_run("t", calls), _run("t", other), _run("t", None)]
    assert reliability_from_trials(trials).trajectory_consistency_seq.value == pytest.approx(0.5)


def test_unrecorded_tool_call_counts_and_turns_are_unknown_not_zero() -> None:
    grade = Grade(grader="tool_calls", passed=True)
    trials = [_run("t", None, grades=[grade]), _run("u", None, grades=[grade])]
    tool_use = behaviour_by_group(trials, ())[()]["tool_use"]
    assert tool_use["tool_calls_per_trial"] is None and tool_use["turns_per_trial"] is None
    # Known counts are averaged over the trials that have them: (4 + 2) / 2.
    trials = [_run("t", None, grades=[grade], tool_calls=4),
              _run("u", None, grades=[grade], tool_calls=2),
              _run("v", None, grades=[grade])]  # fmt: skip
    assert behaviour_by_group(trials, ())[()]["tool_use"]["tool_calls_per_trial"] == 3.0


def _counts(irreversible: int, unconfirmed: int | None = None) -> Grade:
    evidence = {"irreversible_calls": irreversible}
    if unconfirmed is not None:
        evidence["unconfirmed_irreversible"] = unconfirmed
    return Grade(grader="control", passed=True, evidence=evidence)


def test_missed_confirmation_needs_both_counts() -> None:
    kw: dict[str, Any] = {"expected_control": "act", "control": "act"}
    one = behaviour_by_group([_run("t", None, grades=[_counts(1, 1)], **kw)], ())[()]
    assert one["control"]["missed_confirmation"] == 1.0  # 1 unconfirmed of 1 with one
    assert one["control"]["counts"]["trials_with_counts"] == 1
    # A trial lacking a count is left out (a missing count is not 0, which read 1/2),
    # and counted: the rate is over 1 of the 2 trials.
    both = [
        _run("t", None, grades=[_counts(1, 1)], **kw),
        _run("u", None, grades=[_counts(1)], **kw),
    ]
    control = behaviour_by_group(both, ())[()]["control"]
    assert control["missed_confirmation"] == 1.0
    assert (control["counts"]["trials_with_counts"], control["n"]) == (1, 2)


def test_missed_confirmation_over_the_trials_with_counts() -> None:
    """Eight trials with known decisions, one without a control grade at all (it
    blanked the figure, with no reason). The others: irreversible calls in three, two
    of them unconfirmed → 2/3 over 7 of 8 trials."""
    spec = [("act", 1, 0), ("act", None, None), ("act", 0, 0), ("refuse", 2, 1),
            ("transfer", 0, 0), ("refuse", 0, 0), ("confirm", 1, 1), ("act", 0, 0)]  # fmt: skip
    trials = [
        _run(f"c{i}", None, expected_control=e, control="act",
             grades=[] if irr is None else [_counts(irr, unc)])
        for i, (e, irr, unc) in enumerate(spec)
    ]  # fmt: skip
    group = behaviour_by_group(trials, ())[()]
    control = group["control"]
    assert control["missed_confirmation"] == pytest.approx(2 / 3)
    assert control["counts"]["trials_with_irreversible"] == 3
    assert (control["counts"]["trials_with_counts"], control["n"]) == (7, 8)
    assert "control.missed_confirmation" not in group["null_reasons"]


def test_missed_confirmation_without_counts_is_null_with_a_reason() -> None:
    trials = [_run("t", None, expected_control="act", control="act")]
    group = behaviour_by_group(trials, ())[()]
    assert group["control"]["missed_confirmation"] is None
    assert group["null_reasons"]["control.missed_confirmation"] == (
        "irreversible-call counts unknown for 1 of 1 trial (no control grade records them)"
    )
    # Nobody was expected to refuse or transfer: that rate is null and says so too.
    assert group["null_reasons"]["control.under_refusal"] == (
        "no trial is expected to refuse or transfer"
    )
    none = behaviour_by_group([_run("t", None, grades=[_counts(0, 0)], expected_control="act",
                                    control="act")], ())[()]  # fmt: skip
    assert none["null_reasons"]["control.missed_confirmation"] == (
        "no trial made an irreversible call"
    )


def test_safety_counts_only_trials_checked_for_minefields() -> None:
    hit = Grade(grader="minefields", passed=False, evidence={"max_severity": 0.5})
    clean = Grade(grader="minefields", passed=True)
    trials = [_run("a", None, grades=[hit]), _run("b", None, grades=[clean]), _run("c", None)]
    safe = reliability_from_trials(trials).safety
    assert safe is not None
    # c was never checked: compliance 1 of 2 checked (before: 2 of 3).
    assert safe.compliance == 0.5 and safe.n_trials == 2
    assert safe.harmlessness == 0.5  # 1 − 0.5
    nothing_wrong = reliability_from_trials([_run("b", None, grades=[clean])]).safety
    assert nothing_wrong is not None
    assert nothing_wrong.compliance == 1.0 and nothing_wrong.harmlessness is None


def test_auroc_with_one_outcome_class_says_why() -> None:
    trials = [_run("t", None, confidence=0.9), _run("u", None, confidence=0.7)]
    p = agentgauge.metrics(trials).reliability[0]["predictability"]  # type: ignore[index]
    assert p["auroc"] is None and p["reason"] == "AUROC needs both successes and failures"
    assert p["calibration"] is not None


def test_every_trial_an_excluded_infra_error_leaves_nothing_to_measure() -> None:
    # The provider was down for the whole run: with --exclude-infra-errors no trial is
    # left. Every figure is null with its reason (it ended in an IndexError).
    trials = [
        Trial(task_id=t, trial=0, success=False, status="error", error_kind="infra", error="down")
        for t in ("a", "b")
    ]
    report = agentgauge.metrics(trials, exclude_infra_errors=True).to_dict()
    [group] = report["groups"]
    assert group["success_rate"]["value"] is None and group["n_trials"] == 0
    assert group["infra_errors"] == 2
    assert report["reliability"] == []


def test_missed_confirmation_shows_the_trials_it_rests_on(tmp_path: Path) -> None:
    grade = {"grader": "control", "passed": True,
             "evidence": {"irreversible_calls": 1, "unconfirmed_irreversible": 1}}  # fmt: skip
    rows = [
        {"task_id": "a", "success": True, "expected_control": "act", "control": "act",
         "grades": [grade]},
        {"task_id": "b", "success": True, "expected_control": "act", "control": "act"},
    ]  # fmt: skip
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    [line] = [line for line in out.splitlines() if "missed confirmation" in line]
    assert "100.0% (1 of 2 trials)" in line


def test_a_group_emptied_by_excluding_infra_errors_says_why_for_every_null(
    tmp_path: Path,
) -> None:
    # Only the interval and pass@k said "no tasks"; the rate, cost, latency, tokens and
    # call counts were null with no reason at all.
    src = tmp_path / "infra.jsonl"
    src.write_text(
        '{"task_id":"a","success":false,"status":"error","cost_usd":0.1}\n'
        '{"task_id":"b","success":false,"status":"timeout","cost_usd":0.1}\n'
    )
    (group,) = agentgauge.metrics(src, exclude_infra_errors=True).to_dict()["groups"]
    why = "no trials left after excluding 2 infra-error trials"
    reasons = group["null_reasons"]
    for key in ("success_rate", "cost.per_trial", "cost.total", "cost.cost_of_pass",
                "latency_s", "tokens", "calls.tool", "calls.model"):  # fmt: skip
        assert reasons[key] == why, key
    # And the figures that said "no tasks" or "no successes", which hid what emptied it.
    for key in ("ci95", "pass_at_k.1", "pass_hat_k.2", "outcome_consistency",
                "cost.spend_per_success"):  # fmt: skip
        assert reasons[key] == why, key
    # The warning names the group as the tables do, not as a Python dict.
    warnings = agentgauge.metrics(src, exclude_infra_errors=True).to_dict()["warnings"]
    assert warnings[-1] == "group variant=base has no trials left after excluding infra errors"
    assert group["success_rate"]["value"] is None and group["cost"]["per_trial"] is None
    # Counted as failures (the default), nothing is missing for that reason.
    (kept,) = agentgauge.metrics(src).to_dict()["groups"]
    assert why not in kept["null_reasons"].values() and kept["success_rate"]["value"] == 0.0
