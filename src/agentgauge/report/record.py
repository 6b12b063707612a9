"""The comparison record: nine lines that make a comparison credible.

In order: (1) systems with pinned versions; (2) task set, version, counts, split;
(3) trials per task and independence; (4) graders, rubric version, blocking
criteria, judge and its κ; (5) baselines; (6) headline metric per capability
with SE and CI; (7) paired difference, CI, p and verdict; (8) pass^k at the
deployment k and consistency; (9) cost per success and latency.

A line whose facts are missing says so ("judge κ not measured") rather than
disappearing: an absent line reads as "nothing to declare". The record is built
from a `Comparison` plus what the runs recorded about themselves
(`SystemInfo`); it does no I/O and renders as plain text or Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from agentgauge.components import side_components
from agentgauge.display import markdown_text
from agentgauge.metrics.baselines import Baseline, relative_to_human
from agentgauge.metrics.compare import BASE_SCOPE, Comparison, select_rows
from agentgauge.metrics.engine import GroupMetrics, compute_metrics
from agentgauge.metrics.validity import HeldoutUsage, NullAgentCheck
from agentgauge.model_calls import ModelCalls
from agentgauge.report.formats import (
    clusters_text,
    counted,
    difference_se,
    no_spread_count,
    number,
    percent,
    points_interval,
    shown_decimals,
    success_se,
)
from agentgauge.report.formats import money as _money
from agentgauge.schema import Run, Task, Trial
from agentgauge.table import TrialTable

if TYPE_CHECKING:
    from agentgauge.sources import GradeSummary
    from agentgauge.store.database import GradeVersion

__all__ = [
    "ComparisonRecord",
    "RecordLine",
    "SystemInfo",
    "agent_name",
    "build_record",
    "capability_rows",
    "grading_difference",
    "level_text",
    "p_text",
]

TITLES = (
    "Systems",
    "Tasks",
    "Trials",
    "Graders",
    "Baselines",
    "Headline",
    "Difference",
    "Reliability",
    "Cost",
)
_CI_METHOD = {
    "wilson": "Wilson",
    "wilson_design_effect": "Wilson on the design-effect-adjusted n",
    "normal": "normal",
}


@dataclass
class SystemInfo:
    """What one side of a comparison recorded about itself."""

    label: str
    """How the user named it (a SOURCE string, a run id)."""
    table: TrialTable
    """All its trials (the record applies the comparison's row selection itself)."""
    run: Run | None = None
    """The run header, when the trials came from a store."""
    tasks: list[Task] = field(default_factory=list)
    """The suite's tasks, when recorded (for rubric and blocking criteria)."""
    trials: Sequence[Trial] | None = None
    """The trials themselves, when at hand (for graders and judge models)."""
    grading: GradeVersion | None = None
    """The store's grade version these outcomes and grades are from."""
    count_model_calls: Callable[[], ModelCalls] | None = None
    """The trials' model calls summed up without their transcripts (a stored run's, in
    SQL); ``None``: read them from ``trials``."""

    summarize_grades: Callable[[], GradeSummary] | None = None
    """Its grading summed up without building its trials (a stored run's, in SQL);
    ``None``: read it from ``trials``."""

    def grade_summary(self) -> GradeSummary | None:
        """The graders and judge models of its grades, and whether any trial finished;
        ``None`` when neither the summary nor the trials are at hand."""
        if self.summarize_grades is not None:
            return self.summarize_grades()
        if self.trials is None:
            return None
        from agentgauge.sources import GradeSummary

        return GradeSummary.of_trials(self.trials)

    def model_calls(self) -> ModelCalls | None:
        """The served models and price sources of its model calls; ``None`` when neither
        the calls nor the trials are at hand."""
        if self.count_model_calls is not None:
            return self.count_model_calls()
        return None if self.trials is None else ModelCalls.of_trials(self.trials)

    def components(self) -> dict[str, Any]:
        """Its configuration as components (`agentgauge.components.side_components`):
        the run header's, the model its trials name, folded with the models its model
        calls were served by, and its agent. Line 1's model and the one-change rule
        both read this, so they cannot disagree."""
        calls = self.model_calls()
        return side_components(
            self.run,
            self.table.codes("model")[0],
            calls.served if calls is not None else [],
            self.table.codes("agent")[0],
        )


@dataclass(frozen=True)
class RecordLine:
    number: int
    title: str
    text: str


@dataclass(frozen=True)
class ComparisonRecord:
    """The nine lines, in order."""

    lines: list[RecordLine]
    capabilities: list[dict[str, Any]] = field(default_factory=list)
    """Line 6 per capability, one row each: ``{capability, a, b, diff}`` with ``a``
    and ``b`` as ``{rate, se, ci95, n_tasks}`` (the table line 6 points to)."""

    def to_text(self) -> str:
        width = max(len(line.title) for line in self.lines)
        return "\n".join(f"{ln.number}. {ln.title:<{width}}  {ln.text}" for ln in self.lines)

    def to_markdown(self, heading: str = "## Comparison record") -> str:
        # Run labels, agent names and task ids are user strings: one line each, markup
        # escaped (`markdown_text`), so none becomes a link, HTML or a heading.
        body = "\n".join(
            f"{ln.number}. **{ln.title}**: {markdown_text(ln.text)}" for ln in self.lines
        )
        return f"{heading}\n\n{body}\n"

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": [{"n": ln.number, "title": ln.title, "text": ln.text} for ln in self.lines],
            "capabilities": self.capabilities,
        }


