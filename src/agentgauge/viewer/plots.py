"""The plots on a run's page, as plotly figure data the page draws with plotly.js.

The one place the viewer builds figures: when the report's plot builders
(``agentgauge.report.figures``) land, these two functions call them instead.
Every label goes through `agentgauge.display.plotly_text` (plotly renders HTML
tags in names and tick labels); the data reach the page as JSON through Jinja's
``tojson`` filter, which escapes ``<``, ``>`` and ``&``.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from agentgauge.display import plotly_text

__all__ = ["run_figures", "warm_up"]

_LAYOUT: dict[str, Any] = {
    "height": 360,
    "margin": {"t": 50, "b": 50, "l": 60, "r": 20},
    "template": "plotly_white",
}


def _label(group: dict[str, Any], keys: tuple[str, ...]) -> str:
    parts = [str(group[k]) for k in keys if group.get(k) is not None]
    return " / ".join(parts) or "all"


def _data(fig: go.Figure) -> dict[str, Any]:
    """Plain JSON data (plotly's encoder turns numpy arrays into lists)."""
    data: dict[str, Any] = json.loads(fig.to_json())
    return data


def _passk(base: dict[str, Any], scope: str) -> dict[str, Any]:
    """pass@k and pass^k against k per agent, with ±1 SE bars."""
    fig = go.Figure()
    for group in base["groups"]:
        label = _label(group, ("agent", "model"))
        for key, name, dash in (("pass_at_k", "pass@k", "dot"), ("pass_hat_k", "pass^k", "solid")):
            values = group.get(key, {})
            ks = sorted(int(k) for k, v in values.items() if v is not None)
            ses = group.get(f"{key}_se", {})
            fig.add_trace(
                go.Scatter(
                    x=ks,
                    y=[values[str(k)] for k in ks],
                    error_y={"type": "data", "array": [ses.get(str(k)) or 0 for k in ks]},
                    mode="lines+markers",
                    line={"dash": dash},
                    name=plotly_text(f"{label} {name}"),
                )
            )
    fig.update_layout(
        title=f"pass@k and pass^k against k ({scope}, ±1 SE)",
        xaxis={"title": "k", "dtick": 1},
        yaxis={"title": "rate", "range": [0, 1.02]},
        **_LAYOUT,
    )
    return _data(fig)


def _per_variant(per_variant: dict[str, Any]) -> dict[str, Any]:
    """Success rate per variant with its 95% interval."""
    groups = per_variant["groups"]
    rates = [g["success_rate"]["value"] for g in groups]
    ci = [g["success_rate"].get("ci95") or [None, None] for g in groups]
    fig = go.Figure(
        go.Bar(
            x=[plotly_text(g["variant"]) for g in groups],
            y=rates,
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [
                    0 if hi is None or r is None else hi - r
                    for r, (_, hi) in zip(rates, ci, strict=True)
                ],
                "arrayminus": [
                    0 if lo is None or r is None else r - lo
                    for r, (lo, _) in zip(rates, ci, strict=True)
                ],
            },
            text=[f"{g['n_successes']}/{g['n_trials']}" for g in groups],
            textposition="outside",
            name="success rate",
        )
    )
    fig.update_layout(
        title="success rate per variant (all variants, 95% interval)",
        yaxis={"title": "success rate", "range": [0, 1.1]},
        **_LAYOUT,
    )
    return _data(fig)


def run_figures(
    base: dict[str, Any] | None, per_variant: dict[str, Any] | None, scope: str
) -> list[dict[str, Any]]:
    """The run page's figures (plotly JSON): pass@k/pass^k of ``base`` (whose trials
    ``scope`` names: the base variant) and success per variant; a figure without
    data is left out."""
    figures = []
    if base is not None and base["groups"]:
        figures.append(_passk(base, scope))
    if per_variant is not None and per_variant["groups"]:
        figures.append(_per_variant(per_variant))
    return figures


def warm_up() -> None:
    """Build a throwaway figure of each kind: plotly loads its validators on first
    use (about half a second), which the server pays at start, not the first page."""
    _data(go.Figure([go.Scatter(x=[1], y=[1]), go.Bar(x=["a"], y=[1])]))
