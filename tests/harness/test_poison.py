"""A trial's failure stays inside the trial: poison cells and bounded transcripts.

Each case runs ``agentgauge run`` in its own process, as a user would, over a
three-task suite in which only task ``t2`` is poisoned (a Python agent module,
a ``cmd:`` program, or an OpenAI-compatible server on 127.0.0.1). The run must
exit 0 with the poisoned trial recorded and the others completed, and running
the same command again (the resume) must exit 0 too. Before these fixes each
case aborted the run (exit 1, or a hang for ``SystemExit``) and every resume
crashed the same way.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentgauge.schema import ToolCallEvent, Trial
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion

AGENTS = """
import asyncio
import json
import re
import sys

from agentgauge.schema import ModelCallEvent


async def finish(session):
    amount = int(re.findall(r"-?\\d+", session.instruction)[-1])
    await session.call_tool("add", {"amount": amount})
    await session.say(f"Added {amount}.")


def poisoned(session):
    return session.task_id == "t2"


def call(session, **fields):
    usage = {"model": "m", "input_tokens": 1, "output_tokens": 1, "cost_usd": 0.0, "latency_s": 0.1}
    session.record_model_call(**{**usage, **fields})


async def tokens_2_63(session):
    if poisoned(session):
        call(session, input_tokens=2**63)
    session.record_cost(0.0)
    await finish(session)


async def tokens_total_2_63(session):
    if poisoned(session):
        call(session, output_tokens=2**62)
        call(session, output_tokens=2**62)
    session.record_cost(0.0)
    await finish(session)


async def costs_sum_to_inf(session):
    if poisoned(session):
        call(session, cost_usd=1e308)
        call(session, cost_usd=1e308)
    session.record_cost(0.0)
    await finish(session)


async def recorded_costs_sum_to_inf(session):
    session.record_cost(1e308 if poisoned(session) else 0.0)
    if poisoned(session):
        session.record_cost(1e308)
    await finish(session)


async def remote_costs_sum_to_inf(session):
    # a remote agent's model calls, as the http: adapter records them
    if poisoned(session):
        for _ in range(2):
            session.record_event(ModelCallEvent(model="m", cost_usd=1e308))
    session.record_cost(0.0)
    await finish(session)


async def remote_then_recorded_cost_inf(session):
    session.record_cost(0.0)
    if poisoned(session):
        session.record_event(ModelCallEvent(model="m", cost_usd=1e308))
        session.record_cost(1e308)
    await finish(session)


async def remote_tokens_total_2_63(session):
    if poisoned(session):
        for _ in range(2):
            session.record_event(ModelCallEvent(model="m", output_tokens=2**62))
    session.record_cost(0.0)
    await finish(session)


async def note_nan(session):
    session.record_cost(0.0)
    if poisoned(session):
        session.note("score", float("nan"))
    await finish(session)


async def state_not_an_object(session):
    session.record_cost(0.0)
    if poisoned(session):
        session.report_state([1, 2])
    await finish(session)


async def latency_inf(session):
    if poisoned(session):
        call(session, latency_s=float("inf"))
    session.record_cost(0.0)
    await finish(session)


async def numpy_arguments(session):
    session.record_cost(0.0)
    amount = int(re.findall(r"-?\\d+", session.instruction)[-1])
    # what session.rng draws is numpy.int64: the author means the number
    drawn = session.rng.integers(amount, amount + 1)
    await session.call_tool("add", {"amount": drawn, "weights": session.rng.random(2).tolist()})
    await session.say("done")


class Opaque:
    pass


async def object_arguments(session):
    session.record_cost(0.0)
    if poisoned(session):
        await session.call_tool("add", {"amount": 2, "extra": {"deep": [Opaque()]}})
    await finish(session)


async def raises_cancelled(session):
    session.record_cost(0.0)
    if poisoned(session):
        raise asyncio.CancelledError("agent gave up")
    await finish(session)


