"""Plot builders shared by the HTML report and the viewer.

Each function takes plain data (lists of dicts, numbers, ``None`` for unknown)
and returns a plotly ``Figure``; `figure_div` turns one into an HTML ``<div>``
that expects plotly.js on the page (`plotly_script` inlines it once). Every
label that came from an agent, a model or a task goes through
`agentgauge.display.plotly_text` here (plotly renders HTML tags in names,
labels and hover text); plot data reach the page through plotly's JSON encoder,
which escapes ``</script>``.

Nothing here computes a metric: bands and error bars are drawn only from the
standard errors and intervals the caller passes, and a value passed as ``None``
is left out of the plot (the caller says so in the caption).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import numpy as np
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from plotly.subplots import make_subplots

from agentgauge.display import plotly_text
from agentgauge.metrics.horizon import q_label
from agentgauge.report.formats import counted

__all__ = [
    "Z95",
    "confusion_figure",
    "figure_div",
    "forest_figure",
    "frontier_figure",
    "horizon_figure",
    "passk_figure",
    "plotly_script",
    "reliability_figure",
    "tool_error_figure",
    "variant_figure",
]

#: Normal quantile of a two-sided 95% interval (value ± Z95 · SE).
Z95 = 1.959964

_PALETTE = ("#3b6fb6", "#d9822b", "#2e9e5b", "#b3261e", "#7d55c7", "#8c6d31", "#e377c2", "#555")
_LAYOUT: dict[str, Any] = {
    "height": 380,
    "margin": {"t": 50, "b": 50, "l": 60, "r": 20},
    "font": {"family": "system-ui, sans-serif", "size": 12},
    "legend": {"orientation": "h", "y": -0.2},
}


def _colour(i: int) -> str:
    return _PALETTE[i % len(_PALETTE)]


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _known(x: float | None) -> TypeGuard[float]:
    return x is not None and math.isfinite(x)


def plotly_script() -> str:
    """plotly.js as one inline ``<script>`` element (the page then needs no network)."""
    return f'<script type="text/javascript">{get_plotlyjs()}</script>'


def figure_div(fig: go.Figure, div_id: str) -> str:
    """The figure as an HTML ``<div id=div_id>`` drawn by the page's plotly.js."""
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=False,
            div_id=div_id,
            config={"displaylogo": False, "responsive": True},
        )
    )


def passk_figure(curves: Sequence[Mapping[str, Any]]) -> go.Figure:
    """pass@k (dashed) and pass^k (solid) against k, one colour per agent.

    Each curve is ``{label, ks, pass_at_k, pass_at_k_se, pass_hat_k, pass_hat_k_se}``
    (lists aligned with ``ks``; a value or SE may be ``None``). Where an SE is
    given the band is value ± 1.96·SE clipped to [0, 1]; where it is not, no band
    is drawn. pass^k as in Yao et al. 2024 (tau-bench); pass@k as in Chen et al. 2021.
    """
    fig = go.Figure()
    for i, curve in enumerate(curves):
        colour = _colour(i)
        for key, dash, suffix in (("pass_at_k", "dash", "pass@k"), ("pass_hat_k", None, "pass^k")):
            points = [
                (k, v, se)
                for k, v, se in zip(curve["ks"], curve[key], curve[f"{key}_se"], strict=True)
                if _known(v)
            ]
            if not points:
                continue
            name = plotly_text(f"{curve['label']} {suffix}")
            banded = [(k, v, se) for k, v, se in points if _known(se)]
            if len(banded) >= 2:
                lo = [max(0.0, v - Z95 * se) for _, v, se in banded]
                hi = [min(1.0, v + Z95 * se) for _, v, se in banded]
                ks = [k for k, _, _ in banded]
                fig.add_trace(
                    go.Scatter(
                        x=ks + ks[::-1],
                        y=hi + lo[::-1],
                        fill="toself",
                        mode="lines",
                        fillcolor=_rgba(colour, 0.12),
                        line={"width": 0},
                        hoverinfo="skip",
                        showlegend=False,
                        name=name,
                    )
                )
            fig.add_trace(
                go.Scatter(
                    x=[k for k, _, _ in points],
                    y=[v for _, v, _ in points],
                    mode="lines+markers",
                    line={"color": colour, "dash": dash},
                    name=name,
                )
            )
    fig.update_layout(
        _LAYOUT,
        title="pass@k (dashed) and pass^k (solid) against k",
        xaxis={"title": "k (attempts)", "dtick": 1},
        yaxis={"title": "probability", "range": [0, 1.02]},
    )
    return fig


