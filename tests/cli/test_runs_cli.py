"""`agentgauge runs`: every run id shown whole, names shown as text, never as markup."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentgauge.schema import Run
from agentgauge.store import Store

AT = "2026-12-01T13:26:47+00:00"
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


def test_a_model_only_the_components_name_is_listed_as_the_component(tmp_path: Path) -> None:
    # The reference agents name their simulated model only in the run's components:
    # `runs` listed "model -" where `compare` said the model changed (sim:hasty →
    # sim:careful). A model the header names is shown as it is.
    db = tmp_path / "s.db"
    components = {"components": {"model": "sim:hasty"}}
    with Store(db) as store:
        store.create_run(Run(run_id="h", agent="builtin:hasty", config=components, created_at=AT))
        store.create_run(Run(run_id="g", agent="bot", model="gpt-4.1", created_at=AT))
        store.create_run(Run(run_id="n", agent="bot", created_at=AT))
    rows = {line.split()[1]: line for line in _runs(db, 200).splitlines() if line[:1] == "│"}
    assert "│ sim:hasty (component) │" in " ".join(rows["h"].split()), rows
    assert "│ gpt-4.1 │" in " ".join(rows["g"].split()), rows
    assert "│ - │" in " ".join(rows["n"].split()), rows
    done = subprocess.run(
        [sys.executable, "-m", "agentgauge", "runs", "--store", str(db), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    listed = {r["run_id"]: r["model"] for r in json.loads(done.stdout)["runs"]}
    assert listed == {"h": None, "g": "gpt-4.1", "n": None}  # --json: the header's
