"""Human labels: import from JSONL and CSV, located errors, use as grades."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentgauge.errors import InputError
from agentgauge.graders.human import HumanGrader, judge_label_records, load_labels, majority
from agentgauge.schema import Grade, Task, Trial


def write_jsonl(path: Path, rows: list[dict[str, Any] | str]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


def test_jsonl_and_csv_give_the_same_labels(tmp_path: Path) -> None:
    rows = [
        {"task_id": "t1", "trial": 0, "criterion": "polite", "label": "yes", "rater": "ann"},
        {"task_id": "t1", "trial": 0, "grader": "state", "label": 0, "rater": "ann"},
        {
            "task_id": "t2",
            "trial": 1,
            "criterion": "polite",
            "label": "Unknown",
            "rater": "bo",
            "variant": "paraphrase:1",
            "agent": "hasty",
            "note": "unclear",
        },
    ]
    from_jsonl = load_labels(write_jsonl(tmp_path / "l.jsonl", rows))
    csv_text = (
        "task_id,trial,criterion,grader,label,rater,variant,agent,note\n"
        "t1,0,polite,,yes,ann,,,\n"
        "t1,0,,state,0,ann,,,\n"
        't2,1,polite,,Unknown,bo,paraphrase:1,hasty,"unclear"\n'
    )
    (tmp_path / "l.csv").write_text(csv_text, encoding="utf-8")
    from_csv = load_labels(tmp_path / "l.csv")
    strip = [(lb.item, lb.label, lb.rater, lb.note) for lb in from_jsonl]
    assert strip == [(lb.item, lb.label, lb.rater, lb.note) for lb in from_csv]
    assert [lb.grader for lb in from_jsonl] == ["rubric:polite", "state", "rubric:polite"]
    assert [lb.label for lb in from_jsonl] == ["pass", "fail", "unknown"]
    assert from_jsonl[0].item == ("t1", 0, "base", None, "rubric:polite")  # no variant = base
    assert from_csv[2].line == 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("pass", "pass"),
        ("YES", "pass"),
        ("1", "pass"),
        (1, "pass"),
        (True, "pass"),
        ("fail", "fail"),
        ("no", "fail"),
        (0, "fail"),
        (False, "fail"),
        ("unknown", "unknown"),
    ],
)
def test_label_spellings(tmp_path: Path, value: Any, expected: str) -> None:
    row = {"task_id": "t", "trial": 0, "grader": "g", "label": value, "rater": "r"}
    assert load_labels(write_jsonl(tmp_path / "l.jsonl", [row]))[0].label == expected


GOOD = {"task_id": "t1", "trial": 0, "criterion": "c", "label": "pass", "rater": "ann"}


@pytest.mark.parametrize(
    ("bad", "field", "reason"),
    [
        ({"label": "maybe"}, "label", "expected one of"),
        ({"label": None}, "label", "missing"),
        ({"label": 2}, "label", "expected one of"),
        ({"trial": "first"}, "trial", "integer"),
        ({"trial": -1}, "trial", ">= 0"),
        ({"trial": True}, "trial", "integer"),
        ({"task_id": ""}, "task_id", "missing"),
        ({"rater": None}, "rater", "missing"),
        ({"grader": "state"}, "grader", "not both"),
        ({"criterion": None}, "criterion", "one of 'criterion' or 'grader'"),
        ({"colour": "red"}, "colour", "unknown field"),
        ({"kind": "vote"}, "kind", "expected 'grade' or 'pairwise'"),
        ({"order": "AB"}, "order", "only pairwise"),
        ({"kind": "pairwise", "label": "A"}, "order", "'AB' or 'BA'"),
        ({"kind": "pairwise", "order": "AB", "label": "yes"}, "label", "A, B, tie"),
    ],
)
def test_jsonl_errors_name_file_line_and_field(
    tmp_path: Path, bad: dict[str, Any], field: str, reason: str
) -> None:
    path = write_jsonl(tmp_path / "l.jsonl", [GOOD, {**GOOD, "rater": "bo", **bad}])
    with pytest.raises(InputError) as exc:
        load_labels(path)
    assert str(exc.value).startswith(f"{path}:2: {field}: ")
    assert reason in str(exc.value)


def test_jsonl_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "l.jsonl", [GOOD, "", '{"task_id": "t1",'])
    with pytest.raises(InputError, match=r"l\.jsonl:3: invalid JSON"):
        load_labels(path)


def test_duplicate_label_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "l.jsonl", [GOOD, {**GOOD, "rater": "bo"}, {**GOOD, "label": "no"}]
    )
    with pytest.raises(
        InputError, match=r"l\.jsonl:3: rater: rater 'ann' already labelled this item on line 1"
    ):
        load_labels(path)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("task_id,trial,criterion,label,rater\nt1,0,c,pass,ann\nt1,x,c,pass,bo\n", ":3: trial: "),
        (
            "task_id,trial,criterion,label,rater\nt1,0,c,pass,ann\nt1,0,c,perhaps,bo\n",
            ":3: label: ",
        ),
        (
            "task_id,trial,criterion,label,rater,colour\nt1,0,c,pass,ann,red\n",
            ":1: colour: unknown column",
        ),
        ("task_id,trial,criterion,label\nt1,0,c,pass\n", ":1: rater: required column"),
        (
            "task_id,trial,criterion,label,rater\nt1,0,c,pass,ann\n\nt1,1,,pass,bo\n",
            ":4: criterion: ",
        ),
        (
            "task_id,trial,criterion,label,rater\nt1,0,c,pass,ann,extra\n",
            ":2: 6 cells for 5 columns",
        ),
    ],
)
def test_csv_errors_name_line_and_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_labels(path)
    assert str(exc.value).startswith(f"{path}{where}")


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "l.jsonl"
    path.write_text("\n", encoding="utf-8")
    with pytest.raises(InputError, match="no labels"):
        load_labels(path)


def test_a_single_rater_file_may_omit_the_rater(tmp_path: Path) -> None:
    path = tmp_path / "judge.csv"
    path.write_text("task_id,trial,criterion,label\nt1,0,c,yes\n", encoding="utf-8")
    (label,) = load_labels(path, rater="judge")
    assert (label.rater, label.label) == ("judge", "pass")


def test_majority() -> None:
    assert majority(["pass", "pass", "fail"]) == "pass"
    assert majority(["pass", "fail"]) == "unknown"  # a tie decides nothing
    assert majority(["unknown", "fail"]) == "fail"  # unknowns do not vote
    assert majority(["unknown"]) == "unknown"


def test_labels_as_grades(tmp_path: Path) -> None:
    rows = [
        {"task_id": "t1", "trial": 0, "criterion": "polite", "label": "pass", "rater": "ann"},
        {"task_id": "t1", "trial": 0, "criterion": "polite", "label": "pass", "rater": "bo"},
        {"task_id": "t1", "trial": 0, "criterion": "polite", "label": "fail", "rater": "judge"},
        {"task_id": "t1", "trial": 0, "criterion": "safe", "label": "pass", "rater": "ann"},
        {"task_id": "t1", "trial": 1, "criterion": "polite", "label": "fail", "rater": "ann"},
        {"task_id": "t1", "trial": 2, "criterion": "polite", "label": "pass", "rater": "ann"},
        {"task_id": "t1", "trial": 2, "criterion": "polite", "label": "fail", "rater": "bo"},
        {
            "task_id": "t1",
            "trial": 3,
            "criterion": "polite",
            "label": "pass",
            "rater": "ann",
            "agent": "careful",
        },
    ]
    labels = load_labels(write_jsonl(tmp_path / "l.jsonl", rows))
    grader = HumanGrader(labels)
    task = Task(id="t1", instruction="x")
    assert grader.enabled(task)

    def trial(i: int, agent: str | None = None) -> Trial:
        return Trial(task_id="t1", trial=i, success=True, agent=agent)

    g0 = grader.grade(task, trial(0))
    # humans agree on polite (the judge's "fail" is left out) and on safe
    assert (g0.grader, g0.passed, g0.score) == ("human", True, 1.0)
    assert g0.evidence["rubric:polite"]["labels"] == {"ann": "pass", "bo": "pass"}
    g1 = grader.grade(task, trial(1))
    assert (g1.passed, g1.status) == (False, "human:failed:rubric:polite")
    assert grader.grade(task, trial(2)).status == "unknown:undecided"  # 1–1 tie
    assert grader.grade(task, trial(3, agent="careful")).passed is True
    assert grader.grade(task, trial(3, agent="hasty")).status == "unknown:no_labels"
    only_safe = HumanGrader(tmp_path / "l.jsonl", target="rubric:safe")
    assert only_safe.name == "human:rubric:safe"
    assert only_safe.grade(task, trial(1)).status == "unknown:no_labels"


def test_judge_label_records_round_trip(tmp_path: Path) -> None:
    trial = Trial(task_id="t1", trial=2, success=True, agent="hasty", variant="fault:timeout")
    grades = [
        Grade(grader="rubric:polite", passed=True),
        Grade(grader="rubric:safe", passed=None),
    ]
    records = judge_label_records(trial, grades)
    labels = load_labels(write_jsonl(tmp_path / "j.jsonl", records))  # type: ignore[arg-type]
    assert [(lb.item, lb.label, lb.rater) for lb in labels] == [
        (("t1", 2, "fault:timeout", "hasty", "rubric:polite"), "pass", "judge"),
        (("t1", 2, "fault:timeout", "hasty", "rubric:safe"), "unknown", "judge"),
    ]


def test_a_label_without_a_variant_is_about_the_base_trial(tmp_path: Path) -> None:
    """It was applied to trial 0 of every variant, though a paraphrase's trial 0 is
    another transcript than the one the rater read (and calibration read it as base)."""
    rows = [
        {"task_id": "t1", "trial": 0, "criterion": "polite", "label": "pass", "rater": "ann"},
        {
            "task_id": "t1",
            "trial": 0,
            "variant": "paraphrase:1",
            "criterion": "polite",
            "label": "fail",
            "rater": "ann",
        },
    ]
    grader = HumanGrader(load_labels(write_jsonl(tmp_path / "l.jsonl", rows)))
    task = Task(id="t1", instruction="x")

    def trial(variant: str) -> Trial:
        return Trial(task_id="t1", trial=0, success=True, variant=variant)

    assert grader.grade(task, trial("base")).passed is True
    assert grader.grade(task, trial("paraphrase:1")).passed is False
    assert grader.grade(task, trial("paraphrase:2")).status == "unknown:no_labels"
