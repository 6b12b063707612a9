"""``agentgauge calibrate``: how well the model judge agrees with human raters."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from agentgauge.cli import app
from agentgauge.cli.common import JsonOption, console, print_json, replicates_fit, split_list
from agentgauge.display import terminal_text, terminal_warning
from agentgauge.report.formats import counted


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


@app.command()
def calibrate(
    labels: Annotated[
        str,
        typer.Argument(metavar="LABELS", help="Label file (JSONL or CSV) with a 'rater' column."),
    ],
    judge: Annotated[
        str | None,
        typer.Option(
            "--judge", help="A separate file of the judge's labels (its rater column is optional)."
        ),
    ] = None,
    judge_rater: Annotated[
        str, typer.Option("--judge-rater", help="Rater name of the judge's labels.")
    ] = "judge",
    against: Annotated[
        str | None,
        typer.Option(
            "--against", help="Human raters to compare with, comma-separated (default: all others)."
        ),
    ] = None,
    bootstrap: Annotated[
        int, typer.Option("--bootstrap", min=0, help="Bootstrap replicates for κ's interval.")
    ] = 2000,
    seed: Annotated[int, typer.Option("--seed", min=0, help="Seed of the bootstrap.")] = 0,
    json_out: JsonOption = False,
) -> None:
    """Judge vs human agreement: Cohen's κ with a bootstrap CI, raw agreement, the
    confusion table, Krippendorff's α, the unknown share and the position-flip rate."""
    from agentgauge.api import calibrate as calibrate_files

    with replicates_fit(bootstrap, 2000):
        result = calibrate_files(
            labels,
            judge=judge,
            judge_rater=judge_rater,
            against=None if against is None else split_list(against),
            n_boot=bootstrap,
            seed=seed,
        )
    if json_out:
        print_json(result)
        return
    _print(result)


def _print(r: dict[str, Any]) -> None:
    out = console()
    jh = r["judge_vs_human"]
    if jh is not None:
        out.print(
            terminal_text(
                f"judge {r['judge_rater']!r} vs humans {', '.join(r['human_raters'])}: "
                f"{counted(jh['n_items'], 'item')}, {jh['n_decided']} decided by both"
            )
        )
        ci = jh["ci95"] or [None, None]
        out.print(
            f"Cohen's κ {_fmt(jh['kappa'])} [{_fmt(ci[0])}, {_fmt(ci[1])}]"
            f" ({jh['kappa_band'] or 'undefined'}), raw agreement {_fmt(jh['raw_agreement'])}"
        )
        if jh.get("null_reason"):
            out.print(terminal_text(f"— {jh['null_reason']}", "dim"))
        table = Table(title="confusion (rows human consensus, columns judge)")
        table.add_column("")
        for name in jh["confusion"]["labels"]:
            table.add_column(terminal_text(name), justify="right")
        for name, row in zip(jh["confusion"]["labels"], jh["confusion"]["matrix"], strict=True):
            table.add_row(terminal_text(name), *(str(v) for v in row))
        # On a narrow terminal each row a block of its figures, none cut (docs/reports.md).
        from agentgauge.report.layout import fitted

        out.print(fitted(out, table))
        per = Table(title="per rater and per grader")
        # "items": labelled by the judge and by this side; "decided": those neither left
        # unknown, which κ and the agreement are over (the table gave only these, as
        # "items", which read as the items labelled).
        for col in ("against", "items", "decided", "κ", "95% CI", "agreement"):
            per.add_column(col, justify="left" if col == "against" else "right")
        notes: dict[str, list[str]] = {}
        for who, p in [(f"rater {p['rater']}", p) for p in r["per_rater"]] + [
            (f"grader {g['grader']}", g) for g in r["by_grader"]
        ]:
            ci = p["ci95"] or [None, None]
            per.add_row(
                terminal_text(who),
                str(p["n_items"]),
                str(p["n_decided"]),
                _fmt(p["kappa"]),
                f"[{_fmt(ci[0])}, {_fmt(ci[1])}]",
                _fmt(p["raw_agreement"]),
            )
            if p.get("null_reason"):
                notes.setdefault(p["null_reason"], []).append(who)
        out.print(fitted(out, per))
        for reason, rows in notes.items():  # each reason once, with the rows it is about
            out.print(terminal_text(f"— {', '.join(rows)}: {reason}", "dim"))
        ka = r["krippendorff_alpha"]
        out.print(
            f"Krippendorff's α (nominal): all raters {_fmt(ka['all_raters'])}, "
            f"humans only {_fmt(ka['humans'])}"
        )
        why = ka.get("null_reasons", {})
        for key, name in (("all_raters", "all raters"), ("humans", "humans only")):
            if why.get(key):
                out.print(terminal_text(f"— α, {name}: {why[key]}", "dim"))
        us = r["unknown_share"]
        out.print(f"unknown share: judge {_fmt(us['judge'])}, humans {_fmt(us['humans'])}")
    for p in r["pairwise"] or []:
        out.print(
            terminal_text(
                f"pairwise, rater {p['rater']}: {p['position_flips']} position flips in "
                f"{p['n_decided']} decided pairs (rate {_fmt(p['position_flip_rate'])}), "
                f"unknown share {_fmt(p['unknown_share'])}"
            )
        )
    for w in r["warnings"]:
        out.print(terminal_warning(w))
