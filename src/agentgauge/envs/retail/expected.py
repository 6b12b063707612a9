"""A retail task's expected final state, from its reference plan.

Task authors write the reference calls, not whole database states: the
expected state is whatever the reference plan produces on a fresh copy of the
task's initial database. A reference call that fails is a defect in the task,
reported when the suite loads.
"""

from __future__ import annotations

from typing import Any

from agentgauge.envs.retail.env import RetailEnv
from agentgauge.schema import Task

__all__ = ["complete", "replay"]


def complete(task: Task) -> Task:
    """``task`` with ``expectations.final_state`` computed by `replay`, when it
    declares neither a final state nor state assertions."""
    exp = task.expectations
    if exp.final_state is not None or exp.state_assertions:
        return task
    state = replay(task)
    return task.model_copy(update={"expectations": exp.model_copy(update={"final_state": state})})


def replay(task: Task) -> dict[str, Any]:
    """The final state after running ``task.expectations.reference_calls`` in order.

    Raises `ValueError` naming the first reference call that returns an error
    (or a bad ``initial_state``).
    """
    env = RetailEnv(task, seed=0)
    try:
        for i, call in enumerate(task.expectations.reference_calls):
            outcome = env.call_tool(call.name, call.arguments)
            if outcome.is_error:
                raise ValueError(
                    f"reference call {i} ({call.name}) failed on a fresh environment: "
                    f"{outcome.content}"
                )
        return env.final_state()
    finally:
        env.close()
