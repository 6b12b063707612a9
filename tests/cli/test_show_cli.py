"""``agentgauge show``: the failing cells, one trial's transcript and grades, ``--json``,
bad flags (exit 2), and the hint at the end of ``run``.

The store is made by the real harness on the counter suite: a ``shaky`` agent
passes most base trials, adds one too many on ``add-large`` trial 1 and raises
on ``from-ten`` trial 0; the ``fault:tool_error@1.0`` variant breaks its only tool,
so every trial there fails. Hand count, 3 tasks x 2 variants x 2 trials:

- base: add-small 0/2 failed; add-large 1/2 (flaky); from-ten 1/2 (flaky, agent error)
- fault:tool_error@1.0: 2/2 failed on each task
- so 5 of 6 cells have a failure, 2 are flaky, 8 of 12 trials did not pass.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Cli

from agentgauge.agents.base import AgentError, Session
from agentgauge.harness.runner import run
from agentgauge.report.explain import trial_view
from agentgauge.report.show import failures_document
from agentgauge.sources import TrialOutcome, open_source

AT = "2026-12-01T13:26:47+00:00"
ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "examples" / "counter-suite.yaml"


async def shaky(session: Session) -> None:
    session.record_cost(0.0)
    if session.task_id == "from-ten" and session.trial == 0:
        raise AgentError("cannot parse the plan for from-ten: expected 'add N', got 'add five'")
    amount = int(re.findall(r"-?\d+", session.instruction)[-1])
    if session.task_id == "add-large" and session.trial == 1:
        amount += 1
    await session.call_tool("add", {"amount": amount})
    await session.say(f"Added {amount}.")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = tmp_path_factory.mktemp("show") / "s.db"
    run(
        str(SUITE),
        shaky,
        trials=2,
        variants=["base", "fault:tool_error@1.0"],
        store=str(db),
        run_id="r",
        progress=False,
    )
    return f"{db}:r"


def _json(cli: Cli, *args: str) -> dict[str, Any]:
    code, out, err = cli("show", *args, "--json")
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


def test_failures_table_counts_cells_and_tells_how_to_open_one(cli: Cli, store: str) -> None:
    code, out, err = cli("show", store)
    assert code == 0, err
    assert "5 cells with a failure out of 6; 2 flaky (passed and failed); 8 of 12 trials" in out
    # The first row (most failures, then task id) is the example to open, its variant
    # named: `--task add-large --trial 0` alone showed the base variant's trial 0 too.
    hint = f"agentgauge show {store} --task add-large --variant fault:tool_error@1.0 --trial 0"
    assert hint in out, out
    assert out.count("fault:tool_error@1.0") == 1 + 3 and "agent error" in out  # hint, rows
    assert out.count("flaky") == 1 + 2  # the count line, then the two flaky rows


def test_the_failures_of_a_stored_run_are_read_without_building_its_trials(
    cli: Cli, tmp_path: Path, store: str
) -> None:
    # The failures view built every trial of the run (transcripts too) to count its
    # cells: 40 s on a run of 200,000 trials. It reads each trial's key and outcome
    # from SQL now, and must say exactly what the trials themselves say, under each
    # grade version (a re-grade keeps its own outcomes and grades). A copy of the
    # module's run, since this test re-grades it.
    db = tmp_path / "s.db"
    shutil.copyfile(store.rpartition(":")[0], db)
    code, _, err = cli("grade", f"{db}:r", "--graders", "control", "--activate")
    assert code == 0, err
    for version in (None, 1, 2):
        src = open_source(f"{db}:r", grade_version=version)
        outcomes = src.outcomes
        assert outcomes and all(isinstance(o, TrialOutcome) for o in outcomes)
        for variant in (None, "base", "fault"):
            by_outcomes = failures_document(outcomes, source="s", variant=variant)
            by_trials = failures_document(src.trials, source="s", variant=variant)
            assert by_outcomes == by_trials
        flags = () if version is None else ("--grade-version", str(version))
        doc = _json(cli, f"{db}:r", *flags)
        assert doc == json.loads(json.dumps(failures_document(src.trials, source=f"{db}:r")))
    # The two versions differ (else the comparison above proves little).
    one = failures_document(open_source(f"{db}:r", grade_version=1).outcomes, source="s")
    two = failures_document(open_source(f"{db}:r", grade_version=2).outcomes, source="s")
    assert one["n_failed_trials"] != two["n_failed_trials"]


def test_the_command_to_open_one_keeps_the_grade_version(cli: Cli, tmp_path: Path) -> None:
    # With --grade-version 1, "open one" left the version out: following it showed the
    # active version's grades, where the failing trial passes.
    db = tmp_path / "s.db"
    run(str(SUITE), shaky, trials=2, store=str(db), run_id="r", progress=False)
    code, _, err = cli("grade", f"{db}:r", "--graders", "control", "--activate")
    assert code == 0, err
    code, out, err = cli("show", f"{db}:r", "--grade-version", "1")
    assert code == 0, err
    hint = next(line for line in out.splitlines() if line.startswith("open one: "))
    args = f"{db}:r --task add-large --variant base --trial 1 --grade-version 1"
    assert f"agentgauge show {args} (" in hint, hint
    [shown] = _json(cli, *args.split())["trials"]
    [active] = _json(cli, *args.split()[:-2])["trials"]
    assert shown["success"] is False and active["success"] is True
    # The active version: no flag, as before.
    code, out, _ = cli("show", f"{db}:r")
    assert code == 0 and "--grade-version" not in out


def test_failures_json_has_every_failing_cell_in_order(cli: Cli, store: str) -> None:
    doc = _json(cli, store)
    assert doc["schema"] == "agentgauge.show/1" and doc["view"] == "failures"
    assert (doc["n_cells"], doc["n_failed_cells"], doc["n_flaky_cells"]) == (6, 5, 2)
    assert (doc["n_trials"], doc["n_failed_trials"]) == (12, 8)
    cells = [(r["task_id"], r["variant"], r["failed"], r["n"], r["flaky"]) for r in doc["failures"]]
    assert cells == [
        ("add-large", "fault:tool_error@1.0", 2, 2, False),
        ("add-small", "fault:tool_error@1.0", 2, 2, False),
        ("from-ten", "fault:tool_error@1.0", 2, 2, False),
        ("add-large", "base", 1, 2, True),
        ("from-ten", "base", 1, 2, True),
    ]
    by_cell = {(r["task_id"], r["variant"]): r for r in doc["failures"]}
    assert by_cell["from-ten", "base"]["classes"] == {"agent error": 1}
    assert by_cell["from-ten", "base"]["trials"] == [0]
    assert by_cell["add-large", "base"]["trials"] == [1]
    assert by_cell["from-ten", "fault:tool_error@1.0"]["classes"]["agent error"] == 1
    # --failed without --task is the same table; --variant narrows it.
    assert _json(cli, store, "--failed") == doc
    base = _json(cli, store, "--variant", "base")
    assert (base["n_cells"], base["n_failed_cells"], base["n_flaky_cells"]) == (3, 2, 2)


def test_one_trial_shows_its_transcript_and_evidence(cli: Cli, store: str) -> None:
    code, out, err = cli("show", store, "--task", "add-large", "--trial", "1", "--variant", "base")
    assert code == 0, err
    assert "task add-large · trial 1 · base" in out and "did not pass" in out
    assert "tool call" in out and '{"amount": 251}' in out and '{"counter": 251}' in out
    assert "Added 251." in out
    # Its one call: "1 tool calls" before.
    assert "· 1 tool call ·" in out and "1 tool calls" not in out
    # The state grader's evidence as a sentence: which key differs.
    assert "FAIL" in out and "state key(s) differ from the expected state: counter" in out
    assert "shown: 1 trial of task add-large (of 4); trials 1; variants base" in out


def test_an_agent_error_is_shown_in_full(cli: Cli, store: str) -> None:
    code, out, _ = cli("show", store, "--task", "from-ten", "--trial", "0", "--variant", "base")
    assert code == 0
    assert "agent error" in out
    assert "cannot parse the plan for from-ten: expected 'add N', got 'add five'" in out


def test_json_is_trial_view_of_the_chosen_trials(cli: Cli, store: str) -> None:
    doc = _json(cli, store, "--task", "add-large")
    trials = [t for t in open_source(store).trials if t.task_id == "add-large"]
    expected = json.loads(json.dumps([trial_view(t) for t in trials], default=str))
    assert doc["view"] == "trials" and doc["task_id"] == "add-large"
    assert doc["trials"] == expected and len(expected) == 4
    assert doc["variants"] == ["base", "fault:tool_error@1.0"] and doc["n_task_trials"] == 4


def test_failed_with_a_task_keeps_the_trials_that_did_not_pass(cli: Cli, store: str) -> None:
    doc = _json(cli, store, "--task", "add-large", "--failed")
    # In the store's order (trials finish concurrently): compare as a set of cells.
    assert sorted((v["variant"], v["trial"]) for v in doc["trials"]) == [
        ("base", 1),
        ("fault:tool_error@1.0", 0),
        ("fault:tool_error@1.0", 1),
    ]
    assert all(v["success"] is False for v in doc["trials"]) and doc["failed_only"] is True
    # The trials selected, not the task's: "--variant base --failed" said "passed (4
    # trials)" of the 2 base trials, and "--trial 0 --variant base" "(4 trials)" of one.
    code, out, _ = cli("show", store, "--task", "add-small", "--variant", "base", "--failed")
    assert code == 0 and "every selected trial of task add-small passed (2 trials)" in out
    code, out, _ = cli(
        "show", store, "--task", "add-small", "--variant", "base", "--trial", "0", "--failed"
    )
    assert code == 0 and "every selected trial of task add-small passed (1 trial)" in out
    doc = _json(cli, store, "--task", "add-small", "--variant", "base", "--failed")
    assert (doc["n_task_trials"], doc["n_selected"], doc["trials"]) == (4, 2, [])
    # A kind of variant names all of its variants, as run --variants does.
    assert len(_json(cli, store, "--task", "add-small", "--variant", "fault")["trials"]) == 2


@pytest.mark.parametrize(
    ("args", "field", "named"),
    [
        (["--task", "add-smal"], "--task", "add-small"),
        (["--task", "add-large", "--trial", "7"], "--trial", "its trials: 0, 1"),
        (
            ["--task", "add-large", "--variant", "paraphrase"],
            "--variant",
            "(it has 'base', 'fault:tool_error@1.0')",
        ),
        (["--trial", "0"], "--trial", "needs --task"),
    ],
)
def test_a_name_that_matches_nothing_exits_2_naming_the_flag(
    cli: Cli, store: str, args: list[str], field: str, named: str
) -> None:
    code, out, err = cli("show", store, *args)
    assert code == 2 and out == ""
    assert f"error: {field}: " in err and named in err and len(err.splitlines()) == 1


def test_the_tasks_it_suggests_are_quoted(cli: Cli, tmp_path: Path) -> None:
    # A run an earlier agentgauge stored with ids "add" and "add " (a file is refused
    # now): the suggestions read "e.g. add , add", two ids no one could tell apart.
    from agentgauge.schema import Run, Trial
    from agentgauge.store import Store, utc_now

    db = tmp_path / "s.db"
    with Store(db) as store, store.transaction():
        store.create_run(Run(run_id="r", created_at=utc_now()))
        store.add_trials("r", [Trial(task_id=t, trial=0, success=False) for t in ("add ", "add")])
    code, out, err = cli("show", f"{db}:r", "--task", "nope")
    assert code == 2 and out == ""
    assert err.strip().endswith(
        "--task: no task 'nope' in this source (2 tasks; e.g. 'add ', 'add')"
    )


def test_every_trial_passed_says_so(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(json.dumps({"task_id": f"t{i}", "success": True}) + "\n" for i in range(3))
    )
    code, out, _ = cli("show", str(path))
    assert code == 0 and out.strip() == "every trial passed: 3 trials in 3 cells"


def test_fits_80_columns(cli: Cli, store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for args in ([], ["--task", "add-large"]):
        code, out, _ = cli("show", store, *args)
        assert code == 0
        # The command to open one is one line, whatever its length (the terminal wraps
        # it; a newline in it would paste as two commands); the rest fits.
        lines = out.splitlines()
        hint = [line for line in lines if line.startswith("open one: ")]
        assert len(hint) == (0 if args else 1)
        assert all(line.endswith("(without --trial: all its trials)") for line in hint)
        assert max(len(line) for line in lines if line not in hint) <= 80
        assert "…" not in out  # folded and wrapped, never cut


def test_run_ends_with_the_show_command_when_a_trial_failed(cli: Cli, tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    agent = "agentgauge.testing.worlds:counting_agent"
    args = ["run", str(SUITE), "--agent", agent, "--store", db, "--no-progress"]
    code, out, _ = cli(*args, "--run-id", "ok")
    assert code == 0 and "agentgauge show" not in out
    code, out, _ = cli(*args, "--run-id", "broken", "--variants", "fault:tool_error@1.0")
    assert code == 0 and f"agentgauge show {db}:broken --failed" in out


def test_an_errored_trials_control_is_its_first_control_event_as_metrics_count_it(
    cli: Cli, tmp_path: Path
) -> None:
    # The agent refuses, then raises: the harness never sets the trial's control field,
    # yet its transcript records the refusal, which the control metrics count. show
    # must say the same decision, and where it read it.
    from agentgauge.schema import Task
    from agentgauge.testing.worlds import make_counter_env

    async def refuses_then_raises(session: Session) -> None:
        session.control("refuse", "not allowed")
        raise AgentError("lost the connection")

    task = Task(id="t", instruction="add 1", expectations={"control": "refuse"})
    db = tmp_path / "s.db"
    run([task], refuses_then_raises, store=db, run_id="r", env_factory=make_counter_env,
        progress=False)  # fmt: skip
    code, out, err = cli("show", f"{db}:r", "--task", "t", "--trial", "0")
    assert code == 0, err
    assert "expected refuse, took refuse (from the transcript)" in out, out
    (view,) = _json(cli, f"{db}:r", "--task", "t")["trials"]
    assert (view["status"], view["control"], view["control_from"]) == (
        "error",
        "refuse",
        "transcript",
    )
    code, out, err = cli("metrics", f"{db}:r", "--json")
    assert code == 0, err
    (group,) = json.loads(out)["groups"]
    assert group["control"]["n"] == 1 and group["control"]["accuracy"] == 1.0


def test_a_trial_that_names_no_model_shows_its_runs_component(cli: Cli, tmp_path: Path) -> None:
    # The reference agents name their simulated model only in the run's components:
    # `show` said "agent / model  builtin:hasty" where `compare` said the model changed
    # (sim:hasty → sim:careful).
    from agentgauge.schema import Run, Trial
    from agentgauge.store import Store

    db = tmp_path / "s.db"
    with Store(db) as store:
        config = {"components": {"model": "sim:hasty"}}
        store.create_run(Run(run_id="r", agent="builtin:hasty", config=config, created_at=AT))
        store.add_trials("r", [Trial(task_id="t", trial=0, agent="builtin:hasty", success=False)])
    code, out, err = cli("show", f"{db}:r")
    assert code == 0, err
    assert out.startswith("builtin:hasty / sim:hasty (component): 1 cell with a failure")
    code, out, err = cli("show", f"{db}:r", "--task", "t", "--trial", "0")
    assert code == 0, err
    assert re.search(r"agent / model +builtin:hasty / sim:hasty \(component\) *\n", out), out
    # The JSON is the trial's record: it names no model.
    assert _json(cli, f"{db}:r", "--task", "t")["trials"][0]["model"] is None


def test_one_trials_call_counts_read_as_the_reports_write_counts(cli: Cli, tmp_path: Path) -> None:
    # "12345 model calls", and a corrupt file's 10^15 tool calls as 16 digits, where the
    # tokens beside them read "12,345" (`report.formats.number`), as the viewer now does.
    src = tmp_path / "t.jsonl"
    src.write_text(
        '{"task_id": "t", "trial": 0, "success": true, "model_calls": 12345,'
        ' "tool_calls": 1000000000000000}\n'
    )
    db = tmp_path / "s.db"
    code, _, err = cli("import", "jsonl", str(src), "--store", str(db), "--run-id", "c")
    assert code == 0, err
    code, out, err = cli("show", f"{db}:c", "--task", "t", "--trial", "0")
    assert code == 0, err
    assert "· 1.00e+15 tool calls · 12,345 model calls" in out


def test_a_negative_zero_reads_as_zero(cli: Cli, tmp_path: Path) -> None:
    # A file's -0.0 cost and latency (an exporter's rounding) read "$-0.00" and "latency
    # -0.00 s".
    src = tmp_path / "t.jsonl"
    src.write_text(
        '{"task_id": "t", "trial": 0, "success": true, "cost_usd": -0.0, "latency_s": -0.0}\n'
    )
    code, out, err = cli("show", str(src), "--task", "t", "--trial", "0")
    assert code == 0, err
    assert "$0.00 · tokens not recorded · latency 0.00 s" in out and "-0.0" not in out
