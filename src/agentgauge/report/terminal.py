"""Terminal rendering of a metrics report: one column per group, one row per figure.

Every rate is shown with its standard error and every interval with the method
that produced it; a figure that cannot be computed shows a dash and its reason
below the table, never a zero. Names, task ids and warnings come from the
trials: every cell and line is a `Text` with controls made visible
(`agentgauge.display.terminal_text`), never a markup string.
"""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import Console, Group
from rich.table import Table

from agentgauge.display import terminal_text as _text
from agentgauge.display import terminal_warning
from agentgauge.metrics import MetricsReport
from agentgauge.metrics.cost import unpriced_label
from agentgauge.report.formats import money as _money

__all__ = ["behaviour_tables", "metrics_table", "print_behaviour", "print_metrics"]

_DASH = "—"
_METHOD = {"wilson": "Wilson", "wilson_design_effect": "Wilson (deff)", "normal": "normal"}


def _pct(x: float | None, digits: int = 1) -> str:
    return _DASH if x is None else f"{100 * x:.{digits}f}%"


def _pm(value: float | None, se: float | None) -> str:
    if value is None:
        return _DASH
    return _pct(value) if se is None else f"{_pct(value)} ± {100 * se:.1f}"


def _cost(group: dict[str, Any], key: str, *, full: bool = False) -> str:
    """A cost figure; one that unpriced trials make unknown says so, with the count once."""
    cost = group["cost"]
    if cost[key] is None and cost["missing"]:
        return unpriced_label(cost["missing"], group["n_trials"]) if full else "unknown"
    return _money(cost[key])


def _num(x: float | None, unit: str = "", digits: int = 1) -> str:
    return _DASH if x is None else f"{x:,.{digits}f}{unit}"


def _add_row(table: Table, *cells: str) -> None:
    table.add_row(*(_text(c) for c in cells))


def _group_title(group: dict[str, Any], keys: list[str]) -> str:
    parts = [str(group[k]) for k in keys if group.get(k) is not None]
    return " / ".join(parts) or "all trials"


def _title_keys(groups: list[dict[str, Any]], by: list[str]) -> list[str]:
    """Labels that tell the groups apart (all of them when there is only one group)."""
    keys = by or ["agent", "model", "variant"]
    if len(groups) < 2:
        return keys
    varying = [k for k in keys if len({str(g.get(k)) for g in groups}) > 1]
    return varying or keys


def _column(g: dict[str, Any], ks: list[int]) -> list[str]:
    sr = g["success_rate"]
    unit = "families" if g["cluster_unit"] == "family" else "tasks"
    clusters = _DASH if g["n_clusters"] is None else f"{g['n_clusters']} {unit}"
    ci = _DASH
    if sr["ci95"] is not None:
        lo, hi = sr["ci95"]
        ci = f"{100 * lo:.1f} – {100 * hi:.1f}%"
    se_cl = _DASH if sr["se_clustered"] is None else f"± {100 * sr['se_clustered']:.1f}"
    cells = [
        f"{g['n_tasks']} / {g['n_trials']} / {clusters}",
        _pm(sr["value"], sr["se"]),
        se_cl,
        ci,
        _METHOD.get(sr["ci_method"], sr["ci_method"] or _DASH),
    ]
    cells += [_pm(g["pass_at_k"][str(k)], g["pass_at_k_se"][str(k)]) for k in ks]
    cells += [_pm(g["pass_hat_k"][str(k)], g["pass_hat_k_se"][str(k)]) for k in ks]
    cost, lat, tok = g["cost"], g["latency_s"], g["tokens"]
    cells += [
        _DASH if g["outcome_consistency"] is None else f"{g['outcome_consistency']:.3f}",
        str(len(g["flaky_tasks"])),
        str(g["infra_errors"]),
        _cost(g, "per_trial", full=True),
        _cost(g, "total"),
        _cost(g, "cost_of_pass"),
        _cost(g, "spend_per_success"),
        _money(cost["judge_total"]),
        f"{_num(lat['p50'], ' s')} / {_num(lat['p95'], ' s')}",
        f"{_num(tok['input'], digits=0)} / {_num(tok['output'], digits=0)}",
        _num(g["calls"]["tool"]),
    ]
    return cells


#: Above this many groups, one row per group (figures across) reads better.
_MAX_COLUMN_GROUPS = 4


