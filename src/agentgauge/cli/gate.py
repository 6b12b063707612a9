"""``agentgauge gate SOURCE --config gates.yaml [--baseline B]``: decide a release in CI.

Exit 0 when every gate holds, 1 with one line per failed gate, 2 for bad input
(the config's errors name file, line and field).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    GradeVersionOption,
    console,
    err_console,
    options_typed,
)
from agentgauge.display import terminal_text
from agentgauge.errors import GateFailed, InputError


@app.command()
def gate(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    config: Annotated[str, typer.Option("--config", help="Gates YAML file.")],
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Baseline SOURCE for non-inferiority gates."),
    ] = None,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="Group labels the gates apply to, comma-separated (empty: one group).",
        ),
    ] = "agent,model",
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the bootstrap intervals.")
    ] = 0,
    if_no_baseline: Annotated[
        str,
        typer.Option(
            "--if-no-baseline",
            help="Without --baseline, 'error' (exit 2) or 'skip': report non-inferiority "
            "gates as not checked and run the rest (a pipeline's first run).",
        ),
    ] = "error",
    grade_version: GradeVersionOption = None,
) -> None:
    """Check release gates on a run; exit 1 naming each gate that fails."""
    from agentgauge.api import run_gates
    from agentgauge.cli.metrics import parse_by

    if if_no_baseline not in ("error", "skip"):
        raise InputError(
            f"expected error or skip, got {if_no_baseline!r}", field="--if-no-baseline"
        )
    with options_typed(grade_version="--grade-version"):
        # The file, not its content: a refusal of a variant it names then names the
        # file and line, as its other errors do.
        results = run_gates(
            source,
            config,
            baseline=baseline,
            by=parse_by(by),
            seed=seed,
            if_no_baseline="skip" if if_no_baseline == "skip" else "error",
            grade_version=grade_version,
        )
    out = console()
    failed = [r for r in results if not r.passed]
    for r in results:
        mark = ("SKIP", "yellow") if not r.checked else ("PASS", "green")
        if r.checked and not r.passed:
            mark = ("FAIL", "red")
        out.print(Text.assemble(mark, " ", terminal_text(f"{r.gate} — {r.group}: {r.detail}")))
    if failed:
        for r in failed:
            err_console().print(terminal_text(f"gate failed: {r.gate} ({r.group}): {r.detail}"))
        raise GateFailed(f"{len(failed)} of {len(results)} gate checks failed")
    skipped = sum(1 for r in results if not r.checked)
    if skipped:
        out.print(
            f"all {len(results) - skipped} checked gates passed; {skipped} not checked "
            "(no baseline yet: pass --baseline SOURCE once one exists)"
        )
    else:
        out.print(f"all {len(results)} gate checks passed")