# --------------------------------------------------------------------------- formatting


def _pct(x: float | None) -> str:
    return "—" if x is None else percent(x)  # 99.995%, never 100.0% short of it


def _pp(x: float) -> str:
    """A difference of rates in percentage points, signed."""
    return f"{100 * x:+.{shown_decimals(100 * x, 1)}f} pp"  # -0.005 pp, not -0.0 pp


def _num(x: float | None, digits: int = 2) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def p_text(p: float | None) -> str:
    """A p-value as the comparison record prints it: ``p = 0.029``, or ``p < 0.001``
    below that (three decimals would say ``0.000``, and a p-value is never 0)."""
    if p is None:
        return "p —"
    return "p < 0.001" if p < 0.001 else f"p = {p:.3f}"


def level_text(alpha: float) -> str:
    """An interval's level 1 − α as a percentage: ``95%``, ``99.5%``, ``97.5%``, in the
    decimals α was given with (rounded, α = 0.005 read "100% CI")."""
    level = (100 - 100 * Decimal(repr(float(alpha)))).normalize()
    return f"{level:f}%"


def p_cell(p: float | None) -> str:
    """`p_text` under a column titled p: ``0.029``, ``< 0.001``, ``–`` when unknown."""
    if p is None or math.isnan(p):
        return "–"
    return p_text(p).removeprefix("p = ").removeprefix("p ")


def _distinct(values: Any) -> list[str]:
    return sorted({str(v) for v in values if v is not None})


def _restrict(table: TrialTable, tasks: Sequence[str]) -> TrialTable:
    return table.take(np.isin(table.task_id.astype(str), list(tasks)))


# --------------------------------------------------------------------------- lines


def agent_name(s: SystemInfo) -> str | None:
    """A side's agent: its run header's, else the names its trials carry."""
    return (s.run.agent if s.run else None) or ", ".join(_distinct(s.table.agent)) or None


def _systems(a: SystemInfo, b: SystemInfo) -> str:
    def one(tag: str, s: SystemInfo) -> str:
        agent = agent_name(s)
        # The model as the one-change rule reads it (the header, the trials, the
        # components a simulated agent names, the models its calls were served by): a
        # line 1 that said "model not recorded" beside "one change: model (X → Y)"
        # contradicted itself when only the model calls named it.
        named = s.components().get("model")
        model = str(named) if named is not None else None
        parts = [f"agent {agent}" if agent else "agent not recorded"]
        parts.append(f"model {model}" if model else "model not recorded")
        if s.run is not None:
            parts.append(f"run {s.run.run_id}")
            if s.run.agentgauge_version:
                parts.append(f"agentgauge {s.run.agentgauge_version}")
            if s.run.source:
                parts.append(f"from {s.run.source}")
        else:
            parts.append("no run header (versions not pinned)")
        return f"{tag} = {s.label} ({'; '.join(parts)})"

    return f"{one('A', a)}; {one('B', b)}"


def _suite(s: SystemInfo) -> str:
    if s.run is None or not s.run.suite:
        return "suite not recorded"
    version = f" @ {s.run.suite_version[:12]}" if s.run.suite_version else " (no version hash)"
    return f"suite {s.run.suite}{version}"


