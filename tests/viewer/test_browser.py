"""The viewer in a real headless Chromium: click from the runs list to a run, its
tasks, a transcript, and the side-by-side diff, and read what is shown.

Screenshots (viewer-runs.png, viewer-run.png, viewer-trial.png, viewer-diff.png)
go to test-artefacts/screenshots (or $AGENTGAUGE_SCREENSHOTS).
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from agentgauge_browser import browser, errors, screenshot
from viewer_support import By, Served


def _json(served: Served, path: str) -> Any:
    sep = "&" if "?" in path else "?"
    with urllib.request.urlopen(f"{served.url}{path}{sep}format=json", timeout=30) as r:
        return json.load(r)


def _replaced(element: Any) -> Any:
    """A wait condition: ``element`` has left the page (a new page replaced it).

    Selenium's ``staleness_of`` knows only the stale-element error; ChromeDriver also
    answers "Node with given id does not belong to the document" while the old page is
    being torn down, which made this test fail now and then."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def gone(driver: Any) -> bool:
        try:
            element.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as exc:
            if "does not belong to the document" in str(exc):
                return True
            raise
        return False

    return gone


def _text(driver: Any, css: str) -> str:
    return str(driver.find_element(By.CSS_SELECTOR, css).text)


def test_click_from_runs_to_a_transcript_and_a_diff(served: Served) -> None:
    runs = _json(served, "/")["runs"]
    careful = next(r for r in runs if r["run_id"] == "retail-careful")
    with browser() as driver:  # skips (or fails, under AGENTGAUGE_REQUIRE_BROWSER=1) first
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 30)
        driver.get(served.url + "/")
        table = _text(driver, "#runs")
        assert "retail-careful" in table and "retail-hasty" in table
        base = careful["base"]
        assert f"{base['passed']}/{base['n']}" in table  # 6 tasks x 3 trials on the base variant
        assert base["n"] == 18
        screenshot(driver, "viewer-runs")

        driver.find_element(By.LINK_TEXT, "retail-careful").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#outcome-base")))
        assert _text(driver, "#run-id") == "retail-careful"
        assert _text(driver, "#n-trials") == "36"
        outcome = _text(driver, "#outcome-base")
        assert "builtin:careful" in outcome
        summary = _json(served, "/runs/retail-careful")
        group = summary["base"]["groups"][0]
        assert f"{100 * group['success_rate']['value']:.1f}%" in outcome
        variants = _text(driver, "#outcome-variants")
        assert "fault:tool_error" in variants and "base" in variants
        # Both plots drawn by plotly.js, served from the package.
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".plot .main-svg")) >= 2)
        screenshot(driver, "viewer-run")

        driver.find_element(By.ID, "tasks-link").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#tasks")))
        rows = driver.find_elements(By.CSS_SELECTOR, "#tasks tr.task-row")
        assert len(rows) == 6
        marks = driver.find_elements(By.CSS_SELECTOR, "#tasks a.mark")
        assert len(marks) == 36  # one mark per trial
        failing = driver.find_elements(By.CSS_SELECTOR, "#tasks a.mark.fail, #tasks a.mark.error")
        target = (failing or marks)[0]
        task_id = target.find_element(By.XPATH, "ancestor::tr/td[1]").text
        target.click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#transcript")))
        assert _text(driver, "#task-id") == task_id
        assert driver.find_elements(By.CSS_SELECTOR, "#transcript tr.event")
        assert driver.find_elements(By.CSS_SELECTOR, "#grades tr.grade")
        steps = driver.find_elements(By.CSS_SELECTOR, "#timeline .step")
        assert len(steps) == len(driver.find_elements(By.CSS_SELECTOR, "#transcript tr.event"))
        screenshot(driver, "viewer-trial")  # marks sized by duration
        # The toggle re-sizes the marks by cost: model calls carry the cost.
        driver.find_element(By.CSS_SELECTOR, 'input[value="cost"]').click()
        sized = driver.execute_script(
            "return [...document.querySelectorAll('#timeline .step')]"
            ".map(s => [s.className, s.style.flexGrow])"
        )
        assert any("k-model-call" in c and float(g) > 0 for c, g in sized)
        assert all(float(g) == 0 for c, g in sized if "k-model-call" not in c)

        driver.get(served.url + "/diff")
        driver.find_element(By.CSS_SELECTOR, "select[name=a] option[value='retail-hasty']").click()
        driver.find_element(
            By.CSS_SELECTOR, "select[name=b] option[value='retail-careful']"
        ).click()
        driver.find_element(By.CSS_SELECTOR, "#diff-form button").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#diff-tasks")))
        diff = _json(served, "/diff?a=retail-hasty&b=retail-careful")
        assert _text(driver, "#verdict") == diff["verdict"]
        shown = driver.find_elements(By.CSS_SELECTOR, "#diff-tasks tbody tr")
        assert len(shown) == len(diff["tasks"]) == 6
        first = diff["tasks"][0]
        cells = shown[0].find_elements(By.TAG_NAME, "td")
        assert cells[0].text == first["task_id"]
        assert cells[2].text == f"{first['a']['passed']}/{first['a']['n']}"
        assert cells[3].text == f"{first['b']['passed']}/{first['b']['n']}"
        screenshot(driver, "viewer-diff")

        # Filtered to the tasks that changed; each links to both sides' trials.
        before = driver.find_element(By.CSS_SELECTOR, "#diff-tasks")
        driver.find_element(By.CSS_SELECTOR, "input[name=changed]").click()
        driver.find_element(By.CSS_SELECTOR, "#diff-form button").click()
        # The page already shows a #diff-tasks: wait for the new page, not the old one.
        wait.until(_replaced(before))
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#diff-tasks")))
        changed = driver.find_elements(By.CSS_SELECTOR, "#diff-tasks tbody tr")
        if diff["n_changed"]:
            assert len(changed) == diff["n_changed"]
            changed[0].find_element(By.CSS_SELECTOR, "a.side-b").click()
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#tasks")))
            assert "retail-careful" in _text(driver, "#run-link")
            assert len(driver.find_elements(By.CSS_SELECTOR, "#tasks tr.task-row")) == 1
        else:
            assert "No task changed" in _text(driver, "#diff-tasks")
        assert errors(driver) == []


