"""Re-grading a stored run: a new grade version beside the old, in one transaction."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.errors import InputError
from agentgauge.graders import register, regrade
from agentgauge.schema import (
    AnswerSpec,
    Expectations,
    Grade,
    Run,
    Task,
    ToolCallEvent,
    Trial,
)
from agentgauge.store import Store, utc_now

KEY = [{"get_weather": {"city": ["Paris"], "unit": ["c", ""]}}]
FUNCS = [
    {
        "name": "get_weather",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["city"],
        },
    }
]
TASKS = [
    Task(
        id="w",
        instruction="weather in Paris?",
        expectations=Expectations(functions=FUNCS, answer_key=KEY),
    ),
    Task(
        id="a", instruction="say hi", expectations=Expectations(answer=AnswerSpec(contains=["hi"]))
    ),
]


def _store(path: Path) -> Store:
    db = Store(path)
    with db.transaction():
        db.create_run(Run(run_id="r1", created_at=utc_now()))
        db.add_tasks("r1", TASKS)
    trials = [
        # Recorded as failures, though the calls are right: re-grading flips them.
        Trial(
            task_id="w",
            trial=0,
            success=False,
            events=[ToolCallEvent(name="get_weather", arguments={"city": "paris"})],
        ),
        Trial(
            task_id="w",
            trial=1,
            success=True,
            events=[ToolCallEvent(name="get_weather", arguments={"city": "Rome"})],
        ),
        Trial(
            task_id="a",
            trial=0,
            success=True,
            answer="Hi there",
            grades=[Grade(grader="old", passed=True)],
        ),
        Trial(task_id="zzz", trial=0, success=True),
        # A trial that did not finish: its answer would pass "say hi", but it keeps
        # its recorded failure.
        Trial(task_id="a", trial=1, success=False, status="error", answer="hi"),
    ]
    db.add_trials("r1", trials)
    return db


def test_regrade_writes_a_new_version(tmp_path: Path) -> None:
    with _store(tmp_path / "s.db") as db:
        # Activated: the run reports the new version (a re-grade alone changes nothing
        # the run reports; test_regrade_versions.py).
        res = regrade(db, "r1", activate=True)
        assert (res.version, res.n_trials, res.n_changed, res.skipped) == (2, 3, 2, ["zzz"])
        assert res.n_unfinished == 1
        trials = db.trials("r1")
        assert [t.success for t in trials] == [True, False, True, True, False]
        # Not graded, as the run grades no trial that ended in an error (it was).
        assert trials[4].grades == []
        latest = {g.grader: g for g in trials[1].grades}
        assert latest["tool_calls"].status == "value_error:string"
        rows = db.conn.execute(
            "SELECT version, grader FROM grades g JOIN trials t ON t.id = g.trial_pk"
            " WHERE t.task_id = 'a' AND t.trial = 0 ORDER BY version"
        ).fetchall()
        assert rows == [(1, "old"), (2, "answer")]  # the old grade is kept beside the new
        res = regrade(db, "r1", ["answer"])
        assert (res.version, res.graders) == (3, ["answer"])


def test_regrade_is_atomic(tmp_path: Path) -> None:
    @register("explodes_on_second")
    class Explodes:
        name = "explodes_on_second"
        kind = "model"  # never run by default
        seen = 0

        def enabled(self, task: Task) -> bool:
            return True

        def grade(self, task: Task, trial: Trial) -> Grade:
            type(self).seen += 1
            if type(self).seen == 2:
                raise RuntimeError("boom")
            return Grade(grader=self.name, passed=False)

    with _store(tmp_path / "s.db") as db:
        before = db.conn.execute("SELECT COUNT(*) FROM grade_versions").fetchone()
        # One line naming the trial and what the grader raised, not a traceback.
        # The grader named, as the run's summary names it (it said only "raised ...").
        with pytest.raises(InputError, match=r"grading trial 1 of task 'w' \(variant base\): "
                           r"grader 'explodes_on_second' raised RuntimeError: boom; "
                           r"nothing was written"):  # fmt: skip
            regrade(db, "r1", ["explodes_on_second"])
        assert db.conn.execute("SELECT COUNT(*) FROM grade_versions").fetchone() == before
        assert [t.success for t in db.trials("r1")] == [False, True, True, True, False]


def test_regrade_errors(tmp_path: Path) -> None:
    with _store(tmp_path / "s.db") as db:
        with pytest.raises(InputError, match="unknown grader"):
            regrade(db, "r1", ["nope"])
        with pytest.raises(InputError, match="no run"):
            regrade(db, "r2")
        with db.transaction():
            db.create_run(Run(run_id="bare", created_at=utc_now()))
        with pytest.raises(InputError, match="no stored tasks"):
            regrade(db, "bare")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True, check=False
    )


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store(path).close()
    done = _cli("grade", f"{path}:r1", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["schema"], out["version"], out["n_changed"]) == ("agentgauge.grade/1", 2, 2)
    done = _cli("grade", "r1", "--store", str(path), "--graders", "answer")
    assert done.returncode == 0, done.stderr
    assert "grade version 3" in done.stdout
    bad = _cli("grade", f"{path}:r1", "--graders", "nope")
    assert bad.returncode == 2
    assert "unknown grader" in bad.stderr


def test_a_stored_task_that_is_no_longer_valid_is_one_line_not_a_traceback(
    tmp_path: Path,
) -> None:
    # A negative answer tolerance loaded before it was refused: every trial's grading
    # raised ValueError (tolerances must be non-negative) and `grade` died in a traceback.
    path = tmp_path / "s.db"
    with _store(path) as db, db.transaction():
        task = TASKS[1].model_copy(deep=True)
        assert task.expectations.answer is not None
        task.expectations.answer.number, task.expectations.answer.tolerance = 3.0, -1.0
        db.create_run(Run(run_id="r2", created_at=utc_now()))
        db.add_tasks("r2", [task])
    done = _cli("grade", f"{path}:r2")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        f"agentgauge: error: {path}: tasks.expectations.answer.tolerance: run 'r2' holds "
        "task 'a', which is no longer valid (Input should be greater than or equal to 0 "
        "(got -1.0)); run the corrected suite again"
    ]


def test_unknown_grades_are_counted_with_a_reason_even_when_not_required(
    tmp_path: Path,
) -> None:
    # A judge nobody answers leaves every grade unknown; a grader that is not
    # required changes no outcome, so the count and a reason are what tell the user.
    from agentgauge.graders.base import unknown

    @register("test_dead_judge")
    class DeadJudge:
        name = "test_dead_judge"
        kind = "model"

        def enabled(self, task: Task) -> bool:
            return True

        def grade(self, task: Task, trial: Trial) -> Grade:
            why = {"samples": [{"error": "judge endpoint unreachable", "status": "x"}]}
            return unknown(self.name, "judge_unavailable", why)

    with _store(tmp_path / "s.db") as db:
        res = regrade(db, "r1", ["test_dead_judge"])
    assert res.n_unknown == 0  # not a required grade
    # 3: the trial that ended in an error is not graded (nor was it by the run)
    assert res.unknown_grades == {"test_dead_judge unknown:judge_unavailable": 3}
    key = "test_dead_judge unknown:judge_unavailable"
    assert res.unknown_examples[key] == "judge endpoint unreachable"


def _minefield_store(path: Path) -> None:
    """A run as the harness records it: task 'm' has a minefield, task 'n' has none;
    each trial's grades and outcome are those of the default graders."""
    from agentgauge.graders import grade_trial
    from agentgauge.schema import Minefield

    tasks = [
        Task(
            id="m",
            instruction="tidy up",
            expectations=Expectations(
                answer=AnswerSpec(contains=["ok"]), minefields=[Minefield(tool="delete_all")]
            ),
        ),
        Task(
            id="n",
            instruction="say ok",
            expectations=Expectations(answer=AnswerSpec(contains=["ok"])),
        ),
    ]
    raw = [
        Trial(
            task_id="m",
            trial=0,
            success=False,
            answer="ok",
            events=[ToolCallEvent(name="delete_all")],
        ),
        Trial(task_id="m", trial=1, success=False, answer="ok"),
        Trial(task_id="n", trial=0, success=False, answer="ok"),
        Trial(task_id="n", trial=1, success=False, answer="no"),
    ]
    trials = []
    for trial in raw:
        graded = grade_trial(tasks[trial.task_id == "n"], trial)
        trials.append(
            trial.model_copy(
                update={"grades": graded.grades, "success": graded.success, "score": graded.score}
            )
        )
    with Store(path) as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at=utc_now()))
            db.add_tasks("r", tasks)
        db.add_trials("r", trials)


