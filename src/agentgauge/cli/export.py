"""``agentgauge export DB:RUN (--jsonl FILE | --otel FILE)``: a stored run as a file."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import console
from agentgauge.errors import InputError
from agentgauge.exporters import export_run


@app.command("export")
def export_cmd(
    source: Annotated[str, typer.Argument(metavar="DB:RUN", help="The store and the run's id.")],
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
        str | None, typer.Option("--parquet", metavar="DIR", help="Not available yet.")
    ] = None,
) -> None:
    """Export a run: the interchange format (JSONL) or OpenTelemetry (OTLP JSON)."""
    if parquet is not None:
        raise InputError(
            "Parquet export is not built yet; use --jsonl or --otel", field="--parquet"
        )
    chosen = [(fmt, out) for fmt, out in (("jsonl", jsonl), ("otel", otel)) if out is not None]
    if len(chosen) != 1:
        raise InputError("give exactly one of --jsonl FILE or --otel FILE", field="export")
    fmt, out = chosen[0]
    n = export_run(source, fmt, out)
    console().print(f"exported {n} trials of {source} to {out} ({fmt})")
