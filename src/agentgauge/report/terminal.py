"""Terminal rendering of a metrics report: one column per group, one row per figure.

Every rate is shown with its standard error and every interval with the method
that produced it; a figure that cannot be computed shows a dash and its reason
below the table, never a zero. Names, task ids and warnings come from the
trials: every cell and line is a `Text` with controls made visible
(`agentgauge.display.terminal_text`), never a markup string.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.measure import Measurement
from rich.table import Table

from agentgauge.display import terminal_text as _text
from agentgauge.display import terminal_warning
from agentgauge.metrics import MetricsReport
from agentgauge.metrics.cost import unpriced_label
from agentgauge.report.formats import (
    bounds,
    clusters_text,
    counted,
    counted_trials,
    estimate,
    judge_cost,
    no_spread_count,
    no_spread_tasks,
    number,
    percent,
    shown_decimals,
    success_se_of,
)
from agentgauge.report.formats import money as _money
from agentgauge.report.layout import fitted
from agentgauge.report.scope import BASE_VARIANT

__all__ = [
    "behaviour_tables",
    "capability_table",
    "interval",
    "metrics_table",
    "print_behaviour",
    "print_metrics",
    "print_recovery",
    "print_variants",
    "reliability_note_lines",
    "turn_note_lines",
    "variant_table",
]

_DASH = "—"
_METHOD = {"wilson": "Wilson", "wilson_design_effect": "Wilson (deff)", "normal": "normal"}


def _pct(x: float | None, digits: int = 1) -> str:
    return _DASH if x is None else percent(x, digits)  # 99.995%, never 100.0% short of it


def interval(ci: Sequence[float], digits: int = 1) -> str:
    """A 95% interval in percent, ``52.0–79.9%``, with more decimals where ``digits``
    would print two different bounds alike (`formats.bounds`)."""
    a, b = bounds(ci[0], ci[1], digits, scale=100)
    return f"{a}–{b}%"


def _pm(value: float | None, se: float | None) -> str:
    if value is None:
        return _DASH
    if se is None:
        return _pct(value)
    return f"{_pct(value)} ± {_points(se)}"


def _points(se: float) -> str:
    """An SE in percentage points, one decimal, or the decimals that show an SE that is
    not 0 (``0.005``, not ``0.0``, which reads as the SE of 0 worded otherwise)."""
    return f"{100 * se:.{shown_decimals(100 * se, 1)}f}"


def _pm_tasks(value: float | None, se: float | None, n_tasks: int) -> str:
    """A task average ± its SE; where every task has the same value (the SE is 0: each
    passes at k, or none does) there is no spread to estimate an SE from and "± 0.0"
    would claim a certainty a handful of tasks cannot give, so the cell says how many
    tasks stand behind it (``100.0% (10/10 tasks)``); the interval is the CI row's."""
    count = no_spread_tasks(value, se, n_tasks)
    return _pm(value, se) if count is None else f"{_pct(value)} {count}"


def _pm_trials(group: dict[str, Any]) -> str:
    """The success rate ± its SE, or, where every trial passed or every one failed (SE
    0), its count of trials (``100.0% (40/40)``)."""
    sr = group["success_rate"]
    count = no_spread_count(sr["se"], group["n_successes"], group["n_trials"])
    if sr["value"] is not None and count is not None:
        return f"{_pct(sr['value'])} {count}"
    return _pm(sr["value"], sr["se"])


def _token_count(group: dict[str, Any]) -> str:
    """`` (2 / 1 of 3 trials)`` where the token means come from fewer trials than the group
    holds: a mean over the trials that reported tokens, which should say how many; also
    where one of the two is recorded by none (``(3 / 0 of 3 trials)``: the dash of the
    other has no reason of its own below the table)."""
    tok, n = group["tokens"], group["n_trials"]
    got = [tok.get("n_input"), tok.get("n_output")]
    if not n or all(k in (n, None) for k in got) or all(k in (0, None) for k in got):
        return ""
    return f" ({' / '.join(str(k) for k in got)} of {n} trials)"


def _latency_count(group: dict[str, Any]) -> str:
    """`` (2 of 3 trials)`` where the latency figures come from fewer trials than the
    group holds (the others record none)."""
    n, got = group["n_trials"], group["latency_s"].get("n")
    return "" if not n or got in (n, 0, None) else f" ({got} of {n} trials)"


