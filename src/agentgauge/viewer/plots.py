"""The plots on a run's page, as plotly figure data the page draws with plotly.js.

The one place the viewer makes figures, with the report's plot builders
(`agentgauge.report.figures`), so a plot looks and means the same on both. Every
label goes through `agentgauge.display.plotly_text` (plotly renders HTML
tags in names and tick labels); the data reach the page as JSON through Jinja's
``tojson`` filter, which escapes ``<``, ``>`` and ``&``.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go

from agentgauge.report.build import passk_curves
from agentgauge.report.figures import passk_figure, variant_figure

__all__ = ["run_figures", "warm_up"]


def _data(fig: go.Figure) -> dict[str, Any]:
    """Plain JSON data (plotly's encoder turns numpy arrays into lists)."""
    data: dict[str, Any] = json.loads(fig.to_json())
    return data


def run_figures(
    base: dict[str, Any] | None, per_variant: dict[str, Any] | None, scope: str
) -> list[dict[str, Any]]:
    """The run page's figures (plotly JSON): pass@k/pass^k of ``base`` (whose trials
    ``scope`` names: the base variant) and success per variant; a figure without
    data is left out."""
    figures = []
    if base is not None and base["groups"]:
        ks = sorted({int(k) for g in base["groups"] for k in g.get("pass_hat_k", {})})
        fig = passk_figure(passk_curves(base["groups"], ks))
        fig.update_layout(title=f"pass@k (dashed) and pass^k (solid) against k ({scope})")
        figures.append(_data(fig))
    if per_variant is not None and per_variant["groups"]:
        rows = [
            {
                "label": "all agents",
                "variant": str(g.get("variant")),
                "value": g["success_rate"]["value"],
                # The interval the table beside the plot prints (Wilson, or from the
                # clustered SE), as the report draws it.
                "ci95": g["success_rate"]["ci95"],
            }
            for g in per_variant["groups"]
        ]
        figures.append(_data(variant_figure(rows)))
    return figures


def warm_up() -> None:
    """Build a throwaway figure of each kind: plotly loads its validators on first
    use (about half a second), which the server pays at start, not the first page."""
    _data(go.Figure([go.Scatter(x=[1], y=[1]), go.Bar(x=["a"], y=[1])]))
