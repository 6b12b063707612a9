"""Gather what a report shows from trials: the one place reports are assembled.

`build_report` turns one or more sources (runs) into a `ReportData` for the
HTML page and the Markdown summary: the outcome table per agent, tool use and
control decisions, reliability, the cost frontier, validity checks, per-task
counts, sample failing transcripts, and — given two of the sources — the
paired comparison with its nine-line record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgauge.api import metrics as compute_metrics
from agentgauge.display import markdown_text
from agentgauge.metrics.cost import unpriced_label
from agentgauge.metrics.frontier import frontier_from_table
from agentgauge.metrics.validity import never_passed_tasks, null_agent_check
from agentgauge.report.formats import money
from agentgauge.report.html import ReportData
from agentgauge.schema import Trial
from agentgauge.sources import TrialSource
from agentgauge.table import TrialTable

__all__ = ["ReportInputs", "build_report", "markdown_summary", "markdown_text"]

_NULL_AGENTS = ("null", "builtin:null")


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


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _est(d: dict[str, Any] | None) -> Any:
    if not d or d.get("value") is None:
        return None
    return d["value"]


def _event_rows(trial: Trial, limit: int = 60) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for e in trial.events[:limit]:
        if e.type == "message":
            rows.append({"kind": "message", "who": e.role, "text": e.content or ""})
        elif e.type == "tool_call":
            rows.append({"kind": "tool call", "who": e.name, "text": json.dumps(e.arguments)})
        elif e.type == "tool_result":
            text = e.content if isinstance(e.content, str) else json.dumps(e.content, default=str)
            rows.append(
                {
                    "kind": "tool error" if e.is_error else "tool result",
                    "who": e.name or "",
                    "text": text[:600],
                }
            )
        elif e.type == "control":
            rows.append({"kind": "control", "who": e.decision, "text": e.reason or ""})
    if len(trial.events) > limit:
        rows.append({"kind": "…", "who": "", "text": f"{len(trial.events) - limit} more events"})
    return rows


def _sample_transcripts(trials: Sequence[Trial], per_agent: int = 2) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: dict[str | None, int] = {}
    for t in trials:
        if t.success or t.agent in _NULL_AGENTS or seen.get(t.agent, 0) >= per_agent:
            continue
        seen[t.agent] = seen.get(t.agent, 0) + 1
        failed = [g.grader for g in t.grades if g.passed is False]
        out.append(
            {
                "title": f"{t.agent}: task {t.task_id}, trial {t.trial}, {t.variant} — failed "
                + (", ".join(failed) or t.error or "its check"),
                "events": _event_rows(t),
            }
        )
    return out


def _task_rows(trials: Sequence[Trial]) -> list[dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    counts: dict[tuple[str, str], list[int]] = {}
    labels: list[str] = []
    for t in trials:
        if t.variant != "base":
            continue
        label = str(t.agent)
        if label not in labels:
            labels.append(label)
        tasks.setdefault(
            t.task_id, {"task_id": t.task_id, "family": t.family, "human_minutes": t.human_minutes}
        )
        c = counts.setdefault((t.task_id, label), [0, 0])
        c[0] += int(bool(t.success))
        c[1] += 1
    rows = []
    for task_id, row in sorted(tasks.items()):
        cells: dict[str, str] = {}
        for label in labels:
            got = counts.get((task_id, label))
            cells[label] = "–" if got is None else f"{got[0]}/{got[1]}"
        rows.append({**row, "cells": cells})
    return rows


def build_report(inputs: ReportInputs) -> ReportData:
    """Everything the HTML and Markdown reports show, from the given sources."""
    trials = [t for src in inputs.sources for t in src.trials]
    base = [t for t in trials if t.variant == "base"] or trials
    headline = compute_metrics(base, k=inputs.ks, by=("agent", "model"), seed=inputs.seed)
    full = compute_metrics(trials, k=inputs.ks, by=("agent", "model"), seed=inputs.seed)
    data = headline.to_dict()
    data["reliability"] = full.to_dict().get("reliability")
    sections: list[dict[str, Any]] = []

    def label(g: dict[str, Any]) -> str:
        return " / ".join(str(g[k]) for k in ("agent", "model") if g.get(k)) or "all"

    tool_rows = [
        [
            label(g),
            (g["tool_use"]["ast_match_rate"] or {}).get("per_trial"),
            g["tool_use"].get("milestone_score"),
            g["tool_use"].get("minefield_hit_rate"),
            g["tool_use"].get("action_precision"),
            g["tool_use"].get("action_recall"),
            ", ".join(f"{k} {v}" for k, v in sorted(g["tool_use"]["error_types"].items())[:6])
            or "–",
        ]
        for g in data["groups"]
        if g.get("tool_use")
    ]
    if tool_rows:
        sections.append(
            {
                "title": "Tool calls and trajectories",
                "note": "Base variant. Error types are the graders' namespaced statuses.",
                "columns": [
                    "agent",
                    "AST match",
                    "milestone score",
                    "minefield hits",
                    "action precision",
                    "action recall",
                    "errors",
                ],
                "rows": tool_rows,
            }
        )
    control_rows = [
        [
            label(g),
            g["control"].get("accuracy"),
            g["control"].get("over_refusal"),
            g["control"].get("under_refusal"),
            g["control"].get("unnecessary_ask"),
            g["control"].get("missed_confirmation"),
            g["control"].get("n"),
        ]
        for g in data["groups"]
        if g.get("control")
    ]
    if control_rows:
        sections.append(
            {
                "title": "Control decisions",
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
                "rows": control_rows,
            }
        )
    states = ("act", "ask", "refuse", "stop", "confirm", "recover", "transfer")
    confusion_rows = [
        [label(g), expected, *[g["control"]["confusion"][expected][t] for t in states]]
        for g in data["groups"]
        if g.get("control")
        for expected in states
        if sum(g["control"]["confusion"][expected].values())
    ]
    if confusion_rows:
        sections.append(
            {
                "title": "Control confusion matrix (expected × taken)",
                "note": "Rows: the decision the task expects; columns: the decision taken.",
                "columns": ["agent", "expected", *states],
                "rows": confusion_rows,
            }
        )
    rel = data.get("reliability") or []
    if rel:
        sections.append(
            {
                "title": "Reliability (Rabanser et al. 2026)",
                "note": "Per configuration, over all variants: robustness = min(acc_perturbed / "
                "acc_base, 1); consistency over successful runs.",
                "columns": [
                    "configuration",
                    "trajectory consistency (dist)",
                    "trajectory consistency (seq)",
                    "resource consistency",
                    "prompt robustness",
                    "fault robustness",
                    "env robustness",
                    "calibration (1−ECE)",
                    "safety compliance",
                ],
                "rows": [
                    [
                        " / ".join(str(r[k]) for k in ("agent", "model") if r.get(k)) or "all",
                        _est(r["trajectory_consistency_dist"]),
                        _est(r["trajectory_consistency_seq"]),
                        _est(r["resource_consistency"]),
                        _est(r["prompt_robustness"]),
                        _est(r["fault_robustness"]),
                        _est(r["environment_robustness"]),
                        (r.get("predictability") or {}).get("calibration"),
                        (r.get("safety") or {}).get("compliance"),
                    ]
                    for r in rel
                ],
            }
        )
    table = TrialTable.from_trials(base)
    by_agent = [sub for _, sub in table.groups(["agent"])]
    validity: list[list[Any]] = []
    null = [sub for sub in by_agent if sub.agent[0] in _NULL_AGENTS]
    if null:
        check = null_agent_check(null[0])
        validity.append(
            [
                "null agent score",
                _pct(check.score),
                ", ".join(check.tasks_passed) or "none — every task needs the agent to act",
            ]
        )
    never = never_passed_tasks(by_agent)
    validity.append(["never passed by any agent", str(len(never)), ", ".join(never) or "none"])
    sections.append(
        {
            "title": "Validity checks",
            "note": "Tasks a do-nothing agent passes are outcome-validity defects; tasks no "
            "agent ever passes are most often broken tasks.",
            "columns": ["check", "value", "tasks"],
            "rows": validity,
        }
    )
    frontier = frontier_from_table(table, by=("agent",)).to_dict()
    points = [{**p, "dominated_by": None} for p in frontier["frontier"]] + [
        {**p, "dominated_by": ", ".join(p["dominated_by"])} for p in frontier["dominated"]
    ]
    # An agent whose cost is unknown is left off the plot, never drawn at $0, and named.
    frontier_notes = [
        f"cost frontier leaves out {p['label']}: cost {unpriced_label(p['missing'], p['n_trials'])}"
        for p in frontier["unpriced"]
    ]
    runs = [
        src.run.model_dump(
            include={"run_id", "agent", "model", "suite", "suite_version", "n_trials", "created_at"}
        )
        for src in inputs.sources
        if src.run is not None
    ]
    return ReportData(
        title=inputs.title,
        metrics=data,
        runs=runs,
        ks=list(inputs.ks),
        record=list(inputs.record),
        comparison=inputs.comparison,
        frontier=points,
        sections=sections,
        tasks=_task_rows(trials),
        transcripts=_sample_transcripts(trials),
        notes=list(inputs.notes) + list(data.get("warnings", [])) + frontier_notes,
    )


def markdown_summary(data: ReportData) -> str:
    """The report's outcome table, record and sections as Markdown."""

    def esc(text: Any) -> str:
        return markdown_text(text)

    def num(x: Any) -> str:
        if x is None:
            return "–"
        return f"{x:.3f}" if isinstance(x, float) else esc(x)

    lines = [f"# {esc(data.title)}", ""]
    for note in data.notes:
        lines += [f"> {esc(note)}", ""]
    ks = data.ks
    head = ["group", "success rate ± SE", "95% CI", "T / N"]
    head += [f"pass^{k}" for k in ks] + ["cost / trial", "cost of pass"]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for g in data.metrics["groups"]:
        sr = g["success_rate"]
        row = [
            esc(" / ".join(str(g[k]) for k in ("agent", "model", "variant") if g.get(k)) or "all"),
            f"{_pct(sr['value'])} ± {_pct(sr['se'])}",
            "–"
            if not sr["ci95"]
            else f"{_pct(sr['ci95'][0])}–{_pct(sr['ci95'][1])} ({sr['ci_method']})",
            f"{g['n_tasks']} / {g['n_trials']}",
        ]
        row += [num(g["pass_hat_k"].get(str(k))) for k in ks]
        for key in ("per_trial", "cost_of_pass"):
            unknown = g["cost"][key] is None and g["cost"]["missing"]
            row.append(
                unpriced_label(g["cost"]["missing"], g["n_trials"])
                if unknown
                else money(g["cost"][key])
            )
        lines.append("| " + " | ".join(row) + " |")
    if data.record:
        lines += ["", "## Comparison record", ""]
        lines += [f"{i}. {esc(line)}" for i, line in enumerate(data.record, start=1)]
    for s in data.sections:
        lines += ["", f"## {esc(s['title'])}", ""]
        if s.get("note"):
            lines += [esc(s["note"]), ""]
        lines += ["| " + " | ".join(esc(c) for c in s["columns"]) + " |"]
        lines += ["|" + "---|" * len(s["columns"])]
        lines += ["| " + " | ".join(num(c) for c in row) + " |" for row in s["rows"]]
    return "\n".join(lines) + "\n"