def _cost(group: dict[str, Any], key: str, *, full: bool = False) -> str:
    """A cost figure; one that unpriced trials make unknown says so, with the count once."""
    cost = group["cost"]
    if cost[key] is None and cost["missing"]:
        return unpriced_label(cost["missing"], group["n_trials"]) if full else "unknown"
    return _money(cost[key])


def _num(x: float | None, unit: str = "", digits: int = 1) -> str:
    return _DASH if x is None else f"{number(x, digits)}{unit}"


def _add_row(table: Table, *cells: str) -> None:
    table.add_row(*(_text(c) for c in cells))


def _fits(console: Console, table: Table) -> bool:
    """Whether ``table`` is as wide as it wants to be (no cell wrapped or cut) within
    the console (measured unbounded: a measure within the console is capped by it)."""
    natural = Measurement.get(console, console.options.update_width(1_000_000), table).maximum
    return natural <= console.width


def _folded(
    console: Console, n: int, build: Callable[[Sequence[int], bool], Table]
) -> list[RenderableType]:
    """The table of ``n`` group columns as consecutive tables that each fit the console,
    so that no figure is wrapped or cut: ``build(columns, first)`` makes one of them. A
    table of one group that still does not fit is given as `fitted` gives it."""
    tables: list[RenderableType] = []
    start = 0
    while start < n:
        end = start + 1
        while end < n and _fits(console, build(range(start, end + 1), start == 0)):
            end += 1
        tables.append(fitted(console, build(range(start, end), start == 0)))
        start = end
    return tables


def _group_title(group: dict[str, Any], keys: list[str]) -> str:
    """The group's values of ``keys`` (`_title_keys`), ``no capability`` for one its
    trials do not record: beside a group ``refunds``, the trials without a capability
    are not "all trials"."""
    parts = [f"no {k}" if group.get(k) is None else str(group[k]) for k in keys]
    return " / ".join(parts) or "all trials"


def _title_keys(groups: list[dict[str, Any]], by: list[str]) -> list[str]:
    """Labels that tell the groups apart; for one group, those its trials record."""
    keys = by or ["agent", "model", "variant"]
    if len(groups) < 2:
        return [k for k in keys if groups and groups[0].get(k) is not None]
    varying = [k for k in keys if len({str(g.get(k)) for g in groups}) > 1]
    return varying or [k for k in keys if any(g.get(k) is not None for g in groups)]


def _column(g: dict[str, Any], ks: list[int]) -> list[str]:
    sr = g["success_rate"]
    n_clusters = g["n_clusters"]
    clusters = (
        _DASH
        if n_clusters is None
        else clusters_text(n_clusters, g.get("n_families"), g["cluster_unit"])
    )
    ci = _DASH if sr["ci95"] is None else interval(sr["ci95"])
    se_cl = _DASH if sr["se_clustered"] is None else f"± {_points(sr['se_clustered'])}"
    if sr["se_clustered"] == 0 and n_clusters:
        # Every family has the same rate: no spread between them, not certainty.
        alike = clusters if g.get("n_families") in (None, n_clusters) else f"{n_clusters} clusters"
        se_cl = f"none ({alike} alike)"
    cells = [
        f"{g['n_tasks']:,} / {g['n_trials']:,}",
        clusters,
        _pm_trials(g),
        se_cl,
        ci,
        _METHOD.get(sr["ci_method"], sr["ci_method"] or _DASH),
    ]
    n = g["n_tasks"]
    cells += [_pm_tasks(g["pass_at_k"][str(k)], g["pass_at_k_se"][str(k)], n) for k in ks]
    cells += [_pm_tasks(g["pass_hat_k"][str(k)], g["pass_hat_k_se"][str(k)], n) for k in ks]
    cost, lat, tok = g["cost"], g["latency_s"], g["tokens"]
    cells += [
        _DASH if g["outcome_consistency"] is None else f"{g['outcome_consistency']:.3f}",
        str(len(g["flaky_tasks"])),
        str(g["infra_errors"]),
        _cost(g, "per_trial", full=True),
        _cost(g, "total"),
        _cost(g, "cost_of_pass"),
        _cost(g, "spend_per_success"),
        judge_cost(cost, g["n_trials"]),
        f"{_num(lat['p50'], ' s')} / {_num(lat['p95'], ' s')}{_latency_count(g)}",
        f"{_num(tok['input'], digits=0)} / {_num(tok['output'], digits=0)}{_token_count(g)}",
        _num(g["calls"]["tool"]),
    ]
    return cells


