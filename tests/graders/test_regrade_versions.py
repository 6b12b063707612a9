"""Re-grading adds a version and changes nothing the run reports until activated;
every command reads a chosen version; the record and compare say how each side
was graded. Real SQLite stores, the real CLI."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentgauge.api import metrics
from agentgauge.errors import InputError
from agentgauge.schema import AnswerSpec, Expectations, Grade, Run, Task, Trial
from agentgauge.store import SCHEMA_VERSION, Store, utc_now

Cli = Callable[..., tuple[int, str, str]]  # the `cli` fixture (tests/conftest.py)

TASKS = [
    Task(
        id=f"t{i}",
        instruction="answer yes",
        expectations=Expectations(answer=AnswerSpec(contains=["yes"])),
    )
    for i in range(6)
]


def _trials(agent: str, answers: list[str], recorded: list[bool]) -> list[Trial]:
    return [
        Trial(
            task_id=f"t{i}",
            trial=0,
            agent=agent,
            success=ok,
            answer=text,
            grades=[Grade(grader="answer", passed=ok), Grade(grader="state", passed=ok)],
        )
        for i, (text, ok) in enumerate(zip(answers, recorded, strict=True))
    ]


def make_store(path: Path) -> Path:
    """Run ``a`` (hasty: recorded as passing 1 task of 6, though 4 answers say yes) and
    run ``b`` (careful: all 6 pass)."""
    with Store(path) as db:
        for run_id, agent, answers, recorded in (
            ("a", "hasty", ["yes"] * 4 + ["no"] * 2, [True] + [False] * 5),
            ("b", "careful", ["yes"] * 6, [True] * 6),
        ):
            with db.transaction():
                db.create_run(Run(run_id=run_id, agent=agent, created_at=utc_now()))
                db.add_tasks(run_id, TASKS)
            db.add_trials(run_id, _trials(agent, answers, recorded))
    return path


def rate(source: str, **kw: object) -> float:
    value = metrics(source, by=(), **kw).to_dict()["groups"][0]["success_rate"]["value"]  # type: ignore[arg-type]
    assert isinstance(value, float)
    return value


def compare_json(cli: Cli, *args: str) -> tuple[dict[str, object], str]:
    code, out, err = cli("compare", *args, "--json")
    assert code == 0, err
    return json.loads(out), err


def test_a_regrade_changes_nothing_the_run_reports_until_activated(
    tmp_path: Path, cli: Cli
) -> None:
    db = make_store(tmp_path / "s.db")
    a, b = f"{db}:a", f"{db}:b"
    before, _ = compare_json(cli, a, b)
    assert before["mean_diff"] == pytest.approx(5 / 6)

    code, out, err = cli("grade", a, "--graders", "answer")
    assert code == 0, err
    assert "the run still reports grade version 1" in out
    # Today's main changed the run in place here: 1/6 became 4/6, and compare moved.
    assert rate(a) == pytest.approx(1 / 6)
    after, warned = compare_json(cli, a, b)
    assert after["mean_diff"] == before["mean_diff"]
    assert after["warnings"] == [] and "warning" not in warned
    # The new version is there to read, by option or in the SOURCE.
    assert rate(a, grade_version=2) == pytest.approx(4 / 6)
    assert rate(f"{a}#grade=2") == pytest.approx(4 / 6)
    code, out, err = cli("metrics", a, "--grade-version", "2", "--json", "--by", "")
    assert code == 0, err
    assert json.loads(out)["groups"][0]["success_rate"]["value"] == pytest.approx(4 / 6)


def test_activating_a_version_and_going_back(tmp_path: Path, cli: Cli) -> None:
    db = make_store(tmp_path / "s.db")
    a, b = f"{db}:a", f"{db}:b"
    code, out, err = cli("grade", a, "--graders", "answer", "--activate", "--json")
    assert code == 0, err
    done = json.loads(out)
    assert (done["version"], done["active"], done["n_changed"]) == (2, 2, 3)
    assert rate(a) == pytest.approx(4 / 6)
    # Compare warns that the sides were graded differently, and record line 4 says how.
    result, warned = compare_json(cli, a, b)
    assert result["mean_diff"] == pytest.approx(2 / 6)
    (warning,) = result["warnings"]  # type: ignore[misc]
    assert "graded differently" in warning and "warning:" in warned
    line4 = result["record"]["lines"][3]["text"]  # type: ignore[index]
    assert line4.startswith("graders differ: A answer; B answer, state")
    assert "grade version A 2 (re-grade of " in line4 and "graders asked: answer" in line4
    assert "B 1 (as recorded)" in line4
    # The version left is kept: reading or activating it gives the recorded outcomes.
    assert rate(f"{a}#grade=1") == pytest.approx(1 / 6)
    code, out, err = cli("grade", a, "--activate-version", "1", "--json")
    assert code == 0, err
    assert [(v["version"], v["active"]) for v in json.loads(out)["versions"]] == [
        (1, True),
        (2, False),
    ]
    assert rate(a) == pytest.approx(1 / 6)
    assert rate(f"{a}#grade=2") == pytest.approx(4 / 6)
    # One run against its own re-grade: what the re-grade changed, flagged as such.
    result, _ = compare_json(cli, f"{a}#grade=1", f"{a}#grade=2")
    assert result["mean_diff"] == pytest.approx(3 / 6)
    assert result["warnings"]


def test_gate_and_report_read_the_chosen_grade_version(tmp_path: Path, cli: Cli) -> None:
    db = make_store(tmp_path / "s.db")
    a, b = f"{db}:a", f"{db}:b"
    assert cli("grade", a, "--graders", "answer")[0] == 0
    gates = tmp_path / "gates.yaml"
    gates.write_text("gates:\n  - metric: success_rate\n    min: 0.5\n")
    code, _, err = cli("gate", a, "--config", str(gates))
    assert code == 1, err  # the active version: 1/6
    code, out, err = cli("gate", a, "--config", str(gates), "--grade-version", "2")
    assert code == 0, err
    assert "success_rate = 0.6667" in out
    md = tmp_path / "r.md"
    code, _, err = cli("report", a, "--markdown", str(md), "--grade-version", "2")
    assert code == 0, err
    assert "66.7%" in md.read_text() and "16.7%" not in md.read_text()
    # --grade-version applies to every stored SOURCE; one side's version goes in its SOURCE.
    code, _, err = cli("report", a, b, "--markdown", str(md), "--grade-version", "2", "--force")
    assert code == 2 and "run 'b' has no grade version 2 (it has 1)" in err
    code, _, err = cli("report", f"{a}#grade=2", b, "--markdown", str(md), "--force")
    assert code == 0, err
    assert "grade version A 2 (re-grade of" in md.read_text()
    # A version the run does not have is one clear error.
    code, _, err = cli("metrics", a, "--grade-version", "7")
    assert code == 2
    assert "run 'a' has no grade version 7 (it has 1, 2)" in err


def test_a_grade_version_refusal_names_what_the_user_typed(tmp_path: Path, cli: Cli) -> None:
    # They named the Python field (`grade_version:`, `graders:`) whichever was typed.
    db = make_store(tmp_path / "s.db")
    a = f"{db}:a"
    code, _, err = cli("grade", a, "--graders", "answer")
    assert code == 0, err
    missing = "run 'a' has no grade version 7 (it has 1, 2)"
    for args, line in (
        (("metrics", a, "--grade-version", "7"), f"{db}: --grade-version: {missing}"),
        (("show", a, "--grade-version", "7"), f"{db}: --grade-version: {missing}"),
        (("compare", a, a, "--grade-version", "7"), f"{db}: --grade-version: {missing}"),
        (("metrics", f"{a}#grade=7"), f"{db}: #grade: {missing}"),
        (("show", f"{a}#grade=7"), f"{db}: #grade: {missing}"),
        (("grade", a, "--activate-version", "7"), f"{db}: --activate-version: {missing}"),
        (
            ("grade", a, "--graders", "stat"),
            "--graders: unknown grader(s) stat; known: answer, checkpoints,",
        ),
    ):
        code, out, err = cli(*args)
        assert code == 2 and out == "", args
        assert err.startswith(f"agentgauge: error: {line}"), err
    # The Python API names its own parameter.
    with pytest.raises(InputError) as exc:
        metrics(a, grade_version=7)
    assert exc.value.field == "grade_version"


def _schema_2_store(path: Path) -> None:
    """A store as agentgauge wrote it at schema 2, after an in-place re-grade of run
    ``a``: grade version 2 overwrote the trials' outcomes."""
    make_store(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        """
        BEGIN;
        DROP TABLE grade_outcomes;
        ALTER TABLE runs DROP COLUMN grade_version;
        ALTER TABLE grade_versions DROP COLUMN outcomes_kept;
        ALTER TABLE trials DROP COLUMN turns_id;
        DROP TABLE trial_facts;
        DROP TABLE labels;
        DELETE FROM meta WHERE key LIKE 'facts_%';
        UPDATE meta SET value = '2' WHERE key = 'schema_version';
        INSERT INTO grade_versions(run_id, version, created_at, graders, note)
            VALUES ('a', 2, '2026-11-30T00:00:00+00:00', '["answer"]', 'agentgauge grade');
        INSERT INTO grades(trial_pk, version, grader, score, passed)
            SELECT id, 2, 'answer', task_id < 't4', task_id < 't4' FROM trials
            WHERE run_id = 'a';
        UPDATE trials SET success = 1, score = 1.0
            WHERE run_id = 'a' AND task_id IN ('t0', 't1', 't2', 't3');
        COMMIT;
        """
    )
    conn.close()


