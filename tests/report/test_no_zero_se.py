"""A success rate of every trial passing has an SE of 0: no spread between trials, not
certainty. The Markdown and HTML reports and the viewer's outcome table show the count
behind it (``100.0% (18/18)``) instead of "± 0.0", as the terminal tables do; a rate with
spread keeps its ± SE."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import agentgauge
from agentgauge.viewer.app import _ENV


def _trials(path: Path) -> Path:
    rows = [
        {"task_id": f"t{i}", "trial": k, "agent": agent, "family": f"f{i % 3}",
         "success": agent == "always" or (i + k) % 2 == 0}
        for agent in ("always", "mixed") for i in range(6) for k in range(3)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_reports_show_the_count_where_the_se_is_zero(tmp_path: Path) -> None:
    source = _trials(tmp_path / "t.jsonl")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "report", str(source), "--html", str(html),
         "--markdown", str(md)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows: dict[str, str] = {}
    for line in md.read_text().splitlines():  # the outcome table comes first
        if line.startswith(("| always", "| mixed")):
            rows.setdefault(line.split("|")[1].strip(), line)
    assert "100.0% (18/18)" in rows["always"] and "± 0.0" not in rows["always"]
    assert "±" in rows["mixed"]
    page = html.read_text()
    assert '1.000 <span class="ci">(18/18)</span>' in page
    assert "± 0.000" not in page


def test_the_viewers_outcome_table_shows_the_count_too(tmp_path: Path) -> None:
    report = agentgauge.metrics(str(_trials(tmp_path / "t.jsonl")), by=("agent",))
    macro = _ENV.get_template("outcome.html.j2").module.outcome_table  # type: ignore[attr-defined]
    page = str(macro(report.to_dict(), ["agent"], "o", [1]))
    always, mixed = (
        page.split(f"<td>{a}</td>", 1)[1].split("</tr>", 1)[0] for a in ("always", "mixed")
    )
    assert "100.0% (18/18)" in always and "±" not in always
    assert "±" in mixed
