"""Reference agents (simulated): oracle passes, null fails, careful beats hasty, noise is real."""

from __future__ import annotations

import asyncio
import json
from functools import cache

import numpy as np
import pytest

from agentgauge.envs.faults import make_env
from agentgauge.envs.reference_agents import reference_agent
from agentgauge.errors import InputError
from agentgauge.harness.session import SessionOutcome, TrialSession
from agentgauge.schema import ControlEvent, Task, ToolResultEvent
from agentgauge.suite import load_suite

RETAIL = load_suite("builtin:retail", include_heldout=True).tasks
FUNCTIONS = load_suite("builtin:functions").tasks


def run(agent_name: str, task: Task, variant: str = "base", seed: int = 0) -> SessionOutcome:
    tasks = FUNCTIONS if task.environment == "functions" else RETAIL
    agent = reference_agent(agent_name, tasks)
    session = TrialSession(task.id, make_env(task, variant, seed), seed=seed)
    asyncio.run(agent(session))
    return session.outcome()


def state_ok(task: Task, outcome: SessionOutcome) -> bool:
    return outcome.final_state == task.expectations.final_state


@cache
def success_matrix(agent: str, variant: str, seeds: int = 10) -> dict[str, float]:
    return {
        t.id: float(np.mean([state_ok(t, run(agent, t, variant, 100 + s)) for s in range(seeds)]))
        for t in RETAIL
    }


def test_agents_are_labelled_simulated() -> None:
    for name in ("builtin:null", "oracle", "builtin:careful", "builtin:hasty"):
        agent = reference_agent(name, RETAIL)
        assert agent.name.startswith("builtin:") and agent.model is None and agent.simulated
    with pytest.raises(InputError, match="unknown reference agent"):
        reference_agent("builtin:genius", RETAIL)


@pytest.mark.parametrize("variant", ["base", "paraphrase:2", "fault:timeout", "env:rename_keys"])
def test_oracle_passes_every_task(variant: str) -> None:
    for task in RETAIL:
        outcome = run("builtin:oracle", task, variant, seed=3)
        assert state_ok(task, outcome), task.id
        assert outcome.confidence is not None and outcome.confidence > 0.9
        decisions = [e.decision for e in outcome.events if isinstance(e, ControlEvent)]
        if task.expectations.control not in (None, "act"):
            assert task.expectations.control in decisions, task.id
        # Every irreversible result is preceded by a confirmation request.
        confirmed = False
        for event in outcome.events:
            if isinstance(event, ControlEvent) and event.decision == "confirm":
                confirmed = True
            if isinstance(event, ToolResultEvent) and event.irreversible:
                assert confirmed, task.id
                confirmed = False


def test_null_fails_all_but_unchanged_state_tasks() -> None:
    passed = [t.id for t in RETAIL if state_ok(t, run("builtin:null", t))]
    # The null agent changes nothing, so under the final-state check alone it passes
    # exactly the tasks whose correct outcome is "change nothing" (look-ups, refusals,
    # a declined confirmation). Those need the answer and control graders (SPEC 5.10).
    unchanged = [t.id for t in RETAIL
                 if not any(not c.name.startswith(("get_", "find_"))
                            for c in t.expectations.reference_calls)]  # fmt: skip
    assert passed == unchanged
    assert len(passed) < len(RETAIL) / 2
    for task in RETAIL:
        if task.id in passed:
            assert task.expectations.answer is not None or task.expectations.control in (
                "refuse",
                "confirm",
            ), f"{task.id}: null passes and no answer/control check would catch it"
    outcome = run("builtin:null", RETAIL[0])
    assert outcome.tool_calls == 0 and outcome.answer is None and outcome.confidence is None


def test_careful_beats_hasty_and_both_are_noisy() -> None:
    careful = success_matrix("builtin:careful", "base")
    hasty = success_matrix("builtin:hasty", "base")
    assert np.mean(list(careful.values())) > np.mean(list(hasty.values())) + 0.1
    assert 0.5 < np.mean(list(hasty.values())) < np.mean(list(careful.values())) < 0.98
    strictly_between = [t for t, p in hasty.items() if 0 < p < 1]
    assert len(strictly_between) >= 15
    assert sum(0 < p < 1 for p in careful.values()) >= 10


