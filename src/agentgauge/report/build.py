"""Gather what a report shows from trials: the one place reports are assembled.

`build_report` turns one or more sources (runs) into a `ReportData` for the
HTML page and the Markdown summary. Sources are grouped by suite (`group_by_suite`:
the same recorded suite, or a shared task id) and each group gets its own
`SuiteReport`; within a group each source is its own system, even when two record the
same agent and model (`report db:v1 db:v2`). Scopes follow one rule on every face (docs/reports.md):
outcome, tool-call, trajectory and control figures are on the **base
variant**; reliability says the scope of each figure (robustness: each perturbed
variant against base; consistency and calibration: the base variant; safety: all
variants);
outcome per variant has one row per variant. Given a comparison and the two
sources it compared, the paired difference is also computed per capability
(Miller 2024).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.api import metrics as outcome_metrics
from agentgauge.api import metrics_of_columns
from agentgauge.display import markdown_text
from agentgauge.errors import InputError
from agentgauge.facts import FACTS, Facts
from agentgauge.metrics.compare import compare, select_rows
from agentgauge.metrics.cost import unpriced_label
from agentgauge.metrics.frontier import frontier_from_table, group_labels
from agentgauge.metrics.horizon import horizon
from agentgauge.metrics.validity import NullAgentCheck, never_passed_tasks, null_agent_check
from agentgauge.report.explain import error_class, trial_view
from agentgauge.report.formats import (
    bounds,
    counted,
    counted_trials,
    estimate,
    money,
    no_spread_count,
    no_spread_tasks,
    number,
    percent,
    success_se_of,
)
from agentgauge.report.html import CONTROL_STATES, ReportData, SuiteReport
from agentgauge.report.scope import system_base_scope
from agentgauge.report.terminal import (
    interval,
    null_reason_lines,
    reliability_note_lines,
    reliability_scope,
    turn_note_lines,
)
from agentgauge.schema import Trial
from agentgauge.sources import TrialSource, two_families
from agentgauge.spelling import quoted
from agentgauge.table import TrialTable, group_codes

__all__ = [
    "TRANSCRIPTS_PER_AGENT",
    "ReportInputs",
    "build_report",
    "group_by_suite",
    "markdown_summary",
    "markdown_text",
]

_NULL_AGENTS = ("null", "builtin:null")
#: Failing tasks per agent whose transcript the report includes (the rest are counted).
TRANSCRIPTS_PER_AGENT = 8
#: Largest k the pass@k / pass^k curves are drawn to.
MAX_CURVE_K = 16
#: Bootstrap replicates of the time-horizon interval in a report (the CLI default is 1000).
HORIZON_BOOTSTRAP = 200
#: Reliability figures drawn as bars: (key in the reliability dict, label).
RELIABILITY_BARS = (
    ("prompt_robustness", "prompt robustness"),
    ("fault_robustness", "fault robustness"),
    ("environment_robustness", "env robustness"),
    ("trajectory_consistency_dist", "trajectory consistency (dist)"),
    ("trajectory_consistency_seq", "trajectory consistency (seq)"),
    ("resource_consistency", "resource consistency"),
)


@dataclass
class ReportInputs:
    """Sources to report on, and optionally a comparison made between two of them."""

    sources: Sequence[TrialSource]
    title: str = "agentgauge report"
    ks: Sequence[int] = (1, 2, 4)
    record: Sequence[str] = ()
    comparison: dict[str, Any] | None = None
    notes: Sequence[str] = ()
    seed: int = 0
    compared: tuple[TrialSource, TrialSource] | None = None
    """The two sources (A, B) the comparison was made between, for its per-capability table."""
    null_agent: tuple[str, NullAgentCheck] | None = None
    """The null agent's run and check the comparison found (record line 5: a run marked
    ``null`` in B's store, or a null agent's run on the same suite version), for the
    validity checks of the suite compared when no SOURCE of it is a null agent's run."""


def _pct(x: float | None) -> str:
    return "–" if x is None else percent(x)  # 99.995%, never 100.0% short of it


def _pass_k(value: float | None, se: float | None, n_tasks: int | None) -> str:
    """pass@k or pass^k as `agentgauge metrics` prints it: ± its SE over tasks, or the
    count of tasks where every task has the same value (`formats.no_spread_tasks`)."""
    if value is None:
        return "–"
    count = no_spread_tasks(value, se, n_tasks)
    if count is not None:
        return f"{_pct(value)} {count}"
    return _pct(value) if se is None else f"{_pct(value)} ± {_pct(se)}"


def _est(d: dict[str, Any] | None) -> str | None:
    """A reliability figure with its SE, or its units where it has no spread, as the
    terminal shows it (`formats.estimate`); ``None`` (a dash) when not measured."""
    return estimate(d)


def _label(g: dict[str, Any]) -> str:
    """A group's name: its system's (`_named`), else "agent / model"."""
    if "system" in g:
        return str(g["system"])
    return " / ".join(str(g[k]) for k in ("agent", "model") if g.get(k)) or "all"


#: A system: the (agent, model) its trials record.
System = tuple[str | None, str | None]
#: Each row's text (a system's name), as a table holds labels.
Labels = npt.NDArray[np.object_]
#: Builds the trials at some rows of a table (``events``: with their transcripts).
Pick = Callable[[Sequence[int], bool], list[Trial]]