def test_a_schema_2_store_is_upgraded_and_reports_what_it_reported(tmp_path: Path) -> None:
    path = tmp_path / "s2.db"
    _schema_2_store(path)
    with Store(path, readonly=True) as old:  # read as it is
        assert old.schema_version == 2
        assert old.active_grade_version("a") == 2
        assert [v.outcomes_kept for v in old.grade_versions("a")] == [False, True]
    assert rate(f"{path}:a") == pytest.approx(4 / 6)
    with Store(path) as db:  # opened for writing: upgraded (through 3 to 4, turn records)
        assert db.schema_version == SCHEMA_VERSION
        assert db.active_grade_version("a") == 2
        assert db.active_grade_version("b") == 1
        assert [(v.version, v.active, v.outcomes_kept) for v in db.grade_versions("a")] == [
            (1, False, False),
            (2, True, True),
        ]
        assert {g.grader for t in db.trials("a") for g in t.grades} == {"answer"}
        assert db.integrity_check() == "ok"
        with pytest.raises(InputError, match="were overwritten by a re-grade"):
            db.trials("a", grade_version=1)
    assert rate(f"{path}:a") == pytest.approx(4 / 6)
    assert rate(f"{path}:b") == pytest.approx(1.0)
    # From here on, versions are kept: a new re-grade and back again.
    from agentgauge.graders import regrade

    res = regrade(path, "a", ["answer"], activate=True)
    assert (res.version, res.active) == (3, 3)
    with Store(path) as db:
        db.activate_grade_version("a", 2)
    assert rate(f"{path}:a") == pytest.approx(4 / 6)
    assert rate(f"{path}:a#grade=3") == pytest.approx(4 / 6)


