"""``agentgauge gate SOURCE --config gates.yaml [--baseline B]``: decide a release in CI.

Exit 0 when every gate holds, 1 with one line per failed gate, 2 for bad input
(the config's errors name file, line and field).
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from agentgauge.cli import app
from agentgauge.cli.common import console, err_console
from agentgauge.errors import GateFailed
from agentgauge.report.gates import load_gate_config


@app.command()
def gate(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help="Trials JSONL or DB:RUN_ID.")],
    config: Annotated[str, typer.Option("--config", help="Gates YAML file.")],
    baseline: Annotated[
        str | None,
        typer.Option("--baseline", help="Baseline SOURCE for non-inferiority gates."),
    ] = None,
    by: Annotated[
        str, typer.Option("--by", help="Group labels the gates apply to, comma-separated.")
    ] = "agent,model",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap intervals.")] = 0,
) -> None:
    """Check release gates on a run; exit 1 naming each gate that fails."""
    from agentgauge.api import run_gates
    from agentgauge.cli.metrics import parse_by

    cfg = load_gate_config(config)
    results = run_gates(source, cfg, baseline=baseline, by=parse_by(by), seed=seed)
    out = console()
    failed = [r for r in results if not r.passed]
    for r in results:
        mark = "[green]PASS[/]" if r.passed else "[red]FAIL[/]"
        out.print(f"{mark} {escape(r.gate)} — {escape(r.group)}: {escape(r.detail)}")
    if failed:
        for r in failed:
            err_console().print(
                f"gate failed: {escape(r.gate)} ({escape(r.group)}): {escape(r.detail)}"
            )
        raise GateFailed(f"{len(failed)} of {len(results)} gate checks failed")
    out.print(f"all {len(results)} gate checks passed")
