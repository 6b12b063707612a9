"""Where trials come from: a JSONL file of trial records, or ``DB:RUN_ID`` in a store.

Every command that reads trials takes a SOURCE string and resolves it here
(`open_source`), so the same spelling works everywhere. Trial records
(docs/metrics.md, "The trial record") are read with errors a user can act on:
the first bad line stops the load with ``FILE:LINE: field: reason``, and
callers write nothing until the whole file has validated.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentgauge.errors import InputError, first_error
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import Store
from agentgauge.table import TrialTable

__all__ = [
    "TrialSource",
    "assign_trial_indices",
    "is_store",
    "load_trials",
    "open_source",
    "parse_source",
    "parse_trial",
    "read_jsonl",
    "resolve_run",
]


@dataclass
class TrialSource:
    """Trials resolved from a SOURCE string, with their run header when stored."""

    label: str
    """How the source was named by the user."""
    trials: list[Trial]
    """The trials, validated."""
    run: Run | None = None
    """The run header when the source is a store."""
    tasks: list[Task] = field(default_factory=list)
    """The suite's tasks when the store recorded them."""
    _table: TrialTable | None = None

    @property
    def table(self) -> TrialTable:
        if self._table is None:
            self._table = TrialTable.from_trials(self.trials)
        return self._table


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
    """Load and validate a trials JSONL file (one trial record per line).

    Raises `InputError` (``FILE:LINE: field: reason``) on the first bad line:
    bad JSON, unknown keys, wrong types, scores outside [0, 1], NaN, or a
    duplicate (task, trial) within a group.
    """
    parsed = ((line, parse_trial(obj, file=path, line=line)) for line, obj in read_jsonl(path))
    return assign_trial_indices(parsed, file=path)


def parse_source(spec: str) -> tuple[Path, str | None]:
    """Split ``DB:RUN_ID`` into its parts; a plain path has no run id.

    A path that exists as given wins (so a file with a colon in its name still
    works); otherwise the first colon whose left side is an existing file splits.
    """
    if Path(spec).exists():
        return Path(spec), None
    for i, ch in enumerate(spec):
        if ch == ":" and i > 0 and Path(spec[:i]).is_file():
            return Path(spec[:i]), spec[i + 1 :]
    raise InputError(
        "no such file; a SOURCE is a trials JSONL file or DB:RUN_ID", file=spec, field="SOURCE"
    )


def is_store(path: Path) -> bool:
    """Whether ``path`` is a SQLite file (a store), by its header."""
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def resolve_run(spec: str) -> tuple[Path, str]:
    """The store and run a ``DB:RUN_ID`` (or a store holding one run) names.

    Raises `InputError` when the file is not a store or a store given without a
    run id holds other than one run (naming the most recent ones).
    """
    path, run_id = parse_source(spec)
    if not is_store(path):
        raise InputError("not an agentgauge store (a SQLite file)", file=path, field="SOURCE")
    if run_id is None:
        with Store(path, readonly=True) as store:
            runs = store.list_runs()
        if len(runs) != 1:
            names = ", ".join(r.run_id for r in runs[-5:]) or "none"
            raise InputError(
                f"this store holds {len(runs)} runs; name one as {path}:RUN_ID (recent: {names})",
                file=path,
                field="SOURCE",
            )
        run_id = runs[0].run_id
    return path, run_id


def open_source(spec: str, *, events: bool = True) -> TrialSource:
    """Resolve SOURCE to trials. A store given without a run id must hold exactly one run."""
    path, run_id = parse_source(spec)
    if path.is_dir():
        raise InputError(
            "a directory is not a trials source (Parquet sources are not supported yet)",
            file=path,
            field="SOURCE",
        )
    if run_id is None and not is_store(path):
        return TrialSource(label=spec, trials=load_trials(path))
    path, run_id = resolve_run(spec)
    with Store(path, readonly=True) as store:
        run = store.require_run(run_id)
        trials = store.trials(run_id, events=events)
        tasks = store.get_tasks(run_id)
        table = store.table(run_id)
    return TrialSource(label=spec, trials=trials, run=run, tasks=tasks, _table=table)
