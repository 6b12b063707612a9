"""Where trials come from: a JSONL file, or ``DB:RUN_ID`` in a store.

Every command that reads trials takes a SOURCE string and resolves it here, so
the same spelling works everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentgauge.errors import InputError
from agentgauge.loading import load_trials
from agentgauge.schema import Run, Task, Trial
from agentgauge.store import Store
from agentgauge.table import TrialTable

__all__ = ["TrialSource", "open_source", "parse_source"]


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


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def open_source(spec: str, *, events: bool = True) -> TrialSource:
    """Resolve SOURCE to trials. A store given without a run id must hold exactly one run."""
    path, run_id = parse_source(spec)
    if path.is_dir():
        raise InputError(
            "a directory is not a trials source (Parquet sources are not supported yet)",
            file=path,
            field="SOURCE",
        )
    if run_id is None and not _is_sqlite(path):
        return TrialSource(label=spec, trials=load_trials(path))
    with Store(path, readonly=True) as store:
        if run_id is None:
            runs = store.list_runs()
            if len(runs) != 1:
                names = ", ".join(r.run_id for r in runs[-5:]) or "none"
                raise InputError(
                    f"this store holds {len(runs)} runs; name one as {path}:RUN_ID "
                    f"(recent: {names})",
                    file=path,
                    field="SOURCE",
                )
            run_id = runs[0].run_id
        run = store.require_run(run_id)
        trials = store.trials(run_id, events=events)
        tasks = store.get_tasks(run_id)
        table = store.table(run_id)
    return TrialSource(label=spec, trials=trials, run=run, tasks=tasks, _table=table)