def frontier_figure(points: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Success rate against cost per trial on a log axis, the frontier as a step line.

    Points are ``{label, cost_per_trial, success_rate, success_se, ci95,
    dominated_by}``; a point whose cost is ``None`` or not positive is not drawn (the
    caller lists it). Each error bar spans the point's ``ci95`` where it has that key
    (the interval the outcome table prints; none where it is null), else ±1.96·SE
    (`_whiskers`). The frontier of Kapoor et al. 2024 ("AI agents that matter").
    """
    usable = [p for p in points if _known(p.get("cost_per_trial")) and p["cost_per_trial"] > 0]
    fig = go.Figure()
    for name, group in (
        ("on the frontier", sorted((p for p in usable if not p.get("dominated_by")), key=_cost)),
        ("dominated", [p for p in usable if p.get("dominated_by")]),
    ):
        if not group:
            continue
        on = name == "on the frontier"
        up, down = _whiskers(
            [
                {
                    "value": p["success_rate"],
                    "se": p.get("success_se"),
                    **({"ci95": p["ci95"]} if "ci95" in p else {}),
                }
                for p in group
            ]
        )
        fig.add_trace(
            go.Scatter(
                x=[p["cost_per_trial"] for p in group],
                y=[p["success_rate"] for p in group],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": up,
                    "arrayminus": down,
                    "visible": True,
                },
                text=[plotly_text(p["label"]) for p in group],
                hovertext=[
                    plotly_text(
                        p["label"]
                        + (f" (dominated by {p['dominated_by']})" if p.get("dominated_by") else "")
                    )
                    for p in group
                ],
                hoverinfo="text+x+y",
                mode="lines+markers+text" if on else "markers+text",
                line_shape="hv",
                textposition="top center",
                marker={"size": 10, "color": _colour(0 if on else 3)},
                name=name,
            )
        )
    fig.update_layout(
        _LAYOUT,
        title="Cost–success frontier",
        xaxis={"title": "cost per trial (USD, log scale)", "type": "log"},
        # Headroom above 1 for the label of an agent that passes everything.
        yaxis={"title": "success rate", "range": [0, 1.12]},
    )
    return fig


def _cost(p: Mapping[str, Any]) -> float:
    return float(p["cost_per_trial"])


def horizon_figure(groups: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Fitted success probability against task length (log minutes), per agent.

    Each group is ``{label, intercept, slope, minutes_range, tasks: [{task_id, minutes,
    rate}], horizons: {"0.5": m, ...}, ci95: {"0.5": [lo, hi], ...} | None}``: the
    logistic curve p = σ(b0 + b1·log2 minutes) of Kwa et al. 2025 (METR), the tasks
    as points at their observed success rate, and each horizon's bootstrap interval
    as a horizontal bar at its probability (cut at the plotted range; a horizon
    outside it is not drawn).
    """
    fig = go.Figure()
    spans = [g["minutes_range"] for g in groups if g["minutes_range"][0] > 0]
    # The plot spans the tasks' lengths (with a margin): a horizon extrapolated to
    # 10^40 minutes would squash every task into one pixel; such horizons are named
    # in the fit's warnings instead.
    lo = min((s[0] for s in spans), default=1.0) / 2
    hi = max((s[1] for s in spans), default=1.0) * 4
    for i, g in enumerate(groups):
        colour = _colour(i)
        name = plotly_text(g["label"])
        if _known(g.get("intercept")) and _known(g.get("slope")):
            steps = 60
            xs = [lo * (hi / lo) ** (j / steps) for j in range(steps + 1)]
            ys = [1 / (1 + math.exp(-(g["intercept"] + g["slope"] * math.log2(x)))) for x in xs]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line={"color": colour}, name=name))
        tasks = g.get("tasks") or []
        fig.add_trace(
            go.Scatter(
                x=[t["minutes"] for t in tasks],
                y=[t["rate"] for t in tasks],
                hovertext=[plotly_text(str(t["task_id"])) for t in tasks],
                hoverinfo="text+x+y",
                mode="markers",
                marker={"color": colour, "opacity": 0.45, "size": 6},
                name=plotly_text(f"{g['label']} tasks"),
            )
        )
        for q, ci in (g.get("ci95") or {}).items():
            point = (g.get("horizons") or {}).get(q)
            # An end the data only bound (`agentgauge horizon`'s `< 2` and `> 60`: bootstrap
            # replicates with no successes, or no failures) is null; the bar runs to the
            # plotted end on its side, as it did when such replicates counted as 0 or ∞,
            # and an end bounded towards the point (an upper end `< 2`, both ends below
            # the shortest task) runs to its bound, not to the far end. An undefined
            # end draws no bar.
            ends = (g.get("ci95_status") or {}).get(q) or ("estimated", "estimated")
            bound = (g.get("ci95_bound_minutes") or {}).get(q) or (None, None)
            low, high = (
                ci[i] if ci and _known(ci[i]) else edge if ends[i] == side else bound[i]
                for i, edge, side in ((0, lo, "below"), (1, hi, "above"))
            )
            if not (_known(point) and lo <= point <= hi and _known(low) and _known(high)):
                continue
            ci = [min(point, max(lo, low)), max(point, min(hi, high))]
            fig.add_trace(
                go.Scatter(
                    x=[point],
                    y=[float(q)],
                    error_x={
                        "type": "data",
                        "symmetric": False,
                        "array": [ci[1] - point],
                        "arrayminus": [point - ci[0]],
                    },
                    mode="markers",
                    marker={"color": colour, "symbol": "diamond", "size": 10},
                    # As `agentgauge horizon` names it: p99.5 for 0.995 (rounding read "100%").
                    name=plotly_text(f"{g['label']} {q_label(float(q))} horizon, 95% CI"),
                )
            )
    fig.update_layout(
        _LAYOUT,
        title="Time horizon: success against human task length",
        xaxis={
            "title": "human minutes (log scale)",
            "type": "log",
            "range": [math.log10(lo), math.log10(hi)],
        },
        yaxis={"title": "success probability", "range": [0, 1.05]},
    )
    return fig


