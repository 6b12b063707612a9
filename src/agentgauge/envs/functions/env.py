"""`FunctionsEnv`: the tools are the task's functions; each call is acknowledged.

A single-turn set measures which calls an agent makes, not what the calls do,
so the functions have no implementations: every call returns a canned
acknowledgement and the user never replies. The calls themselves are graded
against ``expectations.answer_key`` by BFCL's AST matching (docs/graders.md).
"""

from __future__ import annotations

import json
from typing import Any

from agentgauge.envs.base import ToolOutcome, opening_message
from agentgauge.schema import Task

__all__ = ["FUNCTIONS_POLICY", "FunctionsEnv"]

FUNCTIONS_POLICY = (
    "You can call the functions provided. Answer the user's request with the right "
    "function call(s) and arguments taken from the request. If no function fits the "
    "request, do not call any function; answer in text instead."
)


class FunctionsEnv:
    """One single-turn trial of a function-calling task."""

    def __init__(self, task: Task, *, paraphrase: int | None = None) -> None:
        self._functions = task.expectations.functions
        self._tools = [{"type": "function", "function": f} for f in self._functions]
        self._names = {f.get("name") for f in self._functions}
        self._first = opening_message(task, paraphrase)
        self._calls: list[dict[str, Any]] = []

    @property
    def policy(self) -> str:
        return FUNCTIONS_POLICY

    @property
    def tools(self) -> list[dict[str, Any]]:
        return self._tools

    def first_message(self) -> str:
        return self._first

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        if name not in self._names:
            return ToolOutcome(content=f"Error: unknown function {name!r}", is_error=True)
        self._calls.append({"name": name, "arguments": arguments})
        return ToolOutcome(content={"status": "ok", "function": name})

    def user_reply(self, message: str) -> str | None:
        return None

    def final_state(self) -> dict[str, Any]:
        """The calls made, sorted canonically (parallel calls are order-free)."""
        calls = sorted(self._calls, key=lambda c: json.dumps(c, sort_keys=True))
        return {"calls": calls}

    def close(self) -> None:
        self._calls = []