def _rows_tables(report: MetricsReport, title: str | None) -> Group:
    """Many groups: one row each, the headline figures in one table and every asked-for
    pass@k and pass^k in a second (``--json`` has them all)."""
    data = report.to_dict()
    keys = _title_keys(data["groups"], data["by"])
    ks = list(report.k)

    def table(table_title: str | None, headers: list[str]) -> Table:
        t = Table(
            title=None if table_title is None else _text(table_title),
            title_justify="left",
            box=box.SIMPLE_HEAD,
            pad_edge=False,
            collapse_padding=True,
        )
        t.add_column(_text(headers[0]), no_wrap=True)
        for h in headers[1:]:
            t.add_column(_text(h), justify="right", no_wrap=True)
        return t

    headline = table(
        title, ["group", "T/N", "success ± se", "95% CI", "consist.", "infra", "$/trial", "$/pass"]
    )
    passk = table(None, ["group", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)])
    for g in data["groups"]:
        sr = g["success_rate"]
        ci = (
            _DASH if sr["ci95"] is None else f"{100 * sr['ci95'][0]:.0f}–{100 * sr['ci95'][1]:.0f}%"
        )
        name = _group_title(g, keys)
        _add_row(
            headline,
            name,
            f"{g['n_tasks']}/{g['n_trials']}",
            _pm(sr["value"], sr["se"]),
            ci,
            _DASH if g["outcome_consistency"] is None else f"{g['outcome_consistency']:.2f}",
            str(g["infra_errors"]),
            _cost(g, "per_trial"),
            _cost(g, "cost_of_pass"),
        )
        _add_row(
            passk,
            name,
            *(_pm(g["pass_at_k"][str(k)], g["pass_at_k_se"][str(k)]) for k in ks),
            *(_pm(g["pass_hat_k"][str(k)], g["pass_hat_k_se"][str(k)]) for k in ks),
        )
    return Group(headline, passk)


def metrics_table(report: MetricsReport, *, title: str | None = None) -> Table | Group:
    """The report as rich tables: figures down and groups across, or one row per group
    (headline figures, then pass@k and pass^k) when there are more than four groups."""
    if len(report.groups) > _MAX_COLUMN_GROUPS:
        return _rows_tables(report, title)
    data = report.to_dict()
    ks = list(report.k)
    table = Table(
        title=None if title is None else _text(title), title_justify="left", show_lines=False
    )
    table.add_column("metric", style="bold", no_wrap=True)
    keys = _title_keys(data["groups"], data["by"])
    for g in data["groups"]:
        table.add_column(_text(_group_title(g, keys)), justify="right")
    rows = [
        "tasks / trials / clusters",
        "success rate ± se",
        "  se clustered",
        "  95% CI",
        "  CI method",
        *[f"pass@{k}" for k in ks],
        *[f"pass^{k}" for k in ks],
        "consistency",
        "flaky tasks",
        "infra errors" + (" (excluded)" if report.exclude_infra_errors else " (as failures)"),
        "cost / trial",
        "cost total",
        "cost of pass",
        "spend / success",
        "judge cost",
        "latency p50 / p95",
        "tokens in / out",
        "tool calls / trial",
    ]
    columns = [_column(g, ks) for g in data["groups"]]
    for i, name in enumerate(rows):
        _add_row(table, name, *(col[i] for col in columns))
    return table


def print_metrics(
    report: MetricsReport, console: Console, *, title: str | None = None, warnings: bool = True
) -> None:
    """Print the table, then why any figure is missing, then (unless told not to) the warnings."""
    console.print(metrics_table(report, title=title))
    data = report.to_dict()
    keys = _title_keys(data["groups"], data["by"])
    # Each distinct reason once, with the groups it applies to.
    notes: dict[str, list[str]] = {}
    for g in data["groups"]:
        by_reason: dict[str, list[str]] = {}
        for key, reason in g["null_reasons"].items():
            by_reason.setdefault(reason, []).append(key.removeprefix("cost."))
        for reason, names in by_reason.items():
            notes.setdefault(f"{', '.join(names)}: {reason}", []).append(_group_title(g, keys))
    for note, who in notes.items():
        where = ""
        if len(data["groups"]) > 1:
            where = f" ({who[0]})" if len(who) == 1 else f" ({len(who)} groups)"
        console.print(_text(f"— {note}{where}", "dim"))
    for w in report.warnings if warnings else []:
        console.print(terminal_warning(w))


# --------------------------------------------------------------------------- behaviour


def _top_errors(errors: dict[str, int], n: int = 3) -> str:
    if not errors:
        return _DASH
    top = sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return ", ".join(f"{k} {v}" for k, v in top)


def _estimate(d: dict[str, Any] | None) -> str:
    if not d or d.get("value") is None:
        return _DASH
    se = d.get("se")
    return f"{d['value']:.3f}" if se is None else f"{d['value']:.3f} ± {se:.3f}"


def _transposed(title: str, columns: list[str], rows: list[tuple[str, list[str]]]) -> Table:
    table = Table(title=title, box=box.SIMPLE_HEAD)
    table.add_column("metric", justify="left")
    for col in columns:
        table.add_column(_text(col), justify="right")
    for name, cells in rows:
        if any(c != _DASH for c in cells):
            _add_row(table, name, *cells)
    return table


