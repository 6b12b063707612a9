from __future__ import annotations

import math
from typing import Any

import pytest

from agentgauge.report.explain import trial_view
from agentgauge.report.html import ReportData, SuiteReport, render_html
from agentgauge.schema import Trial

EVIL = '</script><script>alert("x")</script><img src=x onerror=alert(1)>'


def group(agent: str) -> dict[str, Any]:
    return {
        "agent": agent,
        "model": None,
        "variant": "base",
        "n_tasks": 2,
        "n_trials": 8,
        "n_clusters": None,
        "success_rate": {
            "value": 0.5,
            "se": 0.1,
            "se_clustered": None,
            "ci95": [0.3, 0.7],
            "ci_method": "cluster_bootstrap",
        },
        "pass_at_k": {"1": 0.5, "2": 0.7},
        "pass_hat_k": {"1": 0.5, "2": 0.3},
        "pass_at_k_se": {"1": 0.1, "2": 0.1},
        "pass_hat_k_se": {"1": 0.1, "2": 0.1},
        "outcome_consistency": 0.25,
        "flaky_tasks": [EVIL],
        "infra_errors": 0,
        "cost": {
            "per_trial": 0.01,
            "total": 0.08,
            "cost_of_pass": 0.02,
            "judge_total": None,
            "missing": 0,
        },
        "latency_s": {"p50": 1.0, "p95": 2.0, "mean": 1.2},
        "tokens": {"input": 10, "output": 5},
    }


def view(text: str) -> dict[str, Any]:
    """A failing trial whose every text field is ``text``, as the report shows it."""
    trial = Trial.model_validate(
        {
            "task_id": text,
            "trial": 0,
            "agent": text,
            "success": False,
            "error": text,
            "events": [{"type": "message", "role": "assistant", "content": text}],
            "grades": [{"grader": text, "passed": False, "evidence": {"reason": text}}],
        }
    )
    return trial_view(trial)


def test_untrusted_text_is_escaped_everywhere() -> None:
    cell = {"k": 1, "n": 2, "rate": 0.5, "flaky": True, "anchor": "s0-t0"}
    suite = SuiteReport(
        name=EVIL,
        metrics={"groups": [group(EVIL)]},
        ks=[1, 2],
        tasks=[{"task_id": EVIL, "family": EVIL, "human_minutes": 3.0, "cells": {EVIL: cell}}],
        transcripts=[
            {
                "anchor": "s0-t0",
                "agent": EVIL,
                "flip": True,
                "summary": EVIL,
                "classes": EVIL,
                "view": view(EVIL),
            }
        ],
        sections=[{"title": EVIL, "note": EVIL, "columns": [EVIL], "rows": [[EVIL]]}],
        frontier=[
            {"label": EVIL, "cost_per_trial": 0.1, "success_rate": 0.5, "dominated_by": None}
        ],
    )
    data = ReportData(title="t", suites=[suite], record=[EVIL], notes=[EVIL])
    html = render_html(data)
    # The raw payload never appears; escaped forms do.
    assert "<img src=x" not in html
    assert '<script>alert("x")' not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    # Inside plot JSON, "</script>" must be broken up so it cannot close the script element.
    assert html.count("</script>") == html.count("<script")


# --------------------------------------------------------------------------- figures


def test_passk_bands_only_where_the_metrics_give_an_se() -> None:
    from agentgauge.report.figures import Z95, passk_figure

    curve = {
        "label": "a",
        "ks": [1, 2, 4],
        "pass_at_k": [0.5, 0.7, None],
        "pass_at_k_se": [None, None, None],
        "pass_hat_k": [0.5, 0.3, None],
        "pass_hat_k_se": [0.1, 0.4, None],
    }
    fig = passk_figure([curve])
    bands = [t for t in fig.data if t.fill == "toself"]
    lines = [t for t in fig.data if t.fill != "toself"]
    # pass@k has no SE: no band; pass^k has one at k = 1, 2; k = 4 (None) is not drawn.
    assert len(bands) == 1 and [len(t.x) for t in lines] == [2, 2]
    # Band: 0.5 ± 1.96·0.1 = [0.304, 0.696]; 0.3 ± 1.96·0.4 clipped to [0, 1].
    assert bands[0].y == pytest.approx([0.5 + Z95 * 0.1, 1.0, 0.0, 0.5 - Z95 * 0.1])