def test_noisy_agents_are_sensitive_to_paraphrase_and_faults() -> None:
    def mean(agent: str, variant: str) -> float:
        return float(np.mean(list(success_matrix(agent, variant).values())))

    assert mean("builtin:hasty", "paraphrase:1") < mean("builtin:hasty", "base") - 0.05
    assert mean("builtin:hasty", "fault:tool_error") < mean("builtin:hasty", "base") - 0.05
    # careful retries: faults cost it little
    assert mean("builtin:careful", "fault:tool_error") > mean("builtin:careful", "base") - 0.05


def test_longer_tasks_fail_more() -> None:
    hasty = success_matrix("builtin:hasty", "base")
    minutes = {t.id: t.human_minutes or 1 for t in RETAIL}
    short = [hasty[t] for t, m in minutes.items() if m <= 5]
    long = [hasty[t] for t, m in minutes.items() if m >= 15]
    assert np.mean(long) < np.mean(short)


def test_same_seed_same_transcript() -> None:
    task = next(t for t in RETAIL if t.id == "multi_full_service_C08")

    def dump(o: SessionOutcome) -> str:
        return json.dumps([e.model_dump(exclude={"t"}) for e in o.events], sort_keys=True)

    runs = {dump(run("builtin:hasty", task, "fault:timeout", 5)) for _ in range(3)}
    assert len(runs) == 1
    others = {dump(run("builtin:hasty", task, "fault:timeout", s)) for s in range(10)}
    assert len(others) > 1


def test_noisy_agents_emit_control_and_confidence() -> None:
    decisions: set[str] = set()
    conf_ok: list[float] = []
    conf_bad: list[float] = []
    for seed in range(4):
        for task in RETAIL:
            outcome = run("builtin:careful", task, "fault:rate_limit", seed)
            decisions |= {e.decision for e in outcome.events if isinstance(e, ControlEvent)}
            assert outcome.confidence is not None and 0 <= outcome.confidence <= 1
            (conf_ok if state_ok(task, outcome) else conf_bad).append(outcome.confidence)
    assert {"confirm", "ask", "refuse", "transfer", "recover"} <= decisions
    assert conf_bad and np.mean(conf_ok) > np.mean(conf_bad)  # careful knows when it slipped


def expected_calls(task: Task) -> list[dict[str, object]]:
    calls = []
    for entry in task.expectations.answer_key or []:
        ((name, params),) = entry.items()
        args = {k: v[0] for k, v in params.items() if v and v[0] != ""}
        calls.append({"name": name, "arguments": args})
    return sorted(calls, key=lambda c: json.dumps(c, sort_keys=True))


def test_agents_on_function_calling_tasks() -> None:
    for task in FUNCTIONS:
        oracle = run("builtin:oracle", task)
        assert oracle.final_state == {"calls": expected_calls(task)}, task.id
        assert run("builtin:null", task).final_state == {"calls": []}
    scores = {
        name: np.mean(
            [
                run(name, t, "base", s).final_state == {"calls": expected_calls(t)}
                for t in FUNCTIONS
                for s in range(8)
            ]
        )
        for name in ("builtin:careful", "builtin:hasty")
    }
    assert scores["builtin:careful"] > scores["builtin:hasty"]
    assert scores["builtin:hasty"] < 1


@pytest.mark.parametrize("name", ["builtin:null", "builtin:oracle", "builtin:hasty"])
def test_reference_agents_record_their_cost_explicitly(name: str) -> None:
    # A trial's cost is known only when the agent records it; the simulations record
    # their simulated model calls and an explicit zero, so the null agent is a known $0.
    for task in (RETAIL[0], FUNCTIONS[0]):
        outcome = run(name, task)
        assert outcome.cost_usd is not None
        if name == "builtin:null":
            assert outcome.cost_usd == 0.0 and outcome.model_calls == 0
        else:
            assert outcome.cost_usd > 0


def test_only_the_null_agent_plays_a_suite_of_another_world() -> None:
    # The others read a built-in world's reference plan: on a task of a world of one's
    # own every trial was the agent's error. Refused when the agent is made, before a run.
    counter = Task(id="c", instruction="add 1", environment="my_world:make")
    for name in ("oracle", "careful", "hasty", "ablation"):
        with pytest.raises(InputError, match=rf"builtin:{name} plays only the built-in worlds"):
            reference_agent(name, [*RETAIL[:2], counter])
    null = reference_agent("builtin:null", [counter])
    session = TrialSession("c", make_env(RETAIL[0], "base", 0), seed=0)
    asyncio.run(null(session))  # does nothing, as on any suite
    assert [e.type for e in session.outcome().events] == ["message"]  # the user's opening
