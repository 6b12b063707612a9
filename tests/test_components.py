"""The one-change rule: components compared, "not recorded" never equal."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Cli

from agentgauge.components import AGENT, COMPONENTS, NOT_SENT, diff_components, digest, from_run
from agentgauge.schema import Run


def _config(**changes: object) -> dict[str, object]:
    base: dict[str, object] = {name: f"{name}-1" for name in COMPONENTS}
    return {**base, **changes}


def test_one_change_is_attributable() -> None:
    diff = diff_components(_config(), _config(model="gpt-4.1"))
    assert diff.changed == [("model", "model-1", "gpt-4.1")] and diff.unknown == []
    assert diff.attributable and diff.sentence_for_verdict() is None
    assert diff.sentence() == "one change: model (model-1 → gpt-4.1)"


def test_two_changes_are_not_attributable() -> None:
    diff = diff_components(_config(), _config(model="m-2", system_prompt=digest("Be terse.")))
    assert not diff.attributable
    assert diff.sentence_for_verdict() == "not attributable: model and system prompt both changed"
    three = diff_components(_config(), _config(model="m-2", top_p=0.9, temperature=0.0))
    assert three.sentence() == "not attributable: model, temperature and top_p all changed"


def test_not_recorded_is_never_equal() -> None:
    # Nothing recorded on either side: no change is known, and none is claimed absent.
    diff = diff_components(dict.fromkeys(COMPONENTS), dict.fromkeys(COMPONENTS))
    assert diff.changed == [] and diff.unknown == list(COMPONENTS)
    assert diff.sentence().startswith("no recorded component differs; not recorded on one side")
    one = diff_components(_config(seed=None), _config(model="m-2"))
    assert one.unknown == ["seed"]
    assert one.sentence() == (
        "one change: model (model-1 → m-2); not recorded on one side or both: sampling seed "
        "(the difference is the one change's only if these did not change)"
    )


def test_values_compare_as_json_not_as_python() -> None:
    # 1 and 1.0 are the same sampling setting; a dict's key order is no change.
    assert diff_components(_config(temperature=1), _config(temperature=1.0)).changed == []
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})


def test_imported_runs_carry_what_their_source_records() -> None:
    inspect = Run(
        run_id="i",
        model="openai/gpt-4o",
        created_at="2026-01-01T00:00:00Z",
        config={"inspect": {"task": "gsm8k", "task_version": 2}},
    )
    got = from_run(inspect)
    assert got["model"] == "openai/gpt-4o" and got["suite_version"] == "2"
    assert got["system_prompt"] is None and got["temperature"] is None
    tau2 = Run(
        run_id="t",
        model="gpt-4.1",
        created_at="2026-01-01T00:00:00Z",
        config={"tau2": {"agent_llm_args": {"temperature": 0.0}}},
    )
    got = from_run(tau2)
    assert got["temperature"] == 0.0 and got["top_p"] == NOT_SENT
    bare = from_run(Run(run_id="b", created_at="2026-01-01T00:00:00Z"))
    assert set(bare.values()) == {None}


def test_a_new_served_version_under_the_same_name_is_a_change_of_model() -> None:
    from agentgauge.components import served_models, with_served_model
    from agentgauge.schema import ModelCallEvent, Trial

    def trials(*served: str) -> list[Trial]:
        return [Trial(task_id="t", success=True, events=[ModelCallEvent(model=m)]) for m in served]

    base = {**dict.fromkeys(COMPONENTS, "same"), "model": "gpt-4o"}
    a = with_served_model(base, trials("gpt-4o-2024-08-06"))
    b = with_served_model(base, trials("gpt-4o-2024-11-20", "gpt-4o-2024-11-20"))
    assert a["model"] == "gpt-4o (served: gpt-4o-2024-08-06)"
    diff = diff_components(a, b)
    assert [c for c, _, _ in diff.changed] == ["model"] and diff.attributable
    # Served as requested, or no model calls at all: the component stays as recorded.
    assert with_served_model(base, trials("gpt-4o")) == base
    assert with_served_model(base, []) == base
    assert served_models(trials("b", "a", "b")) == ["a", "b"]


def _calls_run(store_path: Path, run_id: str, served: str, agents: tuple[str, ...]) -> None:
    from agentgauge.schema import MessageEvent, ModelCallEvent, Run, Trial
    from agentgauge.store import Store

    def calls(agent: str) -> list[ModelCallEvent]:
        return [
            ModelCallEvent(model=served, cost_usd=0.01),  # as recorded
            ModelCallEvent(model=served, cost_usd=0.02, price_source="genai-prices: 0.9"),
            ModelCallEvent(model=f"{served}-{agent}"),  # unpriced
            ModelCallEvent(),  # no model named: not a served model
        ]

    trials = [
        Trial(
            task_id=f"t{i}",
            trial=0,
            agent=agent,
            model="gpt-4o",
            success=i % 2 == 0,
            events=[MessageEvent(role="user", content="hi"), *calls(agent)],
        )
        for agent in agents
        for i in range(3)
    ]
    with Store(store_path) as db:
        db.create_run(Run(run_id=run_id, model="gpt-4o", created_at="2026-01-01T00:00:00Z"))
        db.add_trials(run_id, trials)


def test_a_stored_runs_model_calls_are_counted_as_its_trials_say(tmp_path: Path) -> None:
    # The SQL count (no transcript built) against the same count over the trials' events,
    # for the whole run and for one configuration picked with a selector.
    from agentgauge.model_calls import ModelCalls
    from agentgauge.sources import open_source
    from agentgauge.store import Store

    db = tmp_path / "s.db"
    _calls_run(db, "r", "gpt-4o-2024-08-06", ("x", "y"))
    with Store(db, readonly=True) as store:
        everything = store.trials("r")
    counted = open_source(f"{db}:r", events=False).count_model_calls()
    assert counted == ModelCalls.of_trials(everything)
    assert counted.served == ["gpt-4o-2024-08-06", "gpt-4o-2024-08-06-x", "gpt-4o-2024-08-06-y"]
    assert counted.price_sources == {"as recorded": 6, "genai-prices": 6, "unpriced": 12}
    assert (
        counted.prices_text()
        == "as recorded (6 calls), genai-prices (6 calls), unpriced (12 calls)"
    )
    one = open_source(f"{db}:r#agent=x", events=False).count_model_calls()
    assert one == ModelCalls.of_trials(t for t in everything if t.agent == "x")
    assert "gpt-4o-2024-08-06-y" not in one.served


def test_compare_of_stored_runs_sees_a_new_served_model(tmp_path: Path) -> None:
    from agentgauge.api import compare_sources

    db = tmp_path / "s.db"
    _calls_run(db, "a", "gpt-4o-2024-08-06", ("x",))
    _calls_run(db, "b", "gpt-4o-2024-11-20", ("x",))
    result = compare_sources(f"{db}:a", f"{db}:b")
    line1 = result.record.lines[0].text
    assert "one change: model (gpt-4o (served: gpt-4o-2024-08-06" in line1
    assert "→ gpt-4o (served: gpt-4o-2024-11-20" in line1
    assert "prices A as recorded (3 calls), genai-prices (3 calls), unpriced (6 calls)" in (
        result.record.lines[8].text
    )


def test_a_file_without_a_header_has_the_model_its_trials_name(tmp_path: Path) -> None:
    # A JSONL file records no run header, but every trial names its model: the record
    # says the model changed, not that it was not recorded.
    from agentgauge.api import compare_sources

    path = tmp_path / "t.jsonl"
    rows = [
        {"task_id": f"t{i}", "agent": agent, "model": model, "success": i % 2 == 0}
        for agent, model in (("a", "m-1"), ("a", "m-2"), ("a", None))
        for i in range(4)
    ]
    given = [{k: v for k, v in r.items() if v is not None} for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in given))
    line1 = compare_sources(f"{path}#model=m-1", f"{path}#model=m-2").record.lines[0].text
    assert "one change: model (m-1 → m-2)" in line1
    assert "not recorded on one side or both: agent version" in line1
    # Trials that name none leave it not recorded.
    bare = tmp_path / "bare.jsonl"
    bare.write_text("".join(json.dumps(r) + "\n" for r in given if "model" not in r))
    line1 = compare_sources(f"{path}#model=m-1", bare).record.lines[0].text
    assert "one change: model" not in line1 and "recorded on one side or both: model" in line1


def test_line_one_names_the_model_its_model_calls_name(cli: Cli, tmp_path: Path) -> None:
    # Trials that name their model only on their model calls (the README's JSONL): line
    # 1 said "model not recorded" on both sides and, in the same line, "one change:
    # model (gpt-4o-mini → gpt-4.1)".
    from agentgauge.api import compare_sources

    for run, model in (("a", "gpt-4o-mini"), ("b", "gpt-4.1")):
        call = {"t": 0.0, "type": "model_call", "model": model, "input_tokens": 100}
        rows = [
            {"task_id": f"t{i}", "agent": "bot", "success": i % 2 == 0, "events": [call]}
            for i in range(4)
        ]
        (tmp_path / f"{run}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        args = (
            "import",
            "jsonl",
            str(tmp_path / f"{run}.jsonl"),
            "--store",
            str(tmp_path / "s.db"),
        )
        code, _, err = cli(*args, "--run-id", run)
        assert code == 0, err
    line1 = compare_sources(f"{tmp_path}/s.db:a", f"{tmp_path}/s.db:b").record.lines[0].text
    assert "model not recorded" not in line1
    assert "(agent bot; model gpt-4o-mini; run a;" in line1
    assert "(agent bot; model gpt-4.1; run b;" in line1
    assert "configuration: one change: model (gpt-4o-mini → gpt-4.1)" in line1


def _two_agents(cli: Cli, tmp_path: Path, models: tuple[str, str]) -> tuple[str, str]:
    """planner-v1 on ``models[0]`` as run a, react-v2 on ``models[1]`` as run b, imported
    from JSONL (no agent version recorded); B passes every task, A one in two."""
    db = tmp_path / "s.db"
    for run, agent, model in (("a", "planner-v1", models[0]), ("b", "react-v2", models[1])):
        call = {"t": 0.0, "type": "model_call", "model": model, "input_tokens": 100}
        rows = [
            {"task_id": f"t{i}", "trial": k, "agent": agent, "events": [call]}
            | {"success": run == "b" or i % 2 == 0}
            for i in range(12)
            for k in range(2)
        ]
        path = tmp_path / f"{run}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        code, _, err = cli("import", "jsonl", str(path), "--store", str(db), "--run-id", run)
        assert code == 0, err
    return f"{db}:a", f"{db}:b"


def test_two_agents_on_two_models_are_not_one_change_of_model(cli: Cli, tmp_path: Path) -> None:
    # planner-v1 on gpt-4o-mini against react-v2 on gpt-4.1, no agent version recorded:
    # compare said "B is better" and "one change: model (gpt-4o-mini → gpt-4.1)", as if
    # the agents were one.
    import agentgauge
    from agentgauge.api import compare_sources

    a, b = _two_agents(cli, tmp_path, ("gpt-4o-mini", "gpt-4.1"))
    result = compare_sources(a, b)
    verdict = "B is better; not attributable: model and agent both changed"
    assert result.comparison.verdict == verdict
    assert result.components is not None
    assert result.components.sentence().startswith(
        "not attributable: model and agent both changed; not recorded on one side or both: "
        "agent version, system prompt,"
    )
    assert result.components.to_dict()["agent_changed"] is True
    line1 = result.record.lines[0].text
    assert "configuration: not attributable: model and agent both changed" in line1
    # The Python API's verdict is the command's.
    assert agentgauge.compare(a, b).verdict == verdict
    code, out, err = cli("compare", a, b, "--json")
    assert code == 0, err
    assert json.loads(out)["verdict"] == verdict


def test_two_agents_on_one_model_are_one_change(cli: Cli, tmp_path: Path) -> None:
    # The agent alone differs: attributable, said as before.
    from agentgauge.api import compare_sources

    result = compare_sources(*_two_agents(cli, tmp_path, ("gpt-4.1", "gpt-4.1")))
    assert result.comparison.verdict == "B is better"
    assert result.components is not None
    assert result.components.sentence().startswith(
        "no recorded component differs, but the agent does (planner-v1 → react-v2); "
    )


def test_recorded_agent_versions_decide_whether_the_agent_changed() -> None:
    # Both versions recorded and equal: the names alone are not a second change.
    a, b = {**_config(model="m-1"), AGENT: "x"}, {**_config(model="m-2"), AGENT: "y"}
    diff = diff_components(a, b)
    assert diff.attributable and not diff.agent_changed
    assert diff.sentence() == "one change: model (m-1 → m-2)"
    # One side's version not recorded: the agent is a change of its own.
    b = {**b, "agent_version": None}
    diff = diff_components(a, b)
    assert not diff.attributable and diff.agent_changed
    assert diff.sentence_for_verdict() == "not attributable: model and agent both changed"
    # Listed where its version would be.
    diff = diff_components(a, {**b, "temperature": 0.7})
    assert diff.sentence_for_verdict() == (
        "not attributable: model, agent and temperature all changed"
    )
