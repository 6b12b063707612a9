"""``agentgauge demo``: the built-in suite with the simulated reference agents."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import console


@app.command()
def demo(
    out: Annotated[
        str, typer.Option("--out", help="Directory for agentgauge.db and report.html.")
    ] = "agentgauge-demo",
    trials: Annotated[
        int, typer.Option("--trials", min=1, help="Trials per task and variant.")
    ] = 4,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of every random choice.")] = 0,
    progress: Annotated[
        bool | None, typer.Option("--progress/--no-progress", help="Progress bars.")
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Replace DIR/agentgauge.db even if it holds runs the demo did not write.",
        ),
    ] = False,
) -> None:
    """Run builtin:retail with the reference agents; print metrics and the comparison record."""
    from agentgauge.demo import run_demo

    run_demo(out, trials=trials, seed=seed, console=console(), progress=progress, force=force)
