"""``agentgauge report SOURCE... [--html FILE] [--markdown FILE]``: shareable reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from agentgauge.cli import app
from agentgauge.cli.common import SOURCE_HELP, GradeVersionOption, console, err_console
from agentgauge.errors import InputError


@app.command()
def report(
    sources: Annotated[list[str], typer.Argument(metavar="SOURCE...", help=SOURCE_HELP)],
    html: Annotated[str | None, typer.Option("--html", help="Write the HTML report here.")] = None,
    markdown: Annotated[
        str | None, typer.Option("--markdown", help="Write the Markdown summary here.")
    ] = None,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare/--no-compare",
            help="With two SOURCEs, add the paired comparison of the second against the first.",
        ),
    ] = True,
    title: Annotated[str, typer.Option("--title", help="Report title.")] = "agentgauge report",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap intervals.")] = 0,
    grade_version: GradeVersionOption = None,
) -> None:
    """Write an HTML report and/or a Markdown summary of one or more runs."""
    from agentgauge.api import compare_sources
    from agentgauge.report.build import ReportInputs, build_report, markdown_summary
    from agentgauge.report.html import render_html
    from agentgauge.sources import open_source

    if html is None and markdown is None:
        raise InputError(
            "nothing to write: give --html FILE and/or --markdown FILE", field="--html"
        )
    opened = [open_source(s, grade_version=grade_version) for s in sources]
    record: list[str] = []
    comparison = None
    if compare and len(sources) == 2:
        result = compare_sources(sources[0], sources[1], seed=seed, grade_version=grade_version)
        for w in result.warnings:
            err_console().print(f"[yellow]warning:[/] {escape(w)}")
        record = [f"{ln.title}: {ln.text}" for ln in result.record.lines]
        comparison = result.comparison.to_dict()
    data = build_report(
        ReportInputs(sources=opened, title=title, record=record, comparison=comparison, seed=seed)
    )
    out = console()
    if html is not None:
        Path(html).write_text(render_html(data), encoding="utf-8")
        out.print(f"wrote {html}")
    if markdown is not None:
        Path(markdown).write_text(markdown_summary(data), encoding="utf-8")
        out.print(f"wrote {markdown}")
