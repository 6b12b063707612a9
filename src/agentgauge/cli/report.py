"""``agentgauge report SOURCE... [--html FILE] [--markdown FILE]``: shareable reports."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    GradeVersionOption,
    console,
    err_console,
    options_typed,
    standard_output,
)
from agentgauge.display import terminal_text, terminal_warning
from agentgauge.errors import InputError

if TYPE_CHECKING:
    from agentgauge.exporters import StagedOutput
    from agentgauge.sources import TrialSource


def _destinations(outputs: list[tuple[str, str]], sources: list[str], *, force: bool) -> list[Path]:
    """Refuse, before any work, a report path that writing would lose something at:
    a directory (a file inside it could overwrite another report), one of the SOURCEs
    (even with ``--force``), an existing non-empty file (unless ``--force``), or both
    options naming one file. Returns the inputs, for the second check when writing."""
    from agentgauge.exporters import check_output, input_files, is_stream

    inputs = input_files(sources)
    seen: dict[Path, str] = {}
    for option, path in outputs:
        target = check_output(
            path, option=option, inputs=inputs, force=force, what="report", example=_NAME[option]
        )
        if target in seen and not is_stream(path):
            raise InputError(
                f"is given to both {seen[target]} and {option}; name two files",
                file=path,
                field=option,
            )
        seen[target] = option
    return inputs


_NAME = {"--html": "report.html", "--markdown": "report.md"}
_WHAT = {"--html": "HTML report", "--markdown": "Markdown summary"}


def _share_a_task(a: TrialSource, b: TrialSource) -> bool:
    """Whether the rows a comparison reads of ``a`` and ``b`` (`select_rows`: the base
    variant, held-out tasks left out) share a task: without one there is nothing to pair,
    and the report is written without the comparison."""
    from agentgauge.metrics.compare import select_rows

    tasks_a, tasks_b = (set(select_rows(s.table).task_id.astype(str).tolist()) for s in (a, b))
    return bool(tasks_a & tasks_b)


def _stage(path: str, text: str, option: str, inputs: list[Path], *, force: bool) -> StagedOutput:
    """A report file written beside its destination, creating its folder
    (`stage_output`), to be put in place once every file asked for is written."""
    from agentgauge.exporters import stage_output

    return stage_output(
        path,
        text,
        option=option,
        inputs=inputs,
        force=force,
        create_folder=True,
        what="report",
        example=_NAME[option],
    )


@app.command()
def report(
    sources: Annotated[list[str], typer.Argument(metavar="SOURCE...", help=SOURCE_HELP)],
    html: Annotated[
        str | None,
        typer.Option("--html", help="Write the HTML report here (- for standard output)."),
    ] = None,
    markdown: Annotated[
        str | None,
        typer.Option("--markdown", help="Write the Markdown summary here (- for standard output)."),
    ] = None,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare/--no-compare",
            help="With two SOURCEs, add the paired comparison of the second against the first.",
        ),
    ] = True,
    title: Annotated[str, typer.Option("--title", help="Report title.")] = "agentgauge report",
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the bootstrap intervals.")
    ] = 0,
    grade_version: GradeVersionOption = None,
    force: Annotated[
        bool,
        typer.Option("--force", help="Replace an existing report file (never one of the SOURCEs)."),
    ] = False,
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
    outputs = [
        (o, standard_output(o) if p == "-" else p)
        for o, p in (("--html", html), ("--markdown", markdown))
        if p is not None
    ]
    inputs = _destinations(outputs, sources, force=force)
    with options_typed(grade_version="--grade-version"):
        opened = [open_source(s, grade_version=grade_version) for s in sources]
    record: list[str] = []
    comparison = None
    warnings: list[str] = []
    null_agent = None
    if compare and len(sources) == 2 and not _share_a_task(opened[0], opened[1]):
        # Two unrelated runs are reported side by side (each in its suite section);
        # there is no paired difference to compute, and the report says so.
        note = (
            f"no comparison: {sources[0]} and {sources[1]} have no task in common "
            "(base variant, held-out tasks left out), so there is no paired difference"
        )
        err_console().print(terminal_warning(note))
        warnings = [note]
    elif compare and len(sources) == 2:
        result = compare_sources(sources[0], sources[1], seed=seed, grade_version=grade_version)
        for w in result.warnings:
            err_console().print(terminal_warning(w))
        # And in the report, which is read without the terminal that made it.
        warnings = [f"comparison: {w}" for w in result.warnings]
        record = [f"{ln.title}: {ln.text}" for ln in result.record.lines]
        comparison = result.comparison.to_dict()
        found = result.baselines.get("null")
        if found is not None and result.null_agent is not None:
            null_agent = (found.label, result.null_agent)
    data = build_report(
        ReportInputs(
            sources=opened,
            title=title,
            record=record,
            comparison=comparison,
            notes=warnings,
            seed=seed,
            compared=(opened[0], opened[1]) if comparison is not None else None,
            null_agent=null_agent,
        )
    )
    # Only the formats asked for are rendered, each before any file is written.
    render = {"--html": render_html, "--markdown": markdown_summary}
    texts = {option: render[option](data) for option in dict(outputs)}
    # Every file is written in full beside its destination before any is put in place:
    # one that cannot be written (a folder that cannot be made, a full disk) leaves none
    # of the others written, nor an old report replaced.
    staged: list[StagedOutput] = []
    try:
        for option, path in outputs:
            staged.append(_stage(path, texts[option], option, inputs, force=force))
        for file in staged:
            stream = file.commit()
            # Written to /dev/stdout or a pipe, the report is the output: say so on stderr.
            where = (
                f"the {_WHAT[file.option]} to standard output"
                if file.out == "/dev/stdout"
                else file.out
            )
            (err_console() if stream else console()).print(terminal_text(f"wrote {where}"))
    finally:
        for file in staged:
            file.discard()  # what was not put in place (a file put in place is gone)
