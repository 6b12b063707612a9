"""The HTML report in a real headless Chromium with the network off: every plot
drawn, no script error, the cost column on screen at 1280 px, heatmap cells that
lead to transcripts, and hostile transcripts shown as text (issue 14)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.browser import (
    END_SCRIPT,
    IMG,
    JS_LINK,
    PAYLOADS,
    SCRIPT,
    SENTINEL,
    browser,
    errors,
    screenshot,
)

from agentgauge.api import compare_sources
from agentgauge.harness.runner import run
from agentgauge.report.build import ReportInputs, build_report
from agentgauge.report.html import render_html
from agentgauge.sources import open_source
from agentgauge.store import Store
from agentgauge.suite import Suite, load_suite

AGENTS = ("null", "careful", "hasty")


def _subset(name: str, n: int) -> Suite:
    """The first ``n`` tasks of a built-in suite (enough families for intervals)."""
    suite = load_suite(name)
    return Suite(name=suite.name, version=suite.version, tasks=suite.tasks[:n])


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report of two suites by three reference agents, with the careful-vs-hasty
    comparison, built as `agentgauge demo` builds its own."""
    folder = tmp_path_factory.mktemp("report")
    db = folder / "agentgauge.db"
    retail, functions = _subset("builtin:retail", 14), _subset("builtin:functions", 8)
    with Store(db) as store:
        for agent in AGENTS:
            for suite, variants in ((retail, ["base", "fault:tool_error"]), (functions, ["base"])):
                prefix = suite.name.removeprefix("builtin:")
                run(suite, f"builtin:{agent}", trials=3, variants=variants, store=store,
                    run_id=f"{prefix}-{agent}", seed=0, progress=False)  # fmt: skip
    sources = {
        f"{s}-{a}": open_source(f"{db}:{s}-{a}") for s in ("retail", "functions") for a in AGENTS
    }
    result = compare_sources(f"{db}:retail-hasty", f"{db}:retail-careful", seed=0)
    data = build_report(
        ReportInputs(
            sources=list(sources.values()),
            record=[f"{ln.title}: {ln.text}" for ln in result.record.lines],
            comparison=result.comparison.to_dict(),
            compared=(sources["retail-hasty"], sources["retail-careful"]),
        )
    )
    page = folder / "report.html"
    page.write_text(render_html(data), encoding="utf-8")
    return page


@pytest.fixture(scope="module")
def page(report: Path) -> Iterator[Any]:
    from selenium.webdriver.support.ui import WebDriverWait

    with browser(offline=True, width=1280, height=900) as driver:
        driver.get(report.as_uri())
        # The page has loaded; wait (not assert) until plotly has drawn what it was given,
        # so a slow machine is not taken for a missing plot. The tests check what is there.
        WebDriverWait(driver, 30).until(
            lambda d: d.execute_script(
                "return document.readyState === 'complete'"
                " && document.querySelectorAll('div.plotly-graph-div').length > 0"
                " && document.querySelectorAll('div.plotly-graph-div:not(:has(svg.main-svg))')"
                ".length === 0"
            )
        )
        yield driver


def _plots(driver: Any) -> dict[str, bool]:
    """Each plot div's id, and whether plotly drew its SVG."""
    found: dict[str, bool] = driver.execute_script(
        "const out = {};"
        "for (const d of document.querySelectorAll('div.plotly-graph-div'))"
        "  out[d.id] = d.querySelector('svg.main-svg') !== null;"
        "return out;"
    )
    return found


def test_every_plot_is_drawn_offline_without_script_errors(page: Any) -> None:
    plots = _plots(page)
    # Retail (s0) has variants and control decisions; functions (s1) has neither but
    # its hasty agent makes tool-call errors; the comparison adds the forest plot.
    expected = {"forest"}
    expected |= {f"s0-{k}" for k in ("passk", "frontier", "horizon", "variants", "confusion")}
    expected |= {f"s1-{k}" for k in ("passk", "frontier", "horizon", "tool_errors")}
    assert expected <= set(plots), sorted(plots)
    assert [k for k, drawn in plots.items() if not drawn] == []
    # One plot per section that has one: as many plot divs as drawn SVG roots.
    assert page.execute_script("return document.querySelectorAll('svg.main-svg').length") >= len(
        plots
    )
    assert errors(page) == []
    assert page.execute_script("return typeof Plotly") == "object"  # the inlined copy
    # The first suite's outcome and cost tables and its first plot, for the README.
    page.execute_script("document.getElementById('s0').scrollIntoView()")
    screenshot(page, "report")


def test_each_suite_has_its_own_section_and_titles_say_their_scope(page: Any) -> None:
    suites = page.execute_script(
        "return [...document.querySelectorAll('h2[id^=s]')].map(h => h.textContent)"
    )
    assert suites == ["Suite builtin:retail", "Suite builtin:functions"]
    titles = page.execute_script(
        "return [...document.querySelectorAll('h3')].map(h => h.textContent)"
    )
    assert titles.count("Outcome — base variant") == 2
    assert "Reliability (Rabanser et al. 2026)" in titles
    assert "Outcome per variant" in titles


def test_cost_columns_are_on_screen_at_1280_px(page: Any) -> None:
    page.set_window_size(1280, 900)
    width = page.execute_script("return document.documentElement.clientWidth")
    rights = page.execute_script(
        "return [...document.querySelectorAll('table.cost th, table.cost td')]"
        ".map(e => e.getBoundingClientRect().right)"
    )
    assert rights and max(rights) <= width, (max(rights), width)
    assert page.execute_script("return document.documentElement.scrollWidth") <= width


