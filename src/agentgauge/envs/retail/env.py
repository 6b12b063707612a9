"""`RetailEnv`: one trial's customer-service world (SQLite in memory + scripted user)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any

import numpy as np

from agentgauge.envs.base import ToolOutcome, opening_message
from agentgauge.envs.retail import db, tools
from agentgauge.envs.retail.user import ScriptedUser
from agentgauge.schema import Task

__all__ = ["RetailEnv", "policy_text"]


@cache
def policy_text() -> str:
    """The written policy (package data ``policy.md``)."""
    return resources.files("agentgauge.envs.retail").joinpath("policy.md").read_text("utf-8")


class RetailEnv:
    """A fresh copy of the retail database for one trial of `task`.

    ``first_message`` is the task's instruction, or paraphrase ``paraphrase``
    (1-based) when given. The user's phrasing choices come from ``seed``.
    """

    def __init__(self, task: Task, *, seed: int = 0, paraphrase: int | None = None) -> None:
        self._task = task
        self._base = db.template(task.initial_state)
        self._conn = db.fresh_connection(self._base)
        self._touched = False  # no tool call yet: the state is the template's
        self._user = ScriptedUser(task.user_scenario, np.random.default_rng([seed, 2]))
        self._first = opening_message(task, paraphrase)

    @property
    def policy(self) -> str:
        return policy_text()

    @property
    def tools(self) -> list[dict[str, Any]]:
        return tools.TOOLS

    @property
    def user_turns(self) -> int:
        return self._user.user_turns

    @property
    def user_turn(self) -> int:
        return self._user.user_turn

    def first_message(self) -> str:
        return self._first

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self._touched = True
        return tools.call(self._conn, name, arguments)

    def user_reply(self, message: str) -> str | None:
        return self._user.reply(message)

    def final_state(self) -> dict[str, Any]:
        return db.export_state(self._conn, base=self._base, clean=not self._touched)

    def close(self) -> None:
        self._conn.close()