def sync_raises_cancelled(session):
    session.record_cost(0.0)
    if poisoned(session):
        raise asyncio.CancelledError("agent gave up")
    session.call_tool("add", {"amount": int(session.instruction.split()[-1])})


async def raises_system_exit(session):
    session.record_cost(0.0)
    if poisoned(session):
        sys.exit(3)
    await finish(session)


async def raises_generator_exit(session):
    session.record_cost(0.0)
    if poisoned(session):
        raise GeneratorExit("closing")
    await finish(session)


class Custom(BaseException):
    pass


async def raises_base_exception(session):
    session.record_cost(0.0)
    if poisoned(session):
        raise Custom("not an Exception")
    await finish(session)


async def control_flood(session):
    session.record_cost(0.0)
    if poisoned(session):
        for _ in range(100_000):
            session.control("act", "x" * 100)
    await finish(session)


async def model_call_flood(session):
    session.record_cost(0.0)
    if poisoned(session):
        for _ in range(100_000):
            call(session)
    await finish(session)


async def text_flood(session):
    session.record_cost(0.0)
    if poisoned(session):
        for _ in range(6):
            session.control("act", "x" * 10_000_000)
    await finish(session)
"""

CMD_AGENT = """
import json, sys

start = json.loads(sys.stdin.readline())
poisoned = start["task_id"] == "t2"
mode = sys.argv[1]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\\n")
    sys.stdout.flush()


send({"type": "cost", "usd": 0})
if poisoned and mode == "tokens":
    send({"type": "model_call", "model": "m", "input_tokens": 2**64, "output_tokens": 1})
if poisoned and mode == "flood":
    for _ in range(100_000):
        sys.stdout.write(json.dumps({"type": "control", "decision": "act", "reason": "r"}) + "\\n")
amount = int(start["instruction"].split()[-1])
send({"type": "tool_call", "name": "add", "arguments": {"amount": amount}})
sys.stdin.readline()
send({"type": "done"})
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tasks = [
        {
            "id": f"t{i}",
            "environment": "agentgauge.testing.worlds:make_counter_env",
            "instruction": f"please add {i}",
            "expectations": {"final_state": {"counter": i}},
        }
        for i in (1, 2, 3)
    ]
    (tmp_path / "suite.yaml").write_text(yaml.safe_dump({"name": "poison", "tasks": tasks}))
    (tmp_path / "poison_agents.py").write_text(AGENTS)
    (tmp_path / "cmd_agent.py").write_text(textwrap.dedent(CMD_AGENT))
    return tmp_path


def run_twice(workdir: Path, agent: str, *extra: str, solves: bool = True) -> dict[str, Trial]:
    """``agentgauge run`` then the same command again (the resume): both exit 0,
    and t1 and t3 are completed (and solved, for agents that can); the stored
    trials by task."""
    command = [
        sys.executable,
        "-m",
        "agentgauge",
        "run",
        "suite.yaml",
        "--agent",
        agent,
        "--store",
        "s.db",
        "--run-id",
        "r1",
        "--no-progress",
        *extra,
    ]
    for attempt in ("run", "resume"):
        # The timeout turns a hang (SystemExit once left the process waiting forever)
        # into a failure; no trial here takes more than a few seconds.
        done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, f"{attempt}: {done.stdout}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
    with Store(workdir / "s.db") as db:
        trials = {t.task_id: t for t in db.trials("r1")}
    assert sorted(trials) == ["t1", "t2", "t3"]
    for task in ("t1", "t3"):
        assert (trials[task].status, trials[task].success) == ("completed", solves), trials[task]
    return trials


def assert_agent_error(trial: Trial, *fragments: str) -> None:
    assert (trial.status, trial.error_kind, trial.success) == ("error", "agent", False)
    assert trial.error is not None
    for fragment in fragments:
        assert fragment in trial.error, trial.error


