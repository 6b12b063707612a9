"""The HTML report: one self-contained file (no network needed to open it).

plotly.js is inlined once (`agentgauge.report.figures.plotly_script`); the page
loads no font, image or script from anywhere. Everything a transcript or an
agent produced is untrusted text: the template is rendered with autoescaping on
and every value it shows has its control characters made visible; every string
given to plotly goes through `agentgauge.display.plotly_text` (in
`agentgauge.report.figures`), and plot data goes through plotly's JSON encoder
(which escapes ``</script>``), never through string concatenation. A figure the
metrics leave ``null`` (an interval from one task, a cost nobody recorded)
shows a dash. What each section shows, and its scope, is in docs/reports.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jinja2
from markupsafe import Markup

from agentgauge._version import __version__
from agentgauge.display import html_environment
from agentgauge.metrics.cost import unpriced_label
from agentgauge.report import figures
from agentgauge.report.explain import shorten
from agentgauge.report.formats import (
    bounds,
    fraction,
    judge_cost,
    no_spread_tasks,
    number,
    shown_decimals,
    success_se_of,
    zero_difference_se,
)
from agentgauge.report.formats import money as _money
from agentgauge.report.record import p_cell
from agentgauge.store import utc_now

__all__ = [
    "CONTROL_STATES",
    "EVENTS_SHOWN",
    "ReportData",
    "SuiteReport",
    "render_html",
    "suite_plots",
]

#: Events of one transcript the page shows (a 10,000-step loop would bury the rest).
EVENTS_SHOWN = 200
#: Control decisions in the order the confusion matrix shows them.
CONTROL_STATES = ("act", "ask", "refuse", "stop", "confirm", "recover", "transfer")


@dataclass
class SuiteReport:
    """What the report shows of one suite; sections left empty are omitted or say why."""

    name: str
    metrics: dict[str, Any]
    """An ``agentgauge.metrics/1`` object on the base variant, by agent and model."""
    scope: str = "base variant"
    """The trials of the base-variant tables (`agentgauge.report.scope.system_base_trials`):
    all of a system's trials, and the titles say so, when it has no base variant."""
    scope_notes: list[str] = field(default_factory=list)
    """Each system whose rows use all its trials (it has no base variant) while others
    use their base variant, and its variants."""
    ks: list[int] = field(default_factory=lambda: [1, 2, 4])
    sections: list[dict[str, Any]] = field(default_factory=list)
    """Tables: ``{title, note, columns, rows}`` (tool calls, control, reliability, validity)."""
    passk: list[dict[str, Any]] = field(default_factory=list)
    """Curves for `figures.passk_figure`."""
    frontier: list[dict[str, Any]] = field(default_factory=list)
    """Points for `figures.frontier_figure`."""
    unpriced: list[str] = field(default_factory=list)
    """Agents left off the frontier because their cost is unknown, with the count."""
    horizon: list[dict[str, Any]] = field(default_factory=list)
    """Groups for `figures.horizon_figure`."""
    horizon_note: str | None = None
    """Why there is no time horizon, when there is none."""
    tasks: list[dict[str, Any]] = field(default_factory=list)
    """Heatmap rows ``{task_id, family, human_minutes, cells: {agent: {k, n, rate, flaky,
    anchor} | None}}``."""
    variants: list[dict[str, Any]] = field(default_factory=list)
    """``{label, variant, value, se, ci95, n_trials}`` per agent and variant."""
    reliability: list[dict[str, Any]] = field(default_factory=list)
    """Bars for `figures.reliability_figure`."""
    reliability_notes: list[str] = field(default_factory=list)
    """Why a reliability figure is missing or has no SE (`terminal.reliability_note_lines`)."""
    confusion: list[dict[str, Any]] = field(default_factory=list)
    """Matrices for `figures.confusion_figure`."""
    tool_errors: dict[str, dict[str, int]] = field(default_factory=dict)
    """Failed tool-call statuses per agent."""
    tool_errors_unknown: list[str] = field(default_factory=list)
    """``AGENT: why`` for each agent whose failed calls nobody counted (no ``tool_calls``
    grade): no histogram, and not "no failed call" either."""
    transcripts: list[dict[str, Any]] = field(default_factory=list)
    """``{anchor, agent, flip, summary, classes, view}``; ``view`` is `explain.trial_view`."""
    transcripts_more: dict[str, int] = field(default_factory=dict)
    """Per agent, failing tasks whose transcript is left out."""


@dataclass
class ReportData:
    """What a report shows: runs, notes, the comparison, and one `SuiteReport` per suite."""

    title: str
    suites: list[SuiteReport] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    """Run headers (run_id, agent, model, suite, suite_version, n_trials, created_at)."""
    record: list[str] = field(default_factory=list)
    """The nine-line comparison record, when a comparison was made."""
    comparison: dict[str, Any] | None = None
    """An ``agentgauge.compare/1`` object."""
    capabilities: list[dict[str, Any]] = field(default_factory=list)
    """The comparison per capability: ``{label, n_tasks, rate_a, rate_b, diff, ci}``."""
    notes: list[str] = field(default_factory=list)
    """Warnings and disclosures shown at the top (simulated agents, held-out use...)."""


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return number(value, digits, grouped=False)
    return str(value)