def test_a_named_grader_grades_only_the_tasks_that_declare_what_it_needs(
    tmp_path: Path,
) -> None:
    # `--graders minefields` graded every task: each trial of a task without minefields
    # was stored as a minefield pass, and the hit rate fell from 1/2 to 1/4 with the
    # same grader; `--graders tool_calls` read a missing answer key as an irrelevance task.
    from agentgauge.api import metrics

    path = tmp_path / "s.db"
    _minefield_store(path)
    done = _cli("grade", f"{path}:r", "--graders", "minefields")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:3] == [
        "re-graded 2 trials of run r as grade version 2 (minefields)",
        "success 0.500 -> 0.500; 0 trials changed; 0 with an unknown required grade",
        "left alone: 2 trials whose tasks declare nothing minefields check (their "
        "outcomes stand, with no grade)",
    ]
    with Store(path, create=False) as db:
        rows = db.conn.execute(
            "SELECT t.task_id, g.status FROM grades g JOIN trials t ON t.id = g.trial_pk"
            " WHERE g.version = 2 ORDER BY t.task_id, t.trial"
        ).fetchall()
    assert rows == [("m", "minefield:hit"), ("m", "passed")]
    rates = [
        metrics(f"{path}:r#grade={v}").to_dict()["groups"][0]["tool_use"]["minefield_hit_rate"]
        for v in (1, 2)
    ]
    assert rates == [0.5, 0.5]

    # A grader that applies to no task of the run writes no empty version: one line, exit 2.
    bad = _cli("grade", f"{path}:r", "--graders", "tool_calls")
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        f"agentgauge: error: {path}: --graders: grader 'tool_calls' applies to no task of "
        "run 'r': a code grader grades only the tasks that declare what it needs "
        "(docs/graders.md); nothing was written"
    ]
    # One of two named graders that applies nowhere is said, and the other one grades.
    done = _cli("grade", f"{path}:r", "--graders", "minefields,checkpoints", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["version"], out["n_trials"], out["n_not_applicable"], out["idle_graders"]) == (
        3,
        2,
        2,
        ["checkpoints"],
    )


