"""builtin:ablation (simulated): one planning call, no asking, no confirming, no retries."""

from __future__ import annotations

import asyncio

import numpy as np

from agentgauge.envs.faults import make_env
from agentgauge.envs.reference_agents import reference_agent
from agentgauge.harness.session import SessionOutcome, TrialSession
from agentgauge.schema import ControlEvent, ModelCallEvent, Task
from agentgauge.suite import load_suite

RETAIL = load_suite("builtin:retail").tasks


def run(name: str, task: Task, variant: str, seed: int) -> SessionOutcome:
    session = TrialSession(task.id, make_env(task, variant, seed), seed=seed)
    asyncio.run(reference_agent(name, RETAIL)(session))
    return session.outcome()


def state_ok(task: Task, outcome: SessionOutcome) -> bool:
    return outcome.final_state == task.expectations.final_state


def test_one_model_call_per_trial_and_no_retry() -> None:
    for seed, task in enumerate(RETAIL):
        out = run("builtin:ablation", task, "fault:tool_error", seed)
        calls = [e for e in out.events if isinstance(e, ModelCallEvent)]
        assert len(calls) <= 1, task.id
        decisions = [e.decision for e in out.events if isinstance(e, ControlEvent)]
        assert "recover" not in decisions, task.id


def test_it_mostly_skips_asking_and_sits_between_hasty_and_careful() -> None:
    asking = [t for t in RETAIL if t.expectations.control == "ask"]
    asked = [
        any(isinstance(e, ControlEvent) and e.decision == "ask" for e in run(
            "builtin:ablation", t, "base", s).events)
        for s in range(5)
        for t in asking
    ]  # fmt: skip
    # It guesses with probability 0.95 (the simulation's cap), so it asks about 5% of the time.
    assert np.mean(asked) < 0.2
    rate = {
        name: np.mean([state_ok(t, run(f"builtin:{name}", t, "base", s)) for t in RETAIL
                       for s in range(3)])
        for name in ("hasty", "ablation", "careful")
    }  # fmt: skip
    # Orchestration (asking, confirming, retrying) is what careful adds over the ablation.
    assert rate["hasty"] < rate["ablation"] < rate["careful"], rate
