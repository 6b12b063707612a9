"""A tiny world for tests, benchmarks and as a model of the `Environment` protocol.

`CounterEnv` holds one integer. Tools: ``get`` (read it), ``add`` (add
``amount``; irreversible above 100), ``transfer_to_human``. The simulated user
replies from ``task.user_scenario["replies"]`` in order, then leaves. The final
state is ``{"counter": n}``, so a task expecting ``{"counter": 3}`` is solved
by adding 3. Point a task at it with ``environment:
agentgauge.testing.worlds:make_counter_env``.

`counting_agent` solves such tasks when the last number in the instruction is
the amount ("add 3"); `noop_agent` does nothing.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from agentgauge.agents.base import Session
from agentgauge.envs.base import ToolOutcome
from agentgauge.schema import Task

__all__ = ["COUNTER_TOOLS", "CounterEnv", "counting_agent", "make_counter_env", "noop_agent"]

COUNTER_POLICY = "You keep a counter. Change it only as the user asks."

COUNTER_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get",
            "description": "Read the counter.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add an amount to the counter.",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "integer"}},
                "required": ["amount"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "transfer_to_human",
            "description": "Hand the conversation to a human agent.",
            "parameters": {"type": "object", "properties": {"reason": {"type": "string"}}},
        },
    },
]


class CounterEnv:
    """One trial's counter (see the module docstring)."""

    def __init__(self, task: Task, *, variant: str = "base", seed: int = 0) -> None:
        self.counter = int(task.initial_state.get("counter", 0))
        self.seed = seed
        self._replies = list(task.user_scenario.get("replies", []))
        self._first = task.instruction
        if variant.startswith("paraphrase:"):
            self._first = task.paraphrases[int(variant.split(":", 1)[1]) - 1]
        # fault:KIND and env:KIND need nothing here: the harness wraps any world's tool
        # calls with them (agentgauge.envs.faults.with_variants).
        self.closed = False

    @property
    def policy(self) -> str:
        return COUNTER_POLICY

    @property
    def tools(self) -> list[dict[str, Any]]:
        return COUNTER_TOOLS

    def first_message(self) -> str:
        return self._first

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name == "get":
            return ToolOutcome(content={"counter": self.counter})
        if name == "add":
            amount = arguments.get("amount")
            if not isinstance(amount, int) or isinstance(amount, bool):
                return ToolOutcome(content="Error: amount must be an integer", is_error=True)
            self.counter += amount
            return ToolOutcome(content={"counter": self.counter}, irreversible=amount > 100)
        if name == "transfer_to_human":
            return ToolOutcome(content="Transferred.")
        return ToolOutcome(content=f"Error: unknown tool {name!r}", is_error=True)

    def user_reply(self, message: str) -> str | None:
        return self._replies.pop(0) if self._replies else None

    def final_state(self) -> dict[str, Any]:
        return {"counter": self.counter}

    def close(self) -> None:
        self.closed = True


class CounterScenario(BaseModel):
    """What the counter world's simulated user reads of ``user_scenario``."""

    model_config = ConfigDict(extra="forbid")

    replies: list[str] = []
    """What the user says, in order, each time the agent asks."""


def make_counter_env(task: Task, *, variant: str, seed: int) -> CounterEnv:
    """`EnvFactory` for `CounterEnv`."""
    return CounterEnv(task, variant=variant, seed=seed)


#: Checked by the harness before the first trial (`agentgauge.harness.runner`).
make_counter_env.scenario = CounterScenario  # type: ignore[attr-defined]


async def counting_agent(session: Session) -> None:
    """Adds the number that ends the instruction, then says so. Sleeps a seeded
    few milliseconds first, so concurrent trials interleave like real ones."""
    session.record_cost(0.0)  # no model behind it: free, and recorded as such
    await asyncio.sleep(float(session.rng.uniform(0.0, 0.02)))
    amount = int(re.findall(r"-?\d+", session.instruction)[-1])
    await session.call_tool("add", {"amount": amount})
    await session.say(f"Added {amount}.")


async def noop_agent(session: Session) -> None:
    """Does nothing (the harness's overhead, measured alone), for free."""
    session.record_cost(0.0)