@pytest.mark.parametrize(
    ("agent", "fragments"),
    [
        (
            "tokens_2_63",
            ["model_call input_tokens must be between 0 and 2**63 - 1", "9223372036854775808"],
        ),
        (
            "tokens_total_2_63",
            ["the trial's total output_tokens must be between 0 and 2**63 - 1"],
        ),
        ("costs_sum_to_inf", ["cost_usd 1e+308 would take the trial's total from 1e+308 past"]),
        ("recorded_costs_sum_to_inf", ["record_cost: cost 1e+308 would take the trial's total"]),
        ("remote_costs_sum_to_inf", ["cost_usd 1e+308 would take the trial's total from 1e+308"]),
        (
            "remote_then_recorded_cost_inf",
            ["record_cost: cost 1e+308 would take the trial's total from 1e+308"],
        ),
        (
            "remote_tokens_total_2_63",
            ["the trial's total output_tokens must be between 0 and 2**63 - 1"],
        ),
        ("note_nan", ["note: metadata.score is nan, which JSON has no number for"]),
        ("state_not_an_object", ["report_state takes a JSON object, got list"]),
        ("latency_inf", ["model_call latency_s must be a finite number >= 0, got inf"]),
        ("object_arguments", ["arguments.extra.deep[0] is a poison_agents.Opaque"]),
        ("raises_cancelled", ["CancelledError: agent gave up"]),
        ("sync_raises_cancelled", ["CancelledError: agent gave up"]),
        ("raises_system_exit", ["SystemExit: 3"]),
        ("raises_generator_exit", ["GeneratorExit: closing"]),
        ("raises_base_exception", ["Custom: not an Exception"]),
    ],
)
def test_a_poisoned_python_agent_trial_is_its_error_and_the_run_goes_on(
    workdir: Path, agent: str, fragments: list[str]
) -> None:
    trials = run_twice(workdir, f"poison_agents:{agent}")
    assert_agent_error(trials["t2"], *fragments)


WORLDS = """
from agentgauge.testing.worlds import CounterEnv


class ListState(CounterEnv):
    def final_state(self):
        return [self.counter]


def make(task, *, variant, seed):
    cls = ListState if task.id == "t2" else CounterEnv
    return cls(task, variant=variant, seed=seed)
"""


def test_a_trial_record_that_cannot_be_made_is_that_trials_error(workdir: Path) -> None:
    # The record refuses a final state that is not an object: once a traceback that
    # ended the run, now the environment's (infra) error, with the rest of the trial kept.
    (workdir / "poison_worlds.py").write_text(WORLDS)
    suite = yaml.safe_load((workdir / "suite.yaml").read_text())
    for task in suite["tasks"]:
        task["environment"] = "poison_worlds:make"
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite))
    trials = run_twice(workdir, "poison_agents:numpy_arguments")
    t2 = trials["t2"]
    assert (t2.status, t2.error_kind, t2.success) == ("error", "infra", False)
    assert t2.error == (
        "the trial record refused final_state: Input should be a valid dictionary (got [2])"
    )
    assert t2.final_state is None and t2.tool_calls == 1 and t2.cost_usd == 0.0


def test_a_trial_the_record_made_an_error_is_not_graded(workdir: Path) -> None:
    # The same refused state, on tasks an answer check grades: the check ran on the
    # session's "completed" after the record had made the trial an infra error, and
    # it passed, so the run stored an infra error with success true (and counted it
    # in its "success 100.0%").
    (workdir / "poison_worlds.py").write_text(WORLDS)
    suite = yaml.safe_load((workdir / "suite.yaml").read_text())
    for task in suite["tasks"]:
        task["environment"] = "poison_worlds:make"
        task["expectations"] = {"answer": {"contains": ["done"]}}  # what the agent says
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite))
    t2 = run_twice(workdir, "poison_agents:numpy_arguments")["t2"]
    assert t2.answer == "done" and t2.error is not None and "final_state" in t2.error
    assert (t2.status, t2.error_kind, t2.success, t2.score, t2.grades) == (
        "error", "infra", False, 0.0, []
    )  # fmt: skip


