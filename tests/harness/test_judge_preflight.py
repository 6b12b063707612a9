"""A run whose grader calls a model judge checks the judge once before the first trial.

Before this change a judge that could not be reached was found out trial by trial: the
run went ahead and stored ``unknown:judge_unavailable`` for every criterion of every
judged trial. Now the preflight sends the judge the check the ``openai:`` agents get
(one request whose body is not JSON), and a judge with no chat route stops the run with
one line, exit 2, before anything is written. Real loopback servers and a closed port.
"""

from __future__ import annotations

import socket
import sqlite3
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import StatusServer

from agentgauge.errors import InputError
from agentgauge.graders.base import part_grades
from agentgauge.graders.judge_client import JudgeConfig
from agentgauge.graders.rubric import RubricGrader, RubricJudge
from agentgauge.harness.runner import run
from agentgauge.harness.trial import grade_with, uses_judges
from agentgauge.schema import Grade, Task, Trial
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion, error_body
from agentgauge.testing.worlds import counting_agent

ENV = "agentgauge.testing.worlds:make_counter_env"


def closed_port() -> int:
    # Bind and close: nothing listens there afterwards (connection refused).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def suite(tmp_path: Path, *, rubric: bool = True) -> Path:
    criteria = "rubric: [{id: polite, text: The agent is polite.}]" if rubric else ""
    path = tmp_path / "suite.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: judged
            tasks:
              - id: add-3
                environment: {ENV}
                instruction: add 3
                expectations: {{final_state: {{counter: 3}}, {criteria}}}
              - id: add-4
                environment: {ENV}
                instruction: add 4
                expectations: {{final_state: {{counter: 4}}}}
            """
        )
    )
    return path


def judge(url: str) -> RubricGrader:
    return RubricGrader(base_url=url, model="judge-model", max_retries=0, timeout_s=5)


def yes(request: dict[str, Any]) -> Reply:
    return Reply(body=completion('{"verdict": "yes", "evidence": [], "reason": "polite"}'))


def own_run(tmp_path: Path, grader: Any, **kwargs: Any) -> Any:
    return run(
        suite(tmp_path),
        counting_agent,
        trials=2,
        store=tmp_path / "s.db",
        run_id="r",
        progress=False,
        grader=grader,
        **kwargs,
    )


def judged_run(tmp_path: Path, url: str, **kwargs: Any) -> Any:
    return own_run(tmp_path, grade_with("state", judge(url)), **kwargs)


def criteria(trials: list[Trial]) -> list[Grade]:
    """The criterion grades (``rubric:polite``) inside the trials' ``rubric`` grades."""
    return [p for t in trials for g in t.grades if g.grader == "rubric" for p in part_grades(g)]


def runs_in(db: Path) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT run_id FROM runs")]
    finally:
        conn.close()


