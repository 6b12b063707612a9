"""Recovery from tool errors on the terminal and in the HTML report: the same figures,
titled with their scope, on hand-built trials."""

from __future__ import annotations

import io
from typing import Any

from rich.console import Console

import agentgauge
from agentgauge.report.build import ReportInputs, build_report
from agentgauge.report.html import render_html
from agentgauge.report.terminal import print_behaviour, print_recovery
from agentgauge.schema import ControlEvent, MessageEvent, ToolCallEvent, ToolResultEvent, Trial
from agentgauge.sources import TrialSource


def _trial(
    task: str, i: int, *, error: bool, recovered: bool, success: bool, variant: str
) -> Trial:
    events: list[Any] = [MessageEvent(role="user", content="help")]
    events += [
        ToolCallEvent(name="lookup", arguments={}, call_id=f"{i}a"),
        ToolResultEvent(
            call_id=f"{i}a",
            content="Error: 429 Too Many Requests" if error else "ok",
            is_error=error,
        ),
    ]
    if recovered:
        events += [
            ControlEvent(decision="recover", reason="retrying lookup"),
            ToolCallEvent(name="lookup", arguments={}, call_id=f"{i}b"),
            ToolResultEvent(call_id=f"{i}b", content="ok"),
        ]
    return Trial(
        task_id=task,
        trial=i,
        success=success,
        agent="a",
        variant=variant,
        events=events,
    )


def trials() -> list[Trial]:
    # Base: 4 trials of one task, 1 with an error that is not recovered (failed).
    base = [
        _trial("T", 0, error=True, recovered=False, success=False, variant="base"),
        *(
            _trial("T", i, error=False, recovered=False, success=True, variant="base")
            for i in (1, 2, 3)
        ),
    ]
    # Fault variant: 4 errors, 2 recovered (both succeed), 2 not (1 succeeds): ratio 1/0.5 = 2.
    fault = [
        _trial("T", 0, error=True, recovered=True, success=True, variant="fault:rate_limit"),
        _trial("T", 1, error=True, recovered=True, success=True, variant="fault:rate_limit"),
        _trial("T", 2, error=True, recovered=False, success=True, variant="fault:rate_limit"),
        _trial("T", 3, error=True, recovered=False, success=False, variant="fault:rate_limit"),
    ]
    return base + fault


def test_terminal_table_is_titled_with_its_scope() -> None:
    base = [t for t in trials() if t.variant == "base"]
    out = io.StringIO()
    console = Console(file=out, width=200)
    print_behaviour(agentgauge.metrics(base, by=("agent",)), console, scope="base variant")
    text = out.getvalue()
    assert "recovery from tool errors, HAL (Kapoor et al. 2025) (base variant)" in text
    # One task: no interval for the 1/4; Wilson for the single unrecovered trial (the
    # same figures as the HTML report below), never a "± 0.0" that reads as certainty.
    assert "25.0% [no interval] (1/4)" in text and "0.0% [0.0–79.3%] (0/1)" in text
    assert "± 0.0" not in text
    assert "rate_limit 0/1" in text
    out = io.StringIO()
    fault = [t for t in trials() if t.variant != "base"]
    print_recovery(
        agentgauge.metrics(fault, by=("agent",)), Console(file=out, width=200), scope="fault"
    )
    text = out.getvalue()
    assert "(fault)" in text and "2.00×" in text
    assert "100.0% [no interval] (2/2)" in text and "50.0% [no interval] (1/2)" in text


def test_html_report_has_the_base_and_the_fault_variant_sections() -> None:
    data = build_report(ReportInputs(sources=[TrialSource(label="x", trials=trials())], ks=[1]))
    html = render_html(data)
    assert "Recovery from tool errors — base variant" in html
    assert "Recovery from tool errors — fault variants (tools fail on purpose)" in html
    # Base: with a tool error 1/4, none recovered (one task: no interval for the 1/4;
    # Wilson for the single unrecovered trial). Fault: recovered 2/4, success 2/2 and 1/2.
    assert '<td class="l">0.250 (1/4)</td><td class="l">0.000 [0.000, 0.793] (0/1)</td>' in html
    assert (
        '<td class="l">1.000 (4/4)</td><td class="l">0.500 (2/4)</td>'
        '<td class="l">1.000 (2/2)</td><td class="l">0.500 (1/2)</td><td>2.000</td>'
        '<td class="l">rate_limit 3/1</td>'
    ) in html
