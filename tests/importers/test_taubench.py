from __future__ import annotations

import json
from pathlib import Path

from agentgauge import metrics
from agentgauge.importers import import_file, read_import
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


def test_a_record_without_traj_has_unknown_tool_calls_not_zero(tmp_path: Path) -> None:
    """A record with no ``traj`` carries no transcript: how many tools it called is
    unknown, and ``calls.tool`` is the mean over the trials that were seen (it was 0.5
    here, the unseen trial counted as a run without tool calls)."""
    call = {"id": "c1", "type": "function", "function": {"name": "get_user", "arguments": "{}"}}
    traj = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "name": "get_user", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]
    records = [
        {"task_id": 0, "trial": 0, "reward": 1.0, "info": {"user_cost": 0.01}, "traj": traj},
        {"task_id": 0, "trial": 1, "reward": 0.0, "info": {"user_cost": 0.01}},
        {"task_id": 0, "trial": 2, "reward": 0.0, "info": {}, "traj": []},
    ]
    path = tmp_path / "tb.json"
    path.write_text(json.dumps(records))
    trials = read_import("taubench", path).trials
    assert [t.tool_calls for t in trials] == [1, None, None]
    calls = metrics(trials).to_dict()["groups"][0]["calls"]
    assert calls == {"tool": 1.0, "model": None}