def test_a_judge_that_is_not_listening_stops_the_run_before_anything_is_written(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(InputError) as caught:
        judged_run(tmp_path, url)
    line = str(caught.value)
    assert "\n" not in line and caught.value.exit_code == 2
    assert line.startswith(
        f"the judge of grader 'rubric': no answer from {url}/chat/completions (could not connect"
    )
    assert "AGENTGAUGE_JUDGE_BASE_URL" in line
    assert not (tmp_path / "s.db").exists()  # no store, no run, no trial


def test_a_host_name_that_does_not_resolve(tmp_path: Path) -> None:
    url = "http://no-such-judge.invalid/v1"
    with pytest.raises(InputError) as caught:
        judged_run(tmp_path, url)
    assert f"no answer from {url}/chat/completions (could not connect" in str(caught.value)
    assert not (tmp_path / "s.db").exists()


def test_a_judge_base_url_without_its_chat_route(tmp_path: Path) -> None:
    with StatusServer(400, "body is not JSON", path="/v1/chat/completions") as server:
        url = f"http://127.0.0.1:{server.port}"  # without /v1
        with pytest.raises(InputError) as caught:
            judged_run(tmp_path, url)
        assert server.hits == 0
    line = str(caught.value)
    assert line.startswith(
        f"the judge of grader 'rubric': {url}/chat/completions answered HTTP 404 (404: Not Found)"
    )
    assert "no chat-completions route there" in line and "AGENTGAUGE_JUDGE_BASE_URL" in line
    assert not (tmp_path / "s.db").exists()
    # The right base URL passes the check (its 400 to a body that is not JSON).
    with StatusServer(400, "body is not JSON", path="/v1/chat/completions") as server:
        judged_run(tmp_path, f"http://127.0.0.1:{server.port}/v1", preflight=True)
        assert server.hits >= 1


def test_a_failed_judge_check_leaves_an_existing_store_and_run_as_they_were(
    tmp_path: Path,
) -> None:
    with OpenAIServer(yes) as server:
        judged_run(tmp_path, server.base_url)
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(InputError):
        run(
            suite(tmp_path),
            counting_agent,
            trials=3,  # the resume would extend the run: checked before it is
            store=tmp_path / "s.db",
            run_id="r",
            progress=False,
            grader=grade_with("state", judge(dead)),
        )
    with pytest.raises(InputError):
        run(
            suite(tmp_path),
            counting_agent,
            store=tmp_path / "s.db",
            run_id="new",
            progress=False,
            grader=grade_with("state", judge(dead)),
        )
    assert runs_in(tmp_path / "s.db") == ["r"]
    with Store(tmp_path / "s.db", readonly=True) as db:
        assert db.get_run("r").config["trials"] == 2  # type: ignore[union-attr]
        assert len(db.trials("r", events=False)) == 4


def test_a_judge_that_answers_is_checked_once_and_grades(tmp_path: Path) -> None:
    with OpenAIServer(yes) as server:
        judged_run(tmp_path, server.base_url)
    # Two trials of the one task with a rubric: one call each; the check is answered
    # 400 (not JSON) before any model runs, so it is not among the requests.
    assert len(server.requests) == 2
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials("r", events=False, grades=True)
    assert [g.passed for g in criteria(trials)] == [True, True]


def test_no_judge_is_checked_when_no_task_needs_it(tmp_path: Path) -> None:
    # No task has a rubric: the rubric grader never calls its judge, so a dead one is
    # no reason to stop.
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    run(
        suite(tmp_path, rubric=False),
        counting_agent,
        store=tmp_path / "s.db",
        progress=False,
        grader=grade_with("state", judge(dead)),
    )
    assert len(runs_in(tmp_path / "s.db")) == 1


def test_no_preflight_runs_the_trials_with_their_criteria_unknown(tmp_path: Path) -> None:
    dead = f"http://127.0.0.1:{closed_port()}/v1"
    judged_run(tmp_path, dead, preflight=False)
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials("r", events=False, grades=True)
    assert [g.status for g in criteria(trials)] == ["unknown:judge_unavailable"] * 2


def test_a_judge_that_answers_the_check_and_fails_later_leaves_criteria_unknown(
    tmp_path: Path,
) -> None:
    # Past the check, a failing judge is the calls' failure, as before: unknowns.
    def down(request: dict[str, Any]) -> Reply:
        return Reply(status=400, body=error_body("model not loaded", "invalid_request"))

    with OpenAIServer(down) as server:
        judged_run(tmp_path, server.base_url)
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials("r", events=False, grades=True)
    assert [g.status for g in criteria(trials)] == ["unknown:judge_unavailable"] * 2


# ----------------------------------------------------------------- a grader of your own


def own_grader(url: str) -> Any:
    """A plain grading function that calls a judge it holds, declared with
    `uses_judges` (docs/judge.md, "Your own grader")."""
    rubric_judge = RubricJudge(
        JudgeConfig(base_url=url, model="judge-model", max_retries=0, timeout_s=5)
    )

    @uses_judges(rubric_judge)
    def my_grader(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        if not task.expectations.rubric:
            return True, 1.0, []
        grade = rubric_judge.grade_rubric(task.expectations.rubric, trial).to_grade()
        return bool(grade.passed), float(grade.score or 0.0), [grade]

    return my_grader


def test_a_grading_function_that_declares_its_judge_has_it_checked(tmp_path: Path) -> None:
    # A plain function's judge was not known to the run, so not checked: every trial ran
    # and every criterion was stored unknown:judge_unavailable.
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(InputError) as caught:
        own_run(tmp_path, own_grader(url))
    line = str(caught.value)
    assert "\n" not in line and caught.value.exit_code == 2
    assert line.startswith(
        f"the judge of grader 'my_grader': no answer from {url}/chat/completions (could not connect"
    )
    assert "nothing was run" in line
    assert not (tmp_path / "s.db").exists()


def test_a_declared_judge_without_its_chat_route(tmp_path: Path) -> None:
    with StatusServer(400, "body is not JSON", path="/v1/chat/completions") as server:
        url = f"http://127.0.0.1:{server.port}"  # without /v1: HTTP 404
        with pytest.raises(InputError) as caught:
            own_run(tmp_path, own_grader(url))
        assert server.hits == 0
    assert str(caught.value).startswith(
        f"the judge of grader 'my_grader': {url}/chat/completions answered HTTP 404"
    )
    assert not (tmp_path / "s.db").exists()


def test_a_declared_judge_that_answers_is_checked_and_grades(tmp_path: Path) -> None:
    with OpenAIServer(yes) as server:
        own_run(tmp_path, own_grader(server.base_url))
    assert len(server.requests) == 2  # the two trials of the task with a rubric
    with Store(tmp_path / "s.db", readonly=True) as db:
        trials = db.trials("r", events=False, grades=True)
    assert [g.passed for g in criteria(trials)] == [True, True]


class OwnJudgedGrader:
    """A grader class of your own, given to `grade_with`, holding a `JudgeConfig` in
    ``judges`` and calling itself a code grader: its judge is checked all the same."""

    name = "tone"
    kind = "code"

    def __init__(self, url: str) -> None:
        self.judges = [JudgeConfig(base_url=url, model="judge-model", max_retries=0)]

    def enabled(self, task: Task) -> bool:
        return bool(task.expectations.rubric)

    def grade(self, task: Task, trial: Trial) -> Grade:
        raise AssertionError("the preflight stops the run before any grading")


def test_a_grader_class_of_your_own_in_grade_with_has_its_judges_checked(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with pytest.raises(InputError) as caught:
        own_run(tmp_path, grade_with("state", OwnJudgedGrader(url)))  # type: ignore[arg-type]
    assert str(caught.value).startswith(f"the judge of grader 'tone': no answer from {url}")
    assert not (tmp_path / "s.db").exists()


def test_judges_that_are_not_judges_are_refused_before_anything_runs(tmp_path: Path) -> None:
    def my_grader(task: Task, trial: Trial) -> tuple[bool, float, list[Grade]]:
        return True, 1.0, []

    my_grader.judges = ["http://127.0.0.1:8000/v1"]  # type: ignore[attr-defined]
    with pytest.raises(InputError) as caught:
        own_run(tmp_path, my_grader)
    assert caught.value.field == "judges"
    assert "grader 'my_grader' lists str 'http://127.0.0.1:8000/v1' among its judges" in str(
        caught.value
    )
    assert not (tmp_path / "s.db").exists()
