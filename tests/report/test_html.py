from __future__ import annotations

from typing import Any

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
