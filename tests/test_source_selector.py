"""One system per side: a SOURCE holding several (agent, model) configurations is
refused where it is treated as one system, and ``#agent=NAME`` picks one, the same
on every command. And ``load_trials("DB:RUN")`` works as the README says."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import agentgauge
from agentgauge.errors import InputError
from agentgauge.importers import import_file
from agentgauge.report.show import failures_document
from agentgauge.schema import Grade, MessageEvent, Run, Trial
from agentgauge.sources import GradeSummary, open_source
from agentgauge.store import Store, utc_now

Cli = Callable[..., tuple[int, str, str]]  # the `cli` fixture (tests/conftest.py)

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample_trials.jsonl"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with Store(path) as db:
        import_file("jsonl", SAMPLE, db, run_id="sample")
    return path


def test_compare_refuses_a_side_pooling_two_agents_and_says_what_to_type(
    cli: Cli,
) -> None:
    # Today's main pooled careful and hasty into one side and compared it with itself.
    code, out, err = cli("compare", str(SAMPLE), str(SAMPLE))
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "A holds 2 (agent, model) configurations" in line
    assert f"{SAMPLE}#agent=careful (agent 'careful', model 'gpt-4o-mini', 40 trials)" in line
    assert f"{SAMPLE}#agent=hasty (agent 'hasty', model 'llama-3.1-8b', 40 trials)" in line
    code, out, err = cli("compare", f"{SAMPLE}#agent=hasty", f"{SAMPLE}#agent=careful", "--json")
    assert code == 0, err
    result = json.loads(out)
    rates = {
        name: agentgauge.metrics(f"{SAMPLE}#agent={name}", by=()).groups[0].outcome.success_rate
        for name in ("hasty", "careful")
    }
    assert result["mean_diff"] == pytest.approx(rates["careful"] - rates["hasty"])
    assert result["n_tasks"] == 10


def test_the_same_selector_on_a_store_and_on_every_command(
    store: Path, tmp_path: Path, cli: Cli
) -> None:
    run = f"{store}:sample"
    with pytest.raises(InputError, match="B holds 2"):
        agentgauge.compare(f"{run}#agent=hasty", run)
    code, out, err = cli("metrics", f"{run}#agent=careful", "--json")
    assert code == 0, err
    assert [g["agent"] for g in json.loads(out)["groups"]] == ["careful"]
    code, out, err = cli("horizon", f"{SAMPLE}#agent=careful", "--json")
    assert code == 0, err
    assert [g["agent"] for g in json.loads(out)["groups"]] == ["careful"]
    md = tmp_path / "r.md"
    code, _, err = cli(
        "report", f"{run}#agent=hasty", f"{run}#agent=careful", "--markdown", str(md)
    )
    assert code == 0, err
    code, _, err = cli("report", run, run, "--markdown", str(md), "--force")
    assert code == 2 and "holds 2 (agent, model) configurations" in err
    # gate: the gates hold per group, but the baseline of non-inferiority is one system.
    gates = tmp_path / "gates.yaml"
    gates.write_text("gates:\n  - type: non_inferiority\n    margin: 0.5\n")
    code, _, err = cli("gate", run, "--config", str(gates), "--baseline", run)
    assert code == 2 and "holds 2 (agent, model) configurations" in err
    code, out, err = cli(
        "gate",
        f"{run}#agent=careful",
        "--config",
        str(gates),
        "--baseline",
        f"{SAMPLE}#agent=careful",
    )
    # The selector is taken; the sample's 10 tasks are in 4 families, the units of its
    # clustered comparison, and 4 cannot show non-inferiority (2 · 0.5⁴ = 0.125 > 0.05).
    assert code == 1, err
    assert "cannot check: 10 tasks × 4 trials: too few families to tell" in out


def test_plan_refuses_a_pilot_pooling_two_agents(store: Path, cli: Cli) -> None:
    # The pilot pooled careful and hasty into 8 trials per task of one system: within
    # share 0.966 (a mixture's) where careful alone measures 1, and a plan from it.
    run = f"{store}:sample"
    for pilot in (str(SAMPLE), run):
        code, out, err = cli("plan", "--pilot", pilot, "--delta", "0.1")
        assert code == 2 and out == ""
        (line,) = err.strip().splitlines()
        assert (
            f"{pilot}: --pilot: the pilot holds 2 (agent, model) configurations and is read "
            "as one system; pick one: " in line
        )
        assert f"{pilot}#agent=careful (agent 'careful', model 'gpt-4o-mini', 40 trials)" in line
        assert f"{pilot}#agent=hasty (agent 'hasty', model 'llama-3.1-8b', 40 trials)" in line
    code, _, err = cli(
        "plan", "--pilot", f"{SAMPLE}#agent=careful", "--pilot-b", run, "--delta", "0.1"
    )
    assert code == 2 and f"{run}: --pilot-b: the second pilot holds 2" in err
    with pytest.raises(InputError, match="the pilot holds 2"):
        agentgauge.plan(pilot=run, tasks=50)
    code, out, err = cli("plan", "--pilot", f"{SAMPLE}#agent=careful", "--delta", "0.1", "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (d["pilot_trials_per_task"], d["pilot_rate"], d["within_share"]) == (4, 0.675, 1)
    code, _, err = cli(
        "plan",
        "--pilot",
        f"{run}#agent=careful",
        "--pilot-b",
        f"{SAMPLE}#agent=hasty",
        "--delta",
        "0.1",
    )
    assert code == 0, err


def test_bad_and_empty_selectors_are_one_clear_error(cli: Cli) -> None:
    code, _, err = cli("metrics", f"{SAMPLE}#agnt=careful")
    assert code == 2 and "bad selector 'agnt=careful'" in err and "SOURCE" in err
    code, _, err = cli("metrics", f"{SAMPLE}#agent=nobody")
    assert code == 2
    assert "matches no trials" in err and f"{SAMPLE}#agent=hasty" in err
    code, _, err = cli("metrics", f"{SAMPLE}#grade=2")
    assert code == 2 and "a trials file has no grade versions" in err


def test_a_file_whose_name_holds_a_hash_or_colon_is_that_file(tmp_path: Path) -> None:
    odd = tmp_path / "runs#agent=x:v1.jsonl"
    shutil.copy(SAMPLE, odd)
    assert len(agentgauge.load_trials(str(odd))) == 80


def test_a_store_in_a_folder_whose_name_holds_a_hash_is_read_by_db_run(
    tmp_path: Path, cli: Cli
) -> None:
    folder = tmp_path / "team #2"
    folder.mkdir()
    with Store(folder / "s.db") as db:
        import_file("jsonl", SAMPLE, db, run_id="sample")
    run = f"{folder / 's.db'}:sample"
    # It was "team : SOURCE: bad selector '2/s.db:sample'", for every command.
    assert len(agentgauge.load_trials(run)) == 80
    assert {t.agent for t in agentgauge.load_trials(f"{run}#agent=hasty")} == {"hasty"}
    code, out, err = cli("metrics", f"{run}#agent=careful", "--json")
    assert code == 0, err
    assert [g["agent"] for g in json.loads(out)["groups"]] == ["careful"]
    code, _, err = cli("metrics", f"{run}#agent=nobody")
    assert code == 2 and "the selector matches no trials" in err


def test_load_trials_reads_a_stored_run_as_the_readme_promises(store: Path) -> None:
    from_file = agentgauge.load_trials(SAMPLE)
    from_store = agentgauge.load_trials(f"{store}:sample")
    # Today's main read DB:RUN as a JSONL file and failed.
    assert [(t.task_id, t.trial, t.agent, t.success) for t in from_store] == [
        (t.task_id, t.trial, t.agent, t.success) for t in from_file
    ]
    assert {t.agent for t in agentgauge.load_trials(f"{store}:sample#agent=hasty")} == {"hasty"}
    assert len(agentgauge.load_trials(store)) == 80  # a store holding one run


def _two_agent_store(path: Path) -> None:
    """A run of two agents, interleaved, with transcripts and grades, re-graded once:
    every part `Store.trials` reads per trial (events, grades, the re-grade's outcomes
    and judge spend) has rows of both agents."""
    trials = [
        Trial(
            task_id=f"t{i % 3}",
            trial=i // 6,
            agent="a" if i % 2 else "b",
            model="m",
            success=i % 3 == 0,
            events=[MessageEvent(role="assistant", content=f"answer {i}")],
            grades=[Grade(grader="state", passed=i % 3 == 0, evidence={"i": i})],
        )
        for i in range(12)
    ]
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trials("r", trials)
        keys = db.trial_keys("r")
        with db.transaction():
            version = db.new_grade_version("r", ["judge"], note="again")
            for i, pk in enumerate(keys[:8]):  # some of each agent
                grade = Grade(grader="judge", passed=i % 2 == 0, judge_model="j")
                db.add_grades(pk, version, [grade])
                db.add_outcome(pk, version, i % 2 == 0, None)


@pytest.mark.parametrize("grade_version", [1, 2])
def test_a_selector_reads_only_its_configuration_as_the_whole_run_would(
    tmp_path: Path, grade_version: int
) -> None:
    # compare 'db:run#agent=A' 'db:run#agent=B' built every trial of the run for each
    # side, then dropped the other agent's: now the selector is part of the SQL read.
    # Its trials (transcripts, grades, re-graded outcomes) must be those of the whole
    # run's read, kept by the selector.
    path = tmp_path / "s.db"
    _two_agent_store(path)
    with Store(path, readonly=True) as db:
        whole = db.trials("r", grade_version=grade_version)
        for agent in ("a", "b"):
            picked = db.trials("r", grade_version=grade_version, agent=agent, model="m")
            assert picked == [t for t in whole if t.agent == agent]
            assert [t.model_dump() for t in picked] == [
                t.model_dump() for t in whole if t.agent == agent
            ]
        assert db.trials("r", agent="a", model="other") == []
    # Through a SOURCE: the built trials agree with the columns read for metrics.
    for agent in ("a", "b"):
        src = open_source(f"{path}:r#agent={agent}", grade_version=grade_version)
        assert {t.agent for t in src.trials} == {agent}
        assert len(src.trials) == len(src.table) == 6
        assert [t.success for t in src.trials] == src.table.success.tolist()
        # show's failures view reads the same configuration's outcomes from SQL.
        again = open_source(f"{path}:r#agent={agent}", grade_version=grade_version)
        assert failures_document(again.outcomes, source="s") == failures_document(
            src.trials, source="s"
        )


@pytest.mark.parametrize("grade_version", [1, 2])
@pytest.mark.parametrize("selector", ["", "#agent=a", "#agent=b,model=m"])
def test_the_grade_summary_of_a_stored_run_is_what_its_trials_say(
    tmp_path: Path, grade_version: int, selector: str
) -> None:
    # For a comparison's record (its graders line): read in SQL, without the trials.
    path = tmp_path / "s.db"
    _two_agent_store(path)
    source = f"{path}:r{selector}"
    from_sql = open_source(source, grade_version=grade_version).summarize_grades()
    trials = open_source(source, grade_version=grade_version).trials
    assert from_sql == GradeSummary.of_trials(trials)
    # Version 2 re-graded some trials of each agent with a judge; the rest keep their
    # version-1 grades.
    graders = {"state"} if grade_version == 1 else {"state", "judge"}
    judges = set() if grade_version == 1 else {"j"}
    assert from_sql == GradeSummary(frozenset(graders), frozenset(graders), frozenset(judges), True)


def test_the_grade_summary_tells_the_graders_of_finished_trials_apart(tmp_path: Path) -> None:
    # An errored trial's grades count among the graders, not among the finished ones'
    # (record: "graded differently" compares the finished trials' graders).
    path = tmp_path / "s.db"
    trials = [
        Trial(task_id="t", trial=0, success=True, grades=[Grade(grader="state", passed=True)]),
        Trial(
            task_id="t",
            trial=1,
            success=False,
            status="error",
            error_kind="agent",
            grades=[Grade(grader="judge", passed=False, judge_model="j")],
        ),
    ]
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        db.add_trials("r", trials)
    src = open_source(f"{path}:r")
    summary = src.summarize_grades()
    assert summary == GradeSummary.of_trials(src.trials)
    assert summary == GradeSummary(
        frozenset({"state", "judge"}), frozenset({"state"}), frozenset({"j"}), True
    )
    with Store(path) as db:  # no trial finished
        db.conn.execute("UPDATE trials SET status = 'error', error_kind = 'agent'")
        db.conn.commit()
    src = open_source(f"{path}:r")
    assert src.summarize_grades() == GradeSummary.of_trials(src.trials)
    assert src.summarize_grades().finished is False


def _unnamed_store(tmp_path: Path) -> Path:
    """Run ``na`` of three configurations: trials recording no agent and no model,
    agent A with model m, and agent A with no model; 6 tasks with human minutes."""
    rows = []
    for i in range(6):
        for k, extra in enumerate(({}, {"agent": "A", "model": "m"}, {"agent": "A"})):
            for j in range(2):
                rows.append(
                    {"task_id": f"t{i}", "trial": 2 * k + j, "human_minutes": 2**i,
                     "success": (i + j + k) % 3 != 0} | extra
                )  # fmt: skip
    src = tmp_path / "na.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "na.db"
    with Store(path) as db:
        import_file("jsonl", src, db, run_id="na")
    return path


def test_an_empty_name_picks_the_trials_that_record_none_on_every_command(
    tmp_path: Path, cli: Cli
) -> None:
    # The configuration with no agent and no model was listed as `na.db:na#`, which
    # picked nothing (a bad selector); the viewer could pick it (`a_no_agent=1`).
    run = f"{_unnamed_store(tmp_path)}:na"
    code, _, err = cli("compare", run, run)
    assert code == 2
    for sel, what in (
        ("#agent=", "agent not recorded, model not recorded"),
        ("#agent=A,model=", "agent 'A', model not recorded"),
        ("#agent=A,model=m", "agent 'A', model 'm'"),
    ):
        assert f"{run}{sel} ({what}, 12 trials)" in err, err
    none, unnamed_model = f"{run}#agent=", f"{run}#agent=A,model="
    for source, agent, model in ((none, None, None), (unnamed_model, "A", None)):
        code, out, err = cli("metrics", source, "--json")
        assert code == 0, err
        (g,) = json.loads(out)["groups"]
        assert (g["agent"], g["model"], g["n_trials"]) == (agent, model, 12)
        (py,) = agentgauge.metrics(source).to_dict()["groups"]
        assert (py["agent"], py["model"], py["n_trials"]) == (agent, model, 12)
        code, out, err = cli("horizon", source, "--json")
        assert code == 0, err
        assert [g["agent"] for g in json.loads(out)["groups"]] == [agent]
    code, out, err = cli("compare", none, unnamed_model, "--json")
    assert code == 0, err
    assert json.loads(out)["n_tasks"] == 6
    md = tmp_path / "r.md"
    code, _, err = cli("report", none, unnamed_model, "--markdown", str(md))
    assert code == 0, err
    gates = tmp_path / "gates.yaml"
    gates.write_text("gates:\n  - type: non_inferiority\n    margin: 0.5\n")
    code, out, err = cli("gate", none, "--config", str(gates), "--baseline", unnamed_model)
    assert code in (0, 1) and "configurations" not in err, err
    # show's failures view reads the outcomes in SQL: `IS NULL`, not `= ''`.
    code, out, err = cli("show", none, "--json")
    assert code == 0, err
    # A grade version still needs its number.
    code, _, err = cli("metrics", f"{run}#grade=")
    assert code == 2 and "bad selector 'grade='" in err and "#agent= for the trials" in err


def test_an_empty_name_reads_the_same_trials_from_sql_and_from_columns(tmp_path: Path) -> None:
    path = _unnamed_store(tmp_path)
    for selector in ("#agent=", "#agent=A,model=", "#model="):
        src = open_source(f"{path}:na{selector}")
        assert {(t.agent, t.model) for t in src.trials} == {
            (a, m) for a, m in zip(src.table.agent, src.table.model, strict=True)
        }
        assert len(src.trials) == len(src.table) == (24 if selector == "#model=" else 12)
        assert [t.success for t in src.trials] == src.table.success.tolist()


def test_an_empty_agent_name_is_no_agent_recorded(tmp_path: Path, cli: Cli) -> None:
    # A trial whose agent was "" was picked by nothing: `#agent=` kept the trials with
    # no agent (null) only, `#agent=""` is the same selector, and the metrics grouped ""
    # apart from null, both shown as no agent; the list to pick from offered `#agent=`
    # twice.
    rows = [
        {"task_id": f"t{i}", "trial": 2 * k + j, "success": (i + j) % 2 == 0} | extra
        for k, extra in enumerate(({"agent": ""}, {}, {"agent": None}, {"agent": "A", "model": ""}))
        for i in range(3)
        for j in range(2)
    ]
    src = tmp_path / "e.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "e.db"
    with Store(path) as db:
        import_file("jsonl", src, db, run_id="e")
    for source in (str(src), f"{path}:e"):
        none = open_source(f"{source}#agent=")
        assert len(none.trials) == len(none.table) == 18
        assert {(t.agent, t.model) for t in none.trials} == {(None, None)}
        code, out, err = cli("metrics", source, "--json")
        assert code == 0, err
        groups = [(g["agent"], g["model"], g["n_trials"]) for g in json.loads(out)["groups"]]
        assert groups == [("A", None, 6), (None, None, 18)]
        code, _, err = cli("compare", source, source)
        assert code == 2
        assert err.count(f"{source}#agent= (") == 1, err
        assert f"{source}#agent= (agent not recorded, model not recorded, 18 trials)" in err
        assert f"{source}#agent=A (agent 'A', model not recorded, 6 trials)" in err
