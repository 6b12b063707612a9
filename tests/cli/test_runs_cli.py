"""`agentgauge runs`: every run id shown whole, names shown as text, never as markup."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from agentgauge.schema import Run
from agentgauge.store import Store

LONG_ID = "run-20261201-132647-a1b2c3-with-a-long-suffix"


def _runs(db: Path, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "runs", "--store", str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_run_ids_are_never_cut_and_agent_names_are_not_markup(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(
            Run(run_id=LONG_ID, agent="[bold red]mine[/]", created_at="2026-12-01T13:26:47+00:00")
        )
        store.create_run(Run(run_id="r2", agent="builtin:oracle", created_at="2026-12-01T13:27:00"))
    for columns in (60, 80, 120):
        out = _runs(db, columns)
        assert LONG_ID in out and "…" not in out, out
        assert "[bold red]mine[/]" in out, out
