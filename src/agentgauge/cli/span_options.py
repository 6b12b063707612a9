"""Options shared by ``import otel|openinference`` and ``collect``: where a trace
keeps its task, trial and outcome (docs/formats/otel.md)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

TaskAttr = Annotated[
    str | None,
    typer.Option(
        "--task-attr",
        help="Root-span attribute holding the task id (default agentgauge.task.id).",
        rich_help_panel="Traces",
    ),
]
TrialAttr = Annotated[
    str | None,
    typer.Option(
        "--trial-attr",
        help="Root-span attribute holding the trial index (default agentgauge.trial).",
        rich_help_panel="Traces",
    ),
]
SuccessAttr = Annotated[
    str | None,
    typer.Option(
        "--success-attr",
        help="Root-span boolean attribute holding success (default agentgauge.outcome.success).",
        rich_help_panel="Traces",
    ),
]
ScoreAttr = Annotated[
    str | None,
    typer.Option(
        "--score-attr",
        help="Root-span attribute holding a score in [0, 1] (default agentgauge.outcome.score).",
        rich_help_panel="Traces",
    ),
]
OutcomeEvaluation = Annotated[
    str | None,
    typer.Option(
        "--outcome-evaluation",
        metavar="NAME",
        help="The gen_ai.evaluation.result (gen_ai.evaluation.name) whose pass/fail label, "
        "or score in [0, 1], is the outcome of a trace that carries none.",
        rich_help_panel="Traces",
    ),
]
OutcomesFile = Annotated[
    str | None,
    typer.Option(
        "--outcomes",
        help='JSONL of {"trace_id", "task_id"?, "trial"?, "success"?, "score"?} per trace.',
        rich_help_panel="Traces",
    ),
]
LogsFile = Annotated[
    str | None,
    typer.Option(
        "--logs",
        metavar="FILE",
        help="OTLP JSON logs file whose event records (gen_ai.evaluation.result, "
        "gen_ai.client.inference.operation.details...) join the spans they name.",
        rich_help_panel="Traces",
    ),
]
SuiteOption = Annotated[
    str | None,
    typer.Option(
        "--suite",
        help="Suite whose graders give an outcome to traces that carry none.",
        rich_help_panel="Traces",
    ),
]

PricesOption = Annotated[
    str | None,
    typer.Option(
        "--prices",
        metavar="FILE",
        help="JSON/YAML file: model -> {input, output} USD per 1M, for model calls with "
        "tokens and no cost (wins over AGENTGAUGE_PRICES and genai-prices).",
    ),
]


def given(**values: Any) -> dict[str, Any]:
    """The options the user gave (formats without options refuse any)."""
    return {k: v for k, v in values.items() if v is not None}