def test_two_different_grade_versions_asked_for_are_refused(tmp_path: Path, cli: Cli) -> None:
    db = make_store(tmp_path / "s.db")
    a = f"{db}:a"
    code, _, err = cli("grade", a, "--graders", "answer")
    assert code == 0, err
    # The selector used to win silently over the option.
    code, out, err = cli("metrics", f"{a}#grade=2", "--grade-version", "1")
    assert code == 2 and out == ""
    assert "two grade versions asked for: #grade=2 in SOURCE and --grade-version 1" in err
    with pytest.raises(InputError, match="two grade versions"):
        metrics(f"{a}#grade=1", grade_version=2)
    # The same version asked for twice is one request.
    assert rate(f"{a}#grade=2", grade_version=2) == pytest.approx(4 / 6)


@pytest.mark.parametrize("empty", ["", " , "])
def test_an_empty_graders_list_is_refused(tmp_path: Path, cli: Cli, empty: str) -> None:
    db = make_store(tmp_path / "s.db")
    code, out, err = cli("grade", f"{db}:a", "--graders", empty)
    assert code == 2 and out == ""
    assert "--graders" in err and "names no grader" in err
    # Nothing was written: the run still has its one recorded version.
    code, out, err = cli("grade", f"{db}:a", "--list", "--json")
    assert code == 0, err
    assert [v["version"] for v in json.loads(out)["versions"]] == [1]


def test_the_command_to_activate_runs_as_printed(tmp_path: Path, cli: Cli) -> None:
    # It dropped --store and did not quote the store path: pasted, the command read
    # "my runs/s.db:a" as two arguments, or "a" as a file.
    import shlex

    folder = tmp_path / "my runs"
    folder.mkdir()
    db = make_store(folder / "s.db")
    for args in ([f"{db}:a"], ["a", "--store", str(db)]):
        code, out, err = cli("grade", *args, "--graders", "answer")
        assert code == 0, err
        command = out.strip().splitlines()[-1].partition("make it the run's with: ")[2]
        argv = shlex.split(command)
        assert argv[:2] == ["agentgauge", "grade"] and argv[-2] == "--activate-version"
        code, out, err = cli(*argv[1:])
        assert code == 0, err
    assert rate(f"{db}:a") == pytest.approx(4 / 6)
