"""``agentgauge demo``: the built-in suite with the simulated reference agents."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import console, err_console
from agentgauge.errors import RunInterrupted
from agentgauge.report.formats import counted


@app.command()
def demo(
    out: Annotated[
        str, typer.Option("--out", help="Directory for agentgauge.db, report.html and report.md.")
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
    """Run builtin:retail and builtin:functions with the simulated reference agents; print
    the metrics and the comparison record; write the store and the report."""
    from agentgauge.demo import run_demo

    try:
        run_demo(out, trials=trials, seed=seed, console=console(), progress=progress, force=force)
    except (RunInterrupted, KeyboardInterrupt) as exc:
        # Not an error: what was saved, and the truth about going on. The demo does not
        # resume: it starts by replacing its store, so running it again starts over. A
        # Ctrl-C between two runs, or after them, is a KeyboardInterrupt.
        again = ["agentgauge", "demo", "--out", out]
        again += ["--trials", str(trials)] if trials != 4 else []
        again += ["--seed", str(seed)] if seed != 0 else []
        db = Path(out) / "agentgauge.db"
        unfinished = f" (run {exc.run_id} unfinished)" if isinstance(exc, RunInterrupted) else ""
        err_console().print(
            Text(
                f"interrupted: {counted(_saved(db), 'trial')} saved in {db}{unfinished}; the "
                f"demo does not resume, it starts over: {shlex.join(again)}"
            )
        )
        raise typer.Exit(130) from None


def _saved(db: Path) -> int:
    """The trials the interrupted demo left in its store, over all its runs."""
    from agentgauge.store import Store

    if not db.is_file():
        return 0
    with Store(db, readonly=True) as store:
        return sum(r.n_trials for r in store.list_runs())
