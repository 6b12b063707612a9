"""The HTML report: one self-contained file (no network needed to open it).

Everything a transcript or an agent produced is untrusted text: the template
is rendered with autoescaping on and every value it shows has its control
characters made visible; every string given to plotly goes through
`agentgauge.display.plotly_text` (plotly renders HTML tags in names and labels),
and plot data goes through plotly's JSON encoder (which escapes ``</script>``),
never through string concatenation. A figure the metrics leave ``null`` (an
interval from one task, a cost nobody recorded) shows a dash.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import jinja2
import plotly.graph_objects as go
from markupsafe import Markup

from agentgauge._version import __version__
from agentgauge.display import plotly_text, visible
from agentgauge.metrics.cost import unpriced_label
from agentgauge.report.formats import money as _money
from agentgauge.store import utc_now

__all__ = ["ReportData", "render_html"]


@dataclass
class ReportData:
    """What a report shows; sections left empty are omitted with a note."""

    title: str
    metrics: dict[str, Any]
    """An ``agentgauge.metrics/1`` object."""
    runs: list[dict[str, Any]] = field(default_factory=list)
    """Run headers (run_id, agent, model, suite, suite_version, n_trials, created_at)."""
    ks: list[int] = field(default_factory=lambda: [1, 2, 4])
    record: list[str] = field(default_factory=list)
    """The nine-line comparison record, when a comparison was made."""
    comparison: dict[str, Any] | None = None
    """An ``agentgauge.compare/1`` object."""
    frontier: list[dict[str, Any]] = field(default_factory=list)
    """Points ``{label, cost_per_trial, success_rate, dominated_by}``."""
    sections: list[dict[str, Any]] = field(default_factory=list)
    """Extra tables: ``{title, note, columns, rows}`` (tool calls, control, validity...)."""
    tasks: list[dict[str, Any]] = field(default_factory=list)
    """Per-task rows: ``{task_id, family, human_minutes, cells: {label: "c/n"}}``."""
    transcripts: list[dict[str, Any]] = field(default_factory=list)
    """Sample transcripts: ``{title, events: [{kind, who, text}]}``."""
    notes: list[str] = field(default_factory=list)
    """Warnings and disclosures shown at the top (simulated agents, held-out use...)."""


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        return f"{value:.{digits}f}"
    return str(value)


def _interval(ci: Any, digits: int = 3) -> str:
    """``[lo, hi]``, or a dash when the metrics give no interval (``null``)."""
    if not ci or len(ci) != 2:
        return "–"
    return f"[{_fmt(ci[0], digits)}, {_fmt(ci[1], digits)}]"


def _shown(value: Any) -> Any:
    """Every value the template prints, with its control characters made visible
    (markup we built ourselves, the plots, is left as it is)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return visible(value, keep="\n\t")
    return value


def _cost(group: dict[str, Any], key: str) -> str:
    """A cost cell; one that unpriced trials make unknown says so, with the count."""
    cost = group["cost"]
    if cost[key] is None and cost["missing"]:
        return unpriced_label(cost["missing"], group["n_trials"])
    return _money(cost[key])


def _group_label(group: dict[str, Any]) -> str:
    parts = [str(group[k]) for k in ("agent", "model", "variant") if group.get(k) is not None]
    return " / ".join(parts) or "all"


def _passk_figure(metrics: dict[str, Any]) -> str:
    fig = go.Figure()
    for group in metrics.get("groups", []):
        hat = group.get("pass_hat_k", {})
        ks = sorted((int(k) for k, v in hat.items() if v is not None))
        if not ks:
            continue
        fig.add_trace(
            go.Scatter(
                x=ks,
                y=[hat[str(k)] for k in ks],
                mode="lines+markers",
                name=plotly_text(f"{_group_label(group)} pass^k"),
            )
        )
    fig.update_layout(
        title="pass^k: succeeds on all k attempts (falls with k when an agent is inconsistent)",
        xaxis_title="k",
        xaxis_dtick=1,
        yaxis_title="pass^k",
        yaxis_range=[0, 1.02],
        height=380,
        margin={"t": 50, "b": 40, "l": 50, "r": 20},
    )
    return str(fig.to_html(full_html=False, include_plotlyjs=True, div_id="passk"))


def _frontier_figure(points: list[dict[str, Any]]) -> str:
    fig = go.Figure()
    on = [p for p in points if not p.get("dominated_by")]
    off = [p for p in points if p.get("dominated_by")]
    on.sort(key=lambda p: p["cost_per_trial"])
    if on:
        fig.add_trace(
            go.Scatter(
                x=[p["cost_per_trial"] for p in on],
                y=[p["success_rate"] for p in on],
                text=[plotly_text(p["label"]) for p in on],
                mode="lines+markers+text",
                textposition="top center",
                line_shape="hv",
                name="frontier",
            )
        )
    if off:
        fig.add_trace(
            go.Scatter(
                x=[p["cost_per_trial"] for p in off],
                y=[p["success_rate"] for p in off],
                text=[plotly_text(f"{p['label']} (dominated by {p['dominated_by']})") for p in off],
                mode="markers",
                name="dominated",
            )
        )
    fig.update_layout(
        title="Cost frontier",
        xaxis_title="cost per trial (USD)",
        yaxis_title="success rate",
        height=380,
        margin={"t": 50, "b": 40, "l": 50, "r": 20},
    )
    return str(fig.to_html(full_html=False, include_plotlyjs=False, div_id="frontier"))


_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("agentgauge.report", "templates"),
    autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=_shown,
)
_ENV.filters["interval"] = _interval
_ENV.filters["fmt"] = _fmt
_ENV.filters["money"] = _money
_ENV.globals["group_label"] = _group_label
_ENV.globals["cost_cell"] = _cost


def render_html(data: ReportData) -> str:
    """Render the report as one HTML document."""
    plots = [_passk_figure(data.metrics)]
    if data.frontier and any(p.get("cost_per_trial") is not None for p in data.frontier):
        usable = [p for p in data.frontier if p.get("cost_per_trial") is not None]
        plots.append(_frontier_figure(usable))
    template = _ENV.get_template("report.html.j2")
    return template.render(
        data=data,
        plots=plots,
        version=__version__,
        generated_at=utc_now(),
    )
