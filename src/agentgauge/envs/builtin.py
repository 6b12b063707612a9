"""The built-in worlds by name, and what each provides besides its environment.

A task names its world in ``environment`` (``retail``, ``functions``); a task
without one that lists ``expectations.functions`` or a ``call_category`` is a
``functions`` task. Each world's package declares one `BuiltinEnvironment` as
``ENVIRONMENT`` in its ``__init__``, so what is special about a world lives in
that world's folder, and the suite loader, the harness and the reference agents
ask it instead of testing its name.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from agentgauge.envs.base import Environment
from agentgauge.schema import Task

if TYPE_CHECKING:
    from agentgauge.envs.reference_agents import PlanRun

__all__ = [
    "BUILTIN_ENVIRONMENTS",
    "BuiltinEnvironment",
    "TaskDefect",
    "builtin_environment",
    "environment_name",
]

#: World name -> the package that declares it.
BUILTIN_ENVIRONMENTS = {
    "retail": "agentgauge.envs.retail",
    "functions": "agentgauge.envs.functions",
}


class TaskDefect(ValueError):
    """What a world finds wrong in a task it completes, with where in the task it is
    (``("expectations", "state_assertions", 1)``), so the suite loader names that line
    and field.

    ``reason`` says what is wrong there; the message (``str``) leads with ``where``
    when given (``orders[0].zip: ...``), for whoever catches it as a `ValueError`
    without reading ``loc``."""

    def __init__(self, reason: str, loc: tuple[str | int, ...], where: str | None = None) -> None:
        super().__init__(reason if where is None else f"{where}: {reason}")
        self.reason = reason
        self.loc = loc


def _no_fingerprint() -> str:
    return ""


def _as_written(task: Task) -> Task:
    return task


def _no_check(task: Task) -> None:
    return None


class NoScenario(BaseModel):
    """The ``user_scenario`` of a world with no simulated user: it must be empty."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class BuiltinEnvironment:
    """One built-in world."""

    name: str
    """The name tasks give in ``environment``."""
    make: Callable[[Task, int, int | None], Environment]
    """A fresh environment for one trial: ``make(task, seed, paraphrase)`` (1-based
    paraphrase, or ``None`` for the instruction)."""
    play: Callable[[PlanRun], Awaitable[None]]
    """How the simulated reference agents follow a task's plan in this world."""
    fingerprint: Callable[[], str] = _no_fingerprint
    """Text beyond the tasks that can change a score (retail: its written policy),
    hashed into the version of every suite with a task in this world."""
    complete: Callable[[Task], Task] = _as_written
    """The task with what can be computed filled in, when a suite is loaded (retail:
    its expected final state, by replaying its reference calls). Raises `ValueError`
    (`TaskDefect` when it can say where) for a task that cannot hold."""
    scenario: type[BaseModel] = NoScenario
    """The fields of ``user_scenario`` in this world (unknown keys are an error, so a
    typo such as ``knwon:`` fails when the suite loads instead of passing silently)."""
    check_state: Callable[[Task], None] = _no_check
    """Raises `ValueError` naming what is wrong in the task's ``initial_state``."""
    state_shape: Mapping[str, Any] | None = None
    """The keys the world's state can hold, as nested mappings: ``"*"`` stands for any
    key, and ``None`` for anything below (retail: ``{"orders": {"*": {"status": None,
    ...}}, ...}``); ``None`` when the world cannot say. The suite loader checks each
    state assertion's path against it (``orderz.W1001.status`` can never hold, and
    with ``exists: false`` always holds)."""
    tools: Callable[[Task], list[dict[str, Any]]] | None = None
    """The tools the task's agent is offered, as function docs (``name``, and
    ``parameters`` with its ``properties``); ``None`` when the world cannot say
    before a trial. The suite loader checks each tool an expectation names against
    them (a minefield on a misspelt tool can never fire)."""


def environment_name(task: Task) -> str | None:
    """The world ``task`` runs in (see the module docstring), or ``None``."""
    exp = task.expectations
    if task.environment is not None:
        return task.environment
    return "functions" if exp.functions or exp.call_category is not None else None


def builtin_environment(task: Task | str | None) -> BuiltinEnvironment | None:
    """The built-in world of a task (or of a world name); ``None`` for any other."""
    name = task if task is None or isinstance(task, str) else environment_name(task)
    package = BUILTIN_ENVIRONMENTS.get(name or "")
    if package is None:
        return None
    world: BuiltinEnvironment = importlib.import_module(package).ENVIRONMENT
    return world