def test_a_trial_page_sizes_each_second_once_and_opens_a_long_text(tmp_path: Any) -> None:
    # A 3-second trial: the user's message, a 3-second model call (its time is when it
    # returned), the answer. The message was drawn as wide as the call, since it was
    # given the call's latency too; the long answer could not be read past 2,000
    # characters; pass@4 was a bare dash.
    from viewer_support import serving

    from agentgauge.importers import import_file

    long = "A" * 5_000 + "END"
    rows = [
        {
            "task_id": "t1",
            "trial": k,
            "success": k == 0,
            "latency_s": 3.0,
            "events": [
                {"type": "message", "role": "user", "content": "hi", "t": 0.0},
                {"type": "model_call", "model": "m", "latency_s": 3.0, "cost_usd": 0.01, "t": 3.0},
                {"type": "message", "role": "assistant", "content": long, "t": 3.0},
            ],
        }
        for k in range(2)
    ]
    src = tmp_path / "tl.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "tl")
    with serving(db) as s, browser() as driver:
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 30)
        driver.get(s.url + "/runs/tl/trials/1")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#timeline .step")))
        widths = driver.execute_script(
            "return [...document.querySelectorAll('#timeline .step')]"
            ".map(s => [s.getBoundingClientRect().width, s.classList.contains('unknown')])"
        )
        (message, _), (call, _), (_, answer_unknown) = widths
        assert call > 20 * message  # the message is a hairline; the call fills the bar
        assert answer_unknown  # the last step has no duration: hatched, not a zero
        row = driver.find_element(By.CSS_SELECTOR, "#event-2")
        assert "END" not in row.text and "3,003 more characters" in row.text
        row.find_element(By.CSS_SELECTOR, "details.whole summary").click()
        wait.until(lambda d: "END" in d.find_element(By.CSS_SELECTOR, "#event-2").text)
        assert long in row.find_element(By.CSS_SELECTOR, "details.whole pre").text
        screenshot(driver, "viewer-trial-long-text")

        driver.get(s.url + "/runs/tl")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#outcome-base")))
        titles = [
            (d.text, d.get_attribute("title"))
            for d in driver.find_elements(By.CSS_SELECTOR, "#outcome-base .unknown")
        ]
        exceeds = ("–", "k=4 exceeds the trials of 1 of 1 task (fewest: 2)")
        assert titles.count(exceeds) == 2  # pass@4 and pass^4 say why
        notes = _text(driver, "#outcome-base-unknown")
        assert "pass_at_k.4, pass_hat_k.4: k=4 exceeds the trials" in notes
        assert errors(driver) == []


def test_success_per_variant_bars_are_the_tables_intervals(tmp_path: Any) -> None:
    # The bars' error bars were ±1.96·(SE over tasks) where the table prints the
    # interval from the clustered SE (67.5% [52.0%, 79.9%] beside a bar of ± 0.147), and
    # a bar of no width where no interval is known (one task) or where every trial
    # passed (the table: [98.4%, 100%]). Read back from what plotly.js drew.
    from viewer_support import serving

    from agentgauge.importers import import_file

    rows = [
        {"task_id": f"t{i}", "trial": k, "variant": v, "family": f"f{i % 3}", "success": ok}
        for i in range(8)
        for k in range(3)
        for v, ok in (("base", (i + k) % 3 != 0), ("easy", True))
    ]
    src = tmp_path / "v.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    one = tmp_path / "one.jsonl"
    one.write_text(
        "".join(json.dumps({"task_id": "t", "trial": k, "success": k > 0}) + "\n" for k in range(3))
    )
    db = tmp_path / "s.db"
    import_file("jsonl", src, db, "v")
    import_file("jsonl", one, db, "one")
    drawn = (
        "const gd = [...document.querySelectorAll('.plot')].find("
        "  p => p.layout && p.layout.title.text === 'Success rate per variant');"
        "return gd.calcdata.map(trace => trace.map(pt => [pt.y, pt.ys ?? null, pt.yh ?? null]))"
        ".concat([[[gd.querySelectorAll('.errorbar path').length]]]);"
    )
    with serving(db) as s, browser() as driver:
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 30)
        shown: dict[str, Any] = {}
        for run in ("v", "one"):
            groups = _json(s, f"/runs/{run}")["variants"]["groups"]
            driver.get(f"{s.url}/runs/{run}")
            wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".plot .main-svg")) >= 2)
            *traces, ((paths,),) = driver.execute_script(drawn)
            shown[run] = (groups, [pt for t in traces for pt in t], paths)
        assert errors(driver) == []
    groups, points, paths = shown["v"]
    assert [g["variant"] for g in groups] == ["base", "easy"]
    for g, (y, low, high) in zip(groups, points, strict=True):
        lo, hi = g["success_rate"]["ci95"]
        assert y == g["success_rate"]["value"]
        assert (low, high) == (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))
    assert groups[1]["success_rate"]["value"] == 1.0 and groups[1]["success_rate"]["ci95"][0] < 1
    assert paths == 2
    groups, points, paths = shown["one"]
    assert groups[0]["success_rate"]["ci95"] is None
    ((y, low, high),) = points
    assert y == pytest.approx(2 / 3) and low is None and high is None  # no bar, not a 0
    assert paths == 0
