"""``agentgauge grade SOURCE``: re-grade stored transcripts as a new grade version."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import JsonOption, console, print_json, split_list
from agentgauge.errors import InputError
from agentgauge.graders.regrade import regrade
from agentgauge.sources import parse_source
from agentgauge.store import Store

GradersOption = Annotated[
    str | None,
    typer.Option(
        "--graders",
        help="Comma-separated graders (state, answer, tool_calls, trajectory, milestones, "
        "minefields, control...). Default: each task's enabled code graders.",
    ),
]


@app.command()
def grade(
    source: Annotated[str, typer.Argument(help="DB:RUN_ID, or a store holding one run.")],
    graders: GradersOption = None,
    store: Annotated[
        str | None, typer.Option("--store", help="Store file, when SOURCE is only a run id.")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Re-grade stored transcripts without re-running the agent (a new grade version)."""
    if store is not None and not Path(source).exists() and ":" not in source:
        db_path, run_id = Path(store), source
    else:
        db_path, maybe_run = parse_source(source)
        with Store(db_path, readonly=True) as db:
            if maybe_run is None:
                runs = db.list_runs()
                if len(runs) != 1:
                    raise InputError(
                        f"this store holds {len(runs)} runs; name one as {db_path}:RUN_ID",
                        file=db_path,
                        field="SOURCE",
                    )
                maybe_run = runs[0].run_id
        run_id = maybe_run
    result = regrade(db_path, run_id, split_list(graders) or None)
    if json_out:
        print_json(
            {
                "schema": "agentgauge.grade/1",
                "run_id": result.run_id,
                "version": result.version,
                "graders": result.graders,
                "n_trials": result.n_trials,
                "n_changed": result.n_changed,
                "n_unknown": result.n_unknown,
                "skipped_tasks": result.skipped,
                "success_before": result.success_before,
                "success_after": result.success_after,
            }
        )
        return
    out = console()
    out.print(
        f"re-graded {result.n_trials} trials of run {result.run_id} as grade version "
        f"{result.version} ({', '.join(result.graders) or 'default graders'})"
    )
    out.print(
        f"success {result.success_before:.3f} -> {result.success_after:.3f}; "
        f"{result.n_changed} trials changed; {result.n_unknown} with an unknown required grade"
    )
    if result.skipped:
        out.print(f"left alone (no stored task): {', '.join(result.skipped[:10])}")
