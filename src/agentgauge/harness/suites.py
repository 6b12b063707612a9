"""What the harness needs of a suite, and the ways a caller may hand one over.

A suite is anything with ``name``, ``version`` (the hash of its normalised
content) and ``tasks``. `as_suite` accepts such an object, a list of tasks
(or task dicts), or a spec/path, which `agentgauge.suite.load_suite` reads.
Tasks handed over in memory are versioned by `agentgauge.suite.suite_version`,
the same hash a loaded suite gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentgauge.errors import InputError
from agentgauge.schema import Task
from agentgauge.suite import Suite, load_suite, suite_version

__all__ = ["SuiteLike", "as_suite"]


@runtime_checkable
class SuiteLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def tasks(self) -> Sequence[Task]: ...


def as_suite(obj: SuiteLike | str | Path | Sequence[Any]) -> SuiteLike:
    """The suite ``obj`` stands for (see the module docstring)."""
    if isinstance(obj, str | Path):
        return load_suite(obj)
    if isinstance(obj, SuiteLike):
        return obj
    tasks = [t if isinstance(t, Task) else Task.model_validate(t) for t in obj]
    _check_unique(tasks, "tasks")
    return Suite(name="python", version=suite_version(tasks), tasks=tasks)


def _check_unique(tasks: Sequence[Task], where: str) -> None:
    seen: set[str] = set()
    for i, t in enumerate(tasks):
        if t.id in seen:
            raise InputError(f"duplicate task id {t.id!r}", file=where, field=f"tasks[{i}].id")
        seen.add(t.id)