def confusion_figure(matrices: Sequence[Mapping[str, Any]], states: Sequence[str]) -> go.Figure:
    """One heatmap per agent of control decisions, expected (rows) × taken (columns).

    Each matrix is ``{label, counts: {expected: {taken: n}}}``; only the states any
    agent expected or took are drawn.
    """
    used = [
        s
        for s in states
        if any(
            sum(m["counts"].get(s, {}).values()) or sum(r.get(s, 0) for r in m["counts"].values())
            for m in matrices
        )
    ] or list(states)
    fig = make_subplots(
        rows=1,
        cols=max(1, len(matrices)),
        subplot_titles=[plotly_text(m["label"]) for m in matrices],
        horizontal_spacing=0.06,
    )
    for i, m in enumerate(matrices, start=1):
        z = [[m["counts"].get(e, {}).get(t, 0) for t in used] for e in used]
        fig.add_trace(
            go.Heatmap(
                z=z,
                x=used,
                y=used,
                text=z,
                texttemplate="%{text}",
                colorscale="Blues",
                showscale=False,
                hovertemplate="expected %{y}, took %{x}: %{z}<extra></extra>",
            ),
            row=1,
            col=i,
        )
        fig.update_yaxes(autorange="reversed", row=1, col=i, title="expected" if i == 1 else None)
        fig.update_xaxes(title="taken", row=1, col=i)
    fig.update_layout(_LAYOUT, title="Control decisions: expected × taken", height=360)
    return fig


