"""``agentgauge horizon SOURCE``: time horizons per agent with bootstrap intervals.

The method and its output are described in docs/horizon.md.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer
from rich import box
from rich.table import Table

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    JsonOption,
    console,
    print_json,
    replicates_fit,
    split_list,
)
from agentgauge.display import terminal_text, terminal_warning
from agentgauge.errors import InputError

if TYPE_CHECKING:
    from agentgauge.metrics.horizon import HorizonReport


def fmt_minutes(m: float | None, status: str = "estimated", bound: float | None = None) -> str:
    """Minutes with three significant digits; a horizon the data only bound as
    ``< 4`` (below the shortest task) or ``> 60`` (above the longest), never 0 or ∞;
    — for undefined."""
    if status in ("below", "above") and bound is not None and math.isfinite(bound):
        return f"{'<' if status == 'below' else '>'} {bound:.3g}"
    if status != "estimated" or m is None or math.isnan(m) or math.isinf(m):
        return "—"
    return f"{m:.3g}"


def fmt_interval(
    values: tuple[float, float], statuses: tuple[str, str], bounds: tuple[float, float]
) -> str:
    """A horizon's 95% interval, each end as `fmt_minutes` writes it: ``[3.14, 250]``,
    ``[< 2, 120]``. Both ends bounded on one side alike say one thing, that the whole
    interval lies there: ``[< 2]``, never ``[< 2, < 2]``, which reads as an interval of
    no width. Two estimated ends that three significant digits write alike get the
    digits that tell them apart."""
    lo, hi = (fmt_minutes(v, s, b) for v, s, b in zip(values, statuses, bounds, strict=True))
    if lo == hi and statuses[0] == statuses[1] and statuses[0] in ("below", "above"):
        return f"[{lo}]"
    if lo == hi and statuses == ("estimated", "estimated") and lo != "—":
        a, b = values
        for digits in range(4, 10):  # the bootstrap never reports a zero width
            lo, hi = f"{a:.{digits}g}", f"{b:.{digits}g}"
            if lo != hi:
                break
    return f"[{lo}, {hi}]"


def render(report: HorizonReport) -> Table:
    """The report as a rich table: one row per group, horizons in minutes."""
    from agentgauge.metrics.horizon import q_label

    # The title names the trials' scope, as every table of the report does.
    scope = f" — {terminal_text(report.scope)}" if report.scope else ""
    table = Table(
        title=f"Time horizon in human minutes{scope} (bootstrap B={report.bootstrap}, "
        f"seed {report.seed}, C={report.regularization:g})",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    label_keys = list(dict.fromkeys(k for g in report.groups for k in g.labels))
    for key in label_keys:
        table.add_column(terminal_text(key), min_width=10)
    table.add_column("runs/\ntasks", justify="right", no_wrap=True)
    for q in report.q:
        ci_head = "\n[95% CI]" if report.bootstrap > 0 else ""
        table.add_column(f"{q_label(q)}{ci_head}", justify="right")
    table.add_column("slope", justify="right", no_wrap=True)
    table.add_column("T½", justify="right", no_wrap=True)
    table.add_column("log-loss\nlogit/T½", justify="right", no_wrap=True)
    for g in report.groups:
        row = [str(g.labels.get(k)) for k in label_keys]
        row.append(f"{g.n_runs}/{g.n_tasks}")
        for q in report.q:
            cell = fmt_minutes(g.horizons[q], g.status.get(q, "estimated"), g.bound_minutes.get(q))
            if g.ci95 is not None:
                # The interval goes on a second line so the table fits 80 columns.
                cell += "\n" + fmt_interval(
                    g.ci95[q],
                    (g.ci95_status or {}).get(q, ("estimated", "estimated")),
                    (g.ci95_bound_minutes or {}).get(q, (math.nan, math.nan)),
                )
            row.append(cell)
        # No successes, or no failures: no fit; one task length: no slope.
        fitted = math.isfinite(g.intercept) and g.slope_identified
        row.append(f"{g.slope:.2f}" if fitted else "—")
        hl_bound = {"below": g.minutes_range[0], "above": g.minutes_range[1]}
        row.append(
            fmt_minutes(g.half_life_minutes, g.half_life_status, hl_bound.get(g.half_life_status))
        )
        row.append("/".join(_loss(g.log_loss[k]) for k in ("logistic", "half_life")))
        table.add_row(*(terminal_text(cell, keep="\n") for cell in row))
    return table


def _loss(value: float) -> str:
    return f"{value:.2f}" if math.isfinite(value) else "—"


@app.command("horizon")
def horizon_cmd(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=SOURCE_HELP)],
    q: Annotated[str, typer.Option("--q", help="Success probabilities, comma-separated.")] = (
        "0.5,0.8"
    ),
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", min=0, help="Bootstrap replicates (0: no interval).")
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Bootstrap seed.")] = 0,
    regularization: Annotated[
        float, typer.Option("--regularization", help="C of the slope penalty ½·b1²/C.")
    ] = 1e5,
    outcome: Annotated[
        str,
        typer.Option("--outcome", help="auto, score (split fractional scores) or success."),
    ] = "auto",
    by: Annotated[str, typer.Option("--by", help="Fit separately per these labels.")] = "agent",
    variants: Annotated[
        str | None,
        typer.Option(
            "--variants",
            help="Variants to fit, comma-separated: names (paraphrase:1), kinds (fault) "
            "or all (default: base, as the report's horizon).",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Time horizon: the task length (human minutes) an agent completes with probability q."""
    from agentgauge.api import check_qs, horizon

    qs = check_qs(q)
    if outcome not in ("auto", "score", "success"):
        raise InputError(f"choose auto, score or success, got {outcome!r}", field="--outcome")
    try:
        with replicates_fit(bootstrap, 1000):
            report = horizon(
                source,
                q=qs,
                bootstrap=bootstrap,
                seed=seed,
                regularization=regularization,
                by=split_list(by),
                outcome=outcome,  # type: ignore[arg-type]  # checked above
                variants=None if variants is None else split_list(variants),
            )
    except InputError as exc:
        if exc.field != "family" or exc.file is not None:
            raise
        # The fit sees trials, not where they came from: name the source it refused.
        raise InputError(exc.reason, file=source, field=exc.field) from None
    if as_json:
        print_json(report.to_dict())
        return
    out = console()
    from agentgauge.report.layout import fitted

    out.print(fitted(out, render(report)))  # a narrow terminal: rows as blocks
    for w in report.warnings:
        out.print(terminal_warning(w))
    for g in report.groups:
        name = ", ".join(f"{k}={v}" for k, v in g.labels.items())
        for w in g.warnings:
            out.print(terminal_warning(f"({name}) {w}"))
    out.print(
        "p<q>: task length at which the fitted success probability is q; < X and > X: "
        "a horizon the data only bound (below the shortest task, above the longest); "
        "[< X], [> X]: an interval that lies wholly below (above) X. "
        "T½: Ord's "
        "constant-hazard half-life. loss: weighted log-loss of the two fits "
        "(lower fits better). See docs/horizon.md."
    )
