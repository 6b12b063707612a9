"""Trials whose names and ids try to forge what a person sees (issue 12, section 3)."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

#: A live external link and an 80-pixel red "BIG" if rendered as HTML (plotly renders
#: tags in legend names); a hyperlink if read as Rich markup; a cleared screen if
#: printed raw; a reversed line (U+202E); a heading, a link and an image in Markdown.
LINK = '<a href="https://example.com/phish">click</a>'
BIG = '<span style="font-size:80px;color:red">BIG</span>'
RICH_LINK = "[link=https://example.com/rich]rich[/link]"
CLEAR = "\x1b[2J"
BIDI = "\u202e"
MARKDOWN = "\n# injected\n![img](http://example.com/y.png) [x](http://example.com/md)"

AGENT = f"agent {LINK}{BIG}{RICH_LINK}{CLEAR}{BIDI}rev{MARKDOWN}"
MODEL = f"model {BIG}{BIDI}"
TASK = f"task{CLEAR}{RICH_LINK}{MARKDOWN}"


def hostile_trials(path: Path, *, agent: str = AGENT, cost: float | None = 0.01) -> Path:
    """Three tasks x two trials by one agent whose name, model and task ids are hostile;
    one task fails every time (so it is named in warnings and flips)."""
    rows: list[dict[str, Any]] = []
    for t in range(3):
        for k in range(2):
            row: dict[str, Any] = {
                "task_id": f"{TASK} {t}",
                "trial": k,
                "agent": agent,
                "model": MODEL,
                "success": t != 2 and (t + k) % 2 == 0,
            }
            if cost is not None:
                row["cost_usd"] = cost
            rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def agentgauge(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """The real command in its own process; output kept as bytes (ESC must show)."""
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=120,
    )


# --------------------------------------------------------------------------- HTML


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class _Dom(HTMLParser):
    """Elements of a rendered page outside scripts: their tags, attributes, and text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self._script = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._script += 1
        self.elements.append((tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._script -= 1

    def handle_data(self, data: str) -> None:
        if not self._script:
            self.text.append(data)


def _forged(dom: _Dom) -> list[str]:
    """What the hostile names made the page do: links to their site, their style."""
    found = []
    for tag, attrs in dom.elements:
        href = attrs.get("href", "") + attrs.get("xlink:href", "")
        if "example.com" in href:
            found.append(f"<{tag} href={href}>")
        if re.search(r"font-size:\s*80px", attrs.get("style", "")):
            found.append(f"<{tag} style={attrs['style']}>")
    return found


def test_html_report_in_a_real_browser_shows_names_as_text(tmp_path: Path) -> None:
    browser = _chromium()
    if browser is None:
        reason = "no chromium on PATH (Debian: apt-get install chromium)"
        if os.environ.get("AGENTGAUGE_REQUIRE_BROWSER"):  # .ci/run installs it: never skip there
            pytest.fail(reason)
        pytest.skip(reason)
    # Two agents, so that plotly draws a legend (and the frontier its labels).
    trials = hostile_trials(tmp_path / "t.jsonl")
    more = hostile_trials(tmp_path / "u.jsonl", agent=AGENT + " 2", cost=0.02).read_text()
    trials.write_text(trials.read_text(encoding="utf-8") + more, encoding="utf-8")
    page = tmp_path / "r.html"
    proc = agentgauge("report", str(trials), "--html", str(page))
    assert proc.returncode == 0, proc.stderr.decode()
    # --dump-dom prints the document after plotly has drawn the legend and labels.
    shown = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        timeout=120,
        check=True,
    ).stdout.decode()
    dom = _Dom()
    dom.feed(shown)
    assert any("legend" in attrs.get("class", "") for _, attrs in dom.elements), "no plot drawn"
    assert _forged(dom) == []
    text = "".join(dom.text)
    # The name reads as written, its controls as escapes, in the legend and the tables.
    assert text.count(LINK) >= 2 and text.count(BIG) >= 2, text[:2000]
    assert "\\x1b[2J" in text and "\\u202e" in text
    assert "\x1b" not in text and BIDI not in text


def test_plotly_strings_are_escaped(tmp_path: Path) -> None:
    # Without a browser: the figure data the page hands plotly holds no live tag.
    page = tmp_path / "r.html"
    proc = agentgauge("report", str(hostile_trials(tmp_path / "t.jsonl")), "--html", str(page))
    assert proc.returncode == 0, proc.stderr.decode()
    names = re.findall(r'"name":"((?:[^"\\]|\\.)*)"', page.read_text(encoding="utf-8"))
    assert names and all("agent" in n for n in names[:1]), names
    for name in names:
        decoded = json.loads(f'"{name}"')
        assert "<a" not in decoded and "<span" not in decoded, decoded
        assert "&lt;a href=" in decoded or "agent" not in decoded


# --------------------------------------------------------------------------- Markdown


def test_markdown_summary_keeps_one_row_per_group_and_no_injected_markup(tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    md = tmp_path / "r.md"
    proc = agentgauge("report", str(hostile_trials(tmp_path / "t.jsonl")), "--markdown", str(md))
    assert proc.returncode == 0, proc.stderr.decode()
    text = md.read_text(encoding="utf-8")
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    kinds = [t.type for t in tokens]
    inline = [c for t in tokens if t.children for c in t.children]
    headings = [tokens[i + 1].content for i, k in enumerate(kinds) if k == "heading_open"]
    assert not any("injected" in h for h in headings), headings
    assert not [c for c in inline if c.type in ("image", "link_open", "html_inline")]
    assert "html_block" not in kinds
    # The outcome table: a header row and exactly one row for the one group.
    first = kinds.index("table_open")
    body = kinds[first : kinds.index("table_close", first)]
    assert body.count("tr_open") == 2, text
    rendered = MarkdownIt("commonmark").enable("table").render(text)
    assert "# injected ![img](http://example.com/y.png)" in html.unescape(rendered)


# --------------------------------------------------------------------------- terminal


def _terminal_output(proc: subprocess.CompletedProcess[bytes]) -> bytes:
    return proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "command",
    [
        ["metrics", "{a}"],
        ["metrics", "{a}", "--by", "agent"],
        ["compare", "{a}", "{b}"],
    ],
    ids=["metrics", "metrics-by-agent", "compare"],
)
def test_terminal_prints_data_as_text_with_controls_visible(
    tmp_path: Path, command: list[str]
) -> None:
    a = hostile_trials(tmp_path / "a.jsonl")
    b = hostile_trials(tmp_path / "b.jsonl", agent=AGENT + " B", cost=None)
    args = [c.format(a=a, b=b) for c in command]
    # FORCE_COLOR: Rich writes styles and hyperlinks as it would to a terminal.
    proc = agentgauge(*args, env={"FORCE_COLOR": "1", "COLUMNS": "400"})
    assert proc.returncode == 0, proc.stderr.decode()
    out = _terminal_output(proc)
    assert CLEAR.encode() not in out
    assert b"\x1b]8;" not in out  # OSC 8: a terminal hyperlink
    assert BIDI.encode() not in out
    assert b"\\x1b[2J" in out
    assert RICH_LINK.encode() in out


def test_runs_and_gate_print_names_as_text(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    trials = hostile_trials(tmp_path / "t.jsonl")
    run_id = f"run{CLEAR}{RICH_LINK}"
    imported = agentgauge("import", "jsonl", str(trials), "--store", str(store), "--run-id", run_id)
    assert imported.returncode == 0, imported.stderr.decode()
    gates = tmp_path / "gates.yaml"
    gates.write_text("gates:\n  - metric: success_rate\n    min: 0.9\n", encoding="utf-8")
    env = {"FORCE_COLOR": "1", "COLUMNS": "400"}
    for proc in (
        imported,
        agentgauge("runs", "--store", str(store), env=env),
        agentgauge("gate", f"{store}:{run_id}", "--config", str(gates), env=env),
    ):
        out = _terminal_output(proc)
        assert CLEAR.encode() not in out and b"\x1b]8;" not in out, out
        assert RICH_LINK.encode() in out, out
