"""``agentgauge metrics SOURCE``: outcome, pass^k, cost and latency per group."""

from __future__ import annotations

from typing import Annotated

import typer

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    GradeVersionOption,
    JsonOption,
    console,
    err_console,
    options_typed,
    print_json,
    split_list,
)
from agentgauge.display import terminal_warning
from agentgauge.errors import InputError
from agentgauge.textio import is_digits


def parse_ks(value: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]``; anything else is a usage error naming ``--k``."""
    ks: list[int] = []
    for part in split_list(value):
        if not is_digits(part) or int(part) < 1:
            raise InputError(f"expected positive integers like 1,2,4, got {part!r}", field="--k")
        ks.append(int(part))
    if not ks:
        raise InputError("give at least one k, like 1,2,4", field="--k")
    return ks


def parse_by(value: str) -> list[str]:
    """``"agent,model"`` → labels, each once; an empty value means one group for all
    trials."""
    from agentgauge.api import check_by

    return list(dict.fromkeys(check_by(split_list(value))))


@app.command("metrics")
def metrics_cmd(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    k: Annotated[str, typer.Option("--k", help="Values of k for pass@k and pass^k.")] = "1,2,4",
    by: Annotated[
        str, typer.Option("--by", help="Group by these labels (empty: one group).")
    ] = "agent,model,variant",
    json_out: JsonOption = False,
    exclude_infra_errors: Annotated[
        bool,
        typer.Option(
            "--exclude-infra-errors",
            help="Drop infra-error trials instead of counting them as failures (warns).",
        ),
    ] = False,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the bootstrap intervals.")
    ] = 0,
    grade_version: GradeVersionOption = None,
) -> None:
    """Success rate with error bars, pass@k and pass^k, consistency, cost and latency."""
    from agentgauge.api import metrics as compute
    from agentgauge.report.terminal import print_behaviour, print_metrics

    ks, keys = parse_ks(k), parse_by(by)
    with options_typed(grade_version="--grade-version"):
        report = compute(
            source,
            k=ks,
            by=keys,
            exclude_infra_errors=exclude_infra_errors,
            seed=seed,
            grade_version=grade_version,
        )
    # Warnings go to stderr so that stdout stays the table or the JSON alone.
    for w in report.warnings:
        err_console().print(terminal_warning(w))
    if json_out:
        print_json(report.to_dict())
        return
    out = console()
    # Groups are what --by asks for; the titles say which variants each one pools.
    scope = "per variant" if "variant" in keys else "every variant in the source, pooled"
    print_metrics(report, out, title=f"metrics for {source} ({scope})", warnings=False)
    print_behaviour(report, out, scope=scope)
