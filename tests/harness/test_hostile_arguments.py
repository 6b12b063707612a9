"""A Python agent whose tool call carries a hostile argument: the run finishes,
the trial is recorded, the process survives.

Arguments the store cannot write as JSON (nested past pydantic's serialisation
depth, or cyclic) fail the agent when it makes the call; arguments it can
write reach the tool-call grader, which reads a value nested deeper than 100
levels as a malformed call and shows a 10 MB string shortened.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.base import Session
from agentgauge.envs.functions import FunctionsEnv
from agentgauge.harness.runner import run
from agentgauge.schema import Expectations, Task, Trial
from agentgauge.store import Store

FN = {"name": "f", "parameters": {"type": "object", "properties": {"x": {"type": "array"}}}}
TASK = Task(
    id="t",
    instruction="call f",
    expectations=Expectations(functions=[FN], answer_key=[{"f": {"x": [[1]]}}]),
)


def nested(depth: int) -> list[Any]:
    x: list[Any] = []
    for _ in range(depth):
        x = [x]
    return x


def cyclic() -> list[Any]:
    a: list[Any] = []
    a.append(a)
    return a


def run_with(tmp_path: Path, argument: Callable[[], Any]) -> Trial:
    async def agent(session: Session) -> None:
        await session.call_tool("f", {"x": argument()})

    header = run(
        [TASK],
        agent,
        store=tmp_path / "s.db",
        env_factory=lambda task, **_: FunctionsEnv(task),
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials(header.run_id)
    return trial


@pytest.mark.parametrize(
    ("argument", "reason"),
    [
        (lambda: nested(200_000), "Maximum serialization depth exceeded"),
        (cyclic, "Circular reference detected"),
    ],
    ids=["200,000 deep", "cyclic"],
)
def test_arguments_that_cannot_be_stored_fail_the_agent(
    tmp_path: Path, argument: Callable[[], Any], reason: str
) -> None:
    trial = run_with(tmp_path, argument)
    assert (trial.status, trial.error_kind, trial.success) == ("error", "agent", False)
    assert trial.error is not None
    assert trial.error.startswith("AgentError: tool 'f' called with arguments that are not JSON")
    assert reason in trial.error


def test_an_argument_nested_150_deep_is_graded_a_malformed_call(tmp_path: Path) -> None:
    trial = run_with(tmp_path, lambda: nested(150))
    assert trial.status == "completed" and trial.success is False
    (grade,) = [g for g in trial.grades if g.grader == "tool_calls"]
    assert grade.status == "malformed_call"
    assert grade.evidence["detail"] == "'x': nested deeper than 100 levels, or cyclic"


def test_a_10_mb_argument_is_graded_with_a_short_explanation(tmp_path: Path) -> None:
    trial = run_with(tmp_path, lambda: ["a" * 10_000_000])
    (grade,) = [g for g in trial.grades if g.grader == "tool_calls"]
    assert grade.status == "value_error:list"
    assert len(grade.evidence["detail"]) < 1100