def test_frontier_uses_a_log_axis_and_leaves_unknown_and_zero_costs_out() -> None:
    from agentgauge.report.figures import frontier_figure

    points = [
        {"label": "cheap", "cost_per_trial": 0.01, "success_rate": 0.4, "success_se": 0.1,
         "dominated_by": None},
        {"label": "dear", "cost_per_trial": 1.0, "success_rate": 0.9, "success_se": None,
         "dominated_by": None},
        {"label": "free", "cost_per_trial": 0.0, "success_rate": 0.0, "success_se": 0.0,
         "dominated_by": None},
        {"label": "unknown", "cost_per_trial": None, "success_rate": 0.5, "success_se": 0.1,
         "dominated_by": None},
    ]  # fmt: skip
    fig = frontier_figure(points)
    assert fig.layout.xaxis.type == "log"
    drawn = [x for t in fig.data for x in t.x]
    assert drawn == [0.01, 1.0]
    # No SE, no error bar (NaN, which plotly.js leaves undrawn): a 0 drew a bar of no
    # width, the look of a rate known exactly.
    assert list(fig.data[0].error_y.array) == pytest.approx([1.959964 * 0.1, math.nan], nan_ok=True)


def test_variant_bars_span_the_tables_interval_and_none_without_one() -> None:
    # The bars were ±1.96·se, around a table printing an interval that need not be
    # symmetric, and 0 wide where the interval is unknown.
    from agentgauge.report.figures import variant_figure

    rows = [
        {"label": "a", "variant": "base", "value": 0.675, "ci95": [0.52, 0.799], "se": 0.075},
        {"label": "b", "variant": "base", "value": 1.0, "ci95": [0.984, 1.0], "se": 0.0},
        {"label": "c", "variant": "base", "value": 0.5, "ci95": None, "se": None},
    ]
    (bars,) = variant_figure(rows).data
    assert bars.error_y.symmetric is False
    assert list(bars.error_y.array) == pytest.approx([0.124, 0.0, math.nan], nan_ok=True)
    assert list(bars.error_y.arrayminus) == pytest.approx([0.155, 0.016, math.nan], nan_ok=True)


def _horizon_group(horizons: dict[str, Any]) -> dict[str, Any]:
    """A horizon figure's group: one task of 2 minutes, lengths 2-64, a falling fit, and
    ``horizons`` (the horizons and their intervals) added."""
    return {
        "label": "a",
        "intercept": 2.0,
        "slope": -0.5,
        "minutes_range": [2.0, 64.0],
        "tasks": [{"task_id": "t", "minutes": 2.0, "rate": 1.0}],
        **horizons,
    }


def test_horizon_axis_spans_the_tasks_not_an_extrapolated_horizon() -> None:
    from agentgauge.report.figures import horizon_figure

    group = _horizon_group(
        {
            "horizons": {"0.5": 16.0, "0.8": 1e40},
            "ci95": {"0.5": [4.0, 1e30], "0.8": [1e10, 1e50]},
        }
    )
    fig = horizon_figure([group])
    # Range 2/2 .. 64·4 minutes, in log10 units.
    assert fig.layout.xaxis.range == pytest.approx([0.0, math.log10(256)])
    marks = [t for t in fig.data if t.error_x and t.error_x.array is not None]
    # Only the 50% horizon is inside; its interval is cut at the plotted end (256).
    assert [t.x[0] for t in marks] == [16.0]
    assert marks[0].error_x.array[0] == pytest.approx(256 - 16)


def test_a_horizon_interval_bounded_below_is_drawn_to_the_plotted_end() -> None:
    from agentgauge.report.figures import horizon_figure

    # The lower end of p50's interval falls among bootstrap replicates with no successes:
    # null, "below 4 min" (it read 0, which the bar cut at the plotted end). The bar still
    # runs to the left end (1 min); the undefined p80 end still draws nothing.
    group = _horizon_group(
        {
            "horizons": {"0.5": 16.0, "0.8": 4.0},
            "ci95": {"0.5": [None, 32.0], "0.8": [None, 8.0]},
            "ci95_status": {"0.5": ["below", "estimated"], "0.8": ["undefined", "estimated"]},
            "ci95_bound_minutes": {"0.5": [4.0, None], "0.8": [None, None]},
        }
    )
    marks = [t for t in horizon_figure([group]).data if t.error_x and t.error_x.array is not None]
    assert [t.x[0] for t in marks] == [16.0]
    assert marks[0].error_x.arrayminus[0] == pytest.approx(16.0 - 1.0)
    assert marks[0].error_x.array[0] == pytest.approx(32.0 - 16.0)


