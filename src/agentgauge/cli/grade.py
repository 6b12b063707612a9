"""``agentgauge grade SOURCE``: re-grade stored transcripts as a new grade version."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.api import regrade
from agentgauge.cli import app
from agentgauge.cli.common import JsonOption, console, print_json, split_list

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
    result = regrade(source, split_list(graders) or None, store=store)
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
