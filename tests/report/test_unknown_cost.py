"""Unknown cost end to end: the reports say "unknown", a cost gate cannot pass, the
frontier leaves the point out with a note — never $0 (docs/running-agents.md, "Cost")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentgauge.agents.base import Session
from agentgauge.harness.runner import run
from agentgauge.schema import Task
from agentgauge.testing.worlds import make_counter_env


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )


async def own_model(session: Session) -> None:
    """Stands for an agent that calls its own model and records nothing."""
    await session.call_tool("add", {"amount": 2})


def test_a_cost_gate_on_an_agent_that_recorded_no_cost_cannot_pass(tmp_path: Path) -> None:
    tasks = [Task(id=f"t{i}", instruction="add 2", expectations={"final_state": {"counter": 2}})
             for i in range(2)]  # fmt: skip
    header = run(tasks, own_model, store=tmp_path / "s.db", env_factory=make_counter_env,
                 progress=False)  # fmt: skip
    source = f"{tmp_path / 's.db'}:{header.run_id}"
    config = tmp_path / "gates.yaml"
    config.write_text("gates:\n  - metric: cost.cost_of_pass\n    max: 0.01\n")
    gate = cli("gate", source, "--config", str(config))
    # Before: cost 0.0 per trial, so "cost.cost_of_pass = 0" passed the gate.
    assert gate.returncode == 1, gate.stdout + gate.stderr
    assert "cannot check: price unknown for 2 of 2 trials" in gate.stdout + gate.stderr
    metrics = json.loads(cli("metrics", source, "--json").stdout)
    cost = metrics["groups"][0]["cost"]
    assert (cost["per_trial"], cost["total"], cost["cost_of_pass"]) == (None, None, None)
    assert cost["missing"] == 2


def write(path: Path) -> Path:
    # Agent "priced" records its spend; agent "silent" records none (cost_usd absent).
    rows = [
        {"task_id": f"t{i}", "agent": agent, "success": i < 3, **extra}
        for agent, extra in (("priced", {"cost_usd": 0.5}), ("silent", {}))
        for i in range(4)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_terminal_shows_unknown_with_the_count(tmp_path: Path) -> None:
    out = cli("metrics", str(write(tmp_path / "t.jsonl"))).stdout
    line = next(x for x in out.splitlines() if "cost / trial" in x)
    assert "$0.5 " in line and "unknown (4 of 4 trials unpriced)" in line
    cop = next(x for x in out.splitlines() if "cost of pass" in x)
    assert "$0.667" in cop and "unknown" in cop  # 0.5 / 0.75 for priced


def test_reports_name_the_unpriced_agent_and_leave_it_off_the_frontier(tmp_path: Path) -> None:
    src = write(tmp_path / "t.jsonl")
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    proc = cli("report", str(src), "--html", str(html), "--markdown", str(md))
    assert proc.returncode == 0, proc.stderr
    note = "cost frontier leaves out silent: cost unknown (4 of 4 trials unpriced)"
    text = html.read_text()
    assert note in text and "unknown (4 of 4 trials unpriced)</td>" in text
    assert note in md.read_text()
    assert "unknown (4 of 4 trials unpriced)" in md.read_text()