def test_numpy_scalars_in_tool_arguments_are_the_numbers_they_hold(workdir: Path) -> None:
    trials = run_twice(workdir, "poison_agents:numpy_arguments")
    # every task is solved: the counter got the Python int 2, not a string or an error
    assert trials["t2"].status == "completed" and trials["t2"].success
    (call,) = [e for e in trials["t2"].events if isinstance(e, ToolCallEvent)]
    assert call.arguments["amount"] == 2 and type(call.arguments["amount"]) is int
    assert all(type(w) is float for w in call.arguments["weights"])


def test_a_cmd_program_reporting_2_64_tokens_is_its_error(workdir: Path) -> None:
    trials = run_twice(workdir, f"cmd:{sys.executable} cmd_agent.py tokens")
    assert_agent_error(trials["t2"], "input_tokens", "18446744073709551616")


@pytest.fixture
def broken_usage_server() -> Iterator[OpenAIServer]:
    """Reports 2**64 prompt tokens for the conversation about task t2."""

    def responder(request: dict[str, Any]) -> Reply:
        said = " ".join(str(m.get("content")) for m in request.get("messages", []))
        tokens = 2**64 if "add 2" in said else 10
        return Reply(body=completion("Done.", prompt_tokens=tokens))

    with OpenAIServer(responder) as server:
        yield server


def test_a_server_reporting_2_64_prompt_tokens_is_an_infra_error(
    workdir: Path, broken_usage_server: OpenAIServer
) -> None:
    # The agent did not make the number up: a server whose usage report does not fit
    # is broken, so the trial is blamed on the provider (an infra error).
    url = broken_usage_server.base_url
    # this model only says "Done.": t1 and t3 complete without being solved
    trials = run_twice(workdir, "openai:fake-model", "--base-url", url, solves=False)
    poisoned = trials["t2"]
    assert (poisoned.status, poisoned.error_kind) == ("error", "infra")
    assert poisoned.error is not None
    assert "usage.prompt_tokens must be between 0 and 2**63 - 1" in poisoned.error
    assert "18446744073709551616" in poisoned.error


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ("poison_agents:control_flood", "transcript exceeded 10000 events"),
        ("poison_agents:model_call_flood", "transcript exceeded 10000 events"),
        (f"cmd:{sys.executable} cmd_agent.py flood", "transcript exceeded 10000 events"),
        ("poison_agents:text_flood", "transcript exceeded 50000000 bytes of text"),
    ],
    ids=["control", "model_call", "cmd control", "bytes"],
)
def test_a_flooded_transcript_ends_the_trial_at_its_budget(
    workdir: Path, agent: str, message: str
) -> None:
    trials = run_twice(workdir, agent)
    flooded = trials["t2"]
    assert_agent_error(flooded, message)
    assert len(flooded.events) <= 10_000
    assert (workdir / "s.db").stat().st_size < 100_000_000


INF_WORLDS = """
from agentgauge.testing.worlds import CounterEnv


class InfState(CounterEnv):
    def final_state(self):
        return {"counter": self.counter, "ratio": [1.0, float("inf")]}


def make(task, *, variant, seed):
    cls = InfState if task.id == "t2" else CounterEnv
    return cls(task, variant=variant, seed=seed)
"""


def test_an_infinite_final_state_is_that_trials_error_not_a_damaged_store(
    workdir: Path,
) -> None:
    # The store's JSON writer wrote Infinity, which SQLite's JSON refused: the store was
    # then reported damaged. The writer now refuses it, naming where it is, and the
    # harness makes it the environment's (infra) error, the run going on.
    (workdir / "poison_worlds.py").write_text(INF_WORLDS)
    suite = yaml.safe_load((workdir / "suite.yaml").read_text())
    for task in suite["tasks"]:
        task["environment"] = "poison_worlds:make"
    (workdir / "suite.yaml").write_text(yaml.safe_dump(suite))
    t2 = run_twice(workdir, "poison_agents:numpy_arguments")["t2"]
    assert (t2.status, t2.error_kind, t2.success) == ("error", "infra", False)
    assert t2.error is not None and "ratio[1]: is inf" in t2.error, t2.error
