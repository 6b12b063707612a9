"""The one shape every benchmark reports its figures in: rows of `Row`.

Each ``bench_*.py`` keeps printing its own detail (every run, every check) and its
``main()`` returns the rows that matter: our figure, and where one was measured in
the same run, the reference's figure beside it and the ratio. Run as a script, a
benchmark prints its rows as a table; under ``run_all.py`` it writes them as JSON to
the file named by ``AGENTGAUGE_BENCH_ROWS`` instead, and ``run_all.py`` prints one
table of every benchmark's rows and writes ``benchmarks/RESULTS.md``.

Benchmarks are not part of the wheel: this module is imported by path (the
benchmarks' folder is on ``sys.path`` when one runs as a script).
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

#: The file a benchmark writes its rows to when ``run_all.py`` runs it.
ROWS_ENV = "AGENTGAUGE_BENCH_ROWS"


@dataclass(frozen=True)
class Row:
    """One figure of one benchmark.

    ``ratio`` is how many times better ours is than the reference (above 1: ours is
    better), whichever way "better" points for the unit: the reference's time over
    ours, or our rate over the reference's. It is ``None`` when no reference was
    measured, and ``met`` is ``None`` when the figure has no goal or the goal cannot
    be judged (a ratio goal whose reference is not installed); ``note`` says why.
    """

    benchmark: str
    figure: str
    ours: float | None
    unit: str
    reference: float | None = None
    reference_name: str | None = None
    ratio: float | None = None
    goal: str | None = None
    met: bool | None = None
    note: str = ""


def row(
    benchmark: str,
    figure: str,
    ours: float | None,
    unit: str,
    *,
    reference: float | None = None,
    reference_name: str | None = None,
    higher_is_better: bool = False,
    goal: str | None = None,
    met: bool | None = None,
    note: str = "",
) -> Row:
    """A `Row` with its ratio computed the one way every row computes it."""
    ratio = None
    if ours is not None and reference is not None and ours > 0 and reference > 0:
        ratio = ours / reference if higher_is_better else reference / ours
    return Row(benchmark, figure, ours, unit, reference, reference_name, ratio, goal, met, note)


def smoke_flag(parser: argparse.ArgumentParser) -> None:
    """``--smoke``: a reduced size that runs in seconds and exercises the same code.
    Its figures are not the benchmark's (CI checks that it runs, never its timings)."""
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="reduced sizes that run in seconds (for CI: errors count, timings do not)",
    )


def fmt(value: float | None, unit: str = "") -> str:
    """A figure with three significant digits (never in exponent form) and its unit."""
    if value is None:
        return "—"
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    magnitude = abs(value)
    if magnitude >= 100:
        text = f"{value:,.0f}"
    elif magnitude >= 10:
        text = f"{value:.1f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    elif magnitude == 0:
        text = "0"
    else:
        digits = 2 - math.floor(math.log10(magnitude))
        text = f"{value:.{digits}f}"
    return f"{text} {unit}".strip()


def fmt_ratio(ratio: float | None) -> str:
    return "—" if ratio is None else f"{fmt(ratio)}×"


def fmt_met(met: bool | None) -> str:
    return {True: "yes", False: "NO", None: "—"}[met]


def reference_text(r: Row) -> str:
    if r.reference_name is None:
        return "—"
    if r.reference is None:
        return r.reference_name
    return f"{fmt(r.reference, r.unit)} ({r.reference_name})"


def table(rows: Iterable[Row], title: str | None = None) -> Table:
    out = Table(title=title, show_lines=False)
    for name, justify in (
        ("benchmark", "left"),
        ("figure", "left"),
        ("ours", "right"),
        ("reference", "left"),
        ("ratio", "right"),
        ("goal", "left"),
        ("met", "left"),
    ):
        out.add_column(name, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        out.add_row(*cells(r))
    return out


def cells(r: Row) -> tuple[str, ...]:
    """A row's cells as every table of rows shows them (the terminal's, RESULTS.md's)."""
    figure = f"{r.figure} ({r.note})" if r.note else r.figure
    return (
        r.benchmark,
        figure,
        fmt(r.ours, r.unit),
        reference_text(r),
        fmt_ratio(r.ratio),
        r.goal or "—",
        fmt_met(r.met),
    )


def to_json(rows: Iterable[Row]) -> list[dict[str, Any]]:
    return [asdict(r) for r in rows]


def from_json(data: list[dict[str, Any]]) -> list[Row]:
    return [Row(**item) for item in data]


def emit(rows: list[Row]) -> None:
    """What a benchmark run as a script does with its rows: write them for
    ``run_all.py`` when it asked for them, else print them as a table."""
    target = os.environ.get(ROWS_ENV)
    if target:
        Path(target).write_text(json.dumps(to_json(rows)), encoding="utf-8")
        return
    Console(width=160).print(table(rows))
