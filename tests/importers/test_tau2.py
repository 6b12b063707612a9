"""tau2-bench results (monolith and directory forms) -> trials.

The fixtures in tests/fixtures/tau2 were written by tau2-bench's own models
(`make_fixtures.py`): 2 tasks x 4 trials, one simulation per kind of end.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentgauge import metrics
from agentgauge.agents.prices import genai_prices_version
from agentgauge.errors import InputError
from agentgauge.importers import import_file, read_import
from agentgauge.importers.tau2 import TERMINATIONS
from agentgauge.schema import ModelCallEvent, Trial
from agentgauge.store import Store

#: The ``cli`` fixture (tests/conftest.py): argv in; exit code, stdout and stderr out.
Cli = Callable[..., tuple[int, str, str]]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tau2"
MONOLITH = FIXTURES / "monolith" / "results.json"
DIRECTORY = FIXTURES / "dir"


def by_sim(trials: list[Trial]) -> dict[str, Trial]:
    return {t.metadata["tau2_simulation_id"]: t for t in trials}


def summary(t: Trial) -> tuple[Any, ...]:
    return (t.task_id, t.trial, t.success, t.status, t.error_kind, t.cost_usd, len(t.events))


def test_monolith_import_maps_outcome_cost_grades_and_transcript(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as db:
        run = import_file("tau2", MONOLITH, db, "t2")
        trials = by_sim(db.trials("t2"))
        tasks = db.get_tasks("t2")
    assert run.n_trials == 8
    assert (run.agent, run.model, run.suite) == (
        "llm_agent",
        "gpt-4.1-mini-2025-04-14",
        "tau2:retail",
    )
    ok = trials["sim-0-0"]
    assert (ok.success, ok.score, ok.status, ok.seed, ok.latency_s) == (
        True,
        1.0,
        "completed",
        300,
        6.0,
    )
    # agent_cost is the trial's cost; the user simulator's is kept apart.
    assert ok.cost_usd == pytest.approx(0.0058)
    assert ok.metadata["user_sim_cost_usd"] == pytest.approx(0.0006)
    assert (ok.input_tokens, ok.output_tokens, ok.model_calls, ok.tool_calls) == (2500, 60, 2, 1)
    assert [e.type for e in ok.events] == [
        "message", "message", "model_call", "tool_call",
        "tool_result", "model_call", "message", "message",
    ]  # fmt: skip
    grades = {g.grader: g for g in ok.grades}
    assert {name: (g.passed, g.score) for name, g in grades.items()} == {
        "tau2:db": (True, 1.0),
        "tau2:action": (True, 1.0),
        "tau2:nl_assertion": (True, None),
    }
    assert grades["tau2:nl_assertion"].evidence["justification"] == "It asked 'shall I proceed?'."
    assert grades["tau2:action"].evidence["action"] == "cancel_pending_order"
    # A failed tool call keeps its error flag; the failing checks are the grades.
    bad = trials["sim-0-1"]
    assert not bad.success and [e.is_error for e in bad.events if e.type == "tool_result"] == [True]
    assert sorted((g.grader, g.passed) for g in bad.grades) == [
        ("tau2:action", False),
        ("tau2:db", False),
        ("tau2:nl_assertion", True),
    ]
    # A MultiToolMessage is one result per call; a transfer is a control decision.
    hand_off = trials["sim-1-0"]
    assert hand_off.control == "transfer" and hand_off.tool_calls == 3
    assert [e.call_id for e in hand_off.events if e.type == "tool_result"] == ["c1", "c2", "c3"]
    assert sorted(g.grader for g in hand_off.grades) == ["tau2:action", "tau2:communicate"]
    # The tasks come along, with the agent's reference actions.
    assert [t.id for t in tasks] == ["0", "1"]
    assert tasks[0].expectations.reference_calls[0].name == "cancel_pending_order"
    assert tasks[0].instruction.startswith("Cancel order #W100")


def test_every_termination_is_kept_and_blamed_per_the_table(tmp_path: Path) -> None:
    trials = by_sim(read_import("tau2", MONOLITH).trials)
    ends = {sid: (t.status, t.error_kind, t.success) for sid, t in trials.items()}
    assert ends == {
        "sim-0-0": ("completed", None, True),
        "sim-0-1": ("completed", None, False),
        "sim-0-2": ("error", "infra", False),  # infrastructure_error: kept, not dropped
        "sim-0-3": ("error", "infra", False),  # user_error: the simulator's fault
        "sim-1-0": ("completed", None, True),
        "sim-1-1": ("completed", None, False),
        "sim-1-2": ("error", "agent", False),  # max_steps
        "sim-1-3": ("timeout", "agent", False),
    }
    infra = trials["sim-0-2"]
    assert infra.is_infra_error and "connection reset" in (infra.error or "")
    # tau2's placeholder for a simulation that never ran: duration 0 is no latency,
    # and with no transcript its tool and model calls are unknown, not 0.
    assert infra.latency_s is None and infra.cost_usd is None
    assert (infra.tool_calls, infra.model_calls, infra.events) == (None, None, [])
    assert not trials["sim-1-2"].is_infra_error
    # calls.tool is the mean over the seven that ran (12 calls), not over all eight.
    ran = [t.tool_calls for sid, t in trials.items() if sid != "sim-0-2"]
    assert None not in ran and sum(ran) == 12  # type: ignore[arg-type]
    figures = metrics(list(trials.values())).to_dict()["groups"][0]["calls"]
    assert figures["tool"] == pytest.approx(12 / 7)


@pytest.mark.parametrize("reason", sorted(TERMINATIONS))
def test_each_termination_reason_maps_to_its_status(reason: str, tmp_path: Path) -> None:
    data = json.loads(MONOLITH.read_text())
    data["simulations"] = [data["simulations"][0]]
    data["simulations"][0]["termination_reason"] = reason
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    (trial,) = read_import("tau2", path).trials
    end = TERMINATIONS[reason]
    assert (trial.status, trial.error_kind) == (end.status, end.error_kind)
    # Only a normal end is graded by its reward; tau2 gives the others 0.
    assert trial.success is (end.status == "completed")


def test_directory_form_reads_the_same_trials_as_the_monolith() -> None:
    mono = [summary(t) for t in read_import("tau2", MONOLITH).trials]
    assert [summary(t) for t in read_import("tau2", DIRECTORY).trials] == mono
    # results.json of the directory form, as tau2's own loader accepts it
    assert [summary(t) for t in read_import("tau2", DIRECTORY / "results.json").trials] == mono


def test_litellm_zero_cost_is_repriced_and_the_source_recorded() -> None:
    trial = by_sim(read_import("tau2", MONOLITH).trials)["sim-1-1"]
    # tau2 recorded $0 (litellm could not price it); genai-prices' gpt-4.1-mini at
    # $0.40/$1.60 per 1M: (900·0.40 + 30·1.60 + 1000·0.40 + 25·1.60) / 1e6 = 848e-6
    assert trial.cost_usd == pytest.approx(848e-6)
    calls = [e for e in trial.events if isinstance(e, ModelCallEvent)]
    assert all(c.price_source and "genai-prices" in c.price_source for c in calls)
    assert all("openai/gpt-4.1-mini" in (c.price_source or "") for c in calls)


def test_unpriceable_model_leaves_the_cost_unknown_not_zero(tmp_path: Path) -> None:
    data = json.loads(MONOLITH.read_text())
    data["info"]["agent_info"]["llm"] = "my-local-model"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    trials = by_sim(read_import("tau2", path).trials)
    assert trials["sim-1-1"].cost_usd is None
    assert trials["sim-0-0"].cost_usd == pytest.approx(0.0058)  # tau2's own figure stands


def test_missing_agent_cost_is_the_sum_of_the_calls_costs(tmp_path: Path) -> None:
    path = _mutated(tmp_path, _set("simulations.0.agent_cost", None))
    # sim-0-0's two agent turns cost $0.0028 and $0.0030 in tau2's messages
    assert by_sim(read_import("tau2", path).trials)["sim-0-0"].cost_usd == pytest.approx(0.0058)


def test_users_price_file_wins_when_repricing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prices = tmp_path / "p.json"
    prices.write_text('{"gpt-4.1-mini": {"input": 1, "output": 1}}')
    monkeypatch.setenv("AGENTGAUGE_PRICES", str(prices))
    trial = by_sim(read_import("tau2", MONOLITH).trials)["sim-1-1"]
    # (900 + 30 + 1000 + 25) · $1 / 1e6
    assert trial.cost_usd == pytest.approx(1955e-6)


def test_cli_import_and_metrics_count_infra_errors_beside_the_rate(
    cli: Cli, tmp_path: Path
) -> None:
    db = tmp_path / "s.db"
    code, out, err = cli("import", "tau2", str(DIRECTORY), "--store", str(db), "--run-id", "t2")
    assert code == 0, err
    assert "imported 8 trials" in out
    code, out, _ = cli("metrics", f"{db}:t2", "--json")
    group = json.loads(out)["groups"][0]
    assert group["infra_errors"] == 2
    # infra errors count as failures: task 0 has 1 success in 4, task 1 has 1 in 4
    assert group["success_rate"]["value"] == pytest.approx(0.25)
    code, out, err = cli("metrics", f"{db}:t2", "--json", "--exclude-infra-errors")
    # only on request: task 0 then has 1 in 2 (its two infra errors dropped) -> (0.5 + 0.25) / 2
    assert json.loads(out)["groups"][0]["success_rate"]["value"] == pytest.approx(0.375)
    assert "excluded 2 infra-error trials (of 8)" in err


# --------------------------------------------------------------------------- bad input


def _mutated(tmp_path: Path, edit: Any) -> Path:
    data = json.loads(MONOLITH.read_text())
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


def _set(path: str, value: Any) -> Any:
    def edit(data: Any) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return edit


def _drop(path: str) -> Any:
    def edit(data: Any) -> None:
        *parents, last = path.split(".")
        node = data
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return edit


@pytest.mark.parametrize(
    ("edit", "field", "reason"),
    [
        (_set("simulations", {}), "simulations", "expected a list"),
        (_drop("simulations.0.task_id"), "simulations[0].task_id", "required"),
        (_set("simulations.0.task_id", [1]), "simulations[0].task_id", "expected a non-empty"),
        (_set("simulations.0.termination_reason", "gave_up"), "simulations[0].termination_reason",
         "unknown termination reason"),
        (_set("simulations.0.reward_info.reward", 3), "simulations[0].reward_info.reward",
         "[0, 1]"),
        (_set("simulations.0.reward_info.reward", "1"), "simulations[0].reward_info.reward",
         "finite number"),
        (_set("simulations.0.trial", "3"), "simulations[0].trial", "not a valid number"),
        (_set("simulations.0.trial", 2**70), "simulations[0].trial", "out of range"),
        (_set("simulations.0.agent_cost", -1), "simulations[0].agent_cost", "at least 0"),
        (_set("simulations.0.messages.2.role", 7), "simulations[0].messages[2].role",
         "expected a string"),
        # tau2's four roles only, and times as it writes them: a garbled start_time
        # dropped the time of every event of its simulation, silently.
        (_set("simulations.0.messages.1.role", "alien"), "simulations[0].messages[1].role",
         "unknown role 'alien'; tau2 writes one of system, user, assistant, tool"),
        (_set("simulations.0.start_time", "not a time"), "simulations[0].start_time",
         "expected an ISO 8601 time, got 'not a time'"),
        (_set("simulations.0.start_time", 1754042400), "simulations[0].start_time",
         "expected an ISO 8601 time, got a number"),
        (_set("simulations.0.messages.1.timestamp", 12345),
         "simulations[0].messages[1].timestamp", "expected an ISO 8601 time, got a number"),
        (_set("simulations.0.messages.1.timestamp", "notatime"),
         "simulations[0].messages[1].timestamp", "expected an ISO 8601 time, got 'notatime'"),
        (_set("simulations.3.messages.2.tool_messages.1.timestamp", "2026-13-01T00:00:00"),
         "simulations[3].messages[2].tool_messages[1].timestamp", "expected an ISO 8601 time"),
        (_set("simulations.0.messages.2.tool_calls", {"a": 1}),
         "simulations[0].messages[2].tool_calls", "expected a list"),
        (_set("simulations.0.messages.2.tool_calls.0.name", None),
         "simulations[0].messages[2].tool_calls[0].name", "expected a string"),
        (_set("simulations.0.messages.2.usage.prompt_tokens", -5),
         "simulations[0].messages[2].usage.prompt_tokens", "whole number"),
        (_set("simulations.0.messages.3.error", "yes"), "simulations[0].messages[3].error",
         "true or false"),
        (_set("simulations.0.reward_info.db_check.db_match", 1),
         "simulations[0].reward_info.db_check.db_match", "true or false"),
        (_set("simulations.0.reward_info.action_checks.0.action_reward", 2),
         "simulations[0].reward_info.action_checks[0].action_reward", "[0, 1]"),
        (_set("tasks.0.evaluation_criteria.actions.0.name", 5),
         "tasks[0].evaluation_criteria.actions[0].name", "expected a string"),
        # The element, and where the first of the two was (it named neither).
        (_set("simulations.1.trial", 0), "simulations[1].trial",
         "duplicate trial 0 of task '0' for agent 'llm_agent', model "
         "'gpt-4.1-mini-2025-04-14', variant 'base' (first seen at simulations[0].trial)"),
    ],
)  # fmt: skip
def test_malformed_simulation_names_file_and_element(
    tmp_path: Path, edit: Any, field: str, reason: str
) -> None:
    path = _mutated(tmp_path, edit)
    with pytest.raises(InputError) as info:
        read_import("tau2", path)
    assert info.value.file == str(path)
    assert info.value.field == field
    assert reason in info.value.reason


def test_bad_file_exits_2_and_leaves_no_store(cli: Cli, tmp_path: Path) -> None:
    path = _mutated(tmp_path, _set("simulations.0.messages.2.role", 7))
    db = tmp_path / "new.db"
    code, _, err = cli("import", "tau2", str(path), "--store", str(db))
    assert code == 2
    assert f"{path}: simulations[0].messages[2].role: expected a string" in err
    assert "Traceback" not in err and not db.exists()
    # ... and an existing store keeps what it had.
    assert cli("import", "tau2", str(MONOLITH), "--store", str(db), "--run-id", "ok")[0] == 0
    assert cli("import", "tau2", str(path), "--store", str(db), "--run-id", "bad")[0] == 2
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["ok"]


def _copy_dir(tmp_path: Path) -> Path:
    target = tmp_path / "run"
    shutil.copytree(DIRECTORY, target)
    return target


def test_directory_missing_or_extra_simulation_files_are_named(tmp_path: Path) -> None:
    run = _copy_dir(tmp_path)
    (run / "simulations" / "sim-0-2.json").unlink()
    (run / "simulations" / "stray.json").write_text("{}")
    with pytest.raises(InputError) as info:
        read_import("tau2", run)
    assert info.value.file == str(run / "results.json")
    assert info.value.field == "simulation_index"
    assert "missing simulation files sim-0-2" in info.value.reason
    assert "files not in the index stray" in info.value.reason


def test_directory_errors_name_the_simulation_file(tmp_path: Path) -> None:
    run = _copy_dir(tmp_path)
    sim = run / "simulations" / "sim-1-0.json"
    data = json.loads(sim.read_text())
    data["messages"][2]["tool_messages"][1]["content"] = ["list", "content"]
    sim.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_import("tau2", run)
    assert (info.value.file, info.value.field) == (
        str(sim),
        "messages[2].tool_messages[1].content",
    )
    sim.write_text(json.dumps({**data, "id": "another"}))
    with pytest.raises(InputError, match="differs from its file name"):
        read_import("tau2", run)
    data["messages"][2]["tool_messages"][1]["content"] = "ok"
    sim.write_text(json.dumps({**data, "start_time": "yesterday"}))
    with pytest.raises(InputError) as info:
        read_import("tau2", run)
    assert (info.value.file, info.value.field) == (str(sim), "start_time")
    assert info.value.reason == "expected an ISO 8601 time, got 'yesterday'"


def test_results_json_without_its_simulations_folder_says_so(tmp_path: Path) -> None:
    """results.json copied without simulations/ (the index lists 8) said "no trials
    found", as if the run were empty."""
    run = _copy_dir(tmp_path)
    shutil.rmtree(run / "simulations")
    for path in (run, run / "results.json"):
        with pytest.raises(InputError) as info:
            read_import("tau2", path)
        assert (info.value.file, info.value.field) == (
            str(run / "results.json"),
            "simulation_index",
        )
        assert info.value.reason == (
            f"lists 8 simulations, but there is no simulations/ folder beside it (in {run}); "
            "copy the folder with results.json"
        )


