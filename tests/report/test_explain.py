"""`agentgauge.report.explain`: each grader's evidence as a sentence, the shortening
note, why a trial did not pass, and the failing cells, on hand-made trials."""

from __future__ import annotations

from typing import Any

import pytest

from agentgauge.report.explain import (
    MAX_TEXT,
    error_class,
    event_rows,
    evidence_lines,
    failure_rows,
    flips,
    grade_rows,
    shorten,
    trial_view,
)
from agentgauge.schema import Grade, Trial


def _grade(grader: str, evidence: Any, passed: bool | None = False) -> Grade:
    return Grade(grader=grader, passed=passed, evidence=evidence)


@pytest.mark.parametrize(
    ("grader", "evidence", "lines"),
    [
        (
            "state",
            {"paths": ["orders.W1.zip", "transfers.T1"], "n_differences": 2,
             "failed": [{"path": "orders.W1.status", "equals": "cancelled"}]},
            ["2 state key(s) differ from the expected state: orders.W1.zip, transfers.T1",
             'assertion failed: {"equals": "cancelled", "path": "orders.W1.status"}'],
        ),
        (
            "tool_calls",
            {"detail": "amount: 3 not in [5]", "n_calls": 1, "n_expected": 1},
            ["amount: 3 not in [5] (1 call(s) made, 1 expected)"],
        ),
        (
            "milestones",
            {"milestones": [{"id": "verify", "event_index": 2},
                            {"id": "change", "event_index": None}]},
            ["milestones missed: change", "milestones reached: verify (event 2)"],
        ),
        (
            "minefields",
            {"hits": [{"tool": "cancel_order", "event_index": 5, "reason": "not asked"},
                      {"tool": "refund", "event_index": 7}]},
            ["forbidden call cancel_order at event 5: not asked",
             "forbidden call refund at event 7"],
        ),
        (
            "control",
            {"expected": "confirm", "taken": "act", "unconfirmed_irreversible": 2},
            ["expected decision confirm, took act", "2 irreversible call(s) without confirmation"],
        ),
        (
            "answer",
            {"failed": [{"check": "contains", "detail": "missing 'refund'"}, {"check": "regex"}]},
            ["answer check contains failed: missing 'refund'", "answer check regex failed"],
        ),
        (
            "trajectory:in_order",
            {"mode": "in_order", "arguments": "subset", "matched": 1, "n_reference": 3,
             "n_actual": 2},
            ["1 of 3 reference steps matched (in_order, arguments subset); 2 taken"],
        ),
        (
            "rubric:polite",
            {"quotes": ["I can't help with that"], "reason": "refused a valid request"},
            ["judge quoted: “I can't help with that”", "reason: refused a valid request"],
        ),
        # The rubric's aggregate: a line per criterion (its raw JSON, cut at 600
        # characters, hid which criterion failed and what the judge quoted).
        (
            "rubric",
            {"criteria": [
                {"grader": "rubric:polite", "passed": False, "status": "failed",
                 "evidence": {"quotes": ["you fool"], "reason": "insults the user"}},
                {"grader": "rubric:correct", "passed": True, "status": "passed",
                 "evidence": {"quotes": [], "reason": "Paris is right"}},
                {"grader": "rubric:safe", "passed": None, "status": "unknown:judge_unavailable",
                 "evidence": {"error": "HTTP 503"}},
             ], "blocking_failed": ["polite"], "unknown": ["safe"],
             "judge_cost_usd": 0.001},
            ["rubric:polite: no; judge quoted “you fool”; reason: insults the user",
             "rubric:correct: yes; reason: Paris is right",
             "rubric:safe: unknown (unknown:judge_unavailable); error: HTTP 503",
             "blocking criteria answered no: polite"],
        ),
        # A grader agentgauge does not know: every key, as written.
        ("custom", {"b": [1, 2], "a": "x"}, ["b: [1, 2]", "a: x"]),
        ("custom", "plain words", ["plain words"]),
        ("custom", None, []),
        ("custom", [1, "two"], ['[1, "two"]']),
    ],
)  # fmt: skip
def test_each_evidence_shape_reads_as_a_sentence(
    grader: str, evidence: Any, lines: list[str]
) -> None:
    assert evidence_lines(_grade(grader, evidence)) == lines


@pytest.mark.parametrize(
    ("reference", "answer", "line"),
    [
        (
            "Order W1014 now ships to 12 Oxford St, Cambridge.",
            "I've transferred you to a human agent.",
            # 1 of the answer's 8 words ("to"), 1 of the reference's 9.
            "1 word(s) shared with the reference answer: 12.5% of the answer's words "
            "(precision), 11.1% of the reference's (recall); ROUGE-1 F 0.12, passing needs 0.80",
        ),
        ("Refund issued.", None, "the agent gave no answer (passing needs F 0.80)"),
        ("...", "hello", "the reference answer has no words to compare: “...”"),
    ],
)
def test_response_match_evidence_reads_as_a_sentence(
    reference: str, answer: str | None, line: str
) -> None:
    # Printed as raw "precision: 0.125" lines, the form kept for graders agentgauge
    # does not know (docs/show.md).
    from agentgauge.graders.response_match import ResponseMatchGrader
    from agentgauge.schema import Task

    task = Task(id="t", instruction="hi", expectations={"reference_answer": reference})
    trial = Trial(task_id="t", trial=0, success=False, answer=answer)
    grade = ResponseMatchGrader().grade(task, trial)
    assert evidence_lines(grade) == [line]