#: Above this many groups, one row per group (figures across) reads better.
_MAX_COLUMN_GROUPS = 4


#: A table of one row per group: its column headers (the first names the group) and rows.
_RowsTable = tuple[list[str], list[list[str]]]


def _rows_data(report: MetricsReport) -> list[_RowsTable]:
    """Many groups: one row each, the headline figures in one table and every asked-for
    pass@k and pass^k in a second (``--json`` has them all)."""
    data = report.to_dict()
    keys = _title_keys(data["groups"], data["by"])
    ks = list(report.k)
    headline: _RowsTable = (
        ["group", "T/N", "success ± se", "95% CI", "consist.", "infra", "$/trial", "$/pass"],
        [],
    )
    passk: _RowsTable = (["group", *(f"pass@{k}" for k in ks), *(f"pass^{k}" for k in ks)], [])
    for g in data["groups"]:
        sr = g["success_rate"]
        ci = _DASH if sr["ci95"] is None else interval(sr["ci95"], 0)
        name, n = _group_title(g, keys), g["n_tasks"]
        headline[1].append(
            [
                name,
                f"{g['n_tasks']}/{g['n_trials']}",
                _pm_trials(g),
                ci,
                _DASH if g["outcome_consistency"] is None else f"{g['outcome_consistency']:.2f}",
                str(g["infra_errors"]),
                _cost(g, "per_trial"),
                _cost(g, "cost_of_pass"),
            ]
        )
        passk[1].append(
            [
                name,
                *(_pm_tasks(g["pass_at_k"][str(k)], g["pass_at_k_se"][str(k)], n) for k in ks),
                *(_pm_tasks(g["pass_hat_k"][str(k)], g["pass_hat_k_se"][str(k)], n) for k in ks),
            ]
        )
    return [headline, passk]


def _rows_table(part: _RowsTable, title: str | None, chosen: Sequence[int] | None = None) -> Table:
    """One of `_rows_data`'s tables: the group column, then the figures at ``chosen``."""
    headers, rows = part
    index = [i + 1 for i in (range(len(headers) - 1) if chosen is None else chosen)]
    t = Table(
        title=None if title is None else _text(title),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
        collapse_padding=True,
    )
    t.add_column(_text(headers[0]), no_wrap=True)
    for i in index:
        t.add_column(_text(headers[i]), justify="right", no_wrap=True)
    for row in rows:
        _add_row(t, row[0], *(row[i] for i in index))
    return t


def _rows_tables(report: MetricsReport, title: str | None) -> Group:
    parts = _rows_data(report)
    return Group(*(_rows_table(p, title if i == 0 else None) for i, p in enumerate(parts)))


