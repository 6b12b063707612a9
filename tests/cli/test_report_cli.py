from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

from agentgauge.display import markdown_text


def test_report_writes_html_and_markdown_with_escaping(tmp_path: Path) -> None:
    evil = "<script>alert(1)</script>"
    src = tmp_path / "t.jsonl"
    rows = []
    for t in range(6):
        for k in range(3):
            rows.append(
                {
                    "task_id": f"t{t}",
                    "trial": k,
                    "agent": evil,
                    "success": (t + k) % 2 == 0,
                    "events": [{"type": "message", "role": "assistant", "content": evil}],
                }
            )
    src.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "report",
            str(src),
            "--html",
            str(html),
            "--markdown",
            str(md),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    page = html.read_text()
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in md.read_text()
    nothing = subprocess.run(
        [sys.executable, "-m", "agentgauge", "report", str(src)], capture_output=True, text=True
    )
    assert nothing.returncode == 2


def test_markdown_reads_as_written_with_dollars_and_plain_less_than(tmp_path: Path) -> None:
    # Two agents over 30 tasks: hasty fails where careful passes, so p < 0.001.
    def side(name: str, passes: bool) -> Path:
        path = tmp_path / f"{name}.jsonl"
        rows = [
            {
                "task_id": f"t{t}",
                "trial": k,
                "agent": name,
                "success": passes or t % 5 == 0,
                "cost_usd": 0.0123,
            }
            for t in range(30)
            for k in range(2)
        ]
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        return path

    md = tmp_path / "r.md"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentgauge",
            "report",
            str(side("hasty", False)),
            str(side("careful", True)),
            "--markdown",
            str(md),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    text = md.read_text()
    assert "p < 0.001" in text and "&lt;" not in text, text
    assert "| $0.0123 |" in text, text


def test_markdown_cells_cannot_break_the_table_or_open_a_tag() -> None:
    from agentgauge.report.build import markdown_text

    assert markdown_text("a|b") == "a\\|b"
    assert markdown_text("line one\nline two") == "line one line two"
    assert markdown_text("<img src=x onerror=alert(1)>") == "&lt;img src=x onerror=alert(1)>"
    assert markdown_text("</b> <!-- <?php <https://x") == "&lt;/b> &lt;!-- &lt;?php &lt;https://x"
    assert markdown_text("p < 0.001, 3 <= 4") == "p < 0.001, 3 <= 4"
    assert markdown_text("C:\\path") == "C:\\\\path"