def _rate(value: Any, digits: int = 3) -> str:
    """A rate (a fraction) as `_fmt` writes it, with the decimals that keep one short of 1
    from reading ``1.000`` and one above 0 from reading ``0.000`` (`formats.fraction`);
    an SE that is not 0 likewise."""
    if isinstance(value, float) and math.isfinite(value):
        return fraction(value, digits)
    return _fmt(value, digits)


def _difference_se(se: float | None, paired: bool) -> str:
    """A comparison's SE as the table shows it, or why there is none where it is 0
    (`formats.zero_difference_se`): never "0.000"."""
    if se == 0:
        return zero_difference_se(paired=paired)
    if isinstance(se, float) and math.isfinite(se):
        return number(se, shown_decimals(se, 3), grouped=False)  # 0.00004, not "0.000"
    return _fmt(se)


def _interval(ci: Any, digits: int = 3) -> str:
    """``[lo, hi]``, or a dash when the metrics give no interval (``null``)."""
    if not ci or len(ci) != 2 or ci[0] is None or ci[1] is None:
        return "–"
    lo, hi = bounds(ci[0], ci[1], digits)  # never two bounds alike ("[0.000, 0.000]")
    return f"[{lo}, {hi}]"


def _cost(group: dict[str, Any], key: str) -> str:
    """A cost cell; one that unpriced trials make unknown says so, with the count."""
    cost = group["cost"]
    if cost[key] is None and cost["missing"]:
        return unpriced_label(cost["missing"], group["n_trials"])
    return _money(cost[key])


def _group_label(group: dict[str, Any]) -> str:
    if "system" in group:  # its system's name, distinct (`build._named`)
        return str(group["system"])
    parts = [str(group[k]) for k in ("agent", "model") if group.get(k) is not None]
    return " / ".join(parts) or "all"


def _heat(rate: float) -> str:
    """A cell's background: red (0) through yellow to green (1), light enough for text."""
    hue = round(120 * rate)
    return f"hsl({hue}, 65%, 78%)"


def suite_plots(suite: SuiteReport, prefix: str) -> dict[str, str]:
    """The suite's plots as HTML divs keyed by section (``passk``, ``frontier``,
    ``horizon``, ``variants``, ``reliability``, ``confusion``, ``tool_errors``); a
    section without data has no key. Div ids start with ``prefix``."""
    plots: dict[str, Any] = {}
    if any(v is not None for c in suite.passk for v in c["pass_hat_k"] + c["pass_at_k"]):
        plots["passk"] = figures.passk_figure(suite.passk)
    if any(p.get("cost_per_trial") for p in suite.frontier):
        plots["frontier"] = figures.frontier_figure(suite.frontier)
    if suite.horizon:
        plots["horizon"] = figures.horizon_figure(suite.horizon)
    if suite.variants:
        plots["variants"] = figures.variant_figure(suite.variants)
    if any(r["value"] is not None for r in suite.reliability):
        plots["reliability"] = figures.reliability_figure(suite.reliability)
    if suite.confusion:
        plots["confusion"] = figures.confusion_figure(suite.confusion, CONTROL_STATES)
    if suite.tool_errors:
        plots["tool_errors"] = figures.tool_error_figure(suite.tool_errors)
    return {key: figures.figure_div(fig, f"{prefix}-{key}") for key, fig in plots.items()}


def _pass_k(value: float | None, se: float | None, n_tasks: int | None) -> Markup:
    """A pass@k or pass^k cell: the rate ± its SE over tasks, as `agentgauge metrics`
    prints it, or, where every task has the same value (an SE of 0), the count of tasks
    that stands in for "± 0" (``0.000 (0/3 tasks)``, `formats.no_spread_tasks`); a dash
    where there is none (the notes say why)."""
    if value is None or math.isnan(value):
        return Markup("–")
    count = no_spread_tasks(value, se, n_tasks)
    if count is not None:
        return Markup('{} <span class="ci">{}</span>').format(_rate(value), count)
    if se is None or math.isnan(se):
        return Markup("{}").format(_rate(value))
    return Markup('{} <span class="ci">± {}</span>').format(_rate(value), _rate(se))


_ENV = html_environment(jinja2.PackageLoader("agentgauge.report", "templates"))
_ENV.filters["interval"] = _interval
_ENV.filters["fmt"] = _fmt
_ENV.filters["rate"] = _rate
_ENV.filters["difference_se"] = _difference_se
_ENV.filters["p_value"] = p_cell  # as `compare` and the viewer print it
_ENV.filters["money"] = _money
_ENV.filters["heat"] = _heat
_ENV.filters["shorten"] = shorten  # the report is one file to share: texts cut
_ENV.globals["group_label"] = _group_label
_ENV.globals["cost_cell"] = _cost
_ENV.globals["judge_cost"] = judge_cost
_ENV.globals["success_se"] = success_se_of
_ENV.globals["pass_k"] = _pass_k


def render_html(data: ReportData) -> str:
    """Render the report as one HTML document."""
    plots = [suite_plots(s, f"s{i}") for i, s in enumerate(data.suites)]
    forest = (
        figures.figure_div(
            figures.forest_figure(data.capabilities, data.capabilities[0].get("by", "capability")),
            "forest",
        )
        if data.capabilities
        else None
    )
    template = _ENV.get_template("report.html.j2")
    return template.render(
        data=data,
        plots=plots,
        forest=forest,
        plotly_js=Markup(figures.plotly_script()),
        events_shown=EVENTS_SHOWN,
        version=__version__,
        generated_at=utc_now(),
    )