def test_long_texts_are_cut_with_a_note_of_what_was_left_out() -> None:
    assert shorten("abc", 3) == "abc"
    # 10 characters, limit 4: 4 kept, 6 left out.
    assert shorten("0123456789", 4) == "0123… [6 more characters]"
    assert shorten("x" * (MAX_TEXT + 1_234)) == "x" * MAX_TEXT + "… [1,234 more characters]"
    assert shorten("01234", 4) == "0123… [1 more character]"
    # The cut falls between whole characters: the accent of é (e + U+0301) and the
    # laptop of 👩‍💻 (woman + ZWJ + laptop) went into the part left out, so the text
    # shown read "e" and "👩": other characters than the ones written.
    assert shorten("abce\u0301xyz", 4) == "abc… [5 more characters]"
    assert shorten("ab\U0001f469\u200d\U0001f4bbz", 4) == "ab… [4 more characters]"
    assert shorten("ab\U0001f44d\U0001f3fdz", 3) == "ab… [3 more characters]"  # skin tone
    # Thirteen differing keys: twelve named, the rest as an ellipsis; the count is exact.
    paths = [f"k{i}" for i in range(13)]
    (line,) = evidence_lines(_grade("state", {"paths": paths, "n_differences": 13}))
    assert line.endswith("k10, k11 …") and line.startswith("13 state key(s) differ")
    (reason,) = evidence_lines(_grade("rubric", {"reason": "r" * 700}))
    assert reason == "reason: " + "r" * 600 + "… [100 more characters]"


def _trial(**fields: Any) -> Trial:
    return Trial.model_validate({"task_id": "t", "success": False, **fields})


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"status": "timeout", "error_kind": "agent"}, "agent timeout"),
        ({"status": "timeout", "error_kind": "infra"}, "infra timeout"),
        ({"status": "error", "error_kind": "agent"}, "agent error"),
        ({"status": "error"}, "infra error"),  # an unclassified error counts as infra
        ({"grades": [{"grader": "state", "passed": True},
                     {"grader": "control", "passed": False, "status": "control:ask->act"},
                     {"grader": "answer", "passed": False, "status": "answer:missing"}]},
         "control:ask->act"),  # the first failed grader, by its status
        ({"grades": [{"grader": "minefields", "passed": False}]}, "minefields failed"),
        ({"grades": [{"grader": "rubric", "passed": None}]}, "failed"),  # unknown is no failure
        ({}, "failed"),
        ({"success": True}, "passed"),
    ],
)  # fmt: skip
def test_error_class_names_why_a_trial_did_not_pass(fields: dict[str, Any], why: str) -> None:
    assert error_class(_trial(**fields)) == why


def test_a_trial_with_no_outcome_is_ungraded() -> None:
    # Validation always derives success from a score; a trial built without validation
    # (a face handed a partial record) must not read as failed.
    trial = Trial.model_construct(task_id="t", success=None, status="completed", grades=[])
    assert error_class(trial) == "ungraded"


def test_failure_rows_count_cells_most_failures_first() -> None:
    # Cells (agent, task, variant) with (trial, success):
    #   a/t1/base: 0 fail, 1 fail, 2 pass  -> 2 of 3 failed, flaky
    #   a/t2/base: 0 fail, 1 fail          -> 2 of 2 failed
    #   a/t1/paraphrase:1: 0 pass          -> no failure, no row
    #   b/t1/base: 0 error (agent)         -> 1 of 1
    rows_in = [
        ("a", "t1", "base", 0, False), ("a", "t1", "base", 1, False), ("a", "t1", "base", 2, True),
        ("a", "t2", "base", 0, False), ("a", "t2", "base", 1, False),
        ("a", "t1", "paraphrase:1", 0, True),
    ]  # fmt: skip
    trials = [Trial(agent=a, task_id=t, variant=v, trial=k, success=s) for a, t, v, k, s in rows_in]
    trials.append(
        Trial(agent="b", task_id="t1", trial=0, success=False, status="error", error_kind="agent")
    )
    rows = failure_rows(trials)
    assert [(r["agent"], r["task_id"], r["failed"], r["n"], r["trials"]) for r in rows] == [
        ("a", "t1", 2, 3, [0, 1]),  # most failures first; ties by agent, then task id
        ("a", "t2", 2, 2, [0, 1]),
        ("b", "t1", 1, 1, [0]),
    ]
    assert rows[0]["classes"] == {"failed": 2} and rows[2]["classes"] == {"agent error": 1}
    assert [(r["agent"], r["task_id"]) for r in flips(rows)] == [("a", "t1")]
    assert failure_rows([Trial(task_id="t", success=True)]) == []


