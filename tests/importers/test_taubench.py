from __future__ import annotations

from pathlib import Path

from agentgauge.importers import import_file
from agentgauge.store import Store


def test_taubench_import_keeps_transcript(shared_data: Path, tmp_path: Path) -> None:
    path = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    with Store(tmp_path / "s.db") as db:
        run = import_file("taubench", path, db, "tb")
        trials = db.trials("tb")
        tasks = db.get_tasks("tb")
    assert run.n_trials == 200
    assert len({t.task_id for t in trials}) == 50
    assert sum(t.success for t in trials) == 84  # rewards: 84 ones, 116 zeros
    first = trials[0]
    assert first.events[0].type == "message"
    assert any(e.type == "tool_call" for e in first.events)
    # tau-bench v1 keeps only the user simulator's spend: kept apart, agent cost unknown.
    assert first.cost_usd is None
    assert first.metadata["user_sim_cost_usd"] > 0
    assert len(tasks) == 50 and tasks[0].expectations.reference_calls
