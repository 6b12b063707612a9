"""Reading trial records (SPEC 3.1) with errors a user can act on.

The first bad line stops the load with ``FILE:LINE: field: reason``; callers
write nothing until the whole file has validated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentgauge.errors import InputError
from agentgauge.schema import Trial

__all__ = ["assign_trial_indices", "first_error", "load_trials", "parse_trial", "read_jsonl"]


def first_error(exc: ValidationError, *, metadata_hint: bool = True) -> tuple[str | None, str]:
    """The first validation error as ``(dotted field path, reason)``.

    ``metadata_hint``: point unknown keys at ``metadata`` (for models that have one).
    """
    err = exc.errors()[0]
    loc = [str(part) for part in err.get("loc", ())]
    # Discriminated unions put the tag in the path (``events.3.tool_call.name``):
    # that is noise for a user, who wrote ``events[3].name``.
    field = ".".join(loc) if loc else None
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        reason = "unknown key" + (" (put free-form data under 'metadata')" if metadata_hint else "")
    elif kind == "missing":
        reason = "required field is missing"
    else:
        # pydantic prefixes messages raised by validators with "Value error, ".
        reason = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
        if "input" in err and kind not in ("value_error",):
            shown = json.dumps(err["input"], default=str)
            if len(shown) > 60:
                shown = shown[:57] + "..."
            reason += f" (got {shown})"
    return field, reason


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each non-blank line of a JSONL file."""
    path = Path(path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    with handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line, parse_constant=_reject_constant)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"invalid JSON: {exc.msg} at column {exc.colno}", file=path, line=lineno
                ) from None
            except ValueError as exc:
                raise InputError(str(exc), file=path, line=lineno) from None
            if not isinstance(obj, dict):
                raise InputError(
                    f"expected a JSON object, got {type(obj).__name__}", file=path, line=lineno
                )
            yield lineno, obj


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN/Infinity, which are not JSON and not scores.
    raise ValueError(f"{name} is not allowed (not valid JSON, and not a number we can score)")


def parse_trial(obj: dict[str, Any], *, file: str | Path | None, line: int | None) -> Trial:
    """Validate one record, raising `InputError` with its location."""
    try:
        return Trial.model_validate(obj)
    except ValidationError as exc:
        field, reason = first_error(exc)
        raise InputError(reason, file=file, line=line, field=field) from None


def assign_trial_indices(
    trials: Iterable[tuple[int | None, Trial]], *, file: str | Path | None = None
) -> list[Trial]:
    """Fill missing ``trial`` indices by order of appearance and reject duplicates.

    A (task, trial) pair must be unique within its group (agent, model, variant):
    two records claiming to be the same attempt mean a merge went wrong.
    """
    out: list[Trial] = []
    next_index: dict[tuple[Any, ...], int] = {}
    seen: dict[tuple[Any, ...], int | None] = {}
    for line, trial in trials:
        cell = (trial.agent, trial.model, trial.variant, trial.task_id)
        if trial.trial is None:
            trial.trial = next_index.get(cell, 0)
        next_index[cell] = max(next_index.get(cell, 0), trial.trial + 1)
        key = (*cell, trial.trial)
        if key in seen:
            first = seen[key]
            where = f" (first seen on line {first})" if first is not None else ""
            raise InputError(
                f"duplicate trial {trial.trial} of task {trial.task_id!r} for "
                f"agent={trial.agent!r} model={trial.model!r} variant={trial.variant!r}{where}",
                file=file,
                line=line,
                field="trial",
            )
        seen[key] = line
        out.append(trial)
    return out


def load_trials(path: str | Path) -> list[Trial]:
    """Load and validate a trials JSONL file (SPEC 3.1).

    Raises `InputError` (``FILE:LINE: field: reason``) on the first bad line:
    bad JSON, unknown keys, wrong types, scores outside [0, 1], NaN, or a
    duplicate (task, trial) within a group.
    """
    parsed = ((line, parse_trial(obj, file=path, line=line)) for line, obj in read_jsonl(path))
    return assign_trial_indices(parsed, file=path)
