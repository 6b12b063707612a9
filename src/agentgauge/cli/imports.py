"""``agentgauge import FORMAT PATH``: store results another tool produced."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import DEFAULT_STORE_PATH, StoreOption, console
from agentgauge.cli.span_options import (
    LogsFile,
    OutcomeEvaluation,
    OutcomesFile,
    PricesOption,
    ScoreAttr,
    SuccessAttr,
    SuiteOption,
    TaskAttr,
    TrialAttr,
    given,
)
from agentgauge.display import terminal_text
from agentgauge.report.formats import counted


@app.command("import")
def import_cmd(
    fmt: Annotated[
        str,
        typer.Argument(
            metavar="FORMAT", help="jsonl, taubench, metr, inspect, otel, openinference, ..."
        ),
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
    task_attr: TaskAttr = None,
    trial_attr: TrialAttr = None,
    success_attr: SuccessAttr = None,
    score_attr: ScoreAttr = None,
    outcome_evaluation: OutcomeEvaluation = None,
    outcomes: OutcomesFile = None,
    logs: LogsFile = None,
    suite: SuiteOption = None,
    prices: PricesOption = None,
    baseline_role: Annotated[
        str | None,
        typer.Option(
            "--baseline-role",
            metavar="ROLE",
            help="Mark the run as a baseline: human (the people doing the task today), "
            "null, previous or ablation (docs/compare-and-plan.md).",
        ),
    ] = None,
) -> None:
    """Import a results file as one run, in one transaction (nothing is written on error)."""
    from agentgauge.importers import import_file

    options = given(
        task_attr=task_attr,
        trial_attr=trial_attr,
        success_attr=success_attr,
        score_attr=score_attr,
        outcome_evaluation=outcome_evaluation,
        outcomes=outcomes,
        logs=logs,
        suite=suite,
        scorer=scorer,
        prices=prices,
    )
    # A path, not an open store: the store is created only once the file has validated.
    run = import_file(fmt, path, store, run_id, options, baseline_role=baseline_role)
    console().print(
        terminal_text(f"imported {counted(run.n_trials, 'trial')} from {path} as run ")
        + terminal_text(run.run_id, "bold")
        + terminal_text(f" in {store}")
    )
    repeated = run.config.get("repeated_spans")
    if repeated:
        console().print(
            f"{counted(repeated, 'span')} {'appears' if repeated == 1 else 'appear'} more than "
            "once in the file, the same each time: "
            "each was read once"
        )
    joined = run.config.get("logs")
    if isinstance(joined, dict):
        left = [
            f"{n} {what}"
            for n, what in (
                (joined["events_of_other_traces"], "of traces not in the file"),
                (joined["records_not_events"], "with no event name or trace id"),
            )
            if n
        ]
        console().print(
            f"with {joined['events']} event records from {logs} on their spans"
            + (f"; left out: {', '.join(left)}" if left else "")
        )