def _no_bar_where_unknown(values: Sequence[float | None]) -> np.ndarray:
    """Error-bar lengths with NaN where unknown, for which plotly.js draws no bar: a
    null would read as 0 there and draw a bar of no width, the look of a figure known
    exactly. A float64 array reaches the page as a typed array (plotly's encoder),
    which keeps the NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _whiskers(rows: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """Each bar's error bar above and below its value: to the ends of its ``ci95``
    where the row has that key (a success rate's interval, the one the table beside
    it prints, which need not be symmetric: [52.0%, 79.9%] around 67.5%), else
    ±1.96·``se``; no bar where neither is known (`_no_bar_where_unknown`)."""
    up, down = np.full(len(rows), np.nan), np.full(len(rows), np.nan)
    for i, r in enumerate(rows):
        value = r["value"]
        if "ci95" in r:
            ci = r["ci95"]
            if ci is not None and _known(ci[0]) and _known(ci[1]):
                up[i], down[i] = max(0.0, ci[1] - value), max(0.0, value - ci[0])
        elif _known(r.get("se")):
            up[i] = down[i] = Z95 * r["se"]
    return up, down


def _bars(
    rows: Sequence[Mapping[str, Any]], x_key: str, series_key: str, title: str, y_title: str
) -> go.Figure:
    """Grouped bars of ``value`` with their 95% intervals (`_whiskers`; no bar where
    value is None)."""
    fig = go.Figure()
    series = list(dict.fromkeys(str(r[series_key]) for r in rows))
    for i, s in enumerate(series):
        mine = [r for r in rows if str(r[series_key]) == s and _known(r.get("value"))]
        if not mine:
            continue
        up, down = _whiskers(mine)
        fig.add_trace(
            go.Bar(
                x=[plotly_text(str(r[x_key])) for r in mine],
                y=[r["value"] for r in mine],
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": up,
                    "arrayminus": down,
                    "visible": True,
                },
                marker_color=_colour(i),
                name=plotly_text(s),
            )
        )
    fig.update_layout(
        _LAYOUT, title=title, barmode="group", yaxis={"title": y_title, "range": [0, 1.05]}
    )
    return fig


def variant_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Success rate per variant, bars grouped by agent: rows ``{label, variant, value,
    ci95}``, each bar's error bar its interval."""
    return _bars(rows, "label", "variant", "Success rate per variant", "success rate")


def reliability_figure(rows: Sequence[Mapping[str, Any]]) -> go.Figure:
    """Robustness and consistency per agent: rows ``{label, metric, value, se}``
    (Rabanser et al. 2026)."""
    return _bars(rows, "metric", "label", "Robustness and consistency", "score")


def forest_figure(rows: Sequence[Mapping[str, Any]], by: str = "capability") -> go.Figure:
    """Paired differences B − A with their 95% intervals, one row per capability
    (or whatever ``by`` names: a family).

    Rows are ``{label, diff, ci: [lo, hi] | None, n_tasks}`` (Miller 2024); a row
    without an interval is drawn as a point alone.
    """
    labels = [plotly_text(f"{r['label']} ({counted(r['n_tasks'], 'task')})") for r in rows]
    fig = go.Figure(
        go.Scatter(
            x=[r["diff"] for r in rows],
            y=labels,
            error_x={
                "type": "data",
                "symmetric": False,
                "array": _no_bar_where_unknown(
                    [(r["ci"][1] - r["diff"]) if r.get("ci") else None for r in rows]
                ),
                "arrayminus": _no_bar_where_unknown(
                    [(r["diff"] - r["ci"][0]) if r.get("ci") else None for r in rows]
                ),
            },
            mode="markers",
            marker={"symbol": "square", "size": 9, "color": _colour(0)},
            name="B − A",
        )
    )
    fig.add_vline(x=0, line={"color": "#888", "dash": "dot"})
    fig.update_layout(
        _LAYOUT,
        title=f"Paired difference B − A per {plotly_text(by)}, 95% CI",
        xaxis={"title": "difference in success rate", "range": [-1.05, 1.05]},
        yaxis={"autorange": "reversed"},
        height=max(260, 60 + 28 * len(rows)),
        showlegend=False,
    )
    return fig


def tool_error_figure(counts: Mapping[str, Mapping[str, int]]) -> go.Figure:
    """Failed tool-call statuses per agent: ``{agent label: {error_type: n}}``
    (BFCL-style namespaced types, e.g. ``value_error:string``)."""
    types = sorted({t for per in counts.values() for t in per})
    fig = go.Figure()
    for i, (label, per) in enumerate(counts.items()):
        fig.add_trace(
            go.Bar(
                y=[plotly_text(t) for t in types],
                x=[per.get(t, 0) for t in types],
                orientation="h",
                marker_color=_colour(i),
                name=plotly_text(label),
            )
        )
    fig.update_layout(
        _LAYOUT,
        title="Tool-call errors by type",
        barmode="group",
        xaxis={"title": "failed calls"},
        yaxis={"autorange": "reversed"},
        height=max(300, 80 + 22 * len(types) * max(1, len(counts)) // 2),
    )
    return fig