def _tasks(c: Comparison, a: SystemInfo, b: SystemInfo, heldout: HeldoutUsage | None) -> str:
    sa, sb = _suite(a), _suite(b)
    suite = sa if sa == sb else f"suites differ (A: {sa}; B: {sb}), shared task ids only"
    counts = f"{counted(c.n_tasks, 'task')} compared"
    if c.tasks_only_a or c.tasks_only_b:
        counts += f" ({len(c.tasks_only_a)} only in A, {len(c.tasks_only_b)} only in B, left out)"
    splits = set(_distinct(_restrict(a.table, c.tasks).split)) | set(
        _distinct(_restrict(b.table, c.tasks).split)
    )
    if "heldout" in splits:
        split = "split: dev + held-out"
    elif splits:
        split = "split: dev (held-out excluded)"
    else:
        split = "split not recorded"
    if heldout is not None:
        split += f"; {heldout.sentence()}"
    return f"{suite}; {counts}; {split}"


def _independence(s: SystemInfo) -> str:
    source = (s.run.source or "") if s.run else ""
    if source.startswith("harness"):
        return "fresh environment per trial"
    return "independence not verified (imported)" if source else "independence not recorded"


def _trials(c: Comparison, a: SystemInfo, b: SystemInfo) -> str:
    def k(n: np.ndarray[Any, Any]) -> str:
        lo, hi = int(n.min()), int(n.max())
        return f"{lo}" if lo == hi else f"{lo}–{hi}"

    ia, ib = _independence(a), _independence(b)
    indep = f"{ia}" if ia == ib else f"A: {ia}; B: {ib}"
    # A side with no base trial is compared on all its trials: said where the trials are.
    scope = ""
    if c.scope != BASE_SCOPE:
        sides = [tag for tag, s in (("A", c.scope_a), ("B", c.scope_b)) if s is not None]
        has = "has" if len(sides) == 1 else "have"
        scope = f"; variants compared: {c.scope} ({' and '.join(sides)} {has} no base trial)"
    return (
        f"{k(c.trials_a)} per task in A, {k(c.trials_b)} in B "
        f"({int(c.trials_a.sum())} and {int(c.trials_b.sum())} trials); {indep}{scope}"
    )


def _grader_names(s: SystemInfo) -> set[str] | None:
    """The graders in the grades of a side's finished trials; ``None`` when its trials
    are not at hand, or none finished (an infra error is not graded: a run of them is
    not "graded differently")."""
    summary = s.grade_summary()
    if summary is None or not summary.finished:
        return None
    return set(summary.of_finished)


def _version(v: GradeVersion) -> str:
    if v.version == 1:
        return "1 (as recorded)"
    asked = f", graders asked: {', '.join(v.graders)}" if v.graders else ""
    return f"{v.version} (re-grade of {v.created_at}{asked})"


def _names(graders: set[str]) -> str:
    return ", ".join(sorted(graders)) or "none (outcomes as imported)"


def grading_difference(a: SystemInfo, b: SystemInfo) -> str | None:
    """Why the two sides were not graded alike, or ``None`` when they were (or it
    cannot be told). A difference in success then may come from the grading, not
    from the systems: a re-grade of one side changes its rate."""
    ga, gb = _grader_names(a), _grader_names(b)
    why = []
    if ga is not None and gb is not None and ga != gb:
        why.append(f"graders A {_names(ga)}; B {_names(gb)}")
    va, vb = a.grading, b.grading
    if va is not None and vb is not None and (va.version == 1) != (vb.version == 1):
        why.append(f"grade version A {_version(va)}; B {_version(vb)}")
    if not why:
        return None
    return (
        "A and B were graded differently (" + "; ".join(why) + "): part of the difference "
        "may come from the grading, not from the systems (pick a grade version per side "
        "with SOURCE#grade=N)"
    )


