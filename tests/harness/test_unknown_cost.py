"""A trial's cost is known only when the agent recorded it; otherwise unknown, never $0."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.base import Session
from agentgauge.harness.runner import run
from agentgauge.schema import Task, Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import make_counter_env

TASKS = [Task(id="a", instruction="add 2", expectations={"final_state": {"counter": 2}})]


def go(tmp_path: Path, agent: Any) -> list[Trial]:
    header = run(
        TASKS, agent, store=tmp_path / "s.db", env_factory=make_counter_env, progress=False
    )
    with Store(tmp_path / "s.db") as db:
        return db.trials(header.run_id)


async def silent(session: Session) -> None:
    """Calls 'its own model' (nothing recorded) and acts."""
    await session.call_tool("add", {"amount": 2})


async def free(session: Session) -> None:
    session.record_cost(0.0)
    await session.call_tool("add", {"amount": 2})


async def priced_and_extra(session: Session) -> None:
    session.record_model_call(
        model="m", input_tokens=1, output_tokens=1, cost_usd=0.25, latency_s=0.1
    )
    session.record_cost(0.5)  # a search API the model calls do not carry
    session.record_cost(0.25)
    await session.call_tool("add", {"amount": 2})


async def one_unpriced_call(session: Session) -> None:
    session.record_cost(0.0)
    session.record_model_call(
        model="m", input_tokens=1, output_tokens=1, cost_usd=None, latency_s=0.1
    )
    await session.call_tool("add", {"amount": 2})


def test_an_agent_that_records_nothing_has_unknown_cost(tmp_path: Path) -> None:
    (t,) = go(tmp_path, silent)
    assert t.success and t.cost_usd is None


def test_an_explicit_zero_is_a_known_free_trial(tmp_path: Path) -> None:
    (t,) = go(tmp_path, free)
    assert t.status == "completed" and t.success and t.cost_usd == 0.0


def test_recorded_costs_add_to_the_model_calls(tmp_path: Path) -> None:
    (t,) = go(tmp_path, priced_and_extra)
    assert t.cost_usd == pytest.approx(1.0)  # 0.25 (call) + 0.5 + 0.25


def test_an_unpriced_call_stays_unknown_whatever_else_was_recorded(tmp_path: Path) -> None:
    (t,) = go(tmp_path, one_unpriced_call)
    assert t.cost_usd is None


def test_a_synchronous_agent_can_record_its_cost(tmp_path: Path) -> None:
    def sync_free(session: Any) -> None:
        session.record_cost(0.125)
        session.call_tool("add", {"amount": 2})

    (t,) = go(tmp_path, sync_free)
    assert t.cost_usd == 0.125


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "0.5", True])
def test_a_bad_cost_is_the_agents_error(tmp_path: Path, bad: Any) -> None:
    async def agent(session: Session) -> None:
        session.record_cost(bad)

    (t,) = go(tmp_path, agent)
    assert t.status == "error" and t.error_kind == "agent"
    assert t.error is not None and "cost must be a finite number" in t.error


def _program(tmp_path: Path, lines: str) -> str:
    path = tmp_path / "agent.py"
    path.write_text(
        "import json, sys\nstart = json.loads(sys.stdin.readline())\n"
        "out = lambda m: print(json.dumps(m), flush=True)\n" + textwrap.dedent(lines)
    )
    return f"cmd:{sys.executable} {path}"


def test_a_program_that_reports_nothing_has_unknown_cost(tmp_path: Path) -> None:
    agent = _program(tmp_path, 'out({"type": "answer", "content": "ok"})\nout({"type": "done"})\n')
    (t,) = go(tmp_path, agent)
    assert t.status == "completed" and t.cost_usd is None


def test_a_program_reports_its_cost_with_a_cost_message(tmp_path: Path) -> None:
    agent = _program(tmp_path, 'out({"type": "cost", "usd": 0.03})\nout({"type": "done"})\n')
    (t,) = go(tmp_path, agent)
    assert t.status == "completed" and t.cost_usd == pytest.approx(0.03)


def test_a_cost_message_without_a_number_is_a_protocol_error(tmp_path: Path) -> None:
    agent = _program(tmp_path, 'out({"type": "cost", "usd": "0.03"})\nout({"type": "done"})\n')
    (t,) = go(tmp_path, agent)
    assert t.status == "error" and t.error is not None and t.error.startswith("ProtocolError")


def test_no_recorded_model_call_means_unknown_tokens(tmp_path: Path) -> None:
    (t,) = go(tmp_path, silent)
    assert t.input_tokens is None and t.output_tokens is None
    (tmp_path / "p").mkdir()
    (priced,) = go(tmp_path / "p", priced_and_extra)
    assert (priced.input_tokens, priced.output_tokens) == (1, 1)


def test_the_run_line_says_unknown_spend_not_zero(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "quiet_agent.py").write_text("async def fn(session):\n    session.answer('3')\n")
    suite = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "run",
            str(suite),
            "--agent",
            "quiet_agent:fn",
            "--store",
            str(tmp_path / "s.db"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "spend unknown (3 of 3 trials unpriced)" in done.stdout, done.stdout
    assert "$0.0000" not in done.stdout


def test_the_run_line_writes_a_small_spend_as_the_reports_do(tmp_path: Path) -> None:
    # 3 trials at $3e-06 each were "spend $0.0000" at the end of the run, "$9.00e-06" in
    # `metrics`.
    import subprocess

    (tmp_path / "cheap_agent.py").write_text(
        "async def fn(session):\n    session.record_cost(3e-06)\n    session.answer('3')\n"
    )
    suite = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "run", str(suite), "--agent", "cheap_agent:fn",
         "--store", str(tmp_path / "s.db"), "--no-progress"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "spend $9.00e-06" in done.stdout, done.stdout