def test_one_simulation_file_is_named_as_such_not_an_empty_run(tmp_path: Path) -> None:
    """One of simulations/*.json given as PATH said "no trials found"."""
    sim = _copy_dir(tmp_path) / "simulations" / "sim-0-0.json"
    with pytest.raises(InputError) as info:
        read_import("tau2", sim)
    assert info.value.file == str(sim)
    assert info.value.reason == (
        "is one tau2 simulation, not a run's results: give the run's directory (the "
        "folder holding results.json and simulations/) or its results.json"
    )


def test_the_directory_and_its_results_json_are_one_source(tmp_path: Path, cli: Cli) -> None:
    """PATH as the directory or as its results.json reads the same simulations, but the
    run's name and SHA-256 came from results.json alone: the same run imported both
    ways was stored twice without a word, and a changed simulation file left the
    recorded hash as it was."""
    run = _copy_dir(tmp_path)
    db = tmp_path / "s.db"
    assert cli("import", "tau2", str(run), "--store", str(db))[0] == 0
    code, _, err = cli("import", "tau2", str(run / "results.json"), "--store", str(db))
    assert code == 2, err
    assert f"--run-id: {run} was already imported as run 'run-" in err
    with Store(db) as store:
        [first] = store.list_runs()
    assert first.source == f"import:tau2:{run.resolve()}"
    sim = run / "simulations" / "sim-0-0.json"
    sim.write_text(sim.read_text().replace('"duration": 6.0', '"duration": 7.0'))
    again = import_file("tau2", run / "results.json", tmp_path / "t.db")
    assert again.source_sha256 != first.source_sha256  # the simulations are hashed too


