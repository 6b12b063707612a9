"""Warnings agentgauge gives a user reach the terminal as the command line's other notes
do, one line ``note: ...`` on stderr, once a command, and never on stdout (``--json``
stays parseable); from Python they stay warnings (`warnings.warn`) of their classes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli

from agentgauge.errors import Note
from agentgauge.graders.rubric import SelfJudgeWarning
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion

ENV = "agentgauge.testing.worlds:make_counter_env"


def _suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: judged
            tasks:
              - id: greet
                environment: {ENV}
                instruction: say hello
                expectations:
                  final_state: {{counter: 0}}
                  rubric: [{{id: polite, text: The agent is polite.}}]
            """
        )
    )
    return path


def _answer(request: dict[str, Any]) -> Reply:
    """The agent's reply, or (asked for JSON) the judge's verdict: one server for both."""
    if "response_format" in request:
        verdict = '{"verdict": "yes", "evidence": [], "reason": "polite"}'
        return Reply(body=completion(verdict, model="judge-x"))
    return Reply(body=completion("Hello!", model="judge-x"))


@pytest.fixture
def server() -> Any:
    with OpenAIServer(_answer) as s:
        yield s


def test_a_judge_of_the_evaluated_model_is_one_note(
    server: Any, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{server.port}/v1"
    monkeypatch.setenv("AGENTGAUGE_JUDGE_BASE_URL", url)
    monkeypatch.setenv("AGENTGAUGE_JUDGE_MODEL", "judge-x")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    db = tmp_path / "s.db"
    said = (
        "note: judge model 'judge-x' is the evaluated model (judge-x): models favour their "
        "own output; use a different judge\n"
    )
    code, _, err = cli(
        "run", str(_suite(tmp_path)), "--agent", "openai:judge-x", "--base-url", url,
        "--trials", "3", "--store", str(db), "--run-id", "r", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = cli("grade", f"{db}:r", "--graders", "rubric", "--json")
    assert code == 0, err
    assert err == said  # three trials judged: one note, not a Python warning
    assert json.loads(out)["n_trials"] == 3


def test_from_python_they_stay_warnings() -> None:
    from agentgauge.harness.runner import AbandonedThreadsWarning

    assert issubclass(SelfJudgeWarning, UserWarning) and issubclass(SelfJudgeWarning, Note)
    assert issubclass(AbandonedThreadsWarning, RuntimeWarning)
    assert issubclass(AbandonedThreadsWarning, Note)
