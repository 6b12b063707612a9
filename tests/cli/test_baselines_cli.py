"""`compare` with the four baselines and the one-change rule; `runs --mark`; `--baseline-role`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.components import COMPONENTS
from agentgauge.schema import Run, Trial
from agentgauge.store import Store

TASKS = ("t1", "t2", "t3", "t4")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args], capture_output=True, text=True, timeout=120
    )


def components(**changes: object) -> dict[str, object]:
    return {**{name: f"{name}-1" for name in COMPONENTS}, **changes}


def add_run(db: Store, run_id: str, passed: set[str], cost: float, **config: object) -> None:
    db.create_run(
        Run(run_id=run_id, agent=run_id, created_at="2026-01-01T00:00:00Z", config=config)
    )
    db.add_trials(
        run_id,
        [
            Trial(
                task_id=t, trial=0, success=t in passed, agent=run_id, cost_usd=cost, latency_s=2.0
            )
            for t in TASKS
        ],
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with Store(path) as db:
        add_run(db, "v1", {"t1", "t2"}, 0.5, components=components())
        add_run(db, "v2", {"t1", "t2", "t3"}, 0.6, components=components(model="m-2"))
        add_run(
            db,
            "v2-prompt",
            {"t1", "t2", "t3"},
            0.6,
            components=components(model="m-2", system_prompt="sha256:abc"),
        )
        add_run(db, "oneshot", {"t1"}, 0.1)
    return path


def humans(path: Path) -> Path:
    # Four tasks done by people in 30, 30, 60 and 120 minutes; t4 was done wrong.
    rows = [
        {"task_id": t, "trial": 0, "success": t != "t4", "agent": "staff", "latency_s": 60.0 * m}
        for t, m in zip(TASKS, (30, 30, 60, 120), strict=True)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_one_changed_component_is_listed_and_attributable(store: Path) -> None:
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["components"]["changed"] == [{"component": "model", "a": "model-1", "b": "m-2"}]
    assert out["components"]["attributable"] is True
    assert "not attributable" not in out["verdict"]
    line1 = out["record"]["lines"][0]["text"]
    assert line1.endswith("; configuration: one change: model (model-1 → m-2)")


def test_two_changed_components_make_the_verdict_say_so(store: Path) -> None:
    res = cli("compare", f"{store}:v1", f"{store}:v2-prompt", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["components"]["attributable"] is False
    # Appended to the statistical verdict, which stays.
    assert out["verdict"].startswith("not distinguishable from noise with 4 tasks")
    assert out["verdict"].endswith("; not attributable: model and system prompt both changed")
    assert out["record"]["lines"][6]["text"].endswith(out["verdict"])
    text = cli("compare", f"{store}:v1", f"{store}:v2-prompt").stdout
    assert "configuration" in text and "model and system prompt both changed" in text


def test_a_run_without_components_is_not_recorded_not_equal(store: Path) -> None:
    out = json.loads(cli("compare", f"{store}:v1", f"{store}:oneshot", "--json").stdout)
    assert out["components"]["changed"] == []
    assert out["components"]["not_recorded"] == list(COMPONENTS)


def test_one_configuration_sentence_in_line_1_the_row_and_json(tmp_path: Path) -> None:
    # Two agents, no component recorded: line 1 said "no recorded component differs, but
    # the agent does (x → y)", the terminal's row and --json "no recorded component
    # differs" only.
    def rows(agent: str) -> Path:
        path = tmp_path / f"{agent}.jsonl"
        records = [{"task_id": t, "trial": 0, "agent": agent, "success": t != "t4"} for t in TASKS]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path

    x, y = rows("x"), rows("y")
    out = json.loads(cli("compare", str(x), str(y), "--json").stdout)
    sentence = out["components"]["sentence"]
    assert sentence.startswith(
        "no recorded component differs, but the agent does (x → y); not recorded on one "
        "side or both: model, "
    ), sentence
    assert out["record"]["lines"][0]["text"].endswith(f"; configuration: {sentence}")
    screen = cli("compare", str(x), str(y)).stdout
    row = next(line for line in screen.splitlines() if line.startswith("configuration"))
    assert row.split(None, 1)[1].startswith(
        "no recorded component differs, but the agent does (x → y);"
    ), row
    # One agent on both sides: no clause.
    out = json.loads(cli("compare", str(x), str(x), "--json").stdout)
    assert out["components"]["sentence"].startswith("no recorded component differs; not ")


def test_marked_runs_and_an_imported_human_baseline(store: Path, tmp_path: Path) -> None:
    res = cli("runs", "--store", str(store), "--mark", "oneshot", "ablation")
    assert res.returncode == 0, res.stderr
    assert "run oneshot" in res.stdout and "marked as ablation" in res.stdout
    with Store(store, readonly=True) as db:
        assert db.require_run("oneshot").config == {"baseline_role": "ablation"}
        assert len(db.trials("oneshot")) == 4  # the trials are not touched
        assert db.audit_log("baseline_marked")[0]["detail"] == {"role": "ablation", "was": None}
    listed = json.loads(cli("runs", "--store", str(store), "--json").stdout)["runs"]
    assert {r["run_id"]: r["baseline_role"] for r in listed}["oneshot"] == "ablation"
    res = cli(
        "import", "jsonl", str(humans(tmp_path / "staff.jsonl")), "--store", str(store),
        "--run-id", "staff", "--baseline-role", "human",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--human-rate", "120", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["baselines"]["ablation"]["score"] == 0.25
    human = out["baselines"]["human"]
    # Time × $120/h: $60, $60, $120, $240, mean $120 a task; 3 of 4 passed: $120 / 0.75 = $160.
    assert human["score"] == 0.75 and human["cost_of_pass"] == pytest.approx(160.0)
    line5 = out["record"]["lines"][4]["text"]
    assert "human baseline: " in line5 and "cost per success $160.00 at $120.00/h" in line5
    assert "time p50 45.0 min" in line5  # median of 30, 30, 60, 120
    # A: $0.50 / 0.5 = $1.00 per success → 1/160 = 0.00625; B: $0.60 / 0.75 = $0.80 → 0.005.
    assert "relative to the human's: A 0.00625×, B 0.005×" in line5
    assert "ablation: " in line5 and "25.0% on 4 shared tasks" in line5
    assert "null agent not run" in line5
    # Unmarked again, the ablation is named as missing.
    assert cli("runs", "--store", str(store), "--unmark", "oneshot").returncode == 0
    out = json.loads(cli("compare", f"{store}:v1", f"{store}:v2", "--json").stdout)
    assert "ablation: not run" in out["record"]["lines"][4]["text"]


def test_a_baseline_given_on_the_command_line(store: Path, tmp_path: Path) -> None:
    staff = humans(tmp_path / "staff.jsonl")
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--baseline", f"human={staff}", "--json")
    assert res.returncode == 0, res.stderr
    line5 = json.loads(res.stdout)["record"]["lines"][4]["text"]
    assert f"human baseline: {staff} 75.0% on 4 shared tasks" in line5
    assert "cost per success unknown (no hourly rate (give --human-rate USD))" in line5
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--baseline", str(staff))
    assert res.returncode == 2 and "has no baseline role: write ROLE=SOURCE" in res.stderr
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--baseline", f"humna={staff}")
    assert res.returncode == 2 and "--baseline: unknown baseline role 'humna'" in res.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("runs", "--mark", "v1", "boss"),
        ("import", "jsonl", "staff.jsonl", "--baseline-role", "boss"),
        ("run", "builtin:retail", "--agent", "builtin:null", "--baseline-role", "boss"),
    ],
)
def test_a_bad_role_exits_2_with_one_line(store: Path, args: tuple[str, ...]) -> None:
    res = cli(*args, "--store", str(store))
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown baseline role 'boss'" in lines[0], res.stderr
    assert "null, previous, human, ablation" in lines[0]


def test_a_bad_rate_or_an_unknown_run_exits_2(store: Path) -> None:
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--human-rate", "0")
    assert res.returncode == 2 and "--human-rate" in res.stderr
    res = cli("runs", "--store", str(store), "--mark", "nope", "human")
    assert res.returncode == 2 and "nope" in res.stderr


def _reviewed_humans(folder: Path) -> Path:
    """The humans' trials, each reviewed by hand (grader ``manual_review``)."""
    rows = [
        {"task_id": t, "trial": 0, "success": True, "latency_s": 600.0,
         "grades": [{"grader": "manual_review", "passed": True}]}
        for t in TASKS
    ]  # fmt: skip
    staff = folder / "reviewed.jsonl"
    staff.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return staff


