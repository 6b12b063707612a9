"""The judge on real transcripts: tau-bench's gpt-4o airline trajectories (../shared/data)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentgauge.graders.judge_client import JudgeClient, JudgeConfig
from agentgauge.graders.judge_prompt import render_transcript
from agentgauge.graders.rubric import RubricJudge
from agentgauge.importers.taubench import read
from agentgauge.schema import Criterion, ToolCallEvent, Trial
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion


@pytest.fixture
def trials(shared_data: Path) -> list[Trial]:
    return read(shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json").trials


def transcript_of(request: dict[str, Any]) -> str:
    user = request["messages"][-1]["content"]
    match = re.search(r"<<<TRANSCRIPT ([0-9a-f]{16})>>>\n(.*)\n<<<END TRANSCRIPT \1>>>", user, re.S)
    assert match, "the transcript is delimited"
    return match.group(2)


def test_every_real_transcript_renders_inside_its_markers(trials: list[Trial]) -> None:
    assert len(trials) == 200
    for trial in trials:
        body = render_transcript(trial, max_chars=10**7)
        assert "<<<END TRANSCRIPT" not in body
        calls = sum(1 for e in trial.events if isinstance(e, ToolCallEvent))
        assert body.count("] tool call ") == calls  # no tool call is dropped


def test_grounded_quotes_from_real_transcripts_pass_the_evidence_check(
    trials: list[Trial],
) -> None:
    # A judge that quotes what it was shown: the agent's last line, re-spaced and
    # upper-cased (as copying does), and the first tool call's JSON arguments.
    def respond(request: dict[str, Any]) -> Reply:
        body = transcript_of(request)
        said = [ln.split(": ", 1)[1] for ln in body.splitlines() if "] assistant: " in ln]
        quotes = ["  ".join(said[-1][:60].upper().split())] if said else []
        call = re.search(r"\] tool call \w+: (\{.*\})", body)
        if call:
            quotes.append(call.group(1)[:50])
        return Reply(body=completion(json.dumps({"verdict": "yes", "evidence": quotes})))

    criterion = Criterion(id="grounded", text="The agent followed the airline policy.")
    with OpenAIServer(respond) as server:
        config = JudgeConfig(
            base_url=server.base_url,
            model="judge-x",
            api_key_env=None,
            headers={"Connection": "close"},
        )
        with JudgeClient(config) as client:
            judge = RubricJudge(client)
            grades = [judge.judge_criterion(criterion, t)[0] for t in trials[:12]]
    assert [g.status for g in grades] == ["passed"] * 12
    assert all(g.evidence["quotes"] for g in grades)


def test_invented_quotes_on_real_transcripts_are_caught(trials: list[Trial]) -> None:
    # Quoting the criterion (outside the transcript) or a plausible sentence that is
    # not there must not pass as evidence.
    invented = ["The agent followed the airline policy.", "I have cancelled your reservation."]

    def respond(request: dict[str, Any]) -> Reply:
        return Reply(body=completion(json.dumps({"verdict": "no", "evidence": invented})))

    criterion = Criterion(id="policy", text="The agent followed the airline policy.")
    with OpenAIServer(respond) as server:
        config = JudgeConfig(
            base_url=server.base_url,
            model="judge-x",
            api_key_env=None,
            headers={"Connection": "close"},
        )
        with JudgeClient(config) as client:
            judge = RubricJudge(client)
            # trials whose transcript does not contain the invented sentence
            sample = [
                t
                for t in trials
                if "i have cancelled your reservation" not in render_transcript(t).lower()
            ][:8]
            grades = [judge.judge_criterion(criterion, t)[0] for t in sample]
    assert len(grades) == 8
    assert {g.status for g in grades} == {"unknown:evidence_not_found"}
    assert all(g.evidence["judge_verdict"] == "no" for g in grades)
