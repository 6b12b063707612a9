"""What a run records of its configuration (the one-change rule) and its baseline role."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentgauge.agents.base import Session
from agentgauge.components import NOT_SENT, digest
from agentgauge.errors import InputError
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.store import Store
from agentgauge.testing.openai_server import OpenAIServer, Reply, completion, tool_call
from agentgauge.testing.worlds import counting_agent, make_counter_env

SUITE = Path(__file__).resolve().parents[2] / "examples" / "counter-suite.yaml"

TASKS = [
    Task(
        id=f"t{i}",
        instruction=f"please add {i + 1}",
        expectations={"final_state": {"counter": i + 1}},
    )
    for i in range(2)
]


def _env_digests() -> tuple[str, str]:
    env = make_counter_env(TASKS[0], variant="base", seed=0)
    return digest(env.policy), digest(env.tools)


def _adds(req: dict[str, Any]) -> Reply:
    msgs = req["messages"]
    if msgs[-1]["role"] == "tool":
        return Reply(body=completion("Done.", model="fake-model-2026-01"))
    amount = int(msgs[1]["content"].split()[-1])
    return Reply(body=completion(tool_calls=[tool_call("add", {"amount": amount})]))


def test_the_openai_adapter_records_model_prompt_tools_and_sampling(tmp_path: Path) -> None:
    with OpenAIServer(_adds) as server:
        header = run(
            TASKS,
            "openai:fake-model",
            store=tmp_path / "s.db",
            env_factory=make_counter_env,
            progress=False,
            agent_options={
                "base_url": server.base_url,
                "params": {"temperature": 0.2, "max_tokens": 256},
            },
        )
        sent = server.requests[0]
    policy, tools = _env_digests()
    got = header.config["components"]
    assert got["model"] == "fake-model"
    assert got["agent_version"].startswith("openai adapter (agentgauge ")
    # The adapter sends the environment's policy as the system prompt, as it is.
    assert sent["messages"][0] == {
        "role": "system",
        "content": make_counter_env(TASKS[0], variant="base", seed=0).policy,
    }
    assert got["system_prompt"] == policy and got["tool_set"] == tools
    assert (got["temperature"], got["max_tokens"]) == (0.2, 256)
    assert sent["temperature"] == 0.2 and "top_p" not in sent
    assert got["top_p"] == NOT_SENT and got["seed"] == NOT_SENT
    assert got["suite_version"] == header.suite_version
    assert got["graders"].endswith("code graders") and got["rubric_version"] == "none (no rubric)"
    with Store(tmp_path / "s.db", readonly=True) as db:
        stored = db.require_run(header.run_id)
    assert stored.config["components"] == got


def test_a_python_callable_declares_its_version_and_prompt(tmp_path: Path) -> None:
    header = run(
        TASKS,
        counting_agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
        agent_options={"version": "1.4", "components": {"system_prompt": "You add numbers."}},
    )
    got = header.config["components"]
    assert got["agent_version"].endswith("counting_agent 1.4")
    assert got["system_prompt"] == digest("You add numbers.")
    assert got["tool_set"] == _env_digests()[1]
    # Not declared: not recorded, never a default.
    assert got["model"] is None and got["temperature"] is None and got["seed"] is None


async def undeclared(session: Session) -> None:
    session.record_cost(0.0)


undeclared.__version__ = "2.0"  # type: ignore[attr-defined]


def test_a_function_attribute_gives_the_version_and_a_role_marks_the_run(tmp_path: Path) -> None:
    header = run(
        TASKS,
        undeclared,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        progress=False,
        baseline_role="ablation",
    )
    assert header.config["components"]["agent_version"].endswith("undeclared 2.0")
    assert header.config["components"]["system_prompt"] is None
    assert header.config["baseline_role"] == "ablation"


def test_a_module_version_is_the_agent_version_and_a_bump_stops_a_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The usual place for a version is the module's __version__: an agent module whose
    # version is bumped between a run and its resume is another agent.
    (tmp_path / "my_agent.py").write_text(
        '__version__ = "1.0"\nasync def agent(session):\n    session.record_cost(0.0)\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    import my_agent  # type: ignore[import-not-found]

    def go(trials: int) -> Any:
        return run(TASKS, my_agent.agent, store=tmp_path / "s.db", env_factory=make_counter_env,
                   progress=False, run_id="r", trials=trials)  # fmt: skip

    assert go(1).config["components"]["agent_version"].endswith("agent 1.0")
    (tmp_path / "my_agent.py").write_text(
        # another length: a cached bytecode file is stale by size even within a second
        (tmp_path / "my_agent.py").read_text().replace("1.0", "2.0.1")
    )
    importlib.reload(my_agent)
    with pytest.raises(InputError, match=r"agent version '.*agent 1\.0', not '.*agent 2\.0\.1'"):
        go(2)


def test_a_bad_role_is_refused_before_the_store_is_touched(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown baseline role 'boss'"):
        run(TASKS, undeclared, store=tmp_path / "s.db", env_factory=make_counter_env,
            progress=False, baseline_role="boss")  # fmt: skip
    assert not (tmp_path / "s.db").exists()


def test_your_own_code_graders_are_named_in_the_graders_component(tmp_path: Path) -> None:
    # A registered code grader runs by default beside the built-in ones, and the run
    # recorded "agentgauge X code graders" as if it did not: two runs, with and without
    # it, read as one change less than they are. In a process of its own: registering
    # is for the whole process.
    import subprocess
    import sys

    script = f"""
import json, agentgauge
from agentgauge.graders import register
from agentgauge.store import Store

@register("polite_words")
class Polite:
    name = "polite_words"
    kind = "code"
    def enabled(self, task):
        return False
    def grade(self, task, trial):
        raise AssertionError("not enabled")

header = agentgauge.run({str(SUITE)!r}, "agentgauge.testing.worlds:counting_agent",
                        store={str(tmp_path / "s.db")!r}, progress=False)
with Store({str(tmp_path / "s.db")!r}) as db:
    print(db.get_run(header.run_id).config["components"]["graders"])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(" code graders and polite_words (__main__.Polite)"), (
        done.stdout
    )
    header = run(SUITE, counting_agent, store=tmp_path / "plain.db", progress=False)
    with Store(tmp_path / "plain.db") as db:
        assert db.get_run(header.run_id).config["components"]["graders"].endswith(" code graders")
