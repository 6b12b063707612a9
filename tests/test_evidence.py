"""Grade evidence the metrics read: refused in a file with its line and field, left out
of the metrics with a counted reason when already stored, a grader error at run time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import Cli

from agentgauge.evidence import evidence_problem, grades_problem
from agentgauge.facts import grade_facts
from agentgauge.metrics.control import control_metrics
from agentgauge.metrics.safety import safety
from agentgauge.schema import Grade, Run, Task, Trial
from agentgauge.store import Store, utc_now

# --------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("grader", "evidence", "field", "reason"),
    [
        ("minefields", {"max_severity": 5}, "max_severity", "must be a number in [0, 1], got 5"),
        ("minefields", {"max_severity": "high"}, "max_severity", "got the string 'high'"),
        ("minefields", {"hits": 5}, "hits", "must be a list of hits, got 5"),
        ("minefields", {"hits": ["x"]}, "hits[0]", "must be an object"),
        ("minefields", {"hits": [{}, {"severity": None}]}, "hits[1].severity", "got null"),
        ("minefields", {"hits": [{"severity": -0.1}]}, "hits[0].severity", "got -0.1"),
        (
            "control",
            {"irreversible_calls": 1, "unconfirmed_irreversible": 3},
            "unconfirmed_irreversible",
            "must be at most irreversible_calls (1), got 3",
        ),
        ("control", {"irreversible_calls": -1}, "irreversible_calls", "integer ≥ 0, got -1"),
        ("control", {"irreversible_calls": 1.5}, "irreversible_calls", "got 1.5"),
        ("control", {"unconfirmed_irreversible": True}, "unconfirmed_irreversible", "boolean"),
        ("trajectory", {"precision": 7}, "precision", "must be a number in [0, 1], got 7"),
        ("trajectory", {"recall": -1}, "recall", "got -1"),
        ("trajectory", {"mode": 3}, "mode", "must be a string, got 3"),
        ("tool_calls", {"n_calls": "x"}, "n_calls", "got the string 'x'"),
        ("tool_calls", {"n_expected": -2}, "n_expected", "got -2"),
        ("checkpoints", {"checkpoints": {}}, "checkpoints", "must be a list"),
        ("checkpoints", {"checkpoints": [{"turn": 0}]}, "checkpoints[0].turn", "≥ 1, got 0"),
        ("checkpoints", {"checkpoints": [{"turn": 2**70}]}, "checkpoints[0].turn", "≥ 1"),
        (
            "checkpoints",
            {"checkpoints": [{"turn": 1, "verdict": "passed"}]},
            "checkpoints[0].verdict",
            "must be 'pass', 'fail' or 'unknown', got the string 'passed'",
        ),
    ],
)
def test_each_field_the_metrics_read_is_checked(
    grader: str, evidence: dict[str, Any], field: str, reason: str
) -> None:
    problem = evidence_problem(grader, evidence)
    assert problem is not None and problem[0] == field and reason in problem[1], problem


@pytest.mark.parametrize(
    ("grader", "evidence"),
    [
        # What the built-in graders write (graders/*.py), and unknown/absent values.
        (
            "minefields",
            {"hits": [{"tool": "rm", "severity": 0.4, "reason": "x"}], "max_severity": 0.4},
        ),
        ("minefields", {"hits": []}),
        ("minefields", {"hits": [{"tool": "rm"}]}),  # no severity: the worst, 1.0
        ("minefields", "too many minefields"),  # a sentence: no fields to read
        ("control", {"expected": "act", "irreversible_calls": 2, "unconfirmed_irreversible": 2}),
        ("control", {"irreversible_calls": None, "unconfirmed_irreversible": None}),
        ("trajectory", {"mode": "in_order", "precision": None, "recall": 1}),
        ("tool_calls", {"category": "simple", "n_calls": 0, "n_expected": 1, "detail": "..."}),
        ("checkpoints", {"checkpoints": [{"turn": 1, "verdict": "unknown", "status": "x"}]}),
        # Other graders' evidence is free-form.
        ("rubric:tone", {"precision": 7, "max_severity": "high"}),
        ("state", {"irreversible_calls": -4}),
    ],
)
def test_what_graders_write_and_other_graders_evidence_pass(grader: str, evidence: Any) -> None:
    assert evidence_problem(grader, evidence) is None


def test_grades_problem_names_the_grade() -> None:
    grades = [
        Grade(grader="state", passed=True),
        Grade(grader="trajectory", evidence={"recall": 2}),
    ]
    assert grades_problem(grades) == (
        "grades[1].evidence.recall",
        "must be a number in [0, 1], got 2",
    )


# --------------------------------------------------------------------------- files


def _write(path: Path, *records: dict[str, Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


SEVERITY_5 = {
    "task_id": "a",
    "success": False,
    "grades": [{"grader": "minefields", "passed": False, "evidence": {"max_severity": 5}}],
}
CLEAN = {"task_id": "b", "success": True, "grades": [{"grader": "minefields", "passed": True}]}


def test_a_file_with_bad_evidence_is_refused_with_line_and_field(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    src = _write(tmp_path / "sev.jsonl", CLEAN, SEVERITY_5)
    want = (
        f"agentgauge: error: {src}:2: grades[0].evidence.max_severity: "
        "must be a number in [0, 1], got 5\n"
    )
    # Before: metrics ended in a ValueError traceback (exit 1), import accepted it.
    assert cli("metrics", str(src)) == (2, "", want)
    assert cli("import", "jsonl", str(src), "--store", "s.db", "--run-id", "r") == (2, "", want)
    assert not (tmp_path / "s.db").exists()  # nothing written

    control = {
        "task_id": "a",
        "success": False,
        "expected_control": "act",
        "control": "act",
        "grades": [
            {
                "grader": "control",
                "passed": False,
                "evidence": {"irreversible_calls": 1, "unconfirmed_irreversible": 3},
            }
        ],
    }
    ctl = _write(tmp_path / "ctl.jsonl", control)
    assert cli("metrics", str(ctl)) == (
        2,
        "",
        f"agentgauge: error: {ctl}:1: grades[0].evidence.unconfirmed_irreversible: must be "
        "at most irreversible_calls (1), got 3: an unconfirmed call is one of the irreversible "
        "ones\n",
    )
    precision = {
        "task_id": "a",
        "success": True,
        "grades": [
            {"grader": "state", "passed": True},
            {"grader": "trajectory", "passed": True, "evidence": {"precision": 7}},
        ],
    }
    traj = _write(tmp_path / "traj.jsonl", precision)
    code, _, err = cli("metrics", str(traj))
    assert (code, err) == (
        2,
        f"agentgauge: error: {traj}:1: grades[1].evidence.precision: must be a number in "
        "[0, 1], got 7\n",
    )


# --------------------------------------------------------------------------- stored


def _bad_store(path: Path) -> None:
    """A run stored before evidence was checked (or by a grader that bypassed it)."""

    def g(name: str, passed: bool, evidence: Any, status: str | None = None) -> Grade:
        return Grade(grader=name, passed=passed, evidence=evidence, status=status)

    trials = [
        Trial(
            task_id="a",
            trial=0,
            success=False,
            expected_control="act",
            control="act",
            grades=[
                g("minefields", False, {"max_severity": 5}),
                g("control", False, {"irreversible_calls": 1, "unconfirmed_irreversible": 3}),
                g("trajectory", True, {"mode": "in_order", "precision": 7, "recall": -1}),
                g("checkpoints", False, {"checkpoints": [{"turn": 2**70, "verdict": "fail"}]}),
            ],
        ),
        Trial(
            task_id="b",
            trial=0,
            success=True,
            expected_control="act",
            control="act",
            grades=[
                g("minefields", False, {"hits": [{"severity": "x"}, {"severity": 0.5}]}),
                g("control", True, {"irreversible_calls": 2, "unconfirmed_irreversible": 0}),
                g("trajectory", True, {"mode": "in_order", "precision": 0.5, "recall": 1}),
                g("tool_calls", False, {"n_calls": "x", "n_expected": 3}, "wrong_count"),
            ],
        ),
        Trial(task_id="c", trial=0, success=True, grades=[g("minefields", False, {"hits": 5})]),
    ]
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now(), agent="x"))
        db.add_trials("r", trials)


def test_stored_bad_evidence_is_left_out_with_a_reason(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _bad_store(tmp_path / "old.db")
    code, out, err = cli("metrics", "old.db:r", "--json")
    assert code == 0, err  # before: ValueError traceback, exit 1
    data = json.loads(out)
    (group,) = data["groups"]
    tool_use, reasons = group["tool_use"], group["null_reasons"]
    # Trial a's precision 7 and recall -1 are left out: b's 0.5 and 1 remain.
    assert (tool_use["action_precision"], tool_use["action_recall"]) == (0.5, 1.0)
    assert reasons["tool_use.action_precision"] == (
        "1 trial's trajectory grade has a precision outside [0, 1]: left out"
    )
    # Severities: a's 5 left out; b's unreadable "x" beside 0.5 reads 0.5; c's hits
    # (no list) give none, so the worst, 1.0: mean (0.5 + 1.0) / 2.
    assert tool_use["minefield_mean_severity"] == pytest.approx(0.75)
    assert reasons["tool_use.minefield_mean_severity"].startswith(
        "1 trial's minefields grade has a severity outside [0, 1]"
    )
    # Control: a's 3 unconfirmed of 1 left out; b has 2 irreversible, none missed.
    control = group["control"]
    assert control["missed_confirmation"] == 0.0
    assert control["counts"]["trials_with_counts"] == 1
    assert control["counts"]["trials_with_bad_counts"] == 1
    assert "left out" in reasons["control.missed_confirmation"]
    assert group["turns"]["n_left_out"] == 1 and group["turns"]["per_turn"] == []
    assert "turns.per_turn" in reasons
    (rel,) = data["reliability"]
    # 3 violations of 3; harmlessness 1 − mean(0.5, 1.0) over the two readable.
    assert rel["safety"]["compliance"] == 0.0
    assert rel["safety"]["harmlessness"] == pytest.approx(0.25)
    assert rel["safety"]["n_left_out"] == 1
    assert "left out of harmlessness" in rel["null_reasons"]["safety.harmlessness"]
    # The tool-call error class of b's unreadable n_calls: a wrong call, not a crash.
    assert tool_use["error_classes"]["wrong_call"] == 1

    code, out, err = cli("metrics", "old.db:r")
    assert code == 0 and "left out" in out, err
    assert "harmlessness of violations: 1 trial's minefields grade" in out
    code, _, err = cli("report", "old.db:r", "--html", "r.html", "--markdown", "r.md")
    assert code == 0, err
    md = (tmp_path / "r.md").read_text()
    assert "action\\_precision: 1 trial's trajectory grade" in md
    assert "not measured: tool\\_use.action\\_precision" not in md  # it is, over the rest
    (tmp_path / "gates.yaml").write_text(
        "gates:\n"
        "  - metric: tool_use.action_precision\n    max: 1\n"
        "  - metric: control.missed_confirmation\n    max: 0.5\n"
    )
    code, out, err = cli("gate", "old.db:r", "--config", "gates.yaml")
    assert code == 0, err + out
    for task in ("a", "b", "c"):
        code, _, err = cli("show", "old.db:r", "--task", task)
        assert code == 0, err


def test_metric_functions_leave_out_what_cannot_be() -> None:
    s = safety([True, True, False], [5.0, 0.4, np.nan])
    # compliance 1/3; harmlessness 1 − 0.4 over the one readable severity
    assert s.compliance == pytest.approx(1 / 3) and s.harmlessness == pytest.approx(0.6)
    assert s.n_left_out == 1 and s.reason and "left out" in s.reason
    only_bad = safety([True], [np.nan])
    assert only_bad.harmlessness is None and only_bad.n_left_out == 1
    out = control_metrics(
        ["act"] * 4, ["act"] * 4, irreversible=[1, 2, -1, 1.5], unconfirmed=[3, 1, 0, 0]
    )
    # Rows 1 (3 of 1), 3 (-1) and 4 (1.5) left out; row 2 missed 1 of 2: 1/1
    assert out["missed_confirmation"] == 1.0
    assert out["counts"]["trials_with_bad_counts"] == 3
    assert out["null_reasons"]["missed_confirmation"].startswith(
        "3 trials' control grades record irreversible-call counts that cannot be"
    )


def test_facts_of_malformed_evidence_do_not_raise() -> None:
    def facts(grader: str, evidence: Any, status: str | None = None) -> dict[str, Any]:
        grade = {"grader": grader, "passed": False, "evidence": evidence, "status": status}
        return grade_facts([grade])

    # Each raised TypeError (no list; a string or null beside a number in max()).
    assert facts("minefields", {"hits": 5})["mine_hit_severity"] is None
    mixed = facts("minefields", {"hits": [{"severity": "x"}, {"severity": 1}]})
    assert mixed["mine_hit_severity"] == 1.0
    null = facts("minefields", {"hits": [{"severity": None}, {"severity": 0.5}]})
    assert null["mine_hit_severity"] == 0.5
    wrong = facts("tool_calls", {"n_calls": "x", "n_expected": 3}, "wrong_count")
    assert wrong["tc_class"] == "wrong_call"


# --------------------------------------------------------------------------- run time


def test_a_grader_recording_bad_evidence_is_that_trials_grader_error(tmp_path: Path) -> None:
    from agentgauge.harness.runner import run
    from agentgauge.testing.worlds import counting_agent, make_counter_env

    def severe(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        bad = Grade(grader="minefields", passed=False, evidence={"max_severity": 5})
        return True, 1.0, [bad]

    task = Task(id="t", instruction="please add 1", expectations={"final_state": {"counter": 1}})
    header = run(
        [task],
        counting_agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        grader=severe,
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        (t,) = db.trials(header.run_id)
    (grade,) = t.grades
    assert (grade.grader, grade.status, grade.passed) == ("harness", "grader_error", None)
    assert grade.evidence.startswith(
        "grader 'minefields' recorded evidence.max_severity: must be a number in [0, 1], got 5"
    )
    assert t.status == "completed" and t.events and not t.success


def test_a_regrade_recording_bad_evidence_writes_nothing(tmp_path: Path) -> None:
    from agentgauge.errors import InputError
    from agentgauge.graders.regrade import _grade

    class Severe:
        name = "minefields"
        kind = "code"

        def enabled(self, task: Task) -> bool:
            return True

        def grade(self, task: Task, trial: Trial) -> Grade:
            return Grade(grader="minefields", passed=False, evidence={"max_severity": 5})

    with Store(tmp_path / "s.db") as db:
        task = Task(id="t", instruction="x")
        trial = Trial(task_id="t", trial=0, success=True)
        with pytest.raises(InputError, match=r"recorded grades\[0\]\.evidence\.max_severity"):
            _grade(db, task, trial, [Severe()])


def test_an_export_of_bad_stored_evidence_is_refused_on_import(
    tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSONL and OTLP exports carry the evidence as it is stored: importing them
    back names the field (the OTLP file by its span), and writes nothing."""
    monkeypatch.chdir(tmp_path)
    _bad_store(tmp_path / "old.db")
    assert cli("export", "old.db:r", "--jsonl", "out.jsonl")[0] == 0
    code, _, err = cli("import", "jsonl", "out.jsonl", "--store", "new.db")
    assert code == 2 and err.startswith("agentgauge: error: out.jsonl:1: grades[0].evidence.")
    assert cli("export", "old.db:r", "--otel", "out.json")[0] == 0
    code, _, err = cli("import", "otel", "out.json", "--store", "new.db")
    assert code == 2 and ": grades[0].evidence.checkpoints[0].turn: must be an integer ≥ 1" in err
    assert not (tmp_path / "new.db").exists()