def test_a_horizon_interval_bounded_below_at_both_ends_stops_at_its_bound() -> None:
    from agentgauge.report.figures import horizon_figure

    # Both ends of p50's interval lie below the shortest task (2 min), the point at 1.5
    # min: the bar ran from the left end to the right one (256 min), as if its upper end
    # were unbounded, where the data say it lies below 2. An undefined upper end (p80)
    # drew a bar to the right end; it draws none, as an undefined lower end does.
    group = _horizon_group(
        {
            "horizons": {"0.5": 1.5, "0.8": 16.0},
            "ci95": {"0.5": [None, None], "0.8": [8.0, None]},
            "ci95_status": {"0.5": ["below", "below"], "0.8": ["estimated", "undefined"]},
            "ci95_bound_minutes": {"0.5": [2.0, 2.0], "0.8": [None, None]},
        }
    )
    marks = [t for t in horizon_figure([group]).data if t.error_x and t.error_x.array is not None]
    assert [t.x[0] for t in marks] == [1.5]
    assert marks[0].error_x.arrayminus[0] == pytest.approx(1.5 - 1.0)
    assert marks[0].error_x.array[0] == pytest.approx(2.0 - 1.5)


def test_horizon_marks_are_named_as_the_horizon_command_names_them() -> None:
    from agentgauge.report.figures import horizon_figure

    # round(100 · 0.995) named the 99.5% horizon "100%", and 0.9951's too: two marks alike.
    group = _horizon_group(
        {
            "horizons": {"0.5": 16.0, "0.995": 8.0, "0.9951": 4.0},
            "ci95": {"0.5": [4.0, 32.0], "0.995": [4.0, 16.0], "0.9951": [2.0, 8.0]},
        }
    )
    names = [t.name for t in horizon_figure([group]).data if t.error_x.array is not None]
    assert names == [
        "a p50 horizon, 95% CI",
        "a p99.5 horizon, 95% CI",
        "a p99.51 horizon, 95% CI",
    ]


# --------------------------------------------------------------------------- build


def _trial(task: str, k: int, agent: str, success: bool, **extra: Any) -> Trial:
    return Trial.model_validate(
        {"task_id": task, "trial": k, "agent": agent, "success": success, **extra}
    )


def _source(run_id: str, suite: str | None, trials: list[Trial]) -> Any:
    from agentgauge.schema import Run
    from agentgauge.sources import TrialSource

    run = Run(run_id=run_id, suite=suite, created_at="2026-01-01T00:00:00+00:00")
    return TrialSource(label=run_id, trials=trials, run=run)


def test_each_suite_gets_its_own_section_and_runs_sharing_tasks_meet() -> None:
    from agentgauge.report.build import ReportInputs, build_report, markdown_summary

    a = [_trial(f"r{t}", k, "a", (t + k) % 2 == 0) for t in range(3) for k in range(2)]
    b = [_trial(f"r{t}", k, "b", t > 0) for t in range(3) for k in range(2)]
    f = [_trial(f"f{t}", k, "a", True) for t in range(2) for k in range(2)]
    data = build_report(
        ReportInputs(
            sources=[
                _source("ra", "one.jsonl", a),
                _source("rb", "two.jsonl", b),
                _source("fa", "fn", f),
            ],
            ks=[1, 2],
        )
    )
    assert [s.name for s in data.suites] == ["one.jsonl, two.jsonl", "fn"]
    retail = data.suites[0]
    assert [g["agent"] for g in retail.metrics["groups"]] == ["a", "b"]
    assert list(retail.tasks[0]["cells"]) == ["a", "b"]
    # No human minutes anywhere: the section says so instead of drawing nothing.
    assert retail.horizon == [] and retail.horizon_note is not None
    assert "human minutes" in retail.horizon_note
    titles = [s["title"] for s in retail.sections]
    assert titles[-1] == "Validity checks — base variant"
    md = markdown_summary(data)
    assert md.count("outcome — base variant") == 2
    html = render_html(data)
    assert 'id="s0"' in html and 'id="s1"' in html
    assert "No task in these runs records human minutes" in html


