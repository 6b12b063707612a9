"""``agentgauge show SOURCE``: why trials failed (docs/show.md).

Without ``--task``: the failing (agent, model, task, variant) cells with their
error classes. With ``--task``: each chosen trial's header, transcript and
grades with their evidence. ``--json`` prints the same data.
"""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    GradeVersionOption,
    JsonOption,
    console,
    options_typed,
    print_json,
)


@app.command("show")
def show_cmd(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    task: Annotated[
        str | None, typer.Option("--task", help="Show this task's trials (transcripts, grades).")
    ] = None,
    trial: Annotated[
        int | None, typer.Option("--trial", min=0, help="Only this trial index (needs --task).")
    ] = None,
    variant: Annotated[
        str | None,
        typer.Option(
            "--variant",
            help="Only this variant (base, paraphrase:1), or all of a kind (paraphrase, fault).",
        ),
    ] = None,
    failed: Annotated[
        bool, typer.Option("--failed", help="With --task: only the trials that did not pass.")
    ] = False,
    json_out: JsonOption = False,
    grade_version: GradeVersionOption = None,
) -> None:
    """A trial's transcript and its grades with evidence; without --task, the failing tasks."""
    import numpy as np

    from agentgauge.report.show import failures_document, select_trials, trials_document
    from agentgauge.report.show_terminal import print_failures, print_trials
    from agentgauge.sources import open_source

    with options_typed(grade_version="--grade-version"):
        src = open_source(source, grade_version=grade_version)
    if task is None:
        # The failing cells need each trial's key and outcome only: a stored run's are
        # read from SQL (`TrialSource.outcomes`), its trials are not built.
        outcomes = src.outcomes
        select_trials(outcomes, trial=trial)  # a --trial without --task is refused
        doc = failures_document(outcomes, source=source, variant=variant)
    else:
        # The task's trials alone are built (`TrialSource.pick`: of a stored run or an
        # export, only those rows are read); a task none has is refused naming the
        # source's tasks, from its outcomes.
        rows = np.flatnonzero(src.table.task_id == task).tolist()
        if not rows:
            select_trials(src.outcomes, task=task)
        doc = trials_document(
            src.pick(rows), source=source, task=task, trial=trial, variant=variant, failed=failed
        )
    # A stored run's model for trials that name none: a reference agent names its
    # simulated model only in the run's components, which `compare` compares (the trial
    # record, and so --json, keeps its null).
    from agentgauge.components import run_model as model_of

    run_model = None if src.run is None else model_of(src.run)
    if json_out:
        print_json(doc)
    elif task is None:
        print_failures(doc, console(), grade_version=grade_version, run_model=run_model)
    else:
        print_trials(doc, console(), run_model=run_model)
