"""Replaying a task's reference plan to compute its expected final state.

Task authors write the reference calls, not whole database states: the
expected state is whatever the reference plan produces on a fresh copy of the
task's initial database. A reference call that fails is a defect in the task,
reported when the suite loads.
"""

from __future__ import annotations

from typing import Any

from agentgauge.envs.retail.env import RetailEnv
from agentgauge.schema import Task

__all__ = ["replay"]


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