def test_transcripts_explain_failures_flips_first_capped_per_agent() -> None:
    from agentgauge.report.build import TRANSCRIPTS_PER_AGENT, ReportInputs, build_report

    # Tasks a0..a9 always fail, f0..f2 pass on trial 0 only (flips), p0 always passes.
    trials = [_trial(f"a{t}", k, "x", False, error=f"boom {t}") for t in range(10) for k in (0, 1)]
    trials += [_trial(f"f{t}", k, "x", k == 0) for t in range(3) for k in (0, 1)]
    trials += [_trial("p0", k, "x", True) for k in (0, 1)]
    suite = build_report(ReportInputs(sources=[_source("r", "s", trials)], ks=[1])).suites[0]
    shown = [t["view"]["task_id"] for t in suite.transcripts]
    assert len(shown) == TRANSCRIPTS_PER_AGENT == 8
    assert shown[:3] == ["f0", "f1", "f2"] and all(t.startswith("a") for t in shown[3:])
    assert suite.transcripts_more == {"x": 13 - 8}
    assert all(t["view"]["success"] is False for t in suite.transcripts)
    # The flip's transcript is its failing trial (1); the error message is carried.
    assert suite.transcripts[0]["view"]["trial"] == 1 and suite.transcripts[0]["flip"]
    assert suite.transcripts[3]["view"]["error"].startswith("boom")
    cells = {row["task_id"]: row["cells"]["x"] for row in suite.tasks}
    assert cells["f0"]["flaky"] and cells["f0"]["anchor"] == suite.transcripts[0]["anchor"]
    assert cells["p0"]["anchor"] is None and not cells["p0"]["flaky"]
    left_out = [c for c in cells.values() if c["k"] < c["n"] and c["anchor"] is None]
    assert len(left_out) == 5
    html = render_html(ReportData(title="t", suites=[suite]))
    assert "its transcript is not included in this report" in html
    assert "x: 5 more failing tasks not shown." in html


def test_the_record_headline_is_short_with_capabilities_in_a_table() -> None:
    from agentgauge.report.build import ReportInputs, build_report

    def side(agent: str, rate: int) -> list[Trial]:
        return [
            _trial(f"t{t}", k, agent, (t + k) % 4 < rate, capability=f"cap{t % 2}", family=f"f{t}")
            for t in range(6)
            for k in range(4)
        ]

    a, b = _source("a", "s", side("A", 1)), _source("b", "s", side("B", 3))
    headline = (
        "Headline: success rate ±SE pp [95% CI]: B 75.0% (Wilson over 6 tasks), by capability: "
        "cap0 75.0%; cap1 75.0%; A 25.0% (Wilson over 6 tasks), by capability: cap0 25.0%; "
        "cap1 25.0%"
    )
    data = build_report(
        ReportInputs(
            sources=[a, b], record=["Systems: x", headline], comparison={}, compared=(a, b)
        )
    )
    assert data.record[1] == (
        "Headline: success rate ±SE pp [95% CI]: B 75.0% (Wilson over 6 tasks); "
        "A 25.0% (Wilson over 6 tasks) (per capability: the table below)"
    )
    rows = {r["label"]: r for r in data.capabilities}
    assert sorted(rows) == ["cap0", "cap1"]
    # 3 tasks per capability, each with rates 1/4 (A) and 3/4 (B): difference 0.5 exactly.
    assert rows["cap0"]["n_tasks"] == 3
    assert rows["cap0"]["diff"] == pytest.approx(0.5)
    assert rows["cap0"]["rate_a"] == pytest.approx(0.25)


def test_a_capability_of_one_task_says_why_it_has_no_interval_in_markdown() -> None:
    from agentgauge.report.build import ReportInputs, build_report, markdown_summary

    # cap0 holds one task, cap1 two: cap0's paired difference has no spread, so no
    # interval; the Markdown table showed a bare dash where the HTML's caption says why.
    def side(agent: str, ok: bool) -> list[Trial]:
        return [
            _trial(f"t{t}", k, agent, ok != (t == 2 and k == 0), capability=f"cap{min(t, 1)}")
            for t in range(3)
            for k in range(2)
        ]

    a, b = _source("a", "s", side("A", False)), _source("b", "s", side("B", True))
    data = build_report(ReportInputs(sources=[a, b], record=["x"], comparison={}, compared=(a, b)))
    rows = {r["label"]: r for r in data.capabilities}
    assert rows["cap0"]["ci"] is None and rows["cap1"]["ci"] is not None
    md = markdown_summary(data)
    assert "| cap0 | 1 |" in md and "| – |" in md
    assert (
        "– 95% CI: a capability with one shared task has no interval (no spread between "
        "tasks to measure)"
    ) in md


def test_a_long_transcript_is_cut_with_the_count_of_events_left_out() -> None:
    from agentgauge.report.html import EVENTS_SHOWN

    trial = Trial.model_validate(
        {
            "task_id": "loop",
            "success": False,
            "events": [
                {"type": "message", "role": "assistant", "content": f"step {i}"}
                for i in range(EVENTS_SHOWN + 50)
            ],
        }
    )
    tr = {"anchor": "s0-t0", "agent": "a", "flip": False, "summary": "1 of 1 trial failed",
          "classes": "failed ×1", "view": trial_view(trial)}  # fmt: skip
    suite = SuiteReport(name="s", metrics={"groups": []}, transcripts=[tr])
    html = render_html(ReportData(title="t", suites=[suite]))
    assert f"step {EVENTS_SHOWN - 1}<" in html and f"step {EVENTS_SHOWN}<" not in html
    assert "50 more events not shown" in html