def _systems(table: TrialTable) -> tuple[dict[System, str], Labels]:
    """Each system's name in every table and plot, the heatmap and the transcripts:
    "agent / model", made distinct where two would read alike (agent
    "a / b" and agent "a" with model "b"; agent "all" and no agent) so that no two
    systems share a point or a column (`frontier.group_labels`); the systems in the
    order their first row comes. And each row's system's name."""
    system, first = group_codes(table, ("agent", "model"))
    systems = [(table.agent[i], table.model[i]) for i in first.tolist()]
    keys = [{"agent": a, "model": m} for a, m in systems]
    shown = group_labels(keys, sep=" / ")
    labels = np.empty(len(shown), dtype=object)
    labels[:] = shown
    return dict(zip(systems, shown, strict=True)), labels[system]


def _named(groups: list[dict[str, Any]], names: dict[System, str]) -> list[dict[str, Any]]:
    """The groups (of metrics by agent and model), each with its system's name as
    ``system``, which `_label` and the HTML tables show: every table, plot and column
    then names a system alike."""
    for g in groups:
        system = (g.get("agent"), g.get("model"))
        if system in names:
            g["system"] = names[system]
    return groups


def _system_table(table: TrialTable, labels: Labels) -> TrialTable:
    """The table with each row's system name (`_systems`) as its ``agent``: grouped by
    agent, it has one group per system, named as the report names it."""
    return dataclasses.replace(table, agent=labels)


def _passed(table: TrialTable) -> npt.NDArray[np.bool_]:
    """Each row's `Trial.passed`: a success that is no infra error."""
    return table.success & ~table.infra_error


