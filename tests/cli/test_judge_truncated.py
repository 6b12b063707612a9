"""A judge answer cut off at its token limit (``unknown:truncated``: a reasoning judge
spent it thinking) is decided by a higher limit: the judge asks for 2048 tokens by
default, ``agentgauge grade`` says how many answers were cut off and how to raise the
limit, and ``AGENTGAUGE_JUDGE_MAX_TOKENS`` raises it from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_warning_notes import _suite
from tests.conftest import Cli

from agentgauge.graders.judge_client import JudgeConfig
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion

YES = '{"verdict": "yes", "evidence": [], "reason": "polite"}'


def _answer(request: dict[str, Any]) -> Reply:
    """The agent's reply; or the judge's, a reasoning model's: cut off while it thinks
    unless it may write more than 2048 tokens."""
    if "response_format" not in request:
        return Reply(body=completion("Hello!", model="agent-model"))
    if request["max_tokens"] > 2048:
        return Reply(body=completion(f"<think>polite enough</think>{YES}", model="judge"))
    body = completion("<think>Let me weigh every line of the transcript", model="judge")
    body["choices"][0]["finish_reason"] = "length"
    return Reply(body=body)


@pytest.fixture
def judged(tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch) -> Any:
    server = OpenAIServer(_answer).__enter__()
    url = f"http://127.0.0.1:{server.port}/v1"
    monkeypatch.setenv("AGENTGAUGE_JUDGE_BASE_URL", url)
    monkeypatch.setenv("AGENTGAUGE_JUDGE_MODEL", "judge")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    code, _, err = cli(
        "run", str(_suite(tmp_path)), "--agent", "openai:agent-model", "--base-url", url,
        "--trials", "2", "--store", str(tmp_path / "s.db"), "--run-id", "r", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    yield server
    server.__exit__(None, None, None)


def test_the_default_limit_leaves_room_for_reasoning() -> None:
    assert JudgeConfig(base_url="http://x/v1", model="m").max_tokens == 2048


def test_grade_says_how_many_answers_were_cut_off_and_how_to_raise_the_limit(
    judged: Any, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    code, out, err = cli("grade", f"{db}:r", "--graders", "rubric")
    assert code == 0, err
    asked = [r["max_tokens"] for r in judged.requests if "response_format" in r]
    assert asked and set(asked) == {2048}
    assert (
        "2 judge answers were cut off at the judge's token limit (unknown:truncated; a "
        "reasoning judge's thinking counts against it): raise it, e.g. "
        "AGENTGAUGE_JUDGE_MAX_TOKENS=8192 (default 2048; in Python "
        "JudgeConfig(max_tokens=...)), and grade again (docs/judge.md)\n"
    ) in out
    code, out, err = cli("grade", f"{db}:r", "--graders", "rubric", "--json")
    assert code == 0, err
    assert json.loads(out)["n_judge_truncated"] == 2

    # Raised as it says: decided, and nothing more to say.
    monkeypatch.setenv("AGENTGAUGE_JUDGE_MAX_TOKENS", "8192")
    code, out, err = cli("grade", f"{db}:r", "--graders", "rubric", "--json")
    assert code == 0, err
    graded = json.loads(out)
    assert (graded["n_judge_truncated"], graded["unknown_grades"]) == (0, {})
    assert judged.requests[-1]["max_tokens"] == 8192


@pytest.mark.parametrize("value", ["many", "0", "-5", "2.5"])
def test_a_limit_that_is_no_whole_number_is_refused_in_one_line(
    judged: Any, tmp_path: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AGENTGAUGE_JUDGE_MAX_TOKENS", value)
    code, out, err = cli("grade", f"{tmp_path / 's.db'}:r", "--graders", "rubric")
    assert code == 2 and out == ""
    assert err.startswith("agentgauge: error: AGENTGAUGE_JUDGE_MAX_TOKENS: must be a whole")
    assert len(err.splitlines()) == 1