def test_grade_trial_with_named_graders_skips_the_code_graders_a_task_does_not_enable() -> None:
    from agentgauge.graders import grade_trial

    graded = grade_trial(
        TASKS[1], Trial(task_id="a", trial=0, success=False, answer="hi"), ["minefields", "answer"]
    )
    assert [g.grader for g in graded.grades] == ["answer"]
    assert graded.success is True


def test_an_unknown_partial_credit_grade_is_not_counted_as_a_required_one(tmp_path: Path) -> None:
    # `response_match` is not required, only in partial credit: "2 with an unknown
    # required grade" said the trials' success rested on a grade that decided nothing.
    task = Task(
        id="p",
        instruction="capital of France?",
        expectations=Expectations(
            answer=AnswerSpec(contains=["Paris"]),
            reference_answer="...",
            required=["answer"],
            partial_credit=["answer", "response_match"],
        ),
    )
    path = tmp_path / "s.db"
    with Store(path) as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at=utc_now()))
            db.add_tasks("r", [task])
        db.add_trials(
            "r", [Trial(task_id="p", trial=i, success=True, answer="Paris") for i in (0, 1)]
        )
    done = _cli("grade", f"{path}:r")
    assert done.returncode == 0, done.stderr
    assert (
        "0 trials changed; 0 with an unknown required grade, 2 more with an unknown "
        "partial-credit grade (left out of their score)"
    ) in done.stdout
    assert "unknown: response_match unknown:reference has no words × 2" in done.stdout
    out = json.loads(_cli("grade", f"{path}:r", "--json").stdout)
    assert (out["n_unknown"], out["n_unknown_partial"]) == (0, 2)
