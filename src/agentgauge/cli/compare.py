"""``agentgauge compare A B``: is B better than A? Paired difference, verdict and record."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentgauge.cli import app
from agentgauge.cli.common import (
    SOURCE_HELP,
    GradeVersionOption,
    JsonOption,
    console,
    err_console,
    options_typed,
    print_json,
)
from agentgauge.display import terminal_text, terminal_warning
from agentgauge.report.formats import (
    counted,
    difference_se,
    percent,
    points_interval,
    shown_decimals,
)

if TYPE_CHECKING:
    from agentgauge.api import CompareResult
    from agentgauge.metrics.compare import Comparison


def _capabilities_title(c: Comparison) -> str:
    """The title of the table that record line 6 points to, with the variants compared."""
    return f"per-capability table (record line 6; shared tasks, {c.scope})"


def _pct(x: float | None) -> str:
    return "—" if x is None else percent(x)  # 99.995%, never 100.0% short of it


def _pp(x: float | None) -> str:
    # A difference one decimal would write as 0 (-0.005 pp) gets the decimals to show it.
    return "—" if x is None else f"{100 * x:+.{shown_decimals(100 * x, 1)}f} pp"


def _money(x: float | None, why: str | None) -> str:
    if x is None:
        return f"— ({why})" if why else "—"
    return f"${x:,.4g}"


#: The table's name for each figure `Comparison.null_reasons` may explain, in its order.
_SHOWN = {
    "ci": "B − A CI",
    "p_value": "p-value",
    "se_paired": "SE paired",
    "se_unpaired": "SE unpaired",
    "correlation": "correlation",
    "non_inferior": "non-inferior",
}


def _print(result: CompareResult, out: Console) -> None:
    from agentgauge.report.layout import fitted
    from agentgauge.report.record import level_text
    from agentgauge.report.terminal import capability_table, comparison_null_reason_lines

    c: Comparison = result.comparison
    colour = {"better": "green", "worse": "red", "noise": "yellow"}[c.superiority]
    out.print(Text.assemble(("A", "bold"), " = ", terminal_text(c.label_a)))
    out.print(Text.assemble(("B", "bold"), " = ", terminal_text(c.label_b), "\n"))
    out.print(terminal_text(c.verdict, f"bold {colour}"), "\n")
    t = Table(show_header=False, box=None, pad_edge=False)
    # Wrapped between words on a narrow terminal; a word wider than it folds, never cut.
    t.add_column(style="dim", overflow="fold")
    t.add_column(overflow="fold")
    t.add_row("success rate", f"A {_pct(c.rate_a)}   B {_pct(c.rate_b)}   ({c.design})")
    ci = "—" if c.ci is None else points_interval(*c.ci)
    t.add_row("B − A", f"{_pp(c.mean_diff)}   {level_text(c.alpha)} CI {ci}")
    t.add_row("p-value", "—" if c.p_value is None else f"{c.p_value:.4g}   ({c.p_test})")
    se_p = difference_se(c.se_paired, paired=True)
    se_u = difference_se(c.se_unpaired, paired=False)
    t.add_row("SE", f"paired {se_p} ({c.se_method})   unpaired {se_u}")
    if c.ci95_score is not None:
        lo, hi = c.ci95_score
        t.add_row("score 95% CI (MOVER)", points_interval(lo, hi))
    t.add_row("correlation", "—" if c.correlation is None else f"{c.correlation:.3f}")
    if c.mcnemar is not None:
        m = c.mcnemar
        t.add_row("McNemar exact", f"p = {m.p_value:.4g}   ({m.a_only} A-only, {m.b_only} B-only)")
    ratio = "" if c.cost_ratio is None else f"   B/A = {c.cost_ratio:.2f}"
    if c.cost_ratio is None and None not in (c.cost_of_pass_a, c.cost_of_pass_b):
        ratio = f"   B/A — ({c.cost_ratio_reason})"  # both known: say why there is none
    t.add_row(
        "cost per success",
        f"A {_money(c.cost_of_pass_a, c.cost_reason_a)}   "
        f"B {_money(c.cost_of_pass_b, c.cost_reason_b)}{ratio}",
    )
    if c.margin is not None:
        known = "unknown" if c.non_inferior is None else str(c.non_inferior)
        t.add_row("non-inferior", f"{known} at margin {c.margin:g}")
    if result.components is not None:
        t.add_row("configuration", terminal_text(result.components.sentence()))
    out.print(t)
    for line in comparison_null_reason_lines(c.null_reasons, _SHOWN):
        out.print(terminal_text(f"— {line}", "dim"))
    for name, flips in (
        ("passed in A, failed in B", c.a_only),
        ("failed in A, passed in B", c.b_only),
    ):
        if flips:
            shown = terminal_text(", ".join(flips))
            head = Text.assemble("\n", (name, "bold"), f" ({len(flips)}): ")
            out.print(head + shown, soft_wrap=True)
    if c.tasks_only_a or c.tasks_only_b:
        out.print(
            Text(
                f"\nleft out: {counted(len(c.tasks_only_a), 'task')} only in A, "
                f"{len(c.tasks_only_b)} only in B",
                style="dim",
            )
        )
    out.print(Text.assemble("\n", ("Comparison record", "bold")))
    out.print(terminal_text(result.record.to_text(), keep="\n"), highlight=False, soft_wrap=True)
    if result.record.capabilities:
        table = capability_table(result.record.capabilities, title=_capabilities_title(c))
        out.print(fitted(out, table))


def _markdown_inputs(markdown: str | None, sources: list[str | None], *, force: bool) -> list[Path]:
    """Refuse, before any work, a ``--markdown`` path that writing would lose something
    at, as `report` does: a directory, one of the SOURCEs read (even with ``--force``),
    an existing non-empty file (unless ``--force``). Returns the files read, for the
    second check when writing."""
    from agentgauge.exporters import check_output, input_files

    if markdown is None:
        return []
    given = [s for s in sources if s is not None]
    # A --baseline is ROLE=SOURCE or a SOURCE: its file is either way an input.
    given += [s.partition("=")[2] for s in given if "=" in s]
    inputs = input_files(given)
    check_output(
        markdown,
        option="--markdown",
        inputs=inputs,
        force=force,
        what="comparison record",
        example="compare.md",
    )
    return inputs


@app.command("compare")
def compare_cmd(
    a: Annotated[str, typer.Argument(metavar="A", help=f"Baseline. {SOURCE_HELP}")],
    b: Annotated[str, typer.Argument(metavar="B", help=f"Candidate. {SOURCE_HELP}")],
    margin: Annotated[
        float | None,
        typer.Option("--margin", help="Non-inferiority margin δ (a rate, e.g. 0.02)."),
    ] = None,
    json_out: JsonOption = False,
    markdown: Annotated[
        str | None, typer.Option("--markdown", help="Write the comparison record here.")
    ] = None,
    alpha: Annotated[float, typer.Option("--alpha", help="Test level (CI is 1 − α).")] = 0.05,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed recorded with the comparison.")
    ] = 0,
    k: Annotated[
        int | None, typer.Option("--k", help="Deployment k for pass^k (default: fewest trials).")
    ] = None,
    null: Annotated[
        str | None, typer.Option("--null", help="Null-agent trials (SOURCE) for the baseline line.")
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            metavar="ROLE=SOURCE",
            help="A baseline for record line 5 (null, previous, human, ablation; a SOURCE "
            "of a run marked with its role needs no ROLE=); repeatable. Default: the runs "
            "marked in B's store.",
        ),
    ] = None,
    human_rate: Annotated[
        float | None,
        typer.Option(
            "--human-rate",
            metavar="USD",
            help="The human baseline's hourly rate, for its cost per success "
            "(METR used 143.61: docs/compare-and-plan.md).",
        ),
    ] = None,
    include_heldout: Annotated[
        bool,
        typer.Option("--include-heldout", help="Include held-out tasks (logged in the store)."),
    ] = False,
    grade_version: GradeVersionOption = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Replace an existing --markdown file (never one of the SOURCEs)."
        ),
    ] = False,
) -> None:
    """Paired comparison of B against A over shared tasks, with the verdict and the record."""
    from agentgauge.api import compare_sources

    # --margin, --alpha and --k are checked by `compare_sources`, for Python too.
    inputs = _markdown_inputs(markdown, [a, b, null, *(baseline or ())], force=force)
    with options_typed(grade_version="--grade-version"):
        result = compare_sources(
            a,
            b,
            margin=margin,
            alpha=alpha,
            seed=seed,
            include_heldout=include_heldout,
            deployment_k=k,
            null=null,
            grade_version=grade_version,
            baselines=baseline or (),
            human_rate=human_rate,
        )
    # Warnings go to stderr so that stdout stays the table or the JSON alone.
    for w in result.warnings:
        err_console().print(terminal_warning(w))
    if markdown is not None:
        from agentgauge.display import markdown_text
        from agentgauge.exporters import write_output

        c = result.comparison
        # The labels are the user's SOURCEs (run ids, file names): Markdown-escaped.
        title = (
            f"# {markdown_text(c.label_b)} vs {markdown_text(c.label_a)}\n\n"
            f"**{markdown_text(c.verdict)}**\n\n"
        )
        write_output(
            markdown,
            title + result.record.to_markdown(),
            option="--markdown",
            inputs=inputs,
            force=force,
            create_folder=True,
            what="comparison record",
            example="compare.md",
        )
    if json_out:
        print_json(
            {
                **result.comparison.to_dict(),
                "record": result.record.to_dict(),
                "components": None if result.components is None else result.components.to_dict(),
                "baselines": {role: b.to_dict() for role, b in result.baselines.items()},
                "warnings": result.warnings,
            }
        )
        return
    _print(result, console())
