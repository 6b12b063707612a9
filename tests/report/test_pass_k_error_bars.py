"""pass@k and pass^k carry their error bar in the HTML report and the Markdown summary,
as `agentgauge metrics` prints them.

Before this test both wrote them bare ("0.750", "0.000"): a rate with neither its SE
over tasks nor, where every task has the same value (an SE of 0), the count of tasks
that stands in for "± 0".
"""

from __future__ import annotations

from agentgauge.api import metrics as compute_metrics
from agentgauge.report.build import ReportInputs, build_report, markdown_summary
from agentgauge.report.formats import fraction, percent
from agentgauge.report.html import render_html
from agentgauge.schema import Run, Trial
from agentgauge.sources import TrialSource


def _trials(never: bool) -> list[Trial]:
    """Six tasks of two trials; with ``never``, three tasks that never pass."""
    if never:
        cells = [(f"z{t}", k, False) for t in range(3) for k in range(2)]
    else:
        cells = [(f"t{t}", k, t == 1 or (t + k) % 3 == 0) for t in range(6) for k in range(2)]
    return [
        Trial.model_validate({"task_id": t, "trial": k, "agent": "bot", "success": ok})
        for t, k, ok in cells
    ]


def _report(never: bool) -> tuple[str, str]:
    run = Run(run_id="r", suite="s", created_at="2026-01-01T00:00:00+00:00")
    data = build_report(
        ReportInputs(sources=[TrialSource(label="r", trials=_trials(never), run=run)], ks=[2])
    )
    return markdown_summary(data), render_html(data)


def test_pass_k_is_shown_with_its_se() -> None:
    group = compute_metrics(_trials(False), k=[2], by=("agent",)).to_dict()["groups"][0]
    at, at_se = group["pass_at_k"]["2"], group["pass_at_k_se"]["2"]
    hat, hat_se = group["pass_hat_k"]["2"], group["pass_hat_k_se"]["2"]
    assert at_se and hat_se and at != hat
    md, html = _report(False)
    row = next(line for line in md.splitlines() if line.startswith("| bot |"))
    assert f"| {percent(hat)} ± {percent(hat_se)} |" in row
    assert f'<td>{fraction(at)} <span class="ci">± {fraction(at_se)}</span></td>' in html
    assert f'<td>{fraction(hat)} <span class="ci">± {fraction(hat_se)}</span></td>' in html


def test_pass_k_with_no_spread_says_how_many_tasks() -> None:
    md, html = _report(True)
    row = next(line for line in md.splitlines() if line.startswith("| bot |"))
    assert "| 0.0% (0/3 tasks) |" in row and "| 0.000 |" not in row
    # pass@2 and pass^2 of the outcome table.
    assert html.count('<td>0.000 <span class="ci">(0/3 tasks)</span></td>') == 2
    assert "<td>0.000</td>" not in html