def _graders(a: SystemInfo, b: SystemInfo, judge_kappa: float | None) -> str:
    graders: set[str] = set()
    judges: set[str] = set()
    have_trials = finished = False
    for s in (a, b):
        # In SQL for a stored run: building every trial to collect these names took
        # most of compare's time on a large run (38 of 46 s at 200,000 trials).
        summary = s.grade_summary()
        if summary is None:
            continue
        have_trials = True
        finished = finished or summary.finished
        graders |= summary.graders
        judges |= summary.judges
    ga, gb = _grader_names(a), _grader_names(b)
    if ga is not None and gb is not None and ga != gb:
        parts = [f"graders differ: A {_names(ga)}; B {_names(gb)}"]
    else:
        parts = [
            f"graders {', '.join(sorted(graders))}"
            if graders
            else (
                (
                    "no grades recorded (outcomes as imported)"
                    if finished
                    else "no grades recorded (no trial finished: nothing was graded)"
                )
                if have_trials
                else "graders not recorded"
            )
        ]
    if a.grading is not None or b.grading is not None:
        parts.append(
            "grade version "
            + ", ".join(
                f"{tag} {_version(s.grading) if s.grading else 'none (not a stored run)'}"
                for tag, s in (("A", a), ("B", b))
            )
        )
    versions = {
        str(s.run.config[key])
        for s in (a, b)
        if s.run is not None
        for key in ("rubric_version", "grader_version")
        if key in s.run.config
    }
    # A harness run records its rubrics' digest among its components.
    versions |= {
        str(s.run.config["components"]["rubric_version"])
        for s in (a, b)
        if s.run is not None
        and isinstance(s.run.config.get("components"), dict)
        and s.run.config["components"].get("rubric_version")
        and "rubric_version" not in s.run.config
    }
    blocking = sorted(
        {c.id for s in (a, b) for task in s.tasks for c in task.expectations.rubric if c.blocking}
    )
    has_rubric = any(task.expectations.rubric for s in (a, b) for task in s.tasks)
    if has_rubric:
        parts.append(
            f"rubric version {', '.join(sorted(versions))}"
            if versions
            else "rubric version not recorded"
        )
        parts.append(
            f"blocking criteria: {', '.join(blocking)}" if blocking else "no blocking criteria"
        )
    else:
        parts.append("no rubric")
    if judges:
        kappa = (
            f"κ = {judge_kappa:.2f}"
            if judge_kappa is not None
            else "κ not measured (run agentgauge calibrate)"
        )
        parts.append(f"judge {', '.join(sorted(judges))}, {kappa}")
    else:
        parts.append("no model judge")
    return "; ".join(parts)


def _figures(b: Baseline, human_rate: float | None = None) -> str:
    """A baseline's interval, cost per success and latency (its score is said first)."""
    ci = "" if b.ci95 is None else f"95% CI [{100 * b.ci95[0]:.1f}, {100 * b.ci95[1]:.1f}], "
    if b.cost_of_pass is not None:
        cost = _money(b.cost_of_pass)
        if b.role == "human" and human_rate is not None:
            cost += f" at {_money(human_rate)}/h"
    else:
        cost = f"unknown ({b.cost_reason or 'not recorded'})"
    if b.latency_p50 is None:
        latency = (
            f"latency unknown ({b.latency_reason})"
            if b.latency_reason
            else ("latency not recorded")
        )
    elif b.role == "human":
        latency = f"time p50 {number(b.latency_p50 / 60, grouped=False)} min"
    else:
        latency = f"latency p50 {number(b.latency_p50, grouped=False)} s"
    return f"{ci}cost per success {cost}, {latency}"


def _null_text(
    null: NullAgentCheck | None, figures: Baseline | None, unscored: str | None = None
) -> str:
    """The null agent's part of line 5; ``unscored`` is why it has no score beside the
    headline (it shares no task with A and B) while its passes still count."""
    if null is None or (null.score is None and unscored is None):
        return "null agent not run (its score would show what doing nothing earns)"
    defects = len(null.tasks_passed)
    # Scored on the shared rows as every baseline is; its passes are sought in all its
    # trials (a task it passes is a defect wherever it lies): the line says which is which.
    score = (
        f"{_pct(null.score)} on the shared tasks"
        if null.score is not None
        else f"not scored ({unscored})"
    )
    nul = f"null agent {score}, passes {defects} task{'s' if defects != 1 else ''} of all it ran"
    if defects:
        shown = ", ".join(null.tasks_passed[:5]) + (" …" if defects > 5 else "")
        nul += f" (outcome-validity defects: {shown})"
    return nul if figures is None else f"{nul}, {_figures(figures)}"


