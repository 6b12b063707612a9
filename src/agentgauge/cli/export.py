"""``agentgauge export DB:RUN[#selector] (--jsonl FILE | --otel FILE | --parquet DIR)``: a
stored run (one configuration's trials, one grade version's outcomes) as a file or, for
Parquet, a directory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import (
    console,
    err_console,
    options_typed,
    run_named,
    standard_output,
)
from agentgauge.display import shell_command
from agentgauge.errors import InputError
from agentgauge.report.formats import counted

if TYPE_CHECKING:
    from agentgauge.sources import Selector


@app.command("export")
def export_cmd(
    source: Annotated[
        str,
        typer.Argument(
            metavar="DB:RUN",
            help="DB:RUN_ID, or a store holding one run; #agent=, #model=, #grade=N "
            "narrow it as for every SOURCE.",
        ),
    ],
    jsonl: Annotated[
        str | None,
        typer.Option("--jsonl", metavar="FILE", help="Trial records, as `import jsonl` reads."),
    ] = None,
    otel: Annotated[
        str | None,
        typer.Option(
            "--otel",
            metavar="FILE",
            help="OTLP JSON: GenAI spans with a gen_ai.evaluation.result event per grade.",
        ),
    ] = None,
    parquet: Annotated[
        str | None,
        typer.Option(
            "--parquet",
            metavar="DIR",
            help="A directory of trials, events and grades as Parquet (docs/parquet.md).",
        ),
    ] = None,
    grade_version: Annotated[
        int | None,
        typer.Option(
            "--grade-version",
            metavar="N",  # checked by the store, as `common.GradeVersionOption` says
            help="The grade version whose outcomes and grades are exported (default: the "
            "active one); as #grade=N in DB:RUN.",
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help=(
                "Replace an existing FILE, or an earlier export in DIR (its own files only: "
                "a DIR holding anything else, or the store read, is refused)."
            ),
        ),
    ] = False,
) -> None:
    """Export a run: the interchange format (JSONL), OpenTelemetry (OTLP JSON) or Parquet."""
    from agentgauge.sources import split_selector

    chosen = [
        (fmt, out)
        for fmt, out in (("jsonl", jsonl), ("otel", otel), ("parquet", parquet))
        if out is not None
    ]
    if len(chosen) != 1:
        raise InputError(
            "give exactly one of --jsonl FILE or --otel FILE or --parquet DIR", field="export"
        )
    fmt, out = chosen[0]
    if out == "-":
        out = _standard_output(fmt)
    # The selector is honoured as every command reads a SOURCE (docs/cli.md); the line
    # below names what was exported as a SOURCE, so `metrics` of it counts the same.
    base, selector = split_selector(source)
    with run_named(base):
        _export(source, base, selector, fmt, out, grade_version, force)


def _standard_output(fmt: str) -> str:
    """``-``: standard output, which cannot hold a Parquet export (a directory)."""
    if fmt == "parquet":
        raise InputError(
            "standard output cannot hold a directory of Parquet files: give a directory",
            file="-",
            field="--parquet",
        )
    return standard_output(f"--{fmt}")


def _export(
    source: str,
    base: str,
    selector: Selector,
    fmt: str,
    out: str,
    grade_version: int | None,
    force: bool,
) -> None:
    from agentgauge.exporters import (
        export_parquet,
        export_run,
        is_stream,
        run_source,
        source_label,
    )
    from agentgauge.sources import asked_grade_version

    path, run_id = run_source(base)  # DB alone: the store's one run
    if not out:
        # "" is the current folder to the writers (`.`), which is refused for what it
        # holds (the store, a folder): say what was typed.
        what, example = {
            "parquet": ("directory", run_id),
            "jsonl": ("file", f"{run_id}.jsonl"),
            "otel": ("file", f"{run_id}.otlp.json"),
        }[fmt]
        raise InputError(
            f"an empty path names no {what}: give the export's {what} "
            f"(e.g. --{fmt} {shell_command([example])})",
            field=f"--{fmt}",
        )
    asked = asked_grade_version(selector, grade_version, path)
    # A refusal of the version names where it was typed, as `metrics` names it.
    typed = options_typed(
        grade_version="#grade" if selector.grade_version is not None else "--grade-version"
    )
    if fmt == "parquet":
        with typed:
            counts = export_parquet(source, out, grade_version=grade_version, force=force)
        label = source_label(path, run_id, selector, asked)
        console().print(
            f"exported {counted(counts.trials, 'trial')}, {counted(counts.events, 'event')} and "
            f"{counted(counts.grades, 'grade')} (grade version {counts.grade_version}) of "
            f"{label} to {out} (parquet)"
        )
        if counts.left_behind is not None:
            from agentgauge.display import terminal_warning

            err_console().print(
                terminal_warning(
                    f"the earlier export in {out} was replaced, but the folder it was moved "
                    f"to could not be emptied: {counts.left_behind}; remove it yourself"
                )
            )
        return
    with typed:
        done = export_run(source, fmt, out, grade_version=grade_version, force=force)
    label = source_label(path, run_id, selector, asked)
    # Written to /dev/stdout or a pipe, the export is the output: say so on stderr.
    said = err_console() if is_stream(out) else console()
    where = "standard output" if out == "/dev/stdout" else out
    said.print(f"exported {counted(done.trials, 'trial')} of {label} to {where} ({fmt})")