def _import(cli: Any, db: Path, run_id: str, agent: str, passes: Callable[[int], bool]) -> None:
    path = db.parent / f"{run_id}.jsonl"
    rows = [
        {"task_id": f"t{t}", "trial": k, "agent": agent, "success": passes(t)}
        for t in range(4)
        for k in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = cli("import", "jsonl", str(path), "--store", str(db), "--run-id", run_id)
    assert code == 0, err


def test_validity_checks_score_the_null_agent_the_record_scores(tmp_path: Path, cli: Any) -> None:
    # A null agent's run marked in the store: record line 5 scored it (25.0%, passes t3)
    # while the validity checks said "null agent score | not run", reading only the
    # SOURCEs' trials.
    db = tmp_path / "s.db"
    _import(cli, db, "r", "careful", lambda t: t % 2 == 0)
    _import(cli, db, "r2", "hasty", lambda t: True)
    _import(cli, db, "nul", "builtin:null", lambda t: t == 3)
    assert cli("runs", "--store", str(db), "--mark", "nul", "null")[0] == 0
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    code, _, err = cli("report", f"{db}:r", f"{db}:r2", "--markdown", str(md), "--html", str(page))
    assert code == 0, err
    text = md.read_text()
    assert "Baselines: null agent 25.0% on the shared tasks" in text
    check = f"null agent score ({db}:nul, on the shared tasks)"
    assert f"| {markdown_text(check)} | 25.0% | t3 |" in text
    assert "not run | run builtin:null" not in text
    assert escape(check) in page.read_text()
    # Without the comparison there is no record, and the checks read the SOURCEs alone.
    code, _, err = cli("report", f"{db}:r", f"{db}:r2", "--markdown", str(md), "--no-compare",
                       "--force")  # fmt: skip
    assert code == 0, err
    assert "| null agent score | not run | run builtin:null" in md.read_text()


def test_two_sources_with_no_task_in_common_are_reported_without_a_comparison(
    tmp_path: Path, cli: Any
) -> None:
    # The report was refused ("error: B: a.jsonl and b.jsonl have no task in common",
    # exit 2, nothing written), while --no-compare wrote it: two unrelated runs are two
    # suite sections, and the report says why there is no comparison.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"task_id": "x", "trial": 0, "success": True}) + "\n")
    b.write_text(json.dumps({"task_id": "y", "trial": 0, "success": False}) + "\n")
    md, page = tmp_path / "r.md", tmp_path / "r.html"
    code, out, err = cli("report", str(a), str(b), "--html", str(page), "--markdown", str(md))
    assert code == 0, err
    assert f"wrote {page}" in out and f"wrote {md}" in out
    note = f"no comparison: {a} and {b} have no task in common"
    assert err.startswith(f"warning: {note}") and err.count("\n") == 1, err
    text = md.read_text()
    assert markdown_text(note) in text and "Comparison record" not in text
    assert text.count(": outcome — base variant") == 2  # a section each
    assert escape(note) in page.read_text()


def test_a_report_file_that_cannot_be_written_leaves_no_other_written(
    tmp_path: Path, cli: Any
) -> None:
    # `--html r.html --markdown /proc/no/r.md`: the HTML report was written, then the
    # Markdown summary's folder could not be made; the command said "error", exit 2, and
    # left half of what it was asked for (the old r.html, with --force, replaced).
    src = tmp_path / "t.jsonl"
    src.write_text("".join(json.dumps({"task_id": f"t{t}", "success": t % 2 == 0}) + "\n"
                           for t in range(4)))  # fmt: skip
    html = tmp_path / "r.html"
    unmakeable = Path("/proc/agentgauge-no-such-folder/r.md")  # /proc takes no new folder
    code, out, err = cli("report", str(src), "--html", str(html), "--markdown", str(unmakeable))
    assert code == 2
    assert f"{unmakeable}: --markdown: cannot write here" in err
    assert not html.exists() and "wrote" not in out
    # An old report replaced with --force is kept whole when its companion cannot be written.
    html.write_text("old report")
    code, out, err = cli("report", str(src), "--html", str(html), "--markdown", str(unmakeable),
                         "--force")  # fmt: skip
    assert code == 2
    assert html.read_text() == "old report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "t.jsonl"]  # no temp file


def test_report_files_in_missing_folders_are_written_as_exports_are(
    tmp_path: Path, cli: Any
) -> None:
    # One rule for every output: missing folders are made (export --jsonl refused them).
    db = tmp_path / "s.db"
    _import(cli, db, "r", "a", lambda i: i % 2 == 0)
    page, md = tmp_path / "site" / "r" / "index.html", tmp_path / "notes" / "r.md"
    code, _, err = cli("report", f"{db}:r", "--html", str(page), "--markdown", str(md))
    assert code == 0 and page.exists() and md.exists(), err
    jsonl = tmp_path / "out" / "r" / "r.jsonl"
    code, _, err = cli("export", f"{db}:r", "--jsonl", str(jsonl))
    assert code == 0 and jsonl.exists(), err


def test_a_folder_that_cannot_be_made_is_not_said_to_be_missing(tmp_path: Path, cli: Any) -> None:
    # The report makes a missing folder itself; when that fails, "no folder ...: make it
    # first (mkdir -p ...)" sent the user to do what had just failed.
    src = tmp_path / "t.jsonl"
    src.write_text('{"task_id": "t0", "success": true}\n')
    unmakeable = Path("/proc/agentgauge-no-such-folder/r.html")
    code, _, err = cli("report", str(src), "--html", str(unmakeable))
    assert code == 2
    assert f"folder {unmakeable.parent} cannot be made" in err and "make it first" not in err
