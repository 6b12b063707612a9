"""``agentgauge report SOURCE... [--html FILE] [--markdown FILE]``: shareable reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import SOURCE_HELP, GradeVersionOption, console, err_console
from agentgauge.display import terminal_text, terminal_warning
from agentgauge.errors import InputError


def _write(path: str, text: str, option: str) -> None:
    """Write a report file, creating its folder; a path that cannot be a file is bad input
    (a directory would be ambiguous: a file inside it could overwrite another report)."""
    target = Path(path)
    if target.is_dir():
        raise InputError(
            "is a directory: give the report's file name (e.g. "
            f"{target / ('report.html' if option == '--html' else 'report.md')})",
            file=path,
            field=option,
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise InputError(f"cannot write the report: {reason}", file=path, field=option) from None


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
            err_console().print(terminal_warning(w))
        record = [f"{ln.title}: {ln.text}" for ln in result.record.lines]
        comparison = result.comparison.to_dict()
    data = build_report(
        ReportInputs(
            sources=opened,
            title=title,
            record=record,
            comparison=comparison,
            seed=seed,
            compared=(opened[0], opened[1]) if comparison is not None else None,
        )
    )
    out = console()
    if html is not None:
        _write(html, render_html(data), "--html")
        out.print(terminal_text(f"wrote {html}"))
    if markdown is not None:
        _write(markdown, markdown_summary(data), "--markdown")
        out.print(terminal_text(f"wrote {markdown}"))