def test_event_rows_and_the_view_of_a_trial() -> None:
    trial = Trial.model_validate(
        {
            "task_id": "t",
            "trial": 3,
            "success": False,
            "events": [
                {"type": "message", "role": "user", "content": "hi", "t": 0.0},
                {"type": "model_call", "model": "m", "input_tokens": 1200, "output_tokens": 30,
                 "cost_usd": 0.0021, "latency_s": 0.5, "t": 0.1},
                {"type": "tool_call", "name": "add", "arguments": {"amount": 3}, "call_id": "c",
                 "t": 0.6},
                {"type": "tool_result", "call_id": "c", "content": "boom", "is_error": True,
                 "t": 1.0},
                {"type": "control", "decision": "stop", "reason": "gave up"},
            ],
            "grades": [{"grader": "state", "passed": False, "score": 0.0,
                        "evidence": {"paths": ["counter"], "n_differences": 1}}],
        }
    )  # fmt: skip
    rows = event_rows(trial)
    assert [r["kind"] for r in rows] == [
        "message", "model call", "tool call", "tool error", "control",
    ]  # fmt: skip
    assert rows[1]["detail"] == "1,200 in / 30 out tokens · $0.0021 · 0.50 s"
    # A call of a fraction of a cent reads as `metrics` prints it ("$0.0000" before).
    cheap = trial.model_copy(
        update={"events": [e.model_copy(update={"cost_usd": 0.00002}) if i == 1 else e
                           for i, e in enumerate(trial.events)]}
    )  # fmt: skip
    assert event_rows(cheap)[1]["detail"] == "1,200 in / 30 out tokens · $2.00e-05 · 0.50 s"
    assert rows[2]["text"] == '{"amount": 3}' and rows[2]["detail"] == "call c"
    assert rows[3]["is_error"] is True and rows[4]["who"] == "stop"
    # A model call lasts its latency; another step until the next event (0.6 → 1.0 s).
    assert rows[1]["duration_s"] == 0.5 and rows[2]["duration_s"] == pytest.approx(0.4)
    assert rows[4]["duration_s"] is None  # no time recorded
    (grade,) = grade_rows(trial)
    assert grade["verdict"] == "fail" and grade["lines"] == [
        "1 state key(s) differ from the expected state: counter"
    ]
    view = trial_view(trial)
    assert (view["task_id"], view["trial"], view["why"], view["n_events"]) == (
        "t",
        3,
        "state failed",
        5,
    )


def test_a_model_calls_latency_is_counted_once_on_the_timeline() -> None:
    # docs/metrics.md: a model call's `t` is when it returned, its `latency_s` after it
    # began (what `import otel` and `import inspect` write). The step before the call
    # was given the time to the call's `t`, which holds the call's latency: 6 s of
    # steps in this 3 s trial, the instant user message as long as the call.
    trial = _trial(
        latency_s=3.0,
        events=[
            {"type": "message", "role": "user", "content": "hi", "t": 0.0},
            {"type": "model_call", "model": "m", "latency_s": 3.0, "cost_usd": 0.01, "t": 3.0},
            {"type": "message", "role": "assistant", "content": "hello", "t": 3.0},
        ],
    )
    durations = [r["duration_s"] for r in event_rows(trial)]
    assert durations == [0.0, 3.0, None]
    assert sum(d for d in durations if d is not None) == trial.latency_s


def test_each_step_lasts_until_the_next_step_began() -> None:
    trial = _trial(
        events=[
            {"type": "message", "role": "user", "content": "hi", "t": 0.0},
            # Began at 0.5, returned at 2.0.
            {"type": "model_call", "model": "m", "latency_s": 1.5, "t": 2.0},
            {"type": "tool_call", "name": "add", "arguments": {}, "t": 2.25},
            {"type": "tool_result", "content": "ok", "t": 3.0},
            # Began at 2.5, before the result was recorded (a call in parallel).
            {"type": "model_call", "model": "m", "latency_s": 1.5, "t": 4.0},
            {"type": "model_call", "model": "m", "t": 4.5},  # no latency: unknown
            {"type": "message", "role": "assistant", "content": "done", "t": 5.0},
            {"type": "control", "decision": "stop", "t": 4.0},  # earlier than the last
        ],
    )
    durations = [r["duration_s"] for r in event_rows(trial)]
    assert durations == [0.5, 1.5, 0.75, 0.0, 1.5, None, None, None]


def test_the_rows_keep_the_whole_text() -> None:
    # docs/show.md: the JSON keeps the text exactly as recorded. The rows cut every text
    # at 2,000 characters, so `show --json` and the viewer could not give the rest.
    long = "A" * 5_000 + "END"
    trial = _trial(
        answer=long,
        events=[
            {"type": "message", "role": "assistant", "content": long},
            {"type": "tool_call", "name": "f", "arguments": {"q": long}},
            {"type": "tool_result", "content": long},
            {"type": "control", "decision": "stop", "reason": long},
        ],
    )
    view = trial_view(trial)
    assert view["answer"] == long
    texts = [r["text"] for r in view["events"]]
    assert texts == [long, '{"q": "' + long + '"}', long, long]