def _variant_is(table: TrialTable, test: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
    """The rows whose variant passes ``test``, decided once per distinct variant."""
    variants, codes = table.codes("variant")
    return np.array([test(str(v)) for v in variants.tolist()], dtype=bool)[codes]


# --------------------------------------------------------------------------- tables


def _errors(types: dict[str, int] | None) -> str:
    """Failed calls: the total and the three most common types (all are in the
    histogram); a dash where no AST grade counted them (the notes say why)."""
    if types is None:
        return "–"
    if not types:
        return "0"
    top = sorted(types.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = ", ".join(f"{k} {v}" for k, v in top[:3]) + (", …" if len(top) > 3 else "")
    return f"{sum(types.values())} ({shown})"


def _tool_section(groups: list[dict[str, Any]], scope: str) -> dict[str, Any] | None:
    rows = [
        [
            _label(g),
            (g["tool_use"]["ast_match_rate"] or {}).get("per_trial"),
            g["tool_use"].get("milestone_score"),
            g["tool_use"].get("minefield_hit_rate"),
            g["tool_use"].get("action_precision"),
            g["tool_use"].get("action_recall"),
            _errors(g["tool_use"]["error_types"]),
        ]
        for g in groups
        if g.get("tool_use")
    ]
    if not rows:
        return None
    return {
        "key": "tool_calls",
        "title": f"Tool calls and trajectories — {scope}",
        "note": "Errors: failed tool calls and their most common namespaced types (all of "
        "them in the histogram, where there is one).",
        "columns": [
            "agent",
            "AST match",
            "milestones",
            "minefield hits",
            "precision",
            "recall",
            "errors",
        ],
        "rows": rows,
    }


def _recovery_rate(rate: dict[str, Any]) -> str:
    """``value [lo, hi] (count/trials)``, or a dash for a rate over no trial."""
    if rate.get("value") is None:
        return "–"
    ci = rate.get("ci95")
    shown = " [{}, {}]".format(*bounds(ci[0], ci[1], 3)) if ci else ""
    return f"{rate['value']:.3f}{shown} ({rate['count']}/{rate['n_trials']})"


def _recovery_section(groups: list[dict[str, Any]], scope: str) -> dict[str, Any] | None:
    recs = [(g, g["recovery"]) for g in groups if g.get("recovery")]
    if not any(r["with_tool_error"]["count"] for _, r in recs):
        return None
    rows = [
        [
            _label(g),
            _recovery_rate(r["with_tool_error"]),
            _recovery_rate(r["recovered"]),
            _recovery_rate(r["success_with_recovery"]),
            _recovery_rate(r["success_without_recovery"]),
            r["recovery_ratio"],
            ", ".join(
                f"{k} {v['in_successful']}/{v['in_failed']}" for k, v in r["error_types"].items()
            )
            or "–",
        ]
        for g, r in recs
    ]
    return {
        "key": "recovery",
        "title": f"Recovery from tool errors — {scope}",
        "note": "HAL (Kapoor et al. 2025): agents that fixed a tool-call error mid-run were "
        "1.5 to 4 times more likely to succeed. Recovered: every tool error was followed by a "
        "successful call of the same tool or an explicit recover decision. Rates are task "
        "averages with their 95% interval and (count/trials); error types are counted in "
        "successful/failed trials. A dash: no trial in that group (docs/metrics.md).",
        "columns": [
            "agent",
            "with a tool error",
            "recovered",
            "success, recovered",
            "success, not recovered",
            "ratio",
            "errors by type (successes/failures)",
        ],
        "rows": rows,
    }


def _fault_recovery_section(
    table: TrialTable, facts: Facts, names: dict[System, str], seed: int
) -> dict[str, Any] | None:
    # Tools fail on purpose in the fault variants: where recovering (or not) shows most.
    faulty = _variant_is(table, lambda v: v.startswith("fault:"))
    if not faulty.any():
        return None
    measured = metrics_of_columns(
        table.take(faulty), facts.take(faulty), k=[1], by=("agent", "model"), seed=seed
    )
    groups = measured.to_dict()["groups"]
    return _recovery_section(_named(groups, names), "fault variants (tools fail on purpose)")


def _missed(control: dict[str, Any]) -> Any:
    """Missed confirmations, and how many trials' counts they rest on when not all
    trials have them (`formats.counted_trials`)."""
    value, some = control.get("missed_confirmation"), counted_trials(control)
    return f"{value:.3f}{some}" if some else value


def _control_section(groups: list[dict[str, Any]], scope: str) -> dict[str, Any] | None:
    rows = [
        [_label(g)]
        + [
            g["control"].get(k)
            for k in ("accuracy", "over_refusal", "under_refusal", "unnecessary_ask")
        ]
        + [_missed(g["control"]), g["control"].get("n")]
        for g in groups
        if g.get("control")
    ]
    if not rows:
        return None
    return {
        "key": "control",
        "title": f"Control decisions — {scope}",
        "note": "Over-refusal: should act, refused or escalated. Under-refusal: should "
        "refuse or escalate, acted. Both directions are always shown together.",
        "columns": [
            "agent",
            "accuracy",
            "over-refusal",
            "under-refusal",
            "unnecessary ask",
            "missed confirmation",
            "trials",
        ],
        "rows": rows,
    }


def _turns_section(groups: list[dict[str, Any]], scope: str) -> dict[str, Any] | None:
    rows = [
        [
            _label(g),
            f"turn {r['turn']}",
            _pct(r["pass_rate"]),
            _ci(r["ci95"]),
            r["n_trials"],
            r["n_tasks"],
            r["n_unknown"],
        ]
        for g in groups
        if g.get("turns")
        for r in g["turns"]["per_turn"]
    ]
    if not rows:
        return None
    return {
        "key": "turns",
        "title": f"Checkpoints held per user turn — {scope} (BFCL V3 multi-turn)",
        "note": "For each user turn, the share of trials whose checkpoint held (the state "
        "when the agent handed the turn back, and the calls the turn had to contain), "
        "averaged over tasks, with its 95% interval (tasks as clusters). A trial that "
        "ended in an error or a timeout fails the turn it ended in and the later ones, "
        "as the success rate counts it. Unknown: no state was recorded at that turn, or "
        "the trial ended in an error with no record of its turns."
        # A dash says why (docs/reports.md, "Figures nobody measured").
        + "".join(f" Not measured: {line}." for line in turn_note_lines(groups, ["system"])),
        "columns": ["agent", "turn", "held", "95% interval", "trials", "tasks", "unknown"],
        "rows": rows,
    }


def _ci(ci: list[float] | None) -> str:
    return "–" if ci is None else interval(ci)


def _reliability_section(rel: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not rel:
        return None
    return {
        "key": "reliability",
        "title": "Reliability (Rabanser et al. 2026)",
        "note": f"Per configuration; {reliability_scope(rel)}. Robustness = "
        "min(acc_perturbed / acc_base, 1); consistency over successful runs; ± one SE, or "
        "(each of n) where every task has the same value and there is no spread to "
        "estimate one from.",
        "columns": [
            "configuration",
            *(name for _, name in RELIABILITY_BARS),
            "calibration (1−ECE)",
            "safety compliance",
        ],
        "rows": [
            [
                _label(r),
                *(_est(r.get(key)) for key, _ in RELIABILITY_BARS),
                (r.get("predictability") or {}).get("calibration"),
                (r.get("safety") or {}).get("compliance"),
            ]
            for r in rel
        ],
    }


def _validity_section(
    table: TrialTable,
    warnings: list[str],
    scope: str,
    found: tuple[str, NullAgentCheck] | None = None,
) -> dict[str, Any]:
    """The null agent's score (of a SOURCE's null agent, else of the run ``found`` by the
    comparison, named, as record line 5 says it), the tasks no agent passed, and the
    metrics' warnings, of the base-variant rows ``table``."""
    by_agent = [sub for _, sub in table.groups(["agent"])] if len(table) else []
    rows: list[list[Any]] = []
    null = [sub for sub in by_agent if sub.agent[0] in _NULL_AGENTS]
    named: tuple[str, NullAgentCheck] | None = None
    if null:
        named = ("null agent score", null_agent_check(null[0]))
    elif found is not None and found[1].score is not None:
        # Not among the SOURCEs: the run the comparison's record scores (line 5).
        named = (f"null agent score ({found[0]}, on the shared tasks)", found[1])
    if named is not None:
        check, result = named
        rows.append(
            [
                check,
                _pct(result.score),
                ", ".join(result.tasks_passed) or "none — every task needs the agent to act",
            ]
        )
    else:
        rows.append(
            ["null agent score", "not run", "run builtin:null to see what doing nothing earns"]
        )
    never = never_passed_tasks(by_agent)
    rows.append(["never passed by any agent", str(len(never)), ", ".join(never) or "none"])
    rows += [["metrics warning", "", w] for w in warnings]
    return {
        "key": "validity",
        "title": f"Validity checks — {scope}",
        "note": "Tasks a do-nothing agent passes are outcome-validity defects; tasks no "
        "agent ever passes are most often broken tasks.",
        "columns": ["check", "value", "tasks"],
        "rows": rows,
    }


# --------------------------------------------------------------------------- figures' data


def passk_curves(groups: list[dict[str, Any]], ks: Sequence[int]) -> list[dict[str, Any]]:
    """`figures.passk_figure`'s curves from ``agentgauge.metrics/1`` groups, one per
    agent and model (the report's and the viewer's pass@k plots)."""
    return [
        {
            "label": _label(g),
            "ks": list(ks),
            **{
                key: [g.get(key, {}).get(str(k)) for k in ks]
                for key in ("pass_at_k", "pass_at_k_se", "pass_hat_k", "pass_hat_k_se")
            },
        }
        for g in groups
    ]


def _frontier(
    table: TrialTable, groups: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """A point per system (agent and model, and source where two share them), as the
    outcome table has a row per system; ``table`` is `_system_table`'s."""
    frontier = frontier_from_table(table, by=("agent",)).to_dict()
    se = {_label(g): success_se_of(g) for g in groups}  # `_named` groups, as the table
    # Each point's error bar is the interval the outcome table prints for it.
    ci = {_label(g): (g.get("success_rate") or {}).get("ci95") for g in groups}
    points = [{**p, "dominated_by": None} for p in frontier["frontier"]] + [
        {**p, "dominated_by": ", ".join(p["dominated_by"])} for p in frontier["dominated"]
    ]
    for p in points:
        p["success_se"] = se.get(p["label"])
        p["ci95"] = ci.get(p["label"])
    # An agent whose cost is unknown is left off the plot, never drawn at $0, and named.
    unpriced = [
        f"{p['label']}: cost {unpriced_label(p['missing'], p['n_trials'])}"
        for p in frontier["unpriced"]
    ]
    return points, unpriced


def _horizon(
    base: TrialTable, labels: Labels, seed: int
) -> tuple[list[dict[str, Any]], str | None]:
    """A fit per system, as the outcome table has a row per system: of the base-variant
    rows ``base`` and their systems' names ``labels`` (`_systems`)."""
    timed = ~np.isnan(base.human_minutes)
    if not timed.any():
        return [], "No task in these runs records human minutes, so no time horizon is fitted."
    rates: dict[tuple[str, str], list[int]] = {}
    minutes: dict[str, float] = {}
    for system, task, passed, taken in zip(
        labels[timed].tolist(),
        base.task_id[timed].tolist(),
        _passed(base)[timed].tolist(),
        base.human_minutes[timed].tolist(),
        strict=True,
    ):
        c = rates.setdefault((system, task), [0, 0])
        c[0] += passed
        c[1] += 1
        minutes[task] = float(taken or 0.0)
    try:
        fitted = horizon(
            _system_table(base.take(timed), labels[timed]),
            bootstrap=HORIZON_BOOTSTRAP,
            seed=seed,
            by="agent",
        ).to_dict()["groups"]
    except InputError as exc:  # data the fit refuses (a task under two families)
        # The rest of the report does not need the fit: say why this section is empty.
        return [], f"No time horizon fitted: {exc.reason}"
    out = []
    for g in fitted:
        agent = str(g.get("agent"))
        g["label"] = agent
        g["minutes_range"] = g["task_minutes"]
        g["tasks"] = [
            {"task_id": task, "minutes": minutes[task], "rate": c / n}
            for (a, task), (c, n) in rates.items()
            if a == agent
        ]
        out.append(g)
    return out, None


def _task_cells(
    base: TrialTable, labels: Labels, anchors: dict[tuple[str, str], str]
) -> list[dict[str, Any]]:
    """Heatmap rows: per task, per system (its column, named as in `_systems`)
    ``{k, n, rate, flaky, anchor}``, of the base-variant rows ``base``."""
    counts: dict[tuple[str, str], list[int]] = {}
    tasks: dict[str, dict[str, Any]] = {}
    agents: dict[str, None] = {}
    for agent, task, family, minutes, passed in zip(
        labels.tolist(),
        base.task_id.tolist(),
        base.family.tolist(),
        base.human_minutes.tolist(),
        _passed(base).tolist(),
        strict=True,
    ):
        agents.setdefault(agent)
        if task not in tasks:
            shown = None if math.isnan(minutes) else minutes
            tasks[task] = {"task_id": task, "family": family, "human_minutes": shown}
        c = counts.setdefault((task, agent), [0, 0])
        c[0] += passed
        c[1] += 1
    rows = []
    for task_id, row in sorted(tasks.items()):
        cells: dict[str, dict[str, Any] | None] = {}
        for agent in agents:
            got = counts.get((task_id, agent))
            cells[agent] = (
                None
                if got is None
                else {
                    "k": got[0],
                    "n": got[1],
                    "rate": got[0] / got[1],
                    "flaky": 0 < got[0] < got[1],
                    "anchor": anchors.get((agent, task_id)),
                }
            )
        rows.append({**row, "cells": cells})
    return rows


def _transcripts(
    base: TrialTable, labels: Labels, pick: Pick, prefix: str
) -> tuple[list[dict[str, Any]], dict[str, int], dict[tuple[str, str], str]]:
    """Per system (named as in `_systems`), its failing tasks on the base variant — flips
    first, then always-failing — one failing trial each, capped at `TRANSCRIPTS_PER_AGENT`.

    The cells (agent, model, task, variant; ordered as `explain.failure_rows` orders
    them) are counted from the columns of the base-variant rows ``base``; only the
    failing trials of the cells shown are built (``pick``, by their rows of ``base``):
    the first with its transcript, the rest without, for why each failed."""
    passed = _passed(base)
    cell, first = group_codes(base, ("agent", "model", "task_id", "variant"))
    n = np.bincount(cell, minlength=first.size).tolist()
    failed = np.bincount(cell[~passed], minlength=first.size).tolist()
    key = [(base.agent[i], base.model[i], base.task_id[i], base.variant[i]) for i in first.tolist()]
    system = labels[first].tolist()
    cells = [c for c in range(first.size) if failed[c]]
    cells.sort(key=lambda c: (-failed[c], str(key[c][0]), key[c][2], key[c][3]))
    flipped = {key[c][:3] for c in cells if failed[c] < n[c]}
    ordered = sorted(cells, key=lambda c: (system[c], key[c][:3] not in flipped))
    shown_cells: list[int] = []
    more: dict[str, int] = {}
    shown: dict[str, int] = {}
    for c in ordered:
        agent = system[c]
        if shown.get(agent, 0) >= TRANSCRIPTS_PER_AGENT:
            more[agent] = more.get(agent, 0) + 1
            continue
        shown[agent] = shown.get(agent, 0) + 1
        shown_cells.append(c)
    # Each shown cell's failing rows, in order: the first is the one shown.
    wanted = np.zeros(first.size, dtype=bool)
    wanted[shown_cells] = True
    failing: dict[int, list[int]] = {}
    for row in np.flatnonzero(~passed & wanted[cell]).tolist():
        failing.setdefault(int(cell[row]), []).append(row)
    views = [failing[c][0] for c in shown_cells]
    rest = [r for c in shown_cells for r in failing[c][1:]]
    built = dict(zip(views, pick(views, True), strict=True))
    if rest:
        built.update(zip(rest, pick(rest, False), strict=True))
    chosen: list[dict[str, Any]] = []
    anchors: dict[tuple[str, str], str] = {}
    for c in shown_cells:
        anchor = f"{prefix}-t{len(chosen)}"
        anchors[(system[c], key[c][2])] = anchor
        flip = key[c][:3] in flipped
        classes: dict[str, int] = {}
        for row in failing[c]:
            why = error_class(built[row])
            classes[why] = classes.get(why, 0) + 1
        chosen.append(
            {
                "anchor": anchor,
                "agent": system[c],
                "flip": flip,
                "summary": f"{failed[c]} of {counted(n[c], 'trial')} failed"
                + (" (passed on the others)" if flip else ""),
                "classes": ", ".join(f"{k} ×{v}" for k, v in classes.items()),
                "view": trial_view(built[failing[c][0]]),
            }
        )
    return chosen, more, anchors


def _variant_rows(
    table: TrialTable, facts: Facts, names: dict[System, str], seed: int
) -> list[dict[str, Any]]:
    measured = metrics_of_columns(table, facts, k=[1], by=("agent", "model", "variant"), seed=seed)
    groups = measured.to_dict()
    _named(groups["groups"], names)
    return [
        {
            "label": _label(g),
            "variant": str(g.get("variant")),
            "value": g["success_rate"]["value"],
            "se": success_se_of(g),
            "ci95": g["success_rate"]["ci95"],
            "n_trials": g["n_trials"],
            # "(236/236)" where the SE is 0, as every table shows such a rate.
            "count": no_spread_count(success_se_of(g), g["n_successes"], g["n_trials"]),
        }
        for g in groups["groups"]
    ]


def _reliability_bars(rel: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "label": _label(r),
            "metric": name,
            "value": (r.get(key) or {}).get("value"),
            "se": (r.get(key) or {}).get("se"),
        }
        for r in rel
        for key, name in RELIABILITY_BARS
    ]


def _suite_report(name: str, suite: _Suite, index: int, inputs: ReportInputs) -> SuiteReport:
    """One suite's part of the report, from its columns: only the trials whose
    transcripts it shows are built (`_transcripts`)."""
    ks = list(inputs.ks)
    table, facts = suite.table, suite.facts
    # Each system's base variant, or all its trials when it has none (docs/show.md).
    chosen = system_base_scope(table)
    scope = chosen.scope
    names, labels = _systems(table)
    if chosen.rows.all():
        base_columns = (table, facts)
    else:  # the base rows are some of the table's, in their order
        base_columns = (table.take(chosen.rows), facts.take(chosen.rows))
    base, base_labels = base_columns[0], labels[chosen.rows]
    at = np.flatnonzero(chosen.rows)  # each base row's row of ``table``

    def measured(on: tuple[TrialTable, Facts], k: list[int]) -> Any:
        return metrics_of_columns(*on, k=k, by=("agent", "model"), seed=inputs.seed)

    on_base = measured(base_columns, ks)
    # Reliability reads every variant: the same rows when all are base ones.
    headline = on_base.to_dict()
    full = (on_base if base is table else measured((table, facts), ks)).to_dict()
    groups = _named(headline["groups"], names)
    rel = _named(full.get("reliability") or [], names)
    sections = [
        s
        for s in (
            _tool_section(groups, scope),
            _control_section(groups, scope),
            _recovery_section(groups, scope),
            _fault_recovery_section(table, facts, names, inputs.seed),
            _turns_section(groups, scope),
            _reliability_section(rel),
        )
        if s is not None
    ]
    # The comparison's null agent belongs to the suite of the tasks it compared.
    compared = inputs.compared
    shared = compared is not None and bool(_task_ids(compared[1].table) & _task_ids(table))
    found = inputs.null_agent if shared else None
    warned = list(headline.get("warnings", []))
    sections.append(_validity_section(base, warned, scope, found))
    # The curves run over every k the trials allow (pass^k of a task needs k ≤ its
    # trials), not only the table's few.
    cell, _ = group_codes(base, ("agent", "model", "task_id"))
    most = int(np.bincount(cell).max()) if len(base) else 1
    curve_ks = list(range(1, min(most, MAX_CURVE_K) + 1))
    # The curves read the outcomes only: no behaviour section measured again.
    curves = outcome_metrics(base, k=curve_ks, by=("agent", "model"), seed=inputs.seed)

    def pick(rows: Sequence[int], events: bool) -> list[Trial]:
        return suite.pick([int(at[r]) for r in rows], events)

    transcripts, more, anchors = _transcripts(base, base_labels, pick, f"s{index}")
    points, unpriced = _frontier(_system_table(base, base_labels), groups)
    horizon_groups, horizon_note = _horizon(base, base_labels, inputs.seed)
    several = len(table.codes("variant")[0]) > 1
    return SuiteReport(
        name=name,
        scope=scope,
        metrics=headline,
        ks=ks,
        sections=sections,
        passk=passk_curves(_named(curves.to_dict()["groups"], names), curve_ks),
        frontier=points,
        unpriced=unpriced,
        horizon=horizon_groups,
        horizon_note=horizon_note,
        tasks=_task_cells(base, base_labels, anchors),
        variants=_variant_rows(table, facts, names, inputs.seed) if several else [],
        reliability=_reliability_bars(rel),
        reliability_notes=reliability_note_lines(rel),
        confusion=[
            {"label": _label(g), "counts": g["control"]["confusion"]}
            for g in groups
            if g.get("control")
        ],
        tool_errors={
            _label(g): dict(g["tool_use"]["error_types"])
            for g in groups
            if g.get("tool_use") and g["tool_use"]["error_types"]
        },
        tool_errors_unknown=[
            f"{_label(g)}: {g['null_reasons'].get('tool_use.error_types', 'not measured')}"
            for g in groups
            if g.get("tool_use") and g["tool_use"]["error_types"] is None
        ],
        transcripts=transcripts,
        transcripts_more=more,
        scope_notes=[
            f"{names[system]} has no base-variant trial: its rows of the base-variant "
            f"tables and figures use all its trials ({', '.join(variants)})"
            for system, variants in chosen.fallback.items()
        ],
    )


# --------------------------------------------------------------------------- comparison


def capability_differences(a: TrialTable, b: TrialTable, seed: int = 0) -> list[dict[str, Any]]:
    """The paired comparison B − A within each capability (or family, when no task has a
    capability), on the rows the whole comparison reads: ``{by, label, n_tasks, rate_a,
    rate_b, diff, ci}``; ``by`` says which, and ``ci`` is ``None`` for a capability with
    one shared task (Miller 2024)."""
    a, b = select_rows(a), select_rows(b)
    key = "capability" if any(c is not None for c in b.capability) else "family"
    labels = sorted({str(v) for v in getattr(b, key) if v is not None})
    rows = []
    for label in labels:
        sub_a = a.take(getattr(a, key).astype(str) == label)
        sub_b = b.take(getattr(b, key).astype(str) == label)
        try:
            c = compare(sub_a, sub_b, seed=seed)
        except ValueError:  # no shared task in this capability
            continue
        rows.append(
            {
                "by": key,
                "label": label,
                "n_tasks": c.n_tasks,
                "rate_a": c.rate_a,
                "rate_b": c.rate_b,
                "diff": c.mean_diff,
                "ci": None if c.ci95 is None else [c.ci95[0], c.ci95[1]],
            }
        )
    return rows


#: The record's headline lists every capability; the report keeps it short and shows
#: them in a table instead. The list runs from ", by capability:" to the start of A's
#: part ("; A ") or the end of the line (the format of the record's `_system_rates`).
_BY_CAPABILITY = re.compile(r", by capability: .*?(?=; A |$)")


def _short_record(record: Sequence[str], has_table: bool) -> list[str]:
    out = []
    for line in record:
        if line.startswith("Headline:") and has_table:
            # With many capabilities the record already names only the largest differences.
            short, listed = _BY_CAPABILITY.subn("", line)
            if listed:
                line = short + " (per capability: the table below)"
        out.append(line)
    return out


def _source_tags(sources: Sequence[TrialSource]) -> list[str]:
    """A short name per source that no other source has: its run (``run v1``), else the
    SOURCE as given (``runs.jsonl``, ``a.db:v1`` when two stores hold a run ``v1``), else
    that and its place among the sources (``runs.jsonl #2``, a source given twice)."""
    tags = [f"run {s.run.run_id}" if s.run is not None else s.label for s in sources]
    tags = [s.label if tags.count(tag) > 1 else tag for s, tag in zip(sources, tags, strict=True)]
    return [f"{tag} #{i + 1}" if tags.count(tag) > 1 else tag for i, tag in enumerate(tags)]


@dataclass(frozen=True)
class _Suite:
    """One suite's trials as columns: its sources' tables (each system that several
    of them record told apart by source, `_suite_columns`) and facts, row for row, one
    source after another, and a way to build the trials of some rows only."""

    table: TrialTable
    facts: Facts
    pick: Pick
    """The trials at these rows (``events``: with their transcripts), named as the table."""


def _renamed(owners: dict[System, list[int]], tags: Sequence[str]) -> dict[tuple[int, System], str]:
    """The model each system that several sources record reads in each of them
    (``owners``: each system's sources): ``gpt (run v1)``, ``(run v1)`` without a model,
    never a model some system already has."""
    taken = set(owners)
    renamed: dict[tuple[int, System], str] = {}
    for (agent, model), who in owners.items():
        if len(who) < 2:
            continue
        for i in who:
            new = f"{model} ({tags[i]})" if model else f"({tags[i]})"
            n, unique = 1, new
            while (agent, unique) in taken:  # a model already named so
                n += 1
                unique = f"{new} #{n}"
            taken.add((agent, unique))
            renamed[(i, (agent, model))] = unique
    return renamed


def _suite_columns(sources: Sequence[TrialSource], tags: Sequence[str]) -> _Suite:
    """The sources' columns as one suite's, each system (agent and model) that several
    sources record told apart by source: its model reads ``gpt (run v1)`` (``(run v1)``
    without a model) in each of them, so that two runs of one agent and model stay two
    systems in every table and plot instead of being pooled into one. A single source's
    columns, and systems only one source records, are unchanged. No trial is built."""
    owners: dict[System, list[int]] = {}
    held: list[tuple[npt.NDArray[np.intp], list[System]]] = []
    for i, src in enumerate(sources):
        system, first = group_codes(src.table, ("agent", "model"))
        systems = [(src.table.agent[r], src.table.model[r]) for r in first.tolist()]
        held.append((system, systems))
        for s in systems:
            owners.setdefault(s, []).append(i)
    renamed = _renamed(owners, tags)
    tables = []
    for i, (src, (system, systems)) in enumerate(zip(sources, held, strict=True)):
        table = src.table
        if any((i, s) in renamed for s in systems):
            models = np.empty(len(systems), dtype=object)
            models[:] = [renamed.get((i, s), s[1]) for s in systems]
            table = dataclasses.replace(table, model=models[system])
        tables.append(table)
    starts = np.cumsum([0, *(len(t) for t in tables)])

    def pick(rows: Sequence[int], events: bool) -> list[Trial]:
        where = np.searchsorted(starts, np.asarray(rows, dtype=np.intp), side="right") - 1
        asked: dict[int, list[int]] = {}
        for row, i in zip(rows, where.tolist(), strict=True):
            asked.setdefault(i, []).append(int(row - starts[i]))
        built = {i: iter(sources[i].pick(local, events=events)) for i, local in asked.items()}
        out = []
        for i in where.tolist():
            t = next(built[i])
            model = renamed.get((i, (t.agent, t.model)))
            out.append(t if model is None else t.model_copy(update={"model": model}))
        return out

    if len(sources) == 1:
        return _Suite(tables[0], sources[0].facts, pick)
    table = TrialTable(
        **{
            f.name: np.concatenate([getattr(t, f.name) for t in tables])
            for f in dataclasses.fields(TrialTable)
        }
    )
    _refuse_two_families(table, starts, sources)
    facts = Facts({name: np.concatenate([src.facts[name] for src in sources]) for name in FACTS})
    return _Suite(table, facts, pick)


def _refuse_two_families(
    table: TrialTable, starts: npt.NDArray[np.intp], sources: Sequence[TrialSource]
) -> None:
    """Refuse sources pooled into one suite that give a shared task two families, naming
    both sources and families, as ``compare`` does (`metrics.compare.FamilyClash`):
    each source names one (its reader refuses two), so the two rows are two sources'."""
    clash = two_families(table)
    if clash is None:
        return
    a, b = clash
    src_a, src_b = (sources[int(np.searchsorted(starts, r, side="right")) - 1] for r in clash)
    first, second = quoted((str(table.family[a]), str(table.family[b])))
    raise InputError(
        f"task {str(table.task_id[a])!r} is in family {first} in {src_a.label} and in "
        f"family {second} in {src_b.label}: the report pools sources that share task ids "
        "into one suite, whose intervals cluster each task by its family, so both must "
        "give it the same one (or one of them none)"
    )


def _task_ids(table: TrialTable) -> set[str]:
    return {str(t) for t in table.codes("task_id")[0].tolist()}


def group_by_suite(sources: Sequence[TrialSource]) -> list[tuple[str, list[Trial]]]:
    """Sources that record the same suite, or share a task id, in one group (two JSONL
    imports of one benchmark each record their file as the suite), named by their
    suites; the groups in the order their first source was given. Within a group, an
    agent and model that several sources record is told apart by source
    (`_suite_columns`). Builds every trial: the report reads the columns instead.
    """
    out = []
    for name, members, tags in _suite_groups(sources):
        suite = _suite_columns([sources[i] for i in members], tags)
        out.append((name, suite.pick(range(len(suite.table)), True)))
    return out


def _suite_groups(sources: Sequence[TrialSource]) -> list[tuple[str, list[int], list[str]]]:
    """`group_by_suite`'s groups: each group's name, its sources (their places in
    ``sources``) and their tags (`_source_tags`). Reads the sources' task ids from their
    columns, building no trial."""
    names = [src.run.suite if src.run is not None and src.run.suite else None for src in sources]
    tasks = [_task_ids(src.table) for src in sources]
    group = list(range(len(sources)))

    def root(i: int) -> int:
        while group[i] != i:
            i = group[i]
        return i

    for i in range(len(sources)):
        for j in range(i):
            if (names[i] is not None and names[i] == names[j]) or tasks[i] & tasks[j]:
                group[root(i)] = root(j)
    tags = _source_tags(sources)
    out: dict[int, tuple[list[str], list[int]]] = {}
    for i in range(len(sources)):
        suites, members = out.setdefault(root(i), ([], []))
        name = names[i] or "trials without a suite"
        if name not in suites:
            suites.append(name)
        members.append(i)
    return [
        (", ".join(suites), members, [tags[i] for i in members]) for suites, members in out.values()
    ]


def build_report(inputs: ReportInputs) -> ReportData:
    """Everything the HTML and Markdown reports show, from the given sources."""
    suites = []
    for i, (name, members, tags) in enumerate(_suite_groups(inputs.sources)):
        suite = _suite_columns([inputs.sources[j] for j in members], tags)
        suites.append(_suite_report(name, suite, i, inputs))
    capabilities = (
        capability_differences(inputs.compared[0].table, inputs.compared[1].table, inputs.seed)
        if inputs.compared is not None and inputs.comparison is not None
        else []
    )
    runs = [
        src.run.model_dump(
            include={"run_id", "agent", "model", "suite", "suite_version", "n_trials", "created_at"}
        )
        for src in inputs.sources
        if src.run is not None
    ]
    notes = list(inputs.notes)
    for s in suites:
        named = f"{s.name}: " if len(suites) > 1 else ""
        notes += [f"{named}{line}" for line in s.scope_notes]
        notes += [f"{s.name}: {w}" if len(suites) > 1 else w for w in s.metrics.get("warnings", [])]
        notes += [f"cost frontier leaves out {u}" for u in s.unpriced]
        # A dash in a table says why here (docs/reports.md, "Figures nobody measured").
        # Trials left out of a figure for evidence it cannot read (`agentgauge.evidence`)
        # leave it measured over the rest: said without "not measured".
        notes += [
            f"{named}{'' if ': left out' in line else 'not measured: '}{line}"
            for line in null_reason_lines(s.metrics)
        ]
        notes += [f"{named}reliability: {line}" for line in s.reliability_notes]
    return ReportData(
        title=inputs.title,
        runs=runs,
        record=_short_record(inputs.record, bool(capabilities)),
        comparison=inputs.comparison,
        capabilities=capabilities,
        suites=suites,
        notes=notes,
    )


def markdown_summary(data: ReportData) -> str:
    """Each suite's outcome table (base variant) and sections, and the record, as Markdown."""

    def esc(text: Any) -> str:
        return markdown_text(text)

    def num(x: Any) -> str:
        if x is None:
            return "–"
        return number(x, 3, grouped=False) if isinstance(x, float) else esc(x)

    lines = [f"# {esc(data.title)}", ""]
    for note in data.notes:
        lines += [f"> {esc(note)}", ""]
    for suite in data.suites:
        ks = suite.ks
        lines += [f"## {esc(suite.name)}: outcome — {suite.scope}", ""]
        head = ["group", "success rate ± SE", "95% CI", "T / N"]
        head += [f"pass^{k}" for k in ks] + ["cost / trial", "cost of pass"]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for g in suite.metrics["groups"]:
            sr, se = g["success_rate"], success_se_of(g)
            row = [
                esc(_label(g)),
                f"{_pct(sr['value'])} "
                + (no_spread_count(se, g["n_successes"], g["n_trials"]) or f"± {_pct(se)}"),
                "–" if not sr["ci95"] else f"{interval(sr['ci95'])} ({sr['ci_method']})",
                f"{g['n_tasks']} / {g['n_trials']}",
            ]
            row += [
                _pass_k(
                    g["pass_hat_k"].get(str(k)),
                    g["pass_hat_k_se"].get(str(k)),
                    g["n_tasks"],
                )
                for k in ks
            ]
            for key in ("per_trial", "cost_of_pass"):
                unknown = g["cost"][key] is None and g["cost"]["missing"]
                row.append(
                    unpriced_label(g["cost"]["missing"], g["n_trials"])
                    if unknown
                    else money(g["cost"][key])
                )
            lines.append("| " + " | ".join(row) + " |")
        for s in suite.sections:
            lines += ["", f"### {esc(s['title'])}", ""]
            if s.get("note"):
                lines += [esc(s["note"]), ""]
            lines += ["| " + " | ".join(esc(c) for c in s["columns"]) + " |"]
            lines += ["|" + "---|" * len(s["columns"])]
            lines += ["| " + " | ".join(num(c) for c in row) + " |" for row in s["rows"]]
        if suite.confusion:
            lines += ["", f"### Control confusion matrix (expected × taken) — {suite.scope}", ""]
            lines += ["| agent | expected | " + " | ".join(CONTROL_STATES) + " |"]
            lines += ["|---" * (len(CONTROL_STATES) + 2) + "|"]
            for m in suite.confusion:
                for expected, taken in m["counts"].items():
                    if sum(taken.values()):
                        counts = " | ".join(str(taken.get(t, 0)) for t in CONTROL_STATES)
                        lines.append(f"| {esc(m['label'])} | {esc(expected)} | {counts} |")
        lines.append("")
    if data.record:
        lines += ["## Comparison record", ""]
        lines += [f"{i}. {esc(line)}" for i, line in enumerate(data.record, start=1)]
    if data.capabilities:
        lines += [
            "",
            "| capability | tasks | A | B | B − A | 95% CI |",
            "|---|---|---|---|---|---|",
        ]
        for c in data.capabilities:
            # Decimals that tell the ends apart, as the HTML's interval (`bounds`).
            ends = None if c["ci"] is None else bounds(c["ci"][0], c["ci"][1], 1, scale=100)
            ci = "–" if ends is None else f"{ends[0]}% to {ends[1]}%"
            lines.append(
                f"| {esc(c['label'])} | {c['n_tasks']} | {_pct(c['rate_a'])} | "
                f"{_pct(c['rate_b'])} | {_pct(c['diff'])} | {ci} |"
            )
        if any(c["ci"] is None for c in data.capabilities):
            # As the HTML's caption says: the dash is not a figure nobody looked for.
            by = data.capabilities[0].get("by", "capability")
            lines += [
                "",
                f"– 95% CI: a {by} with one shared task has no interval (no spread "
                "between tasks to measure)",
            ]
    return "\n".join(lines) + "\n"
