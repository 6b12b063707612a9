"""``--store :memory:`` and ``--store ""`` name SQLite's private databases, gone when the
command ends: every command that takes ``--store`` refuses them with one line, exit 2,
before it reads or writes anything (as ``run`` does). ``collect`` and ``import`` took
them: the trials were reported stored and lost, or the first trace got HTTP 500."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "otel" / "genai.jsonl"

COMMANDS = {
    "import": ["import", "otel", str(TRACES)],
    "collect": ["collect", "--port", "0"],
    "grade": ["grade", "r"],
    "runs": ["runs"],
    "runs --mark": ["runs", "--mark", "r", "null"],
    "view": ["view", "--port", "0"],
}


@pytest.mark.parametrize("store", [":memory:", ""])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_store_that_would_keep_nothing_is_refused(
    tmp_path: Path, command: str, store: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", *COMMANDS[command], "--store", store],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "--store" in lines[0] and "private SQLite database" in lines[0], lines[0]
    assert "name a file" in lines[0]
    assert done.stdout == ""  # nothing said to be stored, nothing listening
    assert list(tmp_path.iterdir()) == []