#: What to do for a baseline that is absent, by role.
_HOW_TO_RUN = {
    "human": (
        "import the humans' trials, graded by the same graders, with "
        "agentgauge import jsonl FILE --baseline-role human"
    ),
    "ablation": (
        "run the simplest version of the system (one call, no orchestration) with "
        "--baseline-role ablation"
    ),
    "previous": "mark the system in production with agentgauge runs --mark RUN previous",
}


def _human_ratio(c: Comparison, human: Baseline) -> str:
    parts = []
    for tag, cop, why in (
        ("A", c.cost_of_pass_a, c.cost_reason_a),
        ("B", c.cost_of_pass_b, c.cost_reason_b),
    ):
        ratio, reason = relative_to_human(cop, why, human)
        parts.append(f"{tag} {_times(ratio)}" if ratio is not None else f"{tag} unknown ({reason})")
    return "agent's cost per success relative to the human's: " + ", ".join(parts)


def _times(ratio: float) -> str:
    # Three significant digits, never in exponent form ("8.91e-05×" reads as a typo).
    text = np.format_float_positional(ratio, precision=3, fractional=False, trim="-")
    return f"{text}×"


def _baselines(
    c: Comparison,
    null: NullAgentCheck | None,
    baselines: Mapping[str, Baseline] | None = None,
    absent: Mapping[str, str] | None = None,
    human_rate: float | None = None,
) -> str:
    """Line 5: each of the four baselines with its figures, or named as absent."""
    found = dict(baselines or {})
    why_absent = dict(absent or {})
    parts = [_null_text(null, found.get("null"), why_absent.get("null"))]
    previous = found.get("previous")
    if previous is None:
        parts.append(f"previous system: A ({c.label_a}) at {_pct(c.rate_a)} on the shared tasks")
    else:
        parts.append(
            f"previous system: {previous.label} {_pct(previous.score)} on "
            f"{previous.n_tasks} shared tasks, {_figures(previous)}"
        )
    for role, title in (("human", "human baseline"), ("ablation", "ablation")):
        b = found.get(role)
        if b is None:
            reason = why_absent.get(role, _HOW_TO_RUN[role])
            parts.append(f"{title}: not run — {reason}")
            continue
        text = f"{title}: {b.label} {_pct(b.score)} on {b.n_tasks} shared tasks, "
        text += _figures(b, human_rate)
        if b.note:
            text += f" ({b.note})"
        if role == "human":
            text += "; " + _human_ratio(c, b)
        parts.append(text)
    return "; ".join(parts)


def _rate(o: Any) -> str:
    se = success_se(o.se, o.se_clustered, o.cluster_unit)
    count = no_spread_count(se, o.n_successes, o.n_trials)
    if count is None:
        count = "" if se is None else f"±{100 * se:.1f}"
    se_txt = f" {count}" if count else ""
    ci = "" if o.ci95 is None else f" [{100 * o.ci95[0]:.1f}, {100 * o.ci95[1]:.1f}]"
    return f"{_pct(o.success_rate)}{se_txt}{ci}"


def _method(o: Any) -> str:
    method = _CI_METHOD.get(o.ci_method or "", o.ci_method or "no interval")
    return f"{method} over {clusters_text(o.n_clusters, o.n_families, o.cluster_unit)}"


#: Above this many capabilities, line 6 names the largest differences and points to
#: the per-capability table instead of listing them all (28 in the demo: a wall).
_MAX_LISTED_CAPABILITIES = 4


def _per_capability(caps: list[GroupMetrics]) -> bool:
    return len(caps) > 1 or bool(caps and caps[0].labels.get("capability") is not None)


def _system_rates(tag: str, whole: list[GroupMetrics], caps: list[GroupMetrics]) -> str:
    text = f"{tag} {_rate(whole[0].outcome)} ({_method(whole[0].outcome)})"
    if _per_capability(caps) and len(caps) <= _MAX_LISTED_CAPABILITIES:
        per = "; ".join(
            f"{g.labels.get('capability') or 'unlabelled'} {_rate(g.outcome)}" for g in caps
        )
        text += f", by capability: {per}"
    return text


def _side(g: GroupMetrics | None) -> dict[str, Any] | None:
    if g is None:
        return None
    o = g.outcome
    se = success_se(o.se, o.se_clustered, o.cluster_unit)
    return {
        "rate": o.success_rate,
        "se": se,
        "ci95": None if o.ci95 is None else list(o.ci95),
        "n_tasks": o.n_tasks,
        "n_trials": o.n_trials,
        "n_successes": o.n_successes,
    }


