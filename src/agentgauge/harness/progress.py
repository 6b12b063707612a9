"""The run's progress bar: trials done / total, pass rate so far, spend so far, ETA."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from agentgauge.report.formats import counted, money
from agentgauge.schema import Trial

__all__ = ["RunProgress"]


class RunProgress:
    """A rich progress bar on stderr, or nothing when disabled."""

    def __init__(self, total: int, already: int, *, enabled: bool) -> None:
        self.passed = 0
        self.finished = 0
        self.errors = 0
        self.spend = 0.0
        self.unpriced = 0
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        if enabled:
            self._progress = Progress(
                TextColumn("[bold]trials"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("pass {task.fields[rate]}"),
                TextColumn("spend {task.fields[spend]}"),
                TextColumn("{task.fields[errors]}"),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=False,
            )
            self._task = self._progress.add_task(
                "run", total=total, completed=already, rate="-", spend="$0", errors=""
            )

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, trial: Trial) -> None:
        """Count one finished trial (pass rate and spend cover this session's trials)."""
        self.finished += 1
        self.passed += trial.passed  # an infra error is a failure, as in the metrics
        self.errors += trial.status != "completed"
        if trial.cost_usd is None:
            self.unpriced += 1
        else:
            self.spend += trial.cost_usd
        if self._progress is None or self._task is None:
            return
        spend = money(self.spend) + (f" (+{self.unpriced} unpriced)" if self.unpriced else "")
        self._progress.update(
            self._task,
            advance=1,
            rate=f"{self.passed / self.finished:.0%}",
            spend=spend,
            errors=counted(self.errors, "error") if self.errors else "",
        )