def test_a_human_graded_by_other_graders_is_flagged(store: Path, tmp_path: Path) -> None:
    # v2's trials carry no grades (outcomes as imported); the humans' were reviewed by hand.
    staff = _reviewed_humans(tmp_path)
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--baseline", f"human={staff}", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    note = "graded by manual_review, B by none (outcomes as imported)"
    assert out["baselines"]["human"]["note"].startswith(note)
    assert note in out["record"]["lines"][4]["text"]
    # Graded alike, nothing to flag.
    res = cli("compare", f"{store}:v1", f"{store}:v2", "--baseline", f"human={humans(staff)}")
    assert res.returncode == 0 and "graded by" not in res.stdout


def test_a_stored_human_run_is_judged_by_its_stored_grades(store: Path, tmp_path: Path) -> None:
    # The humans' run is in the store, marked human, reviewed by hand; v2 carries no
    # grades. Their graders are read from the stored grades, not from trials loaded
    # without them (which made every stored human run look ungraded).
    staff = _reviewed_humans(tmp_path)
    imported = cli("import", "jsonl", str(staff), "--store", str(store), "--run-id", "staff",
                   "--baseline-role", "human")  # fmt: skip
    assert imported.returncode == 0, imported.stderr
    for baseline in ((), ("--baseline", f"{store}:staff")):  # marked in B's store, or given
        res = cli("compare", f"{store}:v1", f"{store}:v2", *baseline, "--json")
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        note = "graded by manual_review, B by none (outcomes as imported)"
        assert out["baselines"]["human"]["note"].startswith(note), out["baselines"]["human"]