def test_a_long_text_is_cut_in_the_report_as_show_cuts_it() -> None:
    # The rows now keep the whole text (for `show --json` and the viewer); the report,
    # one file to share, cuts it where it prints it, as it did and as `show` does.
    trial = Trial.model_validate(
        {
            "task_id": "long",
            "success": False,
            "events": [{"type": "message", "role": "assistant", "content": "A" * 5_000 + "END"}],
        }
    )
    tr = {"anchor": "s0-t0", "agent": "a", "flip": False, "summary": "1 of 1 trial failed",
          "classes": "failed ×1", "view": trial_view(trial)}  # fmt: skip
    suite = SuiteReport(name="s", metrics={"groups": []}, transcripts=[tr])
    html = render_html(ReportData(title="t", suites=[suite]))
    assert "A" * 2_000 + "… [3,003 more characters]" in html
    assert "AEND" not in html and "A" * 2_001 not in html


def test_a_dash_says_why_in_both_reports() -> None:
    # docs/reports.md: a null figure shows a dash "with the reason below the table or in
    # the notes"; the reasons were in `metrics --json` only.
    from agentgauge.report.build import ReportInputs, build_report, markdown_summary
    from agentgauge.report.html import render_html

    trials = [_trial("t1", 0, "x", True, family="f"), _trial("t2", 0, "x", False, family="f")]
    data = build_report(ReportInputs(sources=[_source("r", "s", trials)], ks=[1, 2]))
    md, html = markdown_summary(data), render_html(data)
    for reason in (
        "ci95: fewer than 2 clusters: no interval can be estimated",
        "pass_at_k.2, pass_hat_k.2: k=2 exceeds the trials of 2 of 2 tasks (fewest: 1)",
    ):
        assert f"not measured: {reason}" in html
        assert f"not measured: {reason.replace('_', chr(92) + '_')}" in md  # Markdown-escaped


def test_frontier_error_bars_span_the_tables_interval_and_none_without_one() -> None:
    # The frontier drew ±1.96·SE while the outcome table beside it prints an interval
    # that need not be symmetric (and the variant bars already span it).
    from agentgauge.report.build import ReportInputs, build_report
    from agentgauge.report.figures import frontier_figure

    a = [_trial(f"t{t}", k, "a", t > 0, cost_usd=0.01) for t in range(6) for k in range(2)]
    b = [_trial(f"t{t}", k, "b", t < 2, cost_usd=0.02) for t in range(6) for k in range(2)]
    (suite,) = build_report(ReportInputs(sources=[_source("r", "s", a + b)], ks=[1])).suites
    tables = {g["agent"]: g["success_rate"] for g in suite.metrics["groups"]}
    points = {p["label"]: p for p in suite.frontier}
    assert {label: p["ci95"] for label, p in points.items()} == {
        agent: rate["ci95"] for agent, rate in tables.items()
    }
    fig = frontier_figure(suite.frontier)
    for trace in fig.data:
        assert trace.error_y.symmetric is False
        bars = zip(trace.text, trace.error_y.array, trace.error_y.arrayminus, strict=True)
        for label, up, down in bars:
            rate = tables[label]
            lo, hi = rate["ci95"]
            assert (up, down) == pytest.approx((hi - rate["value"], rate["value"] - lo))
    # A point whose interval is unknown has no bar, whatever its SE.
    unknown = [{**points["a"], "ci95": None, "success_se": 0.1}]
    (trace,) = frontier_figure(unknown).data
    assert math.isnan(trace.error_y.array[0]) and math.isnan(trace.error_y.arrayminus[0])


def test_a_tiny_difference_se_is_not_written_as_zero() -> None:
    # A paired SE of 4e-5 read "0.000" in the report (and "0.0%" in the viewer): the SE of
    # 0 that is worded otherwise.
    from agentgauge.report.html import _difference_se
    from agentgauge.viewer.app import _difference_se as viewer_se

    assert _difference_se(4e-5, True) == "0.00004"
    assert _difference_se(0.0123, True) == "0.012"
    assert viewer_se(4e-5, True) == "0.004%"
    assert viewer_se(0.0123, True) == "1.2%"