def behaviour_tables(report: MetricsReport) -> list[Table]:
    """Tool use and control per group, reliability per configuration (when present)."""
    data = report.to_dict()
    groups = data["groups"]
    keys = _title_keys(groups, list(report.by))
    tables: list[Table] = []
    shown = [g for g in groups if g.get("tool_use") or g.get("control")]
    if shown:
        tools = [g.get("tool_use") or {} for g in shown]
        ctls = [g.get("control") or {} for g in shown]
        modes = sorted({m for t in tools for m in (t.get("trajectory_match_rate") or {})})
        rows: list[tuple[str, list[str]]] = [
            (
                "AST match (per trial)",
                [_pct((t.get("ast_match_rate") or {}).get("per_trial")) for t in tools],
            ),
            ("irrelevance pass", [_pct(t.get("irrelevance_pass_rate")) for t in tools]),
            *[
                (
                    f"trajectory {m}",
                    [_pct((t.get("trajectory_match_rate") or {}).get(m)) for t in tools],
                )
                for m in modes
            ],
            ("action precision", [_num(t.get("action_precision"), digits=3) for t in tools]),
            ("action recall", [_num(t.get("action_recall"), digits=3) for t in tools]),
            ("milestone score", [_num(t.get("milestone_score"), digits=3) for t in tools]),
            ("minefield hit rate", [_pct(t.get("minefield_hit_rate")) for t in tools]),
            ("top tool-call errors", [_top_errors(t.get("error_types") or {}, 2) for t in tools]),
            ("control accuracy", [_pct(c.get("accuracy")) for c in ctls]),
            ("over-refusal", [_pct(c.get("over_refusal")) for c in ctls]),
            ("under-refusal", [_pct(c.get("under_refusal")) for c in ctls]),
            ("unnecessary ask", [_pct(c.get("unnecessary_ask")) for c in ctls]),
            ("missed confirmation", [_pct(c.get("missed_confirmation")) for c in ctls]),
        ]
        tables.append(
            _transposed(
                "tool use and control decisions",
                [_group_title(g, keys) for g in shown],
                rows,
            )
        )
    rel = data.get("reliability") or []
    if rel:
        preds = [r.get("predictability") or {} for r in rel]
        safes = [r.get("safety") or {} for r in rel]
        rows = [
            (
                "trajectory consistency (dist)",
                [_estimate(r["trajectory_consistency_dist"]) for r in rel],
            ),
            (
                "trajectory consistency (seq)",
                [_estimate(r["trajectory_consistency_seq"]) for r in rel],
            ),
            ("resource consistency", [_estimate(r["resource_consistency"]) for r in rel]),
            ("prompt robustness", [_estimate(r["prompt_robustness"]) for r in rel]),
            ("fault robustness", [_estimate(r["fault_robustness"]) for r in rel]),
            ("environment robustness", [_estimate(r["environment_robustness"]) for r in rel]),
            ("calibration (1 − ECE)", [_num(p.get("calibration"), digits=3) for p in preds]),
            ("AUROC of confidence", [_num(p.get("auroc"), digits=3) for p in preds]),
            ("safety compliance", [_pct(s.get("compliance")) for s in safes]),
            (
                "harmlessness of violations",
                [_num(s.get("harmlessness"), digits=3) for s in safes],
            ),
        ]
        tables.append(
            _transposed(
                "reliability per configuration (Rabanser et al. 2026)",
                [
                    " / ".join(str(r[k]) for k in ("agent", "model") if r.get(k)) or "all"
                    for r in rel
                ],
                rows,
            )
        )
    return tables


#: Reliability figures, as the table names them, and the key of each one's value.
_RELIABILITY_FIGURES = (
    ("trajectory consistency (dist)", "trajectory_consistency_dist", "value"),
    ("trajectory consistency (seq)", "trajectory_consistency_seq", "value"),
    ("resource consistency", "resource_consistency", "value"),
    ("prompt robustness", "prompt_robustness", "value"),
    ("fault robustness", "fault_robustness", "value"),
    ("environment robustness", "environment_robustness", "value"),
    ("calibration (1 − ECE)", "predictability", "calibration"),
    ("AUROC of confidence", "predictability", "auroc"),
    ("harmlessness of violations", "safety", "harmlessness"),
)


def reliability_notes(report: MetricsReport) -> list[str]:
    """Why each reliability figure is missing: each reason once, with who it applies to."""
    rel = report.to_dict().get("reliability") or []
    notes: dict[str, list[str]] = {}
    for r in rel:
        who = " / ".join(str(r[k]) for k in ("agent", "model") if r.get(k)) or "all"
        for name, key, value in _RELIABILITY_FIGURES:
            figure = r.get(key)
            reason = (
                r.get("null_reasons", {}).get(key)
                if figure is None
                else figure.get("reason")
                if figure.get(value) is None
                else None
            )
            if reason:
                notes.setdefault(f"{name}: {reason}", []).append(who)
    return [
        note
        + ("" if len(rel) < 2 else f" ({who[0]})" if len(who) == 1 else f" ({len(who)} configs)")
        for note, who in notes.items()
    ]


def print_behaviour(report: MetricsReport, console: Console) -> None:
    """Print the behaviour tables, if the report has them, and why figures are missing."""
    for table in behaviour_tables(report):
        console.print(table)
    for note in reliability_notes(report):
        console.print(_text(f"— {note}", "dim"))