def test_directory_without_results_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"holds results\.json"):
        read_import("tau2", tmp_path)


def test_simulations_both_inline_and_beside_a_folder_are_ambiguous(tmp_path: Path) -> None:
    run = _copy_dir(tmp_path)
    shutil.copy(MONOLITH, run / "results.json")
    with pytest.raises(InputError, match="sits beside a simulations/ folder"):
        read_import("tau2", run)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"\xff\xfe{}", "not a UTF-8 text file"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b'{"simulations": [{"task_id": "1", "agent_cost": NaN}]}', "NaN is not allowed"),
        (b"[]", "expected an object"),
        (b"{}", "expected a tau2 Results object"),
    ],
)
def test_hostile_bytes_are_one_clear_error(tmp_path: Path, raw: bytes, reason: str) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=reason) as info:
        read_import("tau2", path)
    assert info.value.file == str(path)


def test_comparison_record_says_where_prices_came_from(cli: Cli, tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert cli("import", "tau2", str(MONOLITH), "--store", str(db), "--run-id", "a")[0] == 0
    assert cli("import", "tau2", str(DIRECTORY), "--store", str(db), "--run-id", "b")[0] == 0
    code, out, err = cli("compare", f"{db}:a", f"{db}:b")
    assert code == 0, err
    # 10 agent model calls: 8 priced by tau2 itself, the 2 it recorded at $0 by genai-prices
    snapshot = f"genai-prices {genai_prices_version()} (bundled snapshot)"
    sources = f"as recorded (8 calls), {snapshot} (2 calls)"
    assert f"prices A {sources}, B {sources}" in " ".join(out.split())


def test_tokens_are_unknown_when_an_agent_turn_lacks_them(tmp_path: Path) -> None:
    """A trial's tokens are the sum over the agent's calls only when every call reports
    them: one turn without usage made the total the other turns' (1200 of an unknown
    2500), shown as the trial's tokens. Each count is read on its own."""
    path = _mutated(tmp_path, _drop("simulations.0.messages.4.usage"))
    trial = by_sim(read_import("tau2", path).trials)["sim-0-0"]
    assert (trial.input_tokens, trial.output_tokens, trial.model_calls) == (None, None, 2)
    path = _mutated(tmp_path, _drop("simulations.0.messages.4.usage.completion_tokens"))
    trial = by_sim(read_import("tau2", path).trials)["sim-0-0"]
    assert (trial.input_tokens, trial.output_tokens) == (2500, None)


def test_a_duplicate_across_simulation_files_names_both_files(tmp_path: Path) -> None:
    target = tmp_path / "run"
    shutil.copytree(DIRECTORY, target)
    sim = target / "simulations" / "sim-0-1.json"
    data = json.loads(sim.read_text())
    data["trial"] = 0
    sim.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        read_import("tau2", target)
    assert (info.value.file, info.value.field) == (str(sim), "trial")
    first = target / "simulations" / "sim-0-0.json"
    assert info.value.reason.endswith(f"(first seen at {first}: trial)")


def test_a_message_stamped_before_the_start_has_no_time_not_zero(tmp_path: Path) -> None:
    """tau2 writes local times with no zone: a clock change can put a message before
    its simulation's start. Its time is unknown, not a measured 0 s."""
    path = _mutated(tmp_path, _set("simulations.0.messages.1.timestamp", "2026-08-01T09:59:00"))
    trial = by_sim(read_import("tau2", path).trials)["sim-0-0"]
    messages = [e for e in trial.events if e.type == "message"]
    assert [m.t for m in messages[:2]] == [0.0, None]
    assert all(m.t is not None and m.t > 0 for m in messages[2:])


def test_the_orchestrators_greeting_is_no_model_call(tmp_path: Path) -> None:
    """tau2 opens every conversation with its orchestrator's canned
    ``DEFAULT_FIRST_AGENT_MESSAGE`` (``orchestrator.py``: "Hi! How can I help you
    today?", cost 0.0, no usage): no model produced it. Read as a model call with no
    token counts, it made every real simulation's tokens unknown and added one to its
    model calls."""

    def greet(data: Any) -> None:
        for sim in data["simulations"]:
            if sim["messages"]:
                greeting = {
                    "role": "assistant",
                    "content": "Hi! How can I help you today?",
                    "tool_calls": None,
                    "cost": 0.0,
                    "usage": None,
                    "raw_data": None,
                    "generation_time_seconds": None,
                    "timestamp": sim["start_time"],
                }
                sim["messages"].insert(0, greeting)

    plain = by_sim(read_import("tau2", MONOLITH).trials)
    greeted = by_sim(read_import("tau2", _mutated(tmp_path, greet)).trials)
    for sim_id, trial in greeted.items():
        before = plain[sim_id]
        assert (trial.input_tokens, trial.output_tokens, trial.model_calls, trial.cost_usd) == (
            before.input_tokens,
            before.output_tokens,
            before.model_calls,
            before.cost_usd,
        ), sim_id
        if before.events:
            assert trial.events[0].type == "message"
            assert trial.events[0].content == "Hi! How can I help you today?"
    assert any(t.input_tokens for t in greeted.values())


def test_a_huge_duration_reads_in_scientific_notation_on_every_face(
    cli: Cli, tmp_path: Path
) -> None:
    # A duration of 1e308 s printed as a 309-digit number; the JSON keeps the value.
    data = json.loads(MONOLITH.read_text())
    for sim in data["simulations"]:
        sim["duration"] = 1e308
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    db = tmp_path / "s.db"
    assert cli("import", "tau2", str(path), "--store", str(db), "--run-id", "h")[0] == 0
    code, out, err = cli("metrics", f"{db}:h", "--json")
    assert json.loads(out)["groups"][0]["latency_s"]["p50"] == 1e308
    code, out, err = cli("metrics", f"{db}:h")
    assert code == 0, err
    assert "1.00e+308 s" in " ".join(out.split())
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    code, _, err = cli("report", f"{db}:h", "--html", str(html), "--markdown", str(md))
    assert code == 0, err
    for text in (out, html.read_text(), md.read_text()):
        assert not re.search(r"\d{40}", text)
    for text in (out, md.read_text()):  # (the HTML's plotly bundle holds lists of numbers)
        assert not re.search(r"\d(,\d{3}){12}", text)
    assert "1.00e+308" in html.read_text()


def test_a_task_given_twice_differently_is_refused(cli: Cli, tmp_path: Path) -> None:
    # Before: one of the two was kept, silently.
    def twice(data: Any) -> None:
        other = json.loads(json.dumps(data["tasks"][0]))
        other["description"] = "another task under the same id"
        data["tasks"].append(other)

    path = _mutated(tmp_path, twice)
    task_id = json.loads(path.read_text())["tasks"][0]["id"]
    n = len(json.loads(path.read_text())["tasks"]) - 1
    db = tmp_path / "s.db"
    code, _, err = cli("import", "tau2", str(path), "--store", str(db))
    assert code == 2
    assert f"{path}: tasks[{n}].id: task {task_id!r} is also tasks[0], with other contents" in err
    assert len(err.strip().splitlines()) == 1 and not db.exists()


def test_a_task_given_twice_the_same_is_read_once(tmp_path: Path) -> None:
    # A file concatenated or merged twice: a repeat, not a conflict.
    path = _mutated(tmp_path, lambda data: data["tasks"].append(data["tasks"][0]))
    tasks = read_import("tau2", path).tasks
    assert len(tasks) == len({t.id for t in tasks}) == len(read_import("tau2", MONOLITH).tasks)