def capability_rows(ca: list[GroupMetrics], cb: list[GroupMetrics]) -> list[dict[str, Any]]:
    """Line 6 per capability: ``{capability, a, b, diff}``, largest |B − A| first
    (``diff`` is ``None`` when a side lacks the capability or its rate). A side is
    ``{rate, se, ci95, n_tasks, n_trials, n_successes}``."""

    def name(g: GroupMetrics) -> str:
        return str(g.labels.get("capability") or "unlabelled")

    by_a, by_b = {name(g): g for g in ca}, {name(g): g for g in cb}
    rows: list[dict[str, Any]] = []
    for cap in sorted(set(by_a) | set(by_b)):
        a, b = _side(by_a.get(cap)), _side(by_b.get(cap))
        diff = None
        if a and b and a["rate"] is not None and b["rate"] is not None:
            diff = b["rate"] - a["rate"]
        rows.append({"capability": cap, "a": a, "b": b, "diff": diff})
    rows.sort(key=lambda r: (r["diff"] is None, -abs(r["diff"] or 0.0), r["capability"]))
    return rows


def _headline(
    wa: list[GroupMetrics], ca: list[GroupMetrics], wb: list[GroupMetrics], cb: list[GroupMetrics]
) -> str:
    text = (
        f"success rate ±SE pp [95% CI]: {_system_rates('B', wb, cb)}; {_system_rates('A', wa, ca)}"
    )
    n = len({str(g.labels.get("capability")) for g in [*ca, *cb]})
    if (_per_capability(ca) or _per_capability(cb)) and n > _MAX_LISTED_CAPABILITIES:
        top = [r for r in capability_rows(ca, cb) if r["diff"] is not None][:3]
        listed = ", ".join(f"{r['capability']} {_pp(r['diff'])}" for r in top)
        text += (
            f"; {n} capabilities, largest B − A: {listed or 'none comparable'} "
            "(each capability: the per-capability table)"
        )
    return text


def _difference(c: Comparison) -> str:
    if c.ci is None:
        return f"B − A = {_pp(c.mean_diff)}, no interval with one task: {c.verdict}"
    mc = ""
    if c.mcnemar is not None:
        m = c.mcnemar
        mc = f"; McNemar exact {p_text(m.p_value)} ({m.a_only} vs {m.b_only} flips)"
    se_u = difference_se(c.se_unpaired, paired=False, decimals=1)
    se_p = difference_se(c.se_paired, paired=True, decimals=1)
    # The p-value's own test is named only where it is not the interval's own (the
    # paired t, or the test the score interval inverts).
    test = c.test if c.p_method in ("t", "score") else f"{c.p_test}; interval by {c.test}"
    return (
        f"B − A = {_pp(c.mean_diff)} ({level_text(c.alpha)} CI {points_interval(*c.ci)}, "
        f"{p_text(c.p_value)}, {test}; SE paired {se_p} vs unpaired {se_u}{mc}): {c.verdict}"
    )


def _reliability(
    c: Comparison, ra: list[GroupMetrics], rb: list[GroupMetrics], k: int | None
) -> str:
    kmin = int(min(c.trials_a.min(), c.trials_b.min()))
    few = f"it needs ≥ 2 trials per task, and the runs have {kmin} on some task"
    # pass^1 is the success rate, whatever the trials; pass^k for k ≥ 2 (the default k
    # is the fewest trials) and outcome consistency need two trials on every task.
    if kmin < 2 and (k is None or k >= 2):
        return f"pass^k not measurable: {few}; outcome consistency likewise"
    if k is None:
        k = kmin

    def one(groups: list[GroupMetrics]) -> tuple[str, str]:
        o = groups[0].outcome
        pk = o.pass_hat_k.get(k)
        v = pk.value if pk is not None else None
        text = _pct(v) if v is not None else f"— ({(pk.reason if pk else None) or 'undefined'})"
        return text, _num(o.outcome_consistency)

    (pa, ca), (pb, cb) = one(ra), one(rb)
    rate = ", the success rate" if k == 1 else ""
    consistency = (
        f"outcome consistency (2p−1)²: A {ca}, B {cb}"
        if kmin >= 2
        else f"outcome consistency not measurable: {few}"
    )
    return f"pass^{k} (deployment k = {k}{rate}): A {pa}, B {pb}; {consistency}"


