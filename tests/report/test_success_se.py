"""One SE beside a success rate on every face: the clustered one when families are
declared, as the interval beside it and the comparison record use.

Before this test the report printed "33.9% ± 6.2%" (the SE over tasks) beside the
interval "16.8%–56.5%" made from the clustered SE (9.9%) over 11 families, under a
note saying the SE treats families as the units; the record printed ±9.9 for the same
run, and the frontier's error bars were drawn from 6.2%.
"""

from __future__ import annotations

import io
import re

from rich.console import Console

from agentgauge.api import metrics as compute_metrics
from agentgauge.report.build import ReportInputs, build_report, markdown_summary
from agentgauge.report.html import render_html
from agentgauge.report.terminal import print_variants
from agentgauge.schema import Run, Trial
from agentgauge.sources import TrialSource


def _trials() -> list[Trial]:
    """12 tasks in 4 families of 3; family f0 passes everything, f3 nothing: the
    families' rates spread more than the tasks' do, so the two SEs differ. Two
    variants, so that the report has its outcome-per-variant table."""
    return [
        Trial.model_validate(
            {
                "task_id": f"t{t}",
                "trial": k,
                "agent": "bot",
                "variant": variant,
                "family": f"f{t // 3}",
                "success": (t // 3 + k + t) % 4 < 3 - t // 3,
                "cost_usd": 0.01,
            }
        )
        for t in range(12)
        for k in range(2)
        for variant in ("base", "paraphrase:1")
    ]


def _source() -> TrialSource:
    run = Run(run_id="r", suite="s", created_at="2026-01-01T00:00:00+00:00")
    return TrialSource(label="r", trials=_trials(), run=run)


def test_the_report_shows_the_clustered_se_its_interval_is_made_from() -> None:
    base = [t for t in _trials() if t.variant == "base"]
    group = compute_metrics(base, k=[1], by=("agent",)).to_dict()["groups"][0]
    sr = group["success_rate"]
    assert group["cluster_unit"] == "family"
    se, clustered = sr["se"], sr["se_clustered"]
    assert round(100 * se, 1) != round(100 * clustered, 1)  # the data tell them apart

    data = build_report(ReportInputs(sources=[_source()], ks=[1]))
    suite = data.suites[0]
    md, html = markdown_summary(data), render_html(data)
    row = next(line for line in md.splitlines() if line.startswith("| bot |"))
    # The success rate's cell (pass@k and pass^k beside it have their SE over tasks).
    success = row.split("|")[2]
    assert f"± {100 * clustered:.1f}%" in success and f"± {100 * se:.1f}%" not in success
    cell = r'<td>[0-9.]+ <span class="ci">± {}</span></td>\s*<td class="ci">'
    assert re.search(cell.format(f"{clustered:.3f}"), html)
    assert not re.search(cell.format(f"{se:.3f}"), html)
    # The frontier's error bars and the outcome per variant use the same SE.
    assert [p["success_se"] for p in suite.frontier] == [clustered]
    per_variant = {v["variant"]: v for v in suite.variants}
    assert per_variant["base"]["se"] == clustered


def test_the_terminal_variant_table_shows_the_same_se() -> None:
    report = compute_metrics(_trials(), k=[1], by=("agent", "variant"))
    base = next(g for g in report.to_dict()["groups"] if g["variant"] == "base")
    buf = io.StringIO()
    print_variants(report, Console(file=buf, width=160), title="per variant")
    line = next(ln for ln in buf.getvalue().splitlines() if ln.strip().startswith("base"))
    assert f"± {100 * base['success_rate']['se_clustered']:.1f}" in line