def test_the_null_agents_interval_is_on_the_headlines_rows(tmp_path: Path) -> None:
    # The null agent's 95% CI was Wilson on all its trials of every variant ([0.0, 0.3]
    # in the demo) beside a headline of the base variant's tasks ([0.0, 1.6]).
    tasks = [f"t{i}" for i in range(10)]

    def rows(agent: str, ok: bool, variants: tuple[str, ...]) -> Path:
        path = tmp_path / f"{agent}.jsonl"
        records = [
            {"task_id": t, "trial": 0, "variant": v, "agent": agent, "success": ok}
            for t in tasks
            for v in variants
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path

    a, b = rows("a", True, ("base",)), rows("b", True, ("base",))
    null = rows("null", False, ("base", *(f"paraphrase:{i}" for i in range(1, 10))))
    res = cli("compare", str(a), str(b), "--baseline", f"null={null}", "--json")
    assert res.returncode == 0, res.stderr
    line5 = json.loads(res.stdout)["record"]["lines"][4]["text"]
    # Wilson on the 10 base trials, none passing: upper = z²/(10 + z²) = 0.2775.
    null = "null agent 0.0% on the shared tasks, passes 0 tasks of all it ran, 95% CI [0.0, 27.8]"
    assert null in line5, line5


def test_a_null_agent_sharing_no_task_is_not_scored(tmp_path: Path) -> None:
    # A null agent run on other tasks was given its score on all it ran, "100.0% on the
    # shared tasks" though it shares none: unknown, with the reason; its passes stand.
    def rows(name: str, ids: list[str], passed: set[str]) -> Path:
        path = tmp_path / f"{name}.jsonl"
        records = [{"task_id": t, "trial": 0, "agent": name, "success": t in passed} for t in ids]
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path

    tasks = [f"t{i}" for i in range(10)]
    a, b = rows("a", tasks, {"t5", "t6", "t7"}), rows("b", tasks, set(tasks[:8]))
    others = [f"u{i}" for i in range(10)]
    null = rows("null", others, set(others))
    res = cli("compare", str(a), str(b), "--null", str(null), "--json")
    assert res.returncode == 0, res.stderr
    line5 = json.loads(res.stdout)["record"]["lines"][4]["text"]
    assert "on the shared tasks, passes" not in line5, line5
    assert line5.startswith(
        f"null agent not scored ({null} shares no task with A and B), passes 10 tasks of "
        "all it ran (outcome-validity defects: u0, u1, u2, u3, u4 …); previous system"
    ), line5


def test_mark_and_unmark_together_are_refused_and_json_is_honoured(store: Path) -> None:
    # Both at once: one was done and the other dropped without a word (exit 0).
    res = cli("runs", "--store", str(store), "--mark", "oneshot", "previous", "--unmark", "oneshot")
    assert res.returncode == 2 and "--mark and --unmark" in res.stderr, res.stderr
    with Store(store, readonly=True) as db:
        assert "baseline_role" not in db.require_run("oneshot").config
        assert db.audit_log("baseline_marked") == []
    res = cli("runs", "--store", str(store), "--mark", "oneshot", "previous", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == {
        "schema": "agentgauge.runs.mark/1", "store": str(store), "run": "oneshot",
        "role": "previous",
    }  # fmt: skip
    res = cli("runs", "--store", str(store), "--unmark", "oneshot", "--json")
    assert json.loads(res.stdout)["role"] is None