def _cost(
    c: Comparison, ra: list[GroupMetrics], rb: list[GroupMetrics], a: SystemInfo, b: SystemInfo
) -> str:
    def cop(value: float | None, reason: str | None) -> str:
        return _money(value) if value is not None else f"unknown ({reason})"

    ratio = "" if c.cost_ratio is None else f" (B/A = {c.cost_ratio:.2f})"

    def lat(groups: list[GroupMetrics]) -> str:
        g = groups[0].cost
        p50, p95 = g.latency_p50, g.latency_p95
        if p50 is None or p95 is None:  # (both are from the same trials: one is, both are)
            return "not recorded"
        return f"{number(p50, grouped=False)}/{number(p95, grouped=False)} s"

    prices = ""
    calls_a, calls_b = a.model_calls(), b.model_calls()
    if calls_a is not None and calls_b is not None:
        prices = f"; prices A {calls_a.prices_text()}, B {calls_b.prices_text()}"
    return (
        f"cost per success A {cop(c.cost_of_pass_a, c.cost_reason_a)}, "
        f"B {cop(c.cost_of_pass_b, c.cost_reason_b)}{ratio}; "
        f"latency p50/p95 A {lat(ra)}, B {lat(rb)}{prices}"
    )


# --------------------------------------------------------------------------- build


def build_record(
    comparison: Comparison,
    a: SystemInfo,
    b: SystemInfo,
    *,
    deployment_k: int | None = None,
    null_agent: NullAgentCheck | None = None,
    judge_kappa: float | None = None,
    heldout: HeldoutUsage | None = None,
    include_heldout: bool = False,
    seed: int = 0,
    baselines: Mapping[str, Baseline] | None = None,
    absent_baselines: Mapping[str, str] | None = None,
    human_rate: float | None = None,
    configuration: str | None = None,
) -> ComparisonRecord:
    """The nine lines of the comparison record for ``comparison`` of ``b`` against ``a``.

    ``deployment_k`` is the k at which pass^k is reported (default: the fewest
    trials any shared task has, so the value is defined). ``null_agent``,
    ``judge_kappa`` and ``heldout`` fill lines 5, 4 and 2 when known; each says
    so when not. Headline figures are computed on the shared tasks with the
    comparison's row selection, per capability when tasks carry one.

    ``baselines`` (by role: `agentgauge.metrics.baselines`) fill line 5 beside
    the null agent; a role without one is named with ``absent_baselines``'s
    reason (or how to run it). ``human_rate`` (USD per hour) is named with the
    human's cost. ``configuration`` (what differs between the runs' components,
    `agentgauge.components`) ends line 1.
    """
    c = comparison
    ta = _restrict(select_rows(a.table, include_heldout=include_heldout), c.tasks)
    tb = _restrict(select_rows(b.table, include_heldout=include_heldout), c.tasks)
    kmin = int(min(c.trials_a.min(), c.trials_b.min()))
    k = deployment_k if deployment_k is not None else max(kmin, 1)
    by_cap = ("capability",) if _distinct(ta.capability) or _distinct(tb.capability) else ()
    ca = compute_metrics(ta, k=k, by=by_cap, seed=seed).groups
    cb = compute_metrics(tb, k=k, by=by_cap, seed=seed).groups
    whole_a = compute_metrics(ta, k=k, by=(), seed=seed).groups if by_cap else ca
    whole_b = compute_metrics(tb, k=k, by=(), seed=seed).groups if by_cap else cb
    texts = [
        _systems(a, b) + (f"; configuration: {configuration}" if configuration else ""),
        _tasks(c, a, b, heldout),
        _trials(c, a, b),
        _graders(a, b, judge_kappa),
        _baselines(c, null_agent, baselines, absent_baselines, human_rate),
        _headline(whole_a, ca, whole_b, cb),
        _difference(c),
        _reliability(c, whole_a, whole_b, deployment_k),
        _cost(c, whole_a, whole_b, a, b),
    ]
    return ComparisonRecord(
        [
            RecordLine(i + 1, title, text)
            for i, (title, text) in enumerate(zip(TITLES, texts, strict=True))
        ],
        capabilities=capability_rows(ca, cb) if by_cap else [],
    )
