"""A real headless Chromium for the report and viewer tests (Debian's ``chromium`` and
``chromium-driver`` through Selenium; nothing is downloaded).

`browser()` yields a Selenium driver, or skips the test with the reason when the
browser, its driver or Selenium is missing; with ``AGENTGAUGE_REQUIRE_BROWSER=1``
(set by ``.ci/run``) a missing browser fails the test instead. ``offline=True``
turns the page's network off through the DevTools protocol (only file:// and
what is already loaded work), which is how the report is shown to open with no
network. `screenshot` saves a PNG under ``test-artefacts/screenshots/`` (or
``$AGENTGAUGE_SCREENSHOTS``, which ``make screenshots`` points at docs/images).
`errors` lists what the page logged at SEVERE level (a script that failed).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Hostile text for the XSS tests of every page (report, viewer): each piece would set
# SENTINEL if a browser ran it; a test asserts it stays undefined and the text shows.
SENTINEL = "__agentgauge_pwned"
SCRIPT = f"<script>window.{SENTINEL}=1</script>"
IMG = f'<img src=x onerror="window.{SENTINEL}=2">'
JS_LINK = f'<a href="javascript:window.{SENTINEL}=3">click me</a>'
#: Closes a ``<script>`` that embeds JSON, then opens one of its own.
END_SCRIPT = f'</script><script>window.{SENTINEL}=4</script>{{"x":"'
PAYLOADS = (SCRIPT, IMG, JS_LINK, END_SCRIPT)


def _missing(reason: str) -> None:
    if os.environ.get("AGENTGAUGE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason} (AGENTGAUGE_REQUIRE_BROWSER=1: the browser tests must run)")
    pytest.skip(reason)


def _find(*names: str) -> str | None:
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


@contextmanager
def browser(*, offline: bool = False, width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium driven by Selenium, closed afterwards."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed (pip install -e '.[dev]')")
    binary = _find("chromium", "chromium-browser", "google-chrome")
    driver_path = _find("chromedriver")
    if binary is None:
        _missing("no Chromium on PATH (Debian: apt install chromium chromium-driver)")
    if driver_path is None:
        _missing("no chromedriver on PATH (Debian: apt install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = str(binary)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(driver_path)), options=options)
    try:
        driver.set_page_load_timeout(60)
        if offline:
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd(
                "Network.emulateNetworkConditions",
                {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
            )
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, name: str) -> Path:
    """Save the page as ``NAME.png`` in the screenshots folder and return its path."""
    folder = Path(os.environ.get("AGENTGAUGE_SCREENSHOTS") or ROOT / "test-artefacts/screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def errors(driver: Any) -> list[str]:
    """Messages the page logged at SEVERE level (script errors, failed loads)."""
    return [e["message"] for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
