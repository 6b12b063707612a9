"""A figure nobody measured shows a dash and its reason on every face: the HTML and
Markdown reports and the terminal, for the failed tool calls of a suite with no
``tool_calls`` grade and for a per-turn checkpoint interval over one task.

Before: the report's "errors" column read "0" (failed calls never counted) while the
recovery table counted 9 trials with tool errors, and ``metrics --json`` had
``error_types: {}`` and ``error_classes`` all 0 with no reason; the per-turn table
showed "–" (report) and "[no interval]" (terminal) with the reason in ``--json`` only.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import Cli, metrics_json

from agentgauge.harness.runner import run
from agentgauge.store import Store

NO_AST = "no trial has a tool_calls (AST) grade"
ONE_TASK = "fewer than 2 clusters: no interval can be estimated"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """builtin:careful on the retail suite, 2 trials per task: its third user turn
    has a checkpoint in one task only."""
    db = tmp_path_factory.mktemp("unmeasured") / "t.db"
    with Store(db) as s:
        run("builtin:retail", "builtin:careful", trials=2, seed=5, store=s, run_id="c2",
            progress=False)  # fmt: skip
    return db


def _report(cli: Cli, source: str, tmp_path: Path) -> tuple[str, str]:
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    code, _, err = cli("report", source, "--markdown", str(md), "--html", str(html))
    assert code == 0, err
    return md.read_text(), html.read_text()


def _section(md: str, title: str) -> str:
    return md.split(f"### {title}", 1)[1].split("\n### ", 1)[0]


def test_failed_tool_calls_nobody_counted_are_a_dash_with_the_reason(
    store: Path, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = f"{store}:c2"
    [group] = metrics_json(cli, source, "--by", "agent")["groups"]
    tool_use = group["tool_use"]
    assert tool_use["error_types"] is None and tool_use["error_classes"] is None
    for figure in ("ast_match_rate", "error_types", "error_classes"):
        assert group["null_reasons"][f"tool_use.{figure}"] == NO_AST
    # The recovery table counts trials with tool errors: "0 failed calls" beside it read
    # as a contradiction; the tool_calls grader's failed calls were never counted.
    assert group["recovery"]["with_tool_error"]["count"] > 0

    md, html = _report(cli, source, tmp_path)
    row = next(
        line
        for line in _section(md, "Tool calls").splitlines()
        if line.startswith("| builtin:careful")
    )
    assert row.endswith("| – |") and not row.endswith("| 0 |")
    reason = "tool_use.ast_match_rate, tool_use.error_types, tool_use.error_classes: " + NO_AST
    assert f"not measured: {reason}" in html
    assert f"not measured: {reason.replace('_', chr(92) + '_')}" in md  # Markdown-escaped

    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = cli("metrics", source, "--by", "agent")
    assert code == 0, err
    assert f"— {reason}" in out
    assert "top tool-call error" not in out  # a row of dashes only is left out


def test_a_per_turn_interval_nobody_could_estimate_says_why(
    store: Path, cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = f"{store}:c2"
    [group] = metrics_json(cli, source, "--by", "agent")["groups"]
    turn3 = next(r for r in group["turns"]["per_turn"] if r["turn"] == 3)
    assert turn3["ci95"] is None and turn3["n_tasks"] == 1 and turn3["reason"] == ONE_TASK

    md, html = _report(cli, source, tmp_path)
    section = _section(md, "Checkpoints held per user turn")
    assert "| builtin:careful | turn 3 | 100.0% | – |" in section
    note = f"Not measured: turn 3, 95% interval: {ONE_TASK}."
    assert note in section
    assert note in html

    monkeypatch.setenv("COLUMNS", "160")
    code, out, err = cli("metrics", source, "--by", "agent")
    assert code == 0, err
    assert "[no interval]" in out
    assert f"— checkpoints, turn 3, 95% interval: {ONE_TASK}" in out