def metrics_table(
    report: MetricsReport,
    *,
    title: str | None = None,
    columns: Sequence[int] | None = None,
) -> Table | Group:
    """The report as rich tables: figures down and groups across (the groups at
    ``columns`` only, when given), or one row per group (headline figures, then
    pass@k and pass^k) when there are more than four groups."""
    if len(report.groups) > _MAX_COLUMN_GROUPS:
        return _rows_tables(report, title)
    data = report.to_dict()
    ks = list(report.k)
    table = Table(
        title=None if title is None else _text(title), title_justify="left", show_lines=False
    )
    table.add_column("metric", style="bold", no_wrap=True)
    keys = _title_keys(data["groups"], data["by"])
    chosen = range(len(data["groups"])) if columns is None else columns
    groups = [data["groups"][i] for i in chosen]
    for g in groups:
        table.add_column(_text(_group_title(g, keys)), justify="right", no_wrap=True)
    rows = [
        "tasks / trials",
        "  clusters",
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
    cells = [_column(g, ks) for g in groups]
    for i, name in enumerate(rows):
        _add_row(table, name, *(col[i] for col in cells))
    return table


def print_metrics(
    report: MetricsReport, console: Console, *, title: str | None = None, warnings: bool = True
) -> None:
    """Print the table (split into tables of fewer groups where the console is too narrow
    for all of them), then why any figure is missing, then (unless told not to) the
    warnings."""
    n = len(report.groups)
    if n > _MAX_COLUMN_GROUPS:
        # One row per group: where the figures do not fit, they go on in a second table.
        for i, part in enumerate(_rows_data(report)):
            for table in _folded(
                console,
                len(part[0]) - 1,
                lambda cols, first: _rows_table(
                    part,  # noqa: B023
                    title if first and i == 0 else None,  # noqa: B023
                    cols,
                ),
            ):
                console.print(table)
    else:
        for table in _folded(
            console,
            n,
            lambda cols, first: metrics_table(  # type: ignore[arg-type,return-value]
                report, title=title if first else None, columns=cols
            ),
        ):
            console.print(table)
    for line in null_reason_lines(report.to_dict()):
        console.print(_text(f"— {line}", "dim"))
    for w in report.warnings if warnings else []:
        console.print(terminal_warning(w))


def null_reason_lines(data: dict[str, Any]) -> list[str]:
    """Why each figure of an ``agentgauge.metrics/1`` object is null, each distinct
    reason once with the groups it applies to (``ci95: fewer than 2 clusters...``):
    what the terminal, the HTML and the Markdown report print under their tables. A
    group named as a system (``system``, which the report sets where two groups' fields
    would read alike) is called by that name, as its tables call it."""
    keys = _title_keys(data["groups"], data["by"])
    notes: dict[str, list[str]] = {}
    for g in data["groups"]:
        by_reason: dict[str, list[str]] = {}
        for key, reason in g.get("null_reasons", {}).items():
            by_reason.setdefault(reason, []).append(key.removeprefix("cost."))
        for reason, names in by_reason.items():
            title = str(g["system"]) if "system" in g else _group_title(g, keys)
            notes.setdefault(f"{', '.join(names)}: {reason}", []).append(title)
    lines = []
    for note, who in notes.items():
        where = ""
        if len(data["groups"]) > 1:
            where = f" ({who[0]})" if len(who) == 1 else f" ({len(who)} groups)"
        lines.append(f"{note}{where}")
    return lines


def comparison_null_reason_lines(
    null_reasons: Mapping[str, str], names: Mapping[str, str]
) -> list[str]:
    """Why each figure of a comparison (``null_reasons`` of an ``agentgauge.compare/1``
    object) that a table shows is missing: each reason once, after the figures it
    applies to (``p-value, SE paired: one shared task: ...``). ``names`` maps the keys
    of the figures shown to their names there, in the table's order; the others are
    left out. What `compare` and the viewer's run diff print under their tables."""
    notes: dict[str, list[str]] = {}
    for key, name in names.items():
        if null_reasons.get(key):
            notes.setdefault(null_reasons[key], []).append(name)
    return [f"{', '.join(shown)}: {reason}" for reason, shown in notes.items()]


# --------------------------------------------------------------------------- behaviour


def _top_errors(errors: dict[str, int] | None, n: int = 3) -> str:
    """The ``n`` most common failed-call types; ``none`` where the AST grades found no
    failed call, a dash where no call was graded (the reason is printed below)."""
    if errors is None:
        return _DASH
    if not errors:
        return "none"
    top = sorted(errors.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
    return ", ".join(f"{k} {v}" for k, v in top)


def _estimate(d: dict[str, Any] | None) -> str:
    """A reliability figure ± its SE, or the units behind it where it has no spread
    (`agentgauge.report.formats.estimate`, as the HTML and Markdown reports show it)."""
    return estimate(d) or _DASH


_Rows = list[tuple[str, list[str]]]


def _transposed(
    title: str | None, columns: list[str], rows: _Rows, chosen: Sequence[int] | None = None
) -> Table:
    """Figures down, groups across (those at ``chosen``, default all); a figure no
    group has is left out. Figures never wrap: `_folded` splits the groups instead."""
    index = list(range(len(columns)) if chosen is None else chosen)
    table = Table(title=None if title is None else _text(title), box=box.SIMPLE_HEAD)
    table.add_column("metric", justify="left", no_wrap=True)
    for i in index:
        table.add_column(_text(columns[i]), justify="right", no_wrap=True)
    for name, cells in rows:
        if any(cells[i] != _DASH for i in index):
            _add_row(table, name, *(cells[i] for i in index))
    return table


def _measured(rows: _Rows) -> bool:
    """Whether any group has any of the figures (`_transposed` leaves out the others)."""
    return any(cell != _DASH for _, cells in rows for cell in cells)


def _scoped(title: str, scope: str | None) -> str:
    return title if scope is None else f"{title} ({scope})"


def _config(r: dict[str, Any]) -> str:
    return " / ".join(str(r[k]) for k in ("agent", "model") if r.get(k)) or "all"


def _tool_control(report: MetricsReport) -> tuple[list[str], _Rows]:
    """Tool use and control decisions per group: column labels and rows."""
    data = report.to_dict()
    groups = data["groups"]
    keys = _title_keys(groups, list(report.by))
    shown = [g for g in groups if g.get("tool_use") or g.get("control")]
    if not shown:
        return [], []
    tools = [g.get("tool_use") or {} for g in shown]
    ctls = [g.get("control") or {} for g in shown]
    modes = sorted({m for t in tools for m in (t.get("trajectory_match_rate") or {})})
    rows: _Rows = [
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
        ("top tool-call error", [_top_errors(t.get("error_types"), 1) for t in tools]),
        ("control decisions (n)", [_DASH if c.get("n") is None else str(c["n"]) for c in ctls]),
        ("control accuracy", [_pct(c.get("accuracy")) for c in ctls]),
        ("over-refusal", [_pct(c.get("over_refusal")) for c in ctls]),
        ("under-refusal", [_pct(c.get("under_refusal")) for c in ctls]),
        ("unnecessary ask", [_pct(c.get("unnecessary_ask")) for c in ctls]),
        ("missed confirmation", [_missed(c) for c in ctls]),
    ]
    return [_group_title(g, keys) for g in shown], rows


def _missed(control: dict[str, Any]) -> str:
    """Missed confirmations, with how many trials' counts they rest on where some
    trials have none (no control grade): ``50.0% (7 of 8 trials)``."""
    return _pct(control.get("missed_confirmation")) + counted_trials(control)


def _rate_cell(rate: dict[str, Any] | None) -> str:
    """A recovery rate as ``value [95% CI] (count/trials)``, as the per-turn table
    shows its rates: at 0% or 100% an SE of 0 would read as certainty, the interval
    does not. A rate over no trial is a dash."""
    if not rate or rate.get("value") is None:
        return _DASH
    ci = rate.get("ci95")
    band = " [no interval]" if ci is None else f" [{interval(ci)}]"
    return f"{_pct(rate['value'])}{band} ({rate['count']}/{rate['n_trials']})"


def _error_split(types: dict[str, dict[str, int]]) -> str:
    """The most frequent error types, each as errors in successful / failed trials."""
    if not types:
        return _DASH
    top = sorted(types.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:2]
    return ", ".join(f"{k} {v['in_successful']}/{v['in_failed']}" for k, v in top)


def _recovery(report: MetricsReport) -> tuple[list[str], _Rows]:
    """Recovery from tool errors per group (HAL): column labels and rows."""
    groups = report.to_dict()["groups"]
    keys = _title_keys(groups, list(report.by))
    shown = [g for g in groups if g.get("recovery")]
    if not shown:
        return [], []
    recs = [g["recovery"] for g in shown]
    ratio = [_DASH if r["recovery_ratio"] is None else f"{r['recovery_ratio']:.2f}×" for r in recs]
    rows: _Rows = [
        ("trials with a tool error", [_rate_cell(r["with_tool_error"]) for r in recs]),
        ("  of which recovered", [_rate_cell(r["recovered"]) for r in recs]),
        ("success, recovered", [_rate_cell(r["success_with_recovery"]) for r in recs]),
        ("success, not recovered", [_rate_cell(r["success_without_recovery"]) for r in recs]),
        ("success ratio (recovered / not)", ratio),
        ("top errors (in successes/failures)", [_error_split(r["error_types"]) for r in recs]),
    ]
    return [_group_title(g, keys) for g in shown], rows


def _reliability(report: MetricsReport) -> tuple[list[str], _Rows]:
    """Reliability per configuration: column labels and rows."""
    rel = report.to_dict().get("reliability") or []
    if not rel:
        return [], []
    preds = [r.get("predictability") or {} for r in rel]
    safes = [r.get("safety") or {} for r in rel]
    rows: _Rows = [
        (
            "trajectory consistency (dist)",
            [_estimate(r["trajectory_consistency_dist"]) for r in rel],
        ),
        ("trajectory consistency (seq)", [_estimate(r["trajectory_consistency_seq"]) for r in rel]),
        ("resource consistency", [_estimate(r["resource_consistency"]) for r in rel]),
        ("prompt robustness", [_estimate(r["prompt_robustness"]) for r in rel]),
        ("fault robustness", [_estimate(r["fault_robustness"]) for r in rel]),
        ("environment robustness", [_estimate(r["environment_robustness"]) for r in rel]),
        ("calibration (1 − ECE)", [_num(p.get("calibration"), digits=3) for p in preds]),
        ("AUROC of confidence", [_num(p.get("auroc"), digits=3) for p in preds]),
        ("safety compliance", [_pct(s.get("compliance")) for s in safes]),
        ("harmlessness of violations", [_num(s.get("harmlessness"), digits=3) for s in safes]),
    ]
    return [_config(r) for r in rel], rows


def turn_cell(row: dict[str, Any] | None) -> str:
    """One turn's pass rate with its interval and the counts behind it."""
    if row is None:
        return _DASH
    n = f"n={row['n_trials']} of {counted(row['n_tasks'], 'task')}"
    if row["n_unknown"]:
        n += f", {row['n_unknown']} unknown"
    if row["pass_rate"] is None:
        return f"— ({n})"
    ci = " [no interval]"
    if row["ci95"] is not None:
        ci = f" [{interval(row['ci95'], 0)}]"
    return f"{_pct(row['pass_rate'])}{ci} ({n})"


def _turns(report: MetricsReport) -> tuple[list[str], _Rows]:
    """Pass rate per user turn per group (groups with checkpoints only)."""
    groups = report.to_dict()["groups"]
    keys = _title_keys(groups, list(report.by))
    shown = [g for g in groups if g.get("turns")]
    if not shown:
        return [], []
    by_turn = [{r["turn"]: r for r in g["turns"]["per_turn"]} for g in shown]
    indices = sorted({i for turns in by_turn for i in turns})
    rows: _Rows = [(f"turn {i}", [turn_cell(t.get(i)) for t in by_turn]) for i in indices]
    return [_group_title(g, keys) for g in shown], rows


def turn_note_lines(groups: list[dict[str, Any]], keys: Sequence[str]) -> list[str]:
    """Why a turn's pass rate (``held``) or its 95% interval is missing (each row's
    ``reason`` in ``turns.per_turn``): each reason once, with its turns, and the group
    when several groups have turns (``keys`` name them). What the terminal prints
    below the per-turn table and the reports put in that section's note."""
    shown = [g for g in groups if g.get("turns")]
    notes: dict[tuple[str, str], dict[str, list[int]]] = {}
    for g in shown:
        for row in g["turns"]["per_turn"]:
            if row.get("reason"):
                what = "held" if row["pass_rate"] is None else "95% interval"
                who = notes.setdefault((what, row["reason"]), {})
                who.setdefault(_group_title(g, list(keys)), []).append(row["turn"])
    lines = []
    for (what, reason), by_group in notes.items():
        for group, turns in by_group.items():
            label = ("turn " if len(turns) == 1 else "turns ") + ", ".join(map(str, turns))
            where = f" ({group})" if len(shown) > 1 else ""
            lines.append(f"{label}, {what}: {reason}{where}")
    return lines


_TOOLS_TITLE = "tool use and control decisions"
RECOVERY_TITLE = "recovery from tool errors, HAL (Kapoor et al. 2025)"
_TURNS_TITLE = "checkpoints held per user turn, BFCL V3 multi-turn"
_RELIABILITY_TITLE = "reliability per configuration, Rabanser et al. 2026"


def reliability_scope(rel: list[dict[str, Any]]) -> str:
    """Which trials each reliability figure reads (``reliability`` of an
    ``agentgauge.metrics/1`` object), for the title of its table: consistency,
    calibration and AUROC the base variant (all the variants of a configuration with no
    base trial, as the base-variant tables), robustness each perturbed variant against
    base, safety every variant."""
    fallback = [r.get("base_scope", BASE_VARIANT) != BASE_VARIANT for r in rel]
    base = (
        "all variants, no base variant in the data"
        if fallback and all(fallback)
        else "base variant, all variants where a configuration has none"
        if any(fallback)
        else BASE_VARIANT
    )
    return (
        f"consistency, calibration and AUROC: {base}; robustness: each perturbed variant "
        "against base; safety: all variants"
    )


def behaviour_tables(
    report: MetricsReport,
    *,
    scope: str | None = None,
    reliability: MetricsReport | None = None,
) -> list[Table]:
    """Tool use and control per group (titled with ``scope``), the checkpoints held per
    user turn per group, then reliability per configuration from ``reliability``
    (default: ``report``), when present."""
    tables = []
    columns, rows = _tool_control(report)
    if _measured(rows):
        tables.append(_transposed(_scoped(_TOOLS_TITLE, scope), columns, rows))
    columns, rows = _recovery(report)
    if _measured(rows):
        tables.append(_transposed(_scoped(RECOVERY_TITLE, scope), columns, rows))
    columns, rows = _turns(report)
    if _measured(rows):
        tables.append(_transposed(_scoped(_TURNS_TITLE, scope), columns, rows))
    columns, rows = _reliability(reliability or report)
    if _measured(rows):
        title = _scoped(_RELIABILITY_TITLE, _reliability_scope_of(reliability or report))
        tables.append(_transposed(title, columns, rows))
    return tables


def _reliability_scope_of(report: MetricsReport) -> str:
    return reliability_scope(report.to_dict().get("reliability") or [])


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
    return reliability_note_lines(report.to_dict().get("reliability") or [])


def reliability_note_lines(rel: list[dict[str, Any]]) -> list[str]:
    """Why each reliability figure (``reliability`` of an ``agentgauge.metrics/1``
    object) is missing, or has no SE: each reason once, with who it applies to. What
    the terminal, the HTML and the Markdown report print under the reliability table."""
    notes: dict[str, list[str]] = {}
    for r in rel:
        who = " / ".join(str(r[k]) for k in ("agent", "model") if r.get(k)) or "all"
        scope = r.get("base_scope", BASE_VARIANT)
        if scope != BASE_VARIANT:  # read whole, as the base-variant tables read it
            notes.setdefault(
                f"consistency, calibration and AUROC read {scope}: no base-variant trial", []
            ).append(who)
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
            elif figure is not None and figure.get(value) is not None:
                no_se = r.get("null_reasons", {}).get(f"{key}.se")
                if no_se:  # a value without its error bar says why it has none
                    notes.setdefault(f"{name}, no SE: {no_se}", []).append(who)
                # A value over part of the trials says which it left out.
                left_out = r.get("null_reasons", {}).get(f"{key}.{value}")
                if left_out:
                    notes.setdefault(f"{name}: {left_out}", []).append(who)
    return [
        note
        + ("" if len(rel) < 2 else f" ({who[0]})" if len(who) == 1 else f" ({len(who)} configs)")
        for note, who in notes.items()
    ]


def print_behaviour(
    report: MetricsReport,
    console: Console,
    *,
    scope: str | None = None,
    reliability: MetricsReport | None = None,
) -> None:
    """Print the behaviour tables (see `behaviour_tables`), each split into tables of
    fewer groups where the console is too narrow, and why figures are missing."""
    _print_transposed(
        console,
        (_scoped(_TOOLS_TITLE, scope), _tool_control(report)),
        (_scoped(RECOVERY_TITLE, scope), _recovery(report)),
        (_scoped(_TURNS_TITLE, scope), _turns(report)),
        (
            _scoped(_RELIABILITY_TITLE, _reliability_scope_of(reliability or report)),
            _reliability(reliability or report),
        ),
    )
    data = report.to_dict()
    for note in turn_note_lines(data["groups"], _title_keys(data["groups"], list(report.by))):
        console.print(_text(f"— checkpoints, {note}", "dim"))
    for note in reliability_notes(reliability or report):
        console.print(_text(f"— {note}", "dim"))


def print_recovery(report: MetricsReport, console: Console, *, scope: str) -> None:
    """Only the recovery table of ``report`` (titled with ``scope``), e.g. for the trials
    of a fault-injection variant, where tools fail on purpose."""
    _print_transposed(console, (_scoped(RECOVERY_TITLE, scope), _recovery(report)))


def _print_transposed(console: Console, *tables: tuple[str, tuple[list[str], _Rows]]) -> None:
    for title, (columns, rows) in tables:
        if not _measured(rows):  # a header over no figure: the notes below say why
            continue
        # The title on a line of its own: as a table's title it wraps to the table's width.
        console.print(_text(title, "bold"))
        for table in _folded(
            console,
            len(columns),
            lambda cols, _: _transposed(None, columns, rows, cols),  # noqa: B023
        ):
            console.print(table)


# --------------------------------------------------------------------------- variants


def variant_table(
    report: MetricsReport, *, title: str | None = None, columns: Sequence[int] | None = None
) -> Table:
    """Outcome per variant: one row per variant, one column per configuration, each
    cell the success rate ± se with its trial count (``report`` grouped by
    configuration and variant)."""
    groups = report.to_dict()["groups"]
    configs = list(dict.fromkeys(_config(g) for g in groups))
    variants = list(dict.fromkeys(str(g.get("variant")) for g in groups))
    variants.sort(key=lambda v: (v != "base", v))
    cell = {(_config(g), str(g.get("variant"))): g for g in groups}
    chosen = [configs[i] for i in (range(len(configs)) if columns is None else columns)]
    table = Table(title=None if title is None else _text(title), box=box.SIMPLE_HEAD)
    table.add_column("variant", no_wrap=True)
    for c in chosen:
        table.add_column(_text(c), justify="right", no_wrap=True)
    for v in variants:
        row = [v]
        for c in chosen:
            g = cell.get((c, v))
            if g is None:
                row.append(_DASH)
            else:
                value, se = g["success_rate"]["value"], success_se_of(g)
                count = no_spread_count(se, g["n_successes"], g["n_trials"])
                if value is not None and count is not None:  # no "± 0.0" (`_pm_trials`)
                    row.append(f"{_pct(value)} {count}")
                else:
                    row.append(f"{_pm(value, se)} ({g['n_trials']:,})")
        _add_row(table, *row)
    return table


def print_variants(report: MetricsReport, console: Console, *, title: str) -> None:
    """`variant_table`, split into tables of fewer configurations where needed."""
    n = len({_config(g) for g in report.to_dict()["groups"]})
    console.print(_text(title, "bold"))
    for table in _folded(console, n, lambda cols, _: variant_table(report, columns=cols)):
        console.print(table)


# --------------------------------------------------------------------------- capabilities


def capability_table(rows: Sequence[dict[str, Any]], *, title: str | None = None) -> Table:
    """The comparison record's line 6 per capability (`ComparisonRecord.capabilities`):
    B and A with their standard errors, B − A, and the tasks behind each; largest
    differences first.

    A capability often holds one task, or a few whose rates are all equal (each 100%,
    each 75%): there is no spread between tasks to estimate an SE from, and "± 0.0"
    would claim a certainty a handful of trials cannot give. Such a cell shows its
    successes of trials instead (``100.0% (12/12)``)."""

    def side(s: dict[str, Any] | None) -> str:
        if s is None:
            return _DASH
        se = 0.0 if s["se"] is None else s["se"]  # one task: no SE at all, the same story
        count = no_spread_count(se, s.get("n_successes"), s.get("n_trials"))
        if s["rate"] is not None and count is not None:
            return f"{_pct(s['rate'])} {count}"
        return _pm(s["rate"], s["se"])

    def tasks(r: dict[str, Any]) -> str:
        a, b = r["a"], r["b"]
        na, nb = (_DASH if s is None else str(s["n_tasks"]) for s in (a, b))
        return na if na == nb else f"{nb} / {na}"

    table = Table(title=None if title is None else _text(title), box=box.SIMPLE_HEAD)
    table.add_column("capability", overflow="fold")
    for name in ("B ± se", "A ± se", "B − A", "tasks"):
        table.add_column(name, justify="right", no_wrap=True)
    for r in rows:
        diff = _DASH if r["diff"] is None else f"{100 * r['diff']:+.1f} pp"
        _add_row(table, r["capability"], side(r["b"]), side(r["a"]), diff, tasks(r))
    return table
