"""Which worlds a trial session treats as conversations with follow-ups.

The session asks each world once whether it takes turns (`agentgauge.envs.base.TurnTaking`)
and answers at once for one that cannot (neither its class nor the object has
``user_turns``): these keep the other ways a world can take turns recorded as before
(the attributes set on the object, or handed on by ``__getattr__``), and a world
without them unrecorded.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agentgauge.harness.session import TrialSession
from agentgauge.schema import Task
from agentgauge.testing.worlds import COUNTER_TOOLS, make_counter_env

TASK = Task(id="t", instruction="add 2, then more")


class _Chat:
    """A counter world whose user sends one follow-up, its turns kept on the object
    (not as properties of its class)."""

    def __init__(self) -> None:
        self.counter = 0
        self.user_turns = 2
        self.user_turn = 1
        self.policy = "Keep a counter."
        self.tools: list[dict[str, Any]] = COUNTER_TOOLS

    def first_message(self) -> str:
        return TASK.instruction

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise AssertionError("not called")

    def user_reply(self, message: str) -> str | None:
        if self.user_turn == 1:
            self.user_turn = 2
            return "Now add 3."
        return None

    def final_state(self) -> dict[str, Any]:
        return {"counter": self.counter}

    def close(self) -> None:
        return None


class _Wrapped:
    """A world that hands every attribute on to the one it wraps (``__getattr__``)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _turns(env: Any) -> list[dict[str, Any]] | None:
    session = TrialSession(TASK.id, env, seed=1)

    async def agent() -> None:
        assert await session.say("Added 2.") == "Now add 3."
        assert await session.say("Added 3.") is None

    asyncio.run(agent())
    return session.outcome().turns


def test_a_world_with_its_turns_on_the_object_has_them_recorded() -> None:
    assert _turns(_Chat()) == [{"end": 2, "state": {"counter": 0}}]


def test_a_world_handing_its_turns_on_through_getattr_has_them_recorded() -> None:
    assert _turns(_Wrapped(_Chat())) == [{"end": 2, "state": {"counter": 0}}]


def test_a_world_without_turns_records_none() -> None:
    env = make_counter_env(TASK, variant="base", seed=1)
    session = TrialSession(TASK.id, env, seed=1)
    assert session.outcome().turns is None
