"""A terminal table of one grader's grades per configuration (`agentgauge.metrics.grades`)."""

from __future__ import annotations

from collections.abc import Mapping

from rich import box
from rich.table import Table
from rich.text import Text

from agentgauge.metrics.grades import GradeSummary
from agentgauge.report.formats import counted

__all__ = ["grade_table"]

_DASH = "—"


def _pct(x: float | None) -> str:
    return _DASH if x is None else f"{100 * x:.1f}%"


def _ci(s: GradeSummary) -> str:
    if s.ci95 is None:
        return _DASH if s.n_tasks is None else "no interval"
    return f"{100 * s.ci95[0]:.1f}–{100 * s.ci95[1]:.1f}% ({counted(s.n_tasks, 'task')})"


def _top(failures: Mapping[str, int]) -> str:
    for status, count in failures.items():
        return f"{status.split(':', 1)[-1]} {count}"
    return _DASH


def grade_table(summaries: Mapping[str, GradeSummary], *, title: str) -> Table:
    """Columns: the configurations; rows: graded trials, pass rate, mean score,
    unknown grades and the most frequent failure."""
    table = Table(title=Text(title), title_justify="left", box=box.SIMPLE_HEAD)
    table.add_column("metric", no_wrap=True)
    for name in summaries:
        table.add_column(Text(name), justify="right", no_wrap=True)
    rows = [
        ("graded trials", [str(s.graded) for s in summaries.values()]),
        ("pass rate", [_pct(s.pass_rate) for s in summaries.values()]),
        ("  95% CI", [_ci(s) for s in summaries.values()]),
        (
            "mean score",
            [_DASH if s.mean_score is None else f"{s.mean_score:.3f}" for s in summaries.values()],
        ),
        ("unknown", [str(s.unknown) for s in summaries.values()]),
        (
            "top failure",
            # Without its namespace (the title names the grader), so columns stay narrow.
            [_top(s.failures) for s in summaries.values()],
        ),
    ]
    for name, cells in rows:
        table.add_row(name, *(Text(c) for c in cells))
    return table
