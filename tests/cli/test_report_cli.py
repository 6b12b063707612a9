from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


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
