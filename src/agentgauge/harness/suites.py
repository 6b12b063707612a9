"""What the harness needs of a suite, and the ways a caller may hand one over.

A suite is anything with ``name``, ``version`` (the hash of its normalised
content) and ``tasks``. `as_suite` accepts such an object, a list of tasks
(or task dicts), or a spec/path, which goes to `agentgauge.suite.load_suite`
when that module is present and otherwise to `_load_tasks_file`, a minimal
reader of a YAML/JSON file of tasks kept here until the suite loader lands.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml
from pydantic import ValidationError

from agentgauge.errors import InputError
from agentgauge.loading import first_error
from agentgauge.schema import Task

__all__ = ["InlineSuite", "SuiteLike", "as_suite", "suite_version"]


@runtime_checkable
class SuiteLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def tasks(self) -> Sequence[Task]: ...


@dataclass(frozen=True)
class InlineSuite:
    """A suite built from tasks in memory."""

    name: str
    version: str
    tasks: list[Task]


def suite_version(tasks: Sequence[Task]) -> str:
    """SHA-256 (first 16 hex digits) of the tasks' canonical JSON."""
    canon = json.dumps(
        [t.model_dump(mode="json", exclude_defaults=True) for t in tasks],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canon.encode()).hexdigest()[:16]


def as_suite(obj: SuiteLike | str | Path | Sequence[Any]) -> SuiteLike:
    """The suite ``obj`` stands for (see the module docstring)."""
    if isinstance(obj, str | Path):
        try:
            loader = importlib.import_module("agentgauge.suite")
        except ImportError:
            return _load_tasks_file(Path(obj))
        suite: SuiteLike = loader.load_suite(str(obj))
        return suite
    if isinstance(obj, SuiteLike):
        return obj
    tasks = [t if isinstance(t, Task) else Task.model_validate(t) for t in obj]
    _check_unique(tasks, "tasks")
    return InlineSuite(name="python", version=suite_version(tasks), tasks=tasks)


def _check_unique(tasks: Sequence[Task], where: str) -> None:
    seen: set[str] = set()
    for i, t in enumerate(tasks):
        if t.id in seen:
            raise InputError(f"duplicate task id {t.id!r}", file=where, field=f"tasks[{i}].id")
        seen.add(t.id)


def _load_tasks_file(path: Path) -> InlineSuite:
    """A YAML/JSON file holding a list of tasks, or ``{name?, tasks: [...]}``.

    Temporary: the suite loader (``agentgauge.suite``) replaces this."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read suite: {exc.strerror}", file=path) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", file=path) from None
    if isinstance(data, dict):
        data = data.get("tasks")
    if not isinstance(data, list) or not data:
        raise InputError("expected a non-empty list of tasks", file=path, field="tasks")
    tasks: list[Task] = []
    for i, item in enumerate(data):
        try:
            tasks.append(Task.model_validate(item))
        except ValidationError as exc:
            field, reason = first_error(exc)
            raise InputError(reason, file=path, field=f"tasks[{i}].{field}") from None
    _check_unique(tasks, str(path))
    return InlineSuite(name=str(path), version=suite_version(tasks), tasks=tasks)
