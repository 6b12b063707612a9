"""An environment that fails during a trial is the environment's error (infra), not the agent's.

The blame table (docs/running-agents.md) says "the environment failed | error | infra",
so that the circuit breaker and ``--infra-retries`` see it. Before this change a world
whose ``call_tool`` (or simulated user) raised surfaced through the agent's coroutine
and was recorded as ``3 agent errors ... RuntimeError: database connection lost``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentgauge.envs.base import EnvironmentFailed, ToolOutcome
from agentgauge.errors import RunStopped
from agentgauge.harness.runner import run
from agentgauge.schema import Task, Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import CounterEnv, counting_agent

WORLDS = """
from agentgauge.testing.worlds import CounterEnv

CALLS = []


class LostDatabase(CounterEnv):
    def call_tool(self, name, arguments):
        CALLS.append(name)
        raise RuntimeError("database connection lost inside the environment")


class CrashingUser(CounterEnv):
    def user_reply(self, message):
        raise RuntimeError("user simulator crashed")


def make(task, *, variant, seed):
    broken = {"t2": LostDatabase, "t3": CrashingUser}.get(task.id, CounterEnv)
    return broken(task, variant=variant, seed=seed)
"""

AGENTS = """
import re

from agentgauge.envs.base import EnvironmentFailed


async def solve(session):
    session.record_cost(0.0)
    amount = int(re.findall(r"-?\\d+", session.instruction)[-1])
    await session.call_tool("add", {"amount": amount})
    await session.say(f"Added {amount}.")


def solve_sync(session):
    session.record_cost(0.0)
    amount = int(re.findall(r"-?\\d+", session.instruction)[-1])
    session.call_tool("add", {"amount": amount})
    session.say(f"Added {amount}.")


async def shrugs_it_off(session):
    # Catches the environment's failure and claims success: the world it acted on
    # cannot be trusted any more, so this must not become a pass.
    session.record_cost(0.0)
    amount = int(re.findall(r"-?\\d+", session.instruction)[-1])
    try:
        await session.call_tool("add", {"amount": amount})
    except EnvironmentFailed:
        pass
    try:
        await session.say(f"Added {amount}.")
    except EnvironmentFailed:
        pass
    session.report_state({"counter": amount})
    session.answer("All done.")
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tasks = [
        {
            "id": f"t{i}",
            "environment": "broken_worlds:make",
            "instruction": f"please add {i}",
            "user_scenario": {"replies": ["thanks"]},
            "expectations": {"final_state": {"counter": i}},
        }
        for i in (1, 2, 3)
    ]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"name": "broken", "tasks": tasks}))
    (tmp_path / "broken_worlds.py").write_text(WORLDS)
    (tmp_path / "env_agents.py").write_text(AGENTS)
    return tmp_path


def agentgauge_run(workdir: Path, agent: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentgauge", "run", "suite.yaml", "--agent", agent]
    command += ["--store", "s.db", "--run-id", "r", "--no-progress", *extra]
    # python -m puts the folder first on the import path: the worlds and agents are found
    return subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=180)


def stored(workdir: Path) -> dict[str, Trial]:
    with Store(workdir / "s.db") as db:
        return {t.task_id: t for t in db.trials("r")}


LOST = (
    "EnvironmentFailed: the environment failed in call_tool('add'): "
    "RuntimeError: database connection lost inside the environment"
)
CRASHED = (
    "EnvironmentFailed: the environment failed in user_reply: RuntimeError: user simulator crashed"
)


@pytest.mark.parametrize(
    "agent", ["env_agents:solve", "env_agents:solve_sync", "env_agents:shrugs_it_off"]
)
def test_an_environment_that_fails_is_an_infra_error_whatever_the_agent_does(
    workdir: Path, agent: str
) -> None:
    done = agentgauge_run(workdir, agent)
    # Two of the three trials measured the environment, not the agent: the circuit
    # breaker's end-of-run check says so, and the run exits 3 with every trial saved.
    assert done.returncode == 3, done.stderr
    assert "stopped: 2 of the 3 trials were infra errors; 3 of 3 trials saved" in done.stderr
    assert "Traceback" not in done.stderr
    trials = stored(workdir)
    assert trials["t1"].status == "completed" and trials["t1"].success
    for task, message in (("t2", LOST), ("t3", CRASHED)):
        trial = trials[task]
        assert (trial.status, trial.error_kind, trial.success) == ("error", "infra", False)
        assert trial.error == message
    # the message reaches the terminal, in the infra class
    assert "2 infra errors (2 distinct messages)" in done.stdout
    assert LOST in done.stdout and CRASHED in done.stdout
    assert "success 33.3%, 2 infra errors, spend" in done.stdout


def test_infra_retries_rerun_a_cell_whose_environment_failed(workdir: Path) -> None:
    done = agentgauge_run(workdir, "env_agents:solve", "--infra-retries", "2")
    assert done.returncode == 3, done.stderr  # infra errors dominate, retries or not
    trials = stored(workdir)
    assert trials["t2"].metadata["attempts"] == 3 and trials["t2"].error == LOST
    assert "attempts" not in trials["t1"].metadata