def test_a_heatmap_cell_jumps_to_its_transcript(page: Any) -> None:
    link = page.find_element("css selector", "table.heat td.hm a[href^='#']")
    target = link.get_attribute("href").split("#", 1)[1]
    link.click()
    assert page.execute_script("return location.hash") == f"#{target}"
    opened = page.execute_script(
        "const el = document.getElementById(arguments[0]);"
        "return el && el.classList.contains('transcript') && el.querySelector('details').open;",
        target,
    )
    assert opened, target
    # The transcript shows its grader evidence, not just the events.
    text = page.find_element("id", target).text
    assert "fail" in text and "failed" in text
    # A cell without an included transcript says so instead of linking nowhere.
    plain = page.execute_script(
        "return [...document.querySelectorAll('table.heat td.hm')]"
        ".filter(td => !td.querySelector('a')).map(td => td.title)"
    )
    assert plain and all(
        "not included" in t or "no failing transcript" in t or t == "not run" for t in plain
    )


# --------------------------------------------------------------------------- hostile text

CLOSE = END_SCRIPT
PAYLOAD = "".join(PAYLOADS)


def _hostile_jsonl(path: Path) -> Path:
    rows = []
    for t in range(3):
        for k in range(2):
            rows.append(
                {
                    "task_id": f"task {t} {PAYLOAD}",
                    "trial": k,
                    "agent": f"agent {PAYLOAD}",
                    "model": f"model {CLOSE}",
                    "success": (t + k) % 2 == 0,
                    "cost_usd": 0.01,
                    "error": None if (t + k) % 2 == 0 else f"error {PAYLOAD}",
                    "events": [
                        {"type": "message", "role": "user", "content": f"hi {PAYLOAD}"},
                        {
                            "type": "tool_call",
                            "name": f"tool{IMG}",
                            "call_id": "c1",
                            "arguments": {"q": PAYLOAD, "json": json.dumps({"x": CLOSE})},
                        },
                        {
                            "type": "tool_result",
                            "call_id": "c1",
                            "is_error": True,
                            "content": {"result": PAYLOAD},
                        },
                        {"type": "message", "role": "assistant", "content": JS_LINK},
                    ],
                    "grades": [
                        {
                            "grader": f"judge {IMG}",
                            "passed": (t + k) % 2 == 0,
                            "evidence": {"quotes": [PAYLOAD], "reason": CLOSE},
                        }
                    ],
                }
            )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_hostile_transcripts_run_nothing_and_read_as_text(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    cli = [sys.executable, "-m", "agentgauge"]
    imported = subprocess.run(
        [*cli, "import", "jsonl", str(_hostile_jsonl(tmp_path / "t.jsonl")), "--store",
         str(store), "--run-id", "hostile"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    page = tmp_path / "r.html"
    made = subprocess.run(
        [*cli, "report", f"{store}:hostile", "--html", str(page)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    with browser(offline=True, width=1280, height=900) as driver:
        driver.get(page.as_uri())
        # Open every transcript, so that a payload inside one would be live now.
        driver.execute_script("document.querySelectorAll('details').forEach(d => d.open = true)")
        assert driver.execute_script(f"return typeof window.{SENTINEL}") == "undefined"
        assert driver.find_elements("css selector", ".payload, img, a[href^='javascript']") == []
        scripts = driver.execute_script(
            "return [...document.scripts].filter(s => s.text.includes(arguments[0]))"
            ".map(s => s.text)",
            SENTINEL,
        )
        # The names reach scripts only as plot data (JSON strings), never as code.
        assert scripts and all("Plotly.newPlot" in s and "</script" not in s for s in scripts)
        text = driver.find_element("tag name", "body").text
        assert errors(driver) == []
        # Long hostile names wrap: the page is no wider than the window.
        width = driver.execute_script("return document.documentElement.clientWidth")
        assert driver.execute_script("return document.documentElement.scrollWidth") <= width
    # Shown as written: in the task heading, the messages, tool arguments and results,
    # the error and the judge's quoted evidence.
    assert text.count(SCRIPT) >= 4, text[:3000]
    assert f"error {PAYLOAD}" in text
    assert f"judge quoted: “{PAYLOAD}”" in text
    assert f"reason: {CLOSE}" in text
    assert JS_LINK in text


# --------------------------------------------------------------------------- real data


def test_tau_bench_airline_report_shows_its_published_pass_hat_k(
    tmp_path: Path, shared_data: Path
) -> None:
    """gpt-4o on tau-bench airline, 50 tasks × 4 trials: the README states pass^1, pass^2
    and pass^4 = 0.420, 0.273, 0.200; no task has human minutes."""
    store, page = tmp_path / "s.db", tmp_path / "r.html"
    cli = [sys.executable, "-m", "agentgauge"]
    source = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    for args in (
        ["import", "taubench", str(source), "--store", str(store), "--run-id", "tau"],
        ["report", f"{store}:tau", "--html", str(page)],
    ):
        proc = subprocess.run([*cli, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    with browser(offline=True, width=1280, height=900) as driver:
        driver.get(page.as_uri())
        assert _plots(driver)["s0-passk"]
        row = driver.execute_script(
            "return [...document.querySelector('table.outcome tr:nth-child(2)').cells]"
            ".map(c => c.textContent.trim())"
        )
        # Columns: agent, rate, CI, counts, then pass@k and pass^k for k = 1, 2, 4.
        # Each with its SE over tasks, as `agentgauge metrics` prints it.
        assert (row[5], row[7], row[9]) == ("0.420 ± 0.052", "0.273 ± 0.055", "0.200 ± 0.057")
        assert row[3].startswith("50 / 200")
        text = driver.find_element("tag name", "body").text
        assert "No task in these runs records human minutes" in text
        transcripts = driver.find_elements("css selector", ".transcript")
        assert len(transcripts) == 8 and "more failing tasks not shown" in text
        assert errors(driver) == []
