"""The environment protocol: what a trial's world offers an agent.

An environment is created fresh for every trial (pass^k assumes independent
trials, so no state may leak between them) from a task. It exposes tools with
JSON-schema signatures, executes calls against its own state, simulates the
user, and exports its final state canonically for the state grader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentgauge.report.formats import counted
from agentgauge.schema import Task

__all__ = [
    "EnvFactory",
    "Environment",
    "EnvironmentFailed",
    "ToolOutcome",
    "TurnTaking",
    "opening_message",
    "user_turns",
]


class EnvironmentFailed(Exception):
    """The trial's environment raised, or answered with what no environment may (a
    tool result that is not a `ToolOutcome`, a user reply that is not text).

    Raised to the agent from the session call that reached the environment; the trial
    is then the environment's error (infra) whatever the agent does next, and every
    later call to that environment raises it again (docs/running-agents.md, "Timeouts,
    retries, and whose fault an error is")."""


@dataclass(frozen=True)
class ToolOutcome:
    """What a tool call returned."""

    content: Any
    """The result as the agent sees it (JSON-serialisable)."""
    is_error: bool = False
    """The tool refused or failed (bad arguments, policy, injected fault)."""
    irreversible: bool = False
    """The call changed the world in a way that cannot be undone (needs confirmation)."""


@runtime_checkable
class Environment(Protocol):
    """One trial's world. Methods are synchronous and cheap; the harness owns time."""

    @property
    def policy(self) -> str:
        """The written policy the agent must follow (its system prompt)."""
        ...

    @property
    def tools(self) -> list[dict[str, Any]]:
        """Tool signatures in OpenAI function-calling form:
        ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        ...

    def first_message(self) -> str:
        """The user's opening message (the task's instruction or a paraphrase).

        A world of one's own that opens with the instruction, or a message holding it,
        under ``paraphrase:N`` has it replaced by the paraphrase; one whose opening holds
        neither is refused the variant (`agentgauge.envs.faults.ParaphrasedEnv`)."""
        ...

    def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        """Execute one tool call against this trial's state."""
        ...

    def user_reply(self, message: str) -> str | None:
        """The simulated user's answer to the agent's message; ``None`` ends the conversation."""
        ...

    def final_state(self) -> dict[str, Any]:
        """The state at the end, as canonical JSON-able data (sorted keys, no volatile ids)."""
        ...

    def close(self) -> None:
        """Release resources (database connections, temp files)."""
        ...


@runtime_checkable
class TurnTaking(Protocol):
    """An environment whose user may send follow-up requests: a conversation of
    several user turns (`agentgauge.turns`). The session records the state each
    time the agent hands a turn back."""

    @property
    def user_turns(self) -> int:
        """How many user turns the conversation is scripted to have (1: no follow-up)."""
        ...

    @property
    def user_turn(self) -> int:
        """The user turn under way, from 1; it advances when the user sends a follow-up."""
        ...


def user_turns(env: Environment) -> int:
    """How many user turns ``env``'s conversation has (1 for a world without follow-ups)."""
    return env.user_turns if isinstance(env, TurnTaking) else 1


class EnvFactory(Protocol):
    """Builds a fresh environment for one trial of a task."""

    def __call__(self, task: Task, *, variant: str, seed: int) -> Environment: ...


def opening_message(task: Task, paraphrase: int | None = None) -> str:
    """The user's first message: the task's instruction, or paraphrase ``paraphrase`` (1-based).

    Raises `ValueError` for a paraphrase the task does not have (variant
    ``paraphrase:N`` with N out of range), so a bad variant fails before the trial.
    """
    if paraphrase is None:
        return task.instruction
    if not 1 <= paraphrase <= len(task.paraphrases):
        raise ValueError(
            f"task {task.id!r} has {counted(len(task.paraphrases), 'paraphrase')}; "
            f"paraphrase:{paraphrase} does not exist"
        )
    return task.paraphrases[paraphrase - 1]
