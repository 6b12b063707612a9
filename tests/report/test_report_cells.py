"""Cells of the report that said more than the data: a p-value of 0.0000, "No failed
tool call" where failed calls were never counted, and "± 0.000" in the per-variant
tables where every trial passed (the other tables give the count)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from tests.conftest import Cli

from agentgauge.api import metrics
from agentgauge.report.terminal import variant_table


def _source(path: Path, agent: str, passes: bool) -> Path:
    rows = [
        {
            "task_id": f"t{i}",
            "trial": j,
            "agent": agent,
            "variant": variant,
            "success": passes or (i % 3 == 0 and j == 0),
        }
        for variant in ("base", "paraphrase:1")
        for i in range(20)
        for j in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def report(cli: Cli, tmp_path: Path) -> str:
    a = _source(tmp_path / "a.jsonl", "weak", False)
    b = _source(tmp_path / "b.jsonl", "strong", True)
    code, _out, err = cli("report", str(a), str(b), "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    return (tmp_path / "r.html").read_text()


def _text(html: str, start: str, size: int = 1500) -> str:
    i = html.index(start)
    return " ".join(re.sub(r"<[^>]+>", " ", html[i : i + size]).split())


def test_the_p_value_is_printed_as_compare_prints_it(report: str) -> None:
    row = _text(report, "<th>p</th>", 400)
    assert "&lt; 0.001" in row and "0.0000" not in row


def test_per_variant_cells_give_the_count_where_the_se_is_zero(report: str) -> None:
    table = _text(report, "Outcome per variant", 700)
    assert "1.000 (40/40)" in table
    assert "± 0.000" not in table


def test_the_terminal_variant_table_gives_the_count_too(tmp_path: Path) -> None:
    b = _source(tmp_path / "b.jsonl", "strong", True)
    console = Console(width=200, record=True)
    console.print(variant_table(metrics(b, by=("agent", "model", "variant"))))
    text = console.export_text()
    assert "100.0% (40/40)" in text and "± 0.0" not in text


def test_uncounted_failed_calls_are_not_called_none(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    code, _out, err = cli(
        "run", "builtin:retail", "--agent", "builtin:hasty", "--trials", "1",
        "--store", str(db), "--run-id", "h", "--no-progress",
    )  # fmt: skip
    assert code == 0, err
    code, _out, err = cli("report", f"{db}:h", "--html", str(tmp_path / "r.html"))
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "No failed tool call" not in html
    assert (
        "Failed tool calls not counted, so no error histogram: builtin:hasty: no trial has a "
        "tool_calls (AST) grade." in html
    )
