"""Hostile transcripts in the viewer, in a real browser: nothing runs, the text shows.

The run imported by the session fixture (``agentgauge import jsonl``) carries
``<script>``, ``<img src=x onerror=...>``, a ``javascript:`` link and a
``</script>`` meant to end a JSON block in its run id, task id, agent, model,
family, messages, tool names, arguments and results, grader name and evidence.
Every page that shows them is opened: the sentinel those payloads would set stays
undefined, no element they would create exists, and each payload reads as written.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode

from agentgauge_browser import END_SCRIPT, IMG, JS_LINK, SCRIPT, SENTINEL, browser, errors
from viewer_support import (
    XSS_AGENT,
    XSS_RUN,
    XSS_TASK,
    By,
    Served,
)

#: Scripts a viewer page may hold: its own files and inert JSON data blocks.
_OWN_SCRIPTS = (
    "return [...document.scripts].filter(s => !(s.type === 'application/json'"
    " || ['/static/viewer.js', '/assets/plotly.min.js'].includes(new URL(s.src, location)"
    ".pathname))).length"
)


def _assert_inert(driver: Any, *visible: str) -> str:
    """The page ran no payload, holds no payload element, and shows ``visible``."""
    assert driver.execute_script(f"return typeof window.{SENTINEL}") == "undefined"
    assert driver.execute_script(_OWN_SCRIPTS) == 0
    assert driver.find_elements(By.CSS_SELECTOR, "img[src='x'], img[onerror]") == []
    assert driver.find_elements(By.CSS_SELECTOR, "a[href^='javascript:' i]") == []
    handlers = driver.execute_script(
        "return [...document.querySelectorAll('*')].filter(e => [...e.attributes]"
        ".some(a => a.name.startsWith('on'))).length"
    )
    assert handlers == 0
    text: str = driver.find_element(By.TAG_NAME, "body").text
    for payload in visible:
        assert payload in text, payload
    assert not [e for e in errors(driver) if "favicon" not in e]
    return text


def test_hostile_strings_show_as_text_on_every_page(served_hostile: Served) -> None:
    served = served_hostile
    run_path = "/runs/" + quote(XSS_RUN, safe="")
    with urllib.request.urlopen(f"{served.url}{run_path}/tasks?format=json", timeout=30) as r:
        tasks = json.load(r)["tasks"]
    pks = [m["pk"] for t in tasks for c in t["cells"] for m in c["trials"]]
    assert len(pks) == 3
    with browser() as driver:  # skips (or fails, under AGENTGAUGE_REQUIRE_BROWSER=1) first
        from selenium.webdriver.support import expected_conditions as ec
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(driver, 30)
        driver.get(served.url + "/")
        _assert_inert(driver, XSS_RUN, XSS_AGENT)

        driver.find_element(By.PARTIAL_LINK_TEXT, "run <script>").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#outcome-base")))
        assert driver.find_element(By.ID, "run-id").text == XSS_RUN
        wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".plot .main-svg")) >= 2)
        _assert_inert(driver, XSS_RUN, XSS_AGENT)
        # The legend reads the agent and model names as written (plotly renders tags).
        legend = " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, ".legendtext"))
        assert JS_LINK in legend and END_SCRIPT.strip() in legend

        driver.find_element(By.ID, "tasks-link").click()
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#tasks")))
        _assert_inert(driver, XSS_TASK, f"family {SCRIPT}")

        for pk in pks:
            driver.get(f"{served.url}{run_path}/trials/{pk}")
            wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#transcript")))
            text = _assert_inert(driver, f"please {SCRIPT}", f"done {JS_LINK}", END_SCRIPT)
            assert IMG in text  # the tool's name and arguments
            assert f"judge {SCRIPT}" in text and "because " in text

        query = urlencode({"a": XSS_RUN, "b": "other"})
        driver.get(f"{served.url}/diff?{query}")
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#diff-tasks")))
        _assert_inert(driver, XSS_RUN, XSS_TASK)
        assert driver.find_element(By.ID, "side-a").text == XSS_RUN


def test_json_twins_keep_the_strings_as_data(served_hostile: Served) -> None:
    served = served_hostile
    run_path = "/runs/" + quote(XSS_RUN, safe="")
    with urllib.request.urlopen(f"{served.url}{run_path}?format=json", timeout=30) as r:
        assert r.headers["Content-Type"].startswith("application/json")
        run = json.load(r)
    assert run["run"]["run_id"] == XSS_RUN
    assert run["base"]["groups"][0]["agent"] == XSS_AGENT