class Counted(CounterEnv):
    """Fails at its first tool call and counts the calls that reach it."""

    calls = 0

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        Counted.calls += 1
        raise RuntimeError("disk full")


class NotAnOutcome(CounterEnv):
    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return {"counter": 3}


def one_trial(tmp_path: Path, env: type[CounterEnv], agent: Any) -> Trial:
    task = Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})
    # Its one trial is an infra error, so the run ends stopped by the circuit breaker,
    # with the trial saved.
    with pytest.raises(RunStopped):
        run(
            [task],
            agent,
            store=tmp_path / "s.db",
            run_id="r",
            env_factory=lambda task, *, variant, seed: env(task, variant=variant, seed=seed),
            progress=False,
        )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials("r")
    return trial


def test_a_failed_environment_is_not_called_again(tmp_path: Path) -> None:
    seen: list[str] = []

    async def insists(session: Any) -> None:
        for _ in range(3):
            try:
                await session.call_tool("add", {"amount": 1})
            except EnvironmentFailed as exc:
                seen.append(str(exc))

    Counted.calls = 0
    trial = one_trial(tmp_path, Counted, insists)
    assert Counted.calls == 1  # the agent asked three times; the broken world saw one
    assert seen == ["the environment failed in call_tool('add'): RuntimeError: disk full"] * 3
    assert (trial.status, trial.error_kind) == ("error", "infra")


def test_a_tool_result_that_is_not_a_tool_outcome_is_the_environments_error(
    tmp_path: Path,
) -> None:
    trial = one_trial(tmp_path, NotAnOutcome, counting_agent)
    assert (trial.status, trial.error_kind) == ("error", "infra")
    assert trial.error == (
        "EnvironmentFailed: the environment failed in call_tool('add'): "
        "TypeError: returned a dict, not a ToolOutcome"
    )


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _cyclic() -> dict[str, Any]:
    state: dict[str, Any] = {"counter": 3}
    state["self"] = state
    return state


class OddResult(CounterEnv):
    """Makes the call, then returns the ``odd`` content."""

    odd = ""

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        super().call_tool(name, arguments)
        odd = {"bytes": b"\xff", "object": object(), "deep": _nested(5000)}
        return ToolOutcome(content=odd[self.odd])


class OddState(CounterEnv):
    odd = ""

    def final_state(self) -> dict[str, Any]:
        odd = {"cycle": _cyclic(), "deep": {"counter": _nested(5000)}}
        return odd[self.odd]


@pytest.mark.parametrize(
    ("env", "odd", "message"),
    [
        (
            OddResult,
            "bytes",
            "EnvironmentFailed: the environment failed in call_tool('add'): ValueError: "
            "returned content is a builtins.bytes, which JSON has no type for",
        ),
        (
            OddResult,
            "object",
            "EnvironmentFailed: the environment failed in call_tool('add'): ValueError: "
            "returned content is a builtins.object, which JSON has no type for",
        ),
        (
            OddResult,
            "deep",
            "EnvironmentFailed: the environment failed in call_tool('add'): ValueError: "
            "returned content that is not JSON: ",
        ),
        (
            OddState,
            "cycle",
            "final state: ValueError: final_state() returned a state that is not JSON: "
            "Circular reference detected",
        ),
        (
            OddState,
            "deep",
            "final state: ValueError: final_state() returned a state that is not JSON: ",
        ),
    ],
)
def test_a_value_the_store_cannot_write_is_the_environments_error_and_the_run_goes_on(
    tmp_path: Path, env: type[CounterEnv], odd: str, message: str
) -> None:
    # The store's writer serialised it first, and the run ended in a traceback
    # (PydanticSerializationError, "Circular reference detected") with the trials after
    # it never run: a resume crashed again.
    tasks = [
        Task(
            id=f"t{i}",
            instruction=f"add {i}",
            expectations={"final_state": {"counter": i}},
        )
        for i in (1, 2, 3, 4)
    ]

    def factory(task: Task, *, variant: str, seed: int) -> CounterEnv:
        if task.id != "t2":
            return CounterEnv(task, variant=variant, seed=seed)
        world = env(task, variant=variant, seed=seed)
        world.odd = odd  # type: ignore[attr-defined]
        return world

    run(tasks, counting_agent, store=tmp_path / "s.db", run_id="r", env_factory=factory,
        progress=False)  # fmt: skip
    with Store(tmp_path / "s.db") as db:
        trials = {t.task_id: t for t in db.trials("r")}
    assert sorted(trials) == ["t1", "t2", "t3", "t4"]
    assert all(trials[t].success for t in ("t1", "t3", "t4"))
    odd_one = trials["t2"]
    assert (odd_one.status, odd_one.error_kind, odd_one.success) == ("error", "infra", False)
    assert odd_one.error is not None and odd_one.error.startswith(message), odd_one.error
