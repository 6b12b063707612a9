from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentgauge import metrics
from agentgauge.errors import InputError
from agentgauge.importers import import_file, read_import
from agentgauge.schema import ToolResultEvent
from agentgauge.store import Store

Cli = Callable[..., tuple[int, str, str]]
HI = {"role": "user", "content": "hi"}


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


def test_a_run_that_raised_is_an_infra_error_with_its_message(cli: Cli, tmp_path: Path) -> None:
    """tau-bench's run.py writes a run that raised as reward 0 with ``info.error`` and
    ``info.traceback``: it was stored as a completed failure of the agent, its error
    dropped, and counted in the success rate as a wrong answer (50% here, 0 infra
    errors)."""
    records = [
        {"task_id": 0, "trial": 0, "reward": 1.0, "info": {}, "traj": [HI]},
        {
            "task_id": 0,
            "trial": 1,
            "reward": 0.0,
            "info": {
                "error": "litellm.RateLimitError: 429 Too Many Requests",
                "traceback": "Traceback (most recent call last):\n  ...\nRateLimitError",
            },
            "traj": [],
        },
        # str(e) of an exception raised without a message is empty: the traceback's
        # last line names it.
        {
            "task_id": 1,
            "trial": 0,
            "reward": 0.0,
            "info": {"error": "", "traceback": "Traceback ...\nTimeoutError\n"},
            "traj": [],
        },
    ]
    path = tmp_path / "err.json"
    path.write_text(json.dumps(records))
    trials = read_import("taubench", path).trials
    assert [(t.status, t.error_kind, t.error) for t in trials] == [
        ("completed", None, None),
        ("error", "infra", "litellm.RateLimitError: 429 Too Many Requests"),
        ("error", "infra", "TimeoutError"),
    ]
    assert trials[1].metadata["error_traceback"].endswith("RateLimitError")
    db = tmp_path / "e.db"
    assert cli("import", "taubench", str(path), "--store", str(db), "--run-id", "e")[0] == 0
    code, out, _ = cli("metrics", f"{db}:e", "--json")
    group = json.loads(out)["groups"][0]
    assert code == 0 and group["infra_errors"] == 2
    code, out, _ = cli("metrics", f"{db}:e", "--json", "--exclude-infra-errors")
    assert json.loads(out)["groups"][0]["n_trials"] == 1


def test_a_bad_error_field_names_its_element(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"task_id": 0, "reward": 0, "info": {"error": 5}}]))
    with pytest.raises(InputError) as info:
        read_import("taubench", path)
    assert info.value.field == "[0].info.error" and "expected a string" in info.value.reason


def test_tool_results_in_tau_bench_error_words_are_tool_errors(tmp_path: Path) -> None:
    """tau-bench's environment returns a tool's exception as ``Error: ...`` and an
    unknown tool as ``Unknown action NAME``; none was flagged, so recovery said no
    trial had a tool error."""

    def call(i: int, name: str) -> dict[str, Any]:
        fn = {"name": name, "arguments": "{}"}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"c{i}", "function": fn}],
        }

    def result(i: int, name: str, text: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": text}

    traj = [
        HI,
        call(1, "book"),
        result(1, "book", "Error: not enough seats on flight HAT139"),
        call(2, "fly"),
        result(2, "fly", "Unknown action fly"),
        call(3, "book"),
        result(3, "book", '{"reservation_id": "R1"}'),
        call(4, "get_user"),
        result(4, "get_user", "An Error: in the middle is no error"),
    ]
    path = tmp_path / "tb.json"
    path.write_text(json.dumps([{"task_id": 0, "reward": 1.0, "info": {}, "traj": traj}]))
    (trial,) = read_import("taubench", path).trials
    flags = [e.is_error for e in trial.events if isinstance(e, ToolResultEvent)]
    assert flags == [True, True, False, False]
    recovery = metrics([trial]).to_dict()["groups"][0]["recovery"]
    assert recovery["with_tool_error"]["count"] == 1
    # "book" succeeded after its error; "fly" never did.
    assert recovery["recovered"]["count"] == 0


def test_the_reference_file_has_tool_errors(shared_data: Path) -> None:
    """36 of the 200 gpt-4o airline trials hold 73 tool results in tau-bench's error
    words (``Error: not enough seats on flight HAT139``): recovery said 0 of 200."""
    path = shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json"
    trials = read_import("taubench", path).trials
    errors = [e for t in trials for e in t.events if isinstance(e, ToolResultEvent) and e.is_error]
    assert len(errors) == 73
    assert all(str(e.content).startswith("Error: ") for e in errors)
    recovery = metrics(trials).to_dict()["groups"][0]["recovery"]
    assert (recovery["with_tool_error"]["count"], recovery["n_trials"]) == (36, 200)


def test_a_duplicate_trial_names_both_elements(cli: Cli, tmp_path: Path) -> None:
    """A (task, trial) twice in one results file: the error named no element, so the
    user had to search the file for the pair."""
    records = [
        {"task_id": 1, "trial": 0, "reward": 1.0, "traj": [HI]},
        {"task_id": 2, "trial": 0, "reward": 1.0, "traj": [HI]},
        {"task_id": 1, "trial": 0, "reward": 0.0, "traj": [HI]},
    ]
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(records))
    code, _, err = cli("import", "taubench", str(path), "--store", str(tmp_path / "d.db"))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert (
        f"{path}: [2].trial: duplicate trial 0 of task '1' for agent not recorded, model "
        "not recorded, variant 'base' (first seen at [0].trial)"
    ) in err
    assert not (tmp_path / "d.db").exists()


def test_task_ids_spelt_two_ways_name_both_elements(tmp_path: Path) -> None:
    records = [
        {"task_id": "caf\u00e9", "reward": 1.0},
        {"task_id": "cafe\u0301", "reward": 1.0},
    ]
    path = tmp_path / "ids.json"
    path.write_text(json.dumps(records))
    with pytest.raises(InputError) as info:
        read_import("taubench", path)
    assert info.value.field == "[1].task_id"
    assert info.value.reason.startswith("task ids 'caf\\xe9' ([0].task_id) and")
