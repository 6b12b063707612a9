"""``agentgauge import FORMAT PATH``: store results another tool produced."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, StoreOption, console
from agentgauge.display import terminal_text
from agentgauge.importers import import_file


@app.command("import")
def import_cmd(
    fmt: Annotated[
        str, typer.Argument(metavar="FORMAT", help="jsonl, taubench, metr, inspect, ...")
    ],
    path: Annotated[str, typer.Argument(metavar="PATH")],
    store: StoreOption = DEFAULT_STORE_PATH,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Run id (default: file name + hash).")
    ] = None,
    scorer: Annotated[
        str | None,
        typer.Option(
            "--scorer",
            metavar="NAME",
            help="inspect: the scorer whose value is the outcome (default: the first in the "
            "log's results).",
        ),
    ] = None,
) -> None:
    """Import a results file as one run, in one transaction (nothing is written on error)."""
    # A path, not an open store: the store is created only once the file has validated.
    run = import_file(fmt, path, store, run_id, scorer=scorer)
    console().print(
        terminal_text(f"imported {run.n_trials} trials from {path} as run ")
        + terminal_text(run.run_id, "bold")
        + terminal_text(f" in {store}")
    )
