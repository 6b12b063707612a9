"""``fault:KIND`` and ``env:KIND`` variants apply to a world of one's own.

They wrap tool calls (`agentgauge.envs.faults.FaultyEnv`, `PerturbedEnv`) and need
nothing from the world. Before this change a ``module:function`` factory (or an
``env_factory=`` from Python) got only the variant's name: ``--variants
fault:timeout@1.0,fault:rate_limit@1.0,env:wrap`` over the counter world ran every
trial unchanged (100% success, robustness "perfect"), and the counter world failed
every call of ``fault:tool_error`` by matching the name itself.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agentgauge.envs.base import ToolOutcome
from agentgauge.harness.runner import run
from agentgauge.schema import Task, ToolResultEvent, Trial
from agentgauge.store import Store
from agentgauge.testing.worlds import CounterEnv, counting_agent, make_counter_env

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


def results(trial: Trial) -> list[Any]:
    return [e.content for e in trial.events if isinstance(e, ToolResultEvent)]


def test_fault_and_env_variants_apply_to_a_module_function_world(tmp_path: Path) -> None:
    variants = "base,fault:timeout@1.0,fault:rate_limit@1.0,env:wrap,fault:tool_error@0.0"
    agent = "agentgauge.testing.worlds:counting_agent"
    command = [sys.executable, "-m", "agentgauge", "run", str(SUITE), "--agent", agent]
    command += ["--variants", variants, "--store", str(tmp_path / "s.db"), "--run-id", "r"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    with Store(tmp_path / "s.db") as db:
        trials = db.trials("r")
    by_variant: dict[str, list[Trial]] = {}
    for t in trials:
        by_variant.setdefault(t.variant, []).append(t)
    assert len(by_variant) == 5 and all(len(ts) == 3 for ts in by_variant.values())
    for variant, text in (
        ("fault:timeout@1.0", "timed out after 30 s"),
        ("fault:rate_limit@1.0", "429 Too Many Requests"),
    ):
        for t in by_variant[variant]:
            (result,) = results(t)
            assert text in result and not t.success, (variant, result)
    for t in by_variant["env:wrap"]:
        (result,) = results(t)
        assert result == {"data": t.final_state, "status": "ok"} and t.success
    # a rate of 0 injects nothing: the world answers as in base
    for base, none in zip(
        sorted(by_variant["base"], key=lambda t: t.task_id),
        sorted(by_variant["fault:tool_error@0.0"], key=lambda t: t.task_id),
        strict=True,
    ):
        assert results(none) == results(base) and none.success
    assert "success 60.0%" in done.stdout  # base, env:wrap and the rate of 0 pass


def test_variants_apply_to_an_env_factory_given_from_python(tmp_path: Path) -> None:
    tasks = [Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})]
    header = run(
        tasks,
        counting_agent,
        store=tmp_path / "s.db",
        env_factory=make_counter_env,
        variants=["base", "fault:tool_error@1.0"],
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        by_variant = {t.variant: t for t in db.trials(header.run_id)}
    assert by_variant["base"].success
    faulted = by_variant["fault:tool_error@1.0"]
    assert not faulted.success and faulted.final_state == {"counter": 0}
    assert results(faulted) == [
        "Error: internal error in add (transient); no changes were made. Retry."
    ]


class OwnFaults(CounterEnv):
    """A world that injects its own faults for fault: variants."""

    def __init__(self, task: Task, *, variant: str, seed: int) -> None:
        super().__init__(task, variant=variant, seed=seed)
        self.faulty = variant.startswith("fault:")

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if self.faulty:
            return ToolOutcome(content="Error: my own fault", is_error=True)
        return super().call_tool(name, arguments)


def make_own_faults(task: Task, *, variant: str, seed: int) -> OwnFaults:
    return OwnFaults(task, variant=variant, seed=seed)


make_own_faults.applies_variants = True  # type: ignore[attr-defined]


def test_a_factory_that_applies_variants_itself_is_not_wrapped(tmp_path: Path) -> None:
    tasks = [Task(id="t", instruction="add 3", expectations={"final_state": {"counter": 3}})]
    header = run(
        tasks,
        counting_agent,
        store=tmp_path / "s.db",
        env_factory=make_own_faults,
        variants=["fault:timeout@1.0"],
        progress=False,
    )
    with Store(tmp_path / "s.db") as db:
        (trial,) = db.trials(header.run_id)
    assert results(trial) == ["Error: my own fault"]  # its own, not the harness's on top
