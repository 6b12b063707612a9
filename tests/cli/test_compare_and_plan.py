"""``agentgauge compare`` and ``agentgauge plan`` end to end: verdicts, schemas, records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import Cli

import agentgauge
from agentgauge.errors import InputError
from agentgauge.metrics.validity import HELDOUT_ACTION
from agentgauge.schema import Criterion, Expectations, Grade, Run, Task, Trial
from agentgauge.store import Store


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentgauge", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def write_run(
    path: Path,
    theta: np.ndarray,
    *,
    trials: int,
    seed: int,
    agent: str,
    cost: float | None = 0.01,
) -> Path:
    """A seeded noisy agent's trials as JSONL: task t succeeds with probability theta[t]."""
    rng = np.random.default_rng(seed)
    with path.open("w") as fh:
        for t, th in enumerate(theta):
            for k in range(trials):
                rec = {
                    "task_id": f"t{t:02d}",
                    "trial": k,
                    "success": bool(rng.random() < th),
                    "agent": agent,
                    "family": f"f{t % 6}",
                    "latency_s": 1.0 + k,
                }
                if cost is not None:
                    rec["cost_usd"] = cost
                fh.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture
def theta() -> np.ndarray:
    return np.random.default_rng(2024).beta(2, 2, size=36)


def test_same_agent_different_seeds_is_noise(tmp_path: Path, theta: np.ndarray) -> None:
    a = write_run(tmp_path / "a.jsonl", theta, trials=3, seed=1, agent="careful")
    b = write_run(tmp_path / "b.jsonl", theta, trials=3, seed=2, agent="careful")
    res = run_cli("compare", str(a), str(b), "--markdown", str(tmp_path / "rec.md"))
    assert res.returncode == 0, res.stderr
    assert "not distinguishable from noise with 36 tasks × 3 trials" in res.stdout
    assert "Comparison record" in res.stdout
    for n in range(1, 10):
        assert f"\n{n}. " in "\n" + res.stdout.split("Comparison record", 1)[1]
    md = (tmp_path / "rec.md").read_text()
    assert md.count("\n") > 10 and "9. **Cost**" in md and "## Comparison record" in md


def test_json_has_the_spec_schema(tmp_path: Path, theta: np.ndarray) -> None:
    a = write_run(tmp_path / "a.jsonl", theta, trials=2, seed=1, agent="a")
    b = write_run(tmp_path / "b.jsonl", np.minimum(theta + 0.3, 1), trials=2, seed=2, agent="b")
    res = run_cli("compare", str(a), str(b), "--json", "--margin", "0.05")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["schema"] == "agentgauge.compare/1"
    assert d["verdict"] == "B is better" and d["non_inferior"] is True
    assert d["n_tasks"] == 36 and len(d["ci95"]) == 2
    for key in ("mean_diff", "se_paired", "se_unpaired", "p_value", "correlation"):
        assert isinstance(d[key], float)
    assert set(d["flips"]) == {"a_only", "b_only"}
    # 0.01 per trial; cost of pass = 0.01 / success rate
    assert d["cost_of_pass"]["a"] == d["cost_of_pass"]["a"] and d["cost_of_pass"]["a"] > 0.01
    assert len(d["record"]["lines"]) == 9


def _all_moving(path: Path, n_tasks: int, success: bool) -> Path:
    rows = [{"task_id": f"t{i}", "trial": 0, "success": success} for i in range(n_tasks)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_two_tasks_cannot_tell_on_screen_in_json_and_in_the_record(tmp_path: Path) -> None:
    # Both tasks fail in A and pass in B: the screen said "B is better" (95% CI +7.0 to
    # +100 pp, p = 0.028) above "McNemar exact p = 0.5". The interval and p stay; the
    # verdict, everywhere it is shown, says 2 tasks cannot tell.
    a, b = _all_moving(tmp_path / "a.jsonl", 2, False), _all_moving(tmp_path / "b.jsonl", 2, True)
    reason = (
        "not distinguishable from noise with 2 tasks × 1 trial: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 2 tasks cannot go "
        "below p = 2 × 0.5^2 = 0.5)"
    )
    md = tmp_path / "rec.md"
    res = run_cli("compare", str(a), str(b), "--markdown", str(md), "--margin", "0.05")
    assert res.returncode == 0, res.stderr
    screen = " ".join(res.stdout.split())  # the table wraps long lines
    assert "B is better" not in screen and "not worse" not in screen
    assert screen.count(reason) == 2  # the verdict, and record line 7's end
    assert "95% CI +7.0 pp to +100.0 pp" in screen and "p-value 0.02799" in screen
    assert "McNemar exact p = 0.5 " in screen and "non-inferior False at margin 0.05" in screen
    assert md.read_text().split("\n")[2] == f"**{reason}**"  # under the title
    res = run_cli("compare", str(a), str(b), "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["verdict"] == reason and d["superiority"] == "noise"
    assert (d["unit"], d["n_units"], d["min_units"], d["too_few_units"]) == ("tasks", 2, 6, True)
    assert d["ci"][0] > 0 and d["p_value"] == pytest.approx(0.028, abs=1e-3)
    (line7,) = [x for x in d["record"]["lines"] if x["n"] == 7]
    assert line7["text"].endswith(f"): {reason}")


def _outcomes_of(path: Path, agent: str, outcomes: dict[str, list[bool]]) -> Path:
    rows = [
        {"task_id": task, "trial": k, "success": ok, "agent": agent}
        for task, oks in outcomes.items()
        for k, ok in enumerate(oks)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_one_shared_task_says_why_each_figure_is_missing(tmp_path: Path) -> None:
    # One task, A 1/3 and B 3/3: no spread between tasks, so no SE, interval, test or
    # correlation. They were null with no reason, and the screen printed bare dashes.
    a = _outcomes_of(tmp_path / "a.jsonl", "a", {"t": [True, False, False]})
    b = _outcomes_of(tmp_path / "b.jsonl", "b", {"t": [True, True, True]})
    res = run_cli("compare", str(a), str(b), "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    spread = (
        "one shared task: no spread between tasks to measure, and a standard error, an "
        "interval and a test need at least two"
    )
    assert d["null_reasons"] == {
        **dict.fromkeys(("se_paired", "se_unpaired", "df", "ci", "ci95", "p_value"), spread),
        "ci95_score": "one shared task: each run's success-rate interval needs at least two "
        "tasks (the trials of one task share its difficulty)",
        "correlation": "one shared task: a correlation needs at least two",
    }
    for key in d["null_reasons"]:
        assert d[key] is None, key
    res = run_cli("compare", str(a), str(b))
    assert res.returncode == 0, res.stderr
    screen = " ".join(res.stdout.split())  # the notes wrap
    assert f"— B − A CI, p-value, SE paired, SE unpaired: {spread}" in screen
    assert "— correlation: one shared task: a correlation needs at least two" in screen


def test_non_inferiority_with_one_shared_task_is_unknown_with_its_reason(tmp_path: Path) -> None:
    # With --margin and one shared task the table printed "non-inferior None at margin
    # 0.05" (a bare Python None), and --json had non_inferior null with no reason.
    a = _outcomes_of(tmp_path / "a.jsonl", "a", {"t": [True, False, True]})
    b = _outcomes_of(tmp_path / "b.jsonl", "b", {"t": [True, True, True]})
    reason = (
        "one shared task: non-inferiority is read from the lower bound of the B − A "
        "interval, and there is none"
    )
    d = json.loads(run_cli("compare", str(a), str(b), "--margin", "0.05", "--json").stdout)
    assert d["non_inferior"] is None and d["null_reasons"]["non_inferior"] == reason
    # Without a margin it does not apply: null, and no reason to give.
    d = json.loads(run_cli("compare", str(a), str(b), "--json").stdout)
    assert d["non_inferior"] is None and "non_inferior" not in d["null_reasons"]
    res = run_cli("compare", str(a), str(b), "--margin", "0.05")
    assert res.returncode == 0, res.stderr
    screen = " ".join(res.stdout.split())
    assert "non-inferior unknown at margin 0.05" in screen and "None" not in screen
    assert f"— non-inferior: {reason}" in screen


def test_a_constant_rate_says_why_there_is_no_correlation(tmp_path: Path) -> None:
    # A passes both tasks, B one of them: A's rates do not vary, so Pearson's r is 0/0.
    a = _outcomes_of(tmp_path / "a.jsonl", "a", {"t": [True], "u": [True]})
    b = _outcomes_of(tmp_path / "b.jsonl", "b", {"t": [True], "u": [False]})
    d = json.loads(run_cli("compare", str(a), str(b), "--json").stdout)
    why = "A's rate is 100.0% on every shared task: a correlation with a constant is undefined"
    assert d["correlation"] is None and d["null_reasons"] == {"correlation": why}
    assert d["se_paired"] == pytest.approx(0.5)  # sd(0, −1)/√2 = 0.7071/1.4142
    screen = " ".join(run_cli("compare", str(a), str(b)).stdout.split())
    assert f"— correlation: {why}" in screen
    both = json.loads(run_cli("compare", str(a), str(a), "--json").stdout)
    assert both["null_reasons"]["correlation"] == (
        "both runs' rates are the same on every shared task (A 100.0%, B 100.0%): a "
        "correlation with a constant is undefined"
    )


def test_figures_with_values_have_no_null_reasons(tmp_path: Path, theta: np.ndarray) -> None:
    a = write_run(tmp_path / "a.jsonl", theta, trials=2, seed=1, agent="a")
    b = write_run(tmp_path / "b.jsonl", theta, trials=2, seed=2, agent="b")
    d = json.loads(run_cli("compare", str(a), str(b), "--json").stdout)
    assert d["null_reasons"] == {}
    assert "— " not in run_cli("compare", str(a), str(b)).stdout.split("Comparison record")[0]


def test_alpha_sets_the_fewest_tasks_on_the_command_line(tmp_path: Path) -> None:
    # 5 tasks all moving: 2 · 0.5^5 = 0.0625, too few at the default 0.05, enough at 0.1.
    a, b = _all_moving(tmp_path / "a.jsonl", 5, False), _all_moving(tmp_path / "b.jsonl", 5, True)
    res = run_cli("compare", str(a), str(b), "--json", "--alpha", "0.1")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["verdict"] == "B is better" and (d["min_units"], d["too_few_units"]) == (5, False)


@pytest.mark.parametrize(
    ("alpha", "level"), [("0.005", "99.5%"), ("0.025", "97.5%"), ("0.001", "99.9%"), ("0.1", "90%")]
)
def test_the_interval_level_is_not_rounded(tmp_path: Path, alpha: str, level: str) -> None:
    # round(100 · (1 − α)) labelled a 99.5% interval "100% CI" and a 97.5% one "98% CI",
    # in the terminal's B − A row and on record line 7 alike.
    a = _outcomes(tmp_path / "a.jsonl", [[i in (5, 6, 7)] for i in range(10)])
    b = _outcomes(tmp_path / "b.jsonl", [[i < 8] for i in range(10)])
    res = run_cli("compare", str(a), str(b), "--alpha", alpha)
    assert res.returncode == 0, res.stderr
    row = next(line for line in res.stdout.splitlines() if line.startswith("B − A "))
    assert f"   {level} CI " in row, row
    line7 = next(line for line in res.stdout.splitlines() if line.startswith("7. "))
    assert f"B − A = +50.0 pp ({level} CI " in line7, line7


def test_pass_at_one_is_the_success_rate_whatever_the_trials(tmp_path: Path) -> None:
    # With 2 trials on every task, --k 1 read "pass^k not measurable: it needs ≥ 2 trials
    # per task, and the runs have 2 on some task; outcome consistency likewise".
    a = _outcomes(tmp_path / "a.jsonl", [[(i + k) % 3 == 0 for k in range(2)] for i in range(10)])
    b = _outcomes(tmp_path / "b.jsonl", [[(i + k) % 3 != 0 for k in range(2)] for i in range(10)])

    def line8(*args: str) -> str:
        res = run_cli("compare", *args, "--json")
        assert res.returncode == 0, res.stderr
        return str(json.loads(res.stdout)["record"]["lines"][7]["text"])

    consistency = "outcome consistency (2p−1)²: A 0.30, B 0.30"
    assert line8(str(a), str(b), "--k", "1") == (
        f"pass^1 (deployment k = 1, the success rate): A 35.0%, B 65.0%; {consistency}"
    )
    assert line8(str(a), str(b)) == f"pass^2 (deployment k = 2): A 0.0%, B 30.0%; {consistency}"
    # One trial a task: pass^1 still is the success rate; consistency is not measurable.
    one_a = _outcomes(tmp_path / "one_a.jsonl", [[i in (5, 6, 7)] for i in range(10)])
    one_b = _outcomes(tmp_path / "one_b.jsonl", [[i < 8] for i in range(10)])
    few = "it needs ≥ 2 trials per task, and the runs have 1 on some task"
    assert line8(str(one_a), str(one_b), "--k", "1") == (
        "pass^1 (deployment k = 1, the success rate): A 30.0%, B 80.0%; "
        f"outcome consistency not measurable: {few}"
    )
    for k in ((), ("--k", "2")):
        assert line8(str(one_a), str(one_b), *k) == (
            f"pass^k not measurable: {few}; outcome consistency likewise"
        )


def test_shared_tasks_that_are_held_out_are_named_with_the_option(tmp_path: Path) -> None:
    # Runs whose shared tasks are all held out read "B: ha.jsonl and hb.jsonl have no task
    # in common": they share ten, and neither side is at fault.
    def rows(name: str, records: list[dict[str, object]]) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"agent": name, **r}) + "\n" for r in records))
        return path

    held = [{"task_id": f"t{i}", "trial": 0, "split": "heldout"} for i in range(10)]
    ha = rows("ha", [{**r, "success": i % 2 == 0} for i, r in enumerate(held)])
    hb = rows("hb", [{**r, "success": i % 3 == 0} for i, r in enumerate(held)])
    res = run_cli("compare", str(ha), str(hb))
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == (
        f"agentgauge: error: {ha} and {hb} share 10 tasks, but they are held out (split: "
        "heldout), left out unless included: give --include-heldout to compare them\n"
    )
    assert run_cli("compare", str(ha), str(hb), "--include-heldout").returncode == 0
    # Shared only in a variant that is not read: said so, with no option to name.
    va = rows("va", [{"task_id": "u0", "trial": 0, "success": True, "variant": "paraphrase:1"},
                     {"task_id": "t0", "trial": 0, "success": True}])  # fmt: skip
    vb = rows("vb", [{"task_id": "u0", "trial": 0, "success": True}])
    res = run_cli("compare", str(va), str(vb))
    assert res.returncode == 2
    assert res.stderr == (
        f"agentgauge: error: {va} and {vb} share 1 task, but only in variants not compared "
        "(a side with base-variant trials is compared on those)\n"
    )
    # Nothing shared at all: as before, without a side's name in front.
    res = run_cli("compare", str(vb), str(ha))
    assert res.stderr == f"agentgauge: error: {vb} and {ha} have no task in common\n"


def test_bad_input_exits_2(tmp_path: Path, theta: np.ndarray) -> None:
    a = write_run(tmp_path / "a.jsonl", theta, trials=1, seed=1, agent="a")
    other = tmp_path / "other.jsonl"
    other.write_text('{"task_id": "zzz", "success": true}\n')
    res = run_cli("compare", str(a), str(other))
    assert res.returncode == 2 and "no task in common" in res.stderr
    res = run_cli("compare", str(a), str(tmp_path / "missing.jsonl"))
    assert res.returncode == 2 and "missing.jsonl" in res.stderr
    res = run_cli("compare", str(a), str(a), "--margin", "-1")
    assert res.returncode == 2 and "--margin" in res.stderr
    # A margin past 1 (2, meant as 2 points?) holds for any two runs: refused too.
    res = run_cli("compare", str(a), str(a), "--margin", "2")
    assert res.returncode == 2 and "--margin: must be a rate difference from 0 to 1" in res.stderr


def _families(path: Path, agent: str, family: dict[str, str | None]) -> Path:
    """Two trials a task, one passing; the task's family as given (``None``: none)."""
    rows = [
        {"task_id": f"t{t:02d}", "trial": k, "success": k == t % 2, "agent": agent}
        | ({} if family.get(f"t{t:02d}") is None else {"family": family[f"t{t:02d}"]})
        for t in range(12)
        for k in range(2)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_task_in_two_families_across_the_runs_is_refused_naming_both(tmp_path: Path) -> None:
    # A clusters the tasks by six families, B by two: compare used A's families (6
    # clusters) one way round and B's (2) the other, without a word.
    six = {f"t{t:02d}": f"f{t % 6}" for t in range(12)}
    two = {f"t{t:02d}": f"g{t % 2}" for t in range(12)}
    a = _families(tmp_path / "a.jsonl", "a", six)
    b = _families(tmp_path / "b.jsonl", "b", two)
    for first, second, fam_first, fam_second in ((a, b, "f0", "g0"), (b, a, "g0", "f0")):
        res = run_cli("compare", str(first), str(second))
        assert res.returncode == 2, res.stdout
        [line] = res.stderr.splitlines()
        assert (
            f"task 't00' is in family '{fam_first}' in {first} and in family "
            f"'{fam_second}' in {second}"
        ) in line, line
        assert "(the runs differ so on 12 of 12 shared tasks)" in line, line
        assert res.stdout == ""
    with pytest.raises(InputError, match=r"task 't00' is in family 'f0' in \S*a\.jsonl and"):
        agentgauge.compare(str(a), str(b))

    # A task whose trials name no family in one run takes the other run's: the same
    # clusters whichever run is A.
    half = {t: f for t, f in six.items() if int(t[1:]) % 2 == 0}
    c = _families(tmp_path / "c.jsonl", "c", half)
    one = json.loads(run_cli("compare", str(a), str(c), "--json").stdout)
    other = json.loads(run_cli("compare", str(c), str(a), "--json").stdout)
    assert one["n_clusters"] == other["n_clusters"] == 6
    assert one["se_paired"] == other["se_paired"]


def test_a_report_pooling_a_task_in_two_families_names_both_sources(tmp_path: Path) -> None:
    # Before: "trials: task 't00' is in family 'g0' here (row 24 of the table) and in
    # family 'f0' (row 0 of the table)": rows of a table the user never made.
    a = _families(tmp_path / "a.jsonl", "a", {f"t{t:02d}": f"f{t % 6}" for t in range(12)})
    b = _families(tmp_path / "b.jsonl", "b", {f"t{t:02d}": f"g{t % 2}" for t in range(12)})
    md = tmp_path / "r.md"
    res = run_cli("report", str(a), str(b), "--no-compare", "--markdown", str(md))
    assert res.returncode == 2, res.stdout
    [line] = res.stderr.splitlines()
    assert f"task 't00' is in family 'f0' in {a} and in family 'g0' in {b}" in line, line
    assert "row" not in line and not md.exists()


def _store(path: Path) -> None:
    rubric = [
        Criterion(id="polite", text="Is the reply polite?"),
        Criterion(id="no_pii", text="Does it avoid leaking PII?", blocking=True),
    ]
    tasks = [
        Task(
            id=f"t{i}",
            instruction="do it",
            family=f"f{i % 3}",
            split="heldout" if i == 5 else "dev",
            capability="refunds" if i % 2 else "orders",
            expectations=Expectations(rubric=rubric),
        )
        for i in range(6)
    ]
    rng = np.random.default_rng(0)
    with Store(path) as db:
        for run_id, agent, p in (("base", "careful", 0.6), ("cand", "careful-v2", 0.6)):
            db.create_run(
                Run(
                    run_id=run_id,
                    agent=agent,
                    model="m-1",
                    suite="builtin:retail",
                    suite_version="abcdef0123456789",
                    created_at="2026-01-01T00:00:00Z",
                    source="harness",
                    config={"rubric_version": "r3"},
                )
            )
            db.add_tasks(run_id, tasks)
            trials = [
                Trial(
                    task_id=t.id,
                    trial=k,
                    success=bool(rng.random() < p),
                    agent=agent,
                    family=t.family,
                    split=t.split,
                    capability=t.capability,
                    cost_usd=0.02,
                    grades=[Grade(grader="rubric:polite", passed=True, judge_model="judge-7b")],
                )
                for t in tasks
                for k in range(2)
            ]
            db.add_trials(run_id, trials)
        db.create_run(
            Run(
                run_id="nothing",
                agent="null",
                suite="builtin:retail",
                suite_version="abcdef0123456789",
                created_at="2026-01-01T00:00:00Z",
            )
        )
        db.add_trials(
            "nothing",
            [Trial(task_id=f"t{i}", trial=0, success=i == 2, agent="null") for i in range(6)],
        )


def test_record_from_a_store(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _store(db)
    res = run_cli("compare", f"{db}:base", f"{db}:cand", "--k", "2")
    assert res.returncode == 0, res.stderr
    rec = res.stdout.split("Comparison record", 1)[1]
    assert "run base" in rec and "careful-v2" in rec and "model m-1" in rec
    assert "suite builtin:retail @ abcdef012345" in rec
    assert "5 tasks compared" in rec and "held-out excluded" in rec
    assert "fresh environment per trial" in rec
    assert "rubric version r3" in rec and "blocking criteria: no_pii" in rec
    assert "judge judge-7b, κ not measured" in rec
    # null agent: passes t2 only. Scored on the headline's rows, the 5 tasks compared:
    # 1/5 (it was 1/6, over a task the comparison leaves out); its defects over all 6.
    assert (
        "null agent 20.0% on the shared tasks, passes 1 task of all it ran "
        "(outcome-validity defects: t2)"
    ) in rec
    assert "pass^2 (deployment k = 2)" in rec
    assert "held-out tasks never used" in rec
    # Including held-out tasks is logged in the store and shown in the record.
    res = run_cli("compare", f"{db}:base", f"{db}:cand", "--include-heldout")
    assert res.returncode == 0, res.stderr
    assert "6 tasks compared" in res.stdout and "held-out tasks used once" in res.stdout
    res = run_cli("compare", f"{db}:base", f"{db}:cand", "--include-heldout")
    assert "held-out tasks used 2 times" in res.stdout
    with Store(db, create=False) as s:
        log = s.audit_log(HELDOUT_ACTION)
    assert len(log) == 2 and log[0]["detail"] == {"command": "compare", "runs": ["base", "cand"]}
    # Without --include-heldout the record still reports the usage so far.
    res = run_cli("compare", f"{db}:base", f"{db}:cand")
    assert "(held-out excluded); held-out tasks used 2 times" in res.stdout


def test_a_failed_compare_logs_no_heldout_use(tmp_path: Path) -> None:
    # `--include-heldout` with a misspelt --baseline exited 2 but logged a use each time:
    # the next real comparison said "held-out tasks used 3 times".
    db = tmp_path / "s.db"
    _store(db)
    for _ in range(2):
        res = run_cli(
            "compare", f"{db}:base", f"{db}:cand", "--include-heldout",
            "--baseline", f"human={tmp_path / 'typo.jsonl'}",
        )  # fmt: skip
        assert res.returncode == 2 and "typo.jsonl" in res.stderr
    with Store(db, readonly=True) as s:
        assert s.audit_log(HELDOUT_ACTION) == []
    # The one that succeeds counts itself, and is logged once.
    res = run_cli("compare", f"{db}:base", f"{db}:cand", "--include-heldout", "--json")
    assert res.returncode == 0, res.stderr
    assert (
        "; held-out tasks used once (last " in json.loads(res.stdout)["record"]["lines"][1]["text"]
    )
    with Store(db, readonly=True) as s:
        log = s.audit_log(HELDOUT_ACTION)
    assert len(log) == 1 and log[0]["run_id"] == "cand"


def test_plan_textbook_size() -> None:
    # (1.959964 + 0.841621)² · (0.8·0.2 + 0.83·0.17) / 0.03² = 7.848880 · 0.3011 / 0.0009
    #   = 2625.89 → 2626 (see tests/stats/test_power.py for the derivation)
    res = run_cli("plan", "--baseline", "0.8", "--delta", "0.03")
    assert res.returncode == 0, res.stderr
    assert "2626 tasks" in res.stdout and "= 2625.9 → 2626 tasks" in res.stdout
    d = json.loads(run_cli("plan", "--baseline", "0.8", "--delta", "0.03", "--json").stdout)
    assert d["schema"] == "agentgauge.plan/1" and d["n_tasks"] == 2626
    assert d["baseline"] == 0.8 and d["delta"] == 0.03 and d["trials"] == 1


def test_plan_mde() -> None:
    d = json.loads(run_cli("plan", "--baseline", "0.8", "--tasks", "2626", "--json").stdout)
    assert d["mde"] == pytest.approx(0.03, abs=1e-4) and "n_tasks" not in d


def test_plan_near_the_ceiling_says_a_drop_is_still_detectable(tmp_path: Path) -> None:
    # At 95% (or 100%) an improvement of 50 tasks cannot detect is none at all, but a
    # drop can be detected: it said "no detectable effect", as if nothing could be.
    from agentgauge.stats.power import components_from_assumptions, tasks_needed

    for baseline, improvement in (("0.95", "0.05"), ("1", "0")):
        res = run_cli("plan", "--baseline", baseline, "--tasks", "50")
        assert res.returncode == 0, res.stderr
        d = json.loads(run_cli("plan", "--baseline", baseline, "--tasks", "50", "--json").stdout)
        assert d["mde"] is None
        assert d["mde_reason"] == (
            f"no improvement up to 1 − baseline = {improvement} is detectable with 50 tasks"
        )
        drop = d["mde_drop"]
        assert 0 < drop < float(baseline) and "mde_drop_reason" not in d
        # The drop solves the size formula: 50 tasks detect B = baseline − drop.
        comp = components_from_assumptions(float(baseline), -drop)
        assert tasks_needed(-drop, comp) == pytest.approx(50, rel=1e-6)
        head = " ".join(res.stdout.split("  δ =")[0].split())
        assert head == (
            f"minimum detectable drop {drop:.4f} with 50 tasks; no improvement up to "
            f"1 − baseline = {improvement} is detectable with 50 tasks"
        ), head
        assert "no detectable effect" not in res.stdout
        assert f"= {drop:.4f}" in res.stdout  # the arithmetic is the drop's
    # Where an improvement is detectable, the drop is given beside it: larger at 80%,
    # where B's variance p(1 − p) grows as it falls.
    res = run_cli("plan", "--baseline", "0.8", "--tasks", "50")
    d = json.loads(run_cli("plan", "--baseline", "0.8", "--tasks", "50", "--json").stdout)
    assert 0 < d["mde"] < d["mde_drop"] < 0.8
    assert res.stdout.startswith(
        f"minimum detectable effect {d['mde']:.4f} with 50 tasks; as a drop, {d['mde_drop']:.4f}"
    )
    # From a pilot the variance is fixed: a drop as large as an improvement, bounded by
    # the pilot's rate instead of 1 − it.
    high = _outcomes(tmp_path / "high.jsonl", [[i != 0] for i in range(10)])
    d = json.loads(run_cli("plan", "--pilot", str(high), "--tasks", "6", "--json").stdout)
    assert d["mde"] is None and d["mde_drop"] is not None and d["mde_drop"] <= 0.9
    res = run_cli("plan", "--pilot", str(high), "--tasks", "6")
    assert res.stdout.startswith(f"minimum detectable drop {d['mde_drop']:.4f} with 6 tasks")
    # At 10% the other way round: an improvement is detectable, no drop is.
    low = _outcomes(tmp_path / "low.jsonl", [[i == 0] for i in range(10)])
    res = run_cli("plan", "--pilot", str(low), "--pilot-b", str(high), "--tasks", "6")
    assert " ".join(res.stdout.split()).startswith(
        "minimum detectable effect 0.7234 with 6 tasks; no drop down to 0, the pilot's "
        "rate = 0.1, is detectable with 6 tasks (the formula gives 0.7234)"
    )
    # Where neither is, both reasons are given.
    half_a = _outcomes(tmp_path / "xa.jsonl", [[i % 2 == 0] for i in range(10)])
    half_b = _outcomes(tmp_path / "xb.jsonl", [[i % 2 == 1] for i in range(10)])
    res = run_cli("plan", "--pilot", str(half_a), "--pilot-b", str(half_b), "--tasks", "6")
    assert " ".join(res.stdout.split()).startswith(
        "no detectable effect: no improvement up to 1 − the pilot's rate = 0.5 is detectable "
        "with 6 tasks (the formula gives 1.2056); no drop down to 0, the pilot's rate = 0.5, "
        "is detectable with 6 tasks (the formula gives 1.2056)"
    )


def test_plan_from_pilot(tmp_path: Path) -> None:
    theta = np.random.default_rng(1).beta(1, 1, size=50)
    pilot = write_run(tmp_path / "p.jsonl", theta, trials=4, seed=3, agent="p")
    res = run_cli("plan", "--pilot", str(pilot), "--delta", "0.05", "--trials", "4", "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["method"] == "pilot" and d["pilot_tasks"] == 50 and d["n_tasks"] > 10
    pilot_b = write_run(tmp_path / "q.jsonl", theta, trials=4, seed=4, agent="q")
    res = run_cli(
        "plan", "--pilot", str(pilot), "--pilot-b", str(pilot_b), "--delta", "0.05", "--json"
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["variance"]["source"] == "pilot-pair"


@pytest.mark.parametrize("outcome", [True, False])
def test_a_pilot_without_variance_is_refused(tmp_path: Path, outcome: bool) -> None:
    # All passing, it promised "minimum detectable effect 0.0000 with 50 tasks", and "2
    # tasks" for any delta.
    pilot = tmp_path / "p.jsonl"
    pilot.write_text(
        "".join(
            json.dumps({"task_id": f"t{i}", "trial": k, "success": outcome}) + "\n"
            for i in range(5)
            for k in range(2)
        )
    )
    res = run_cli("plan", "--pilot", str(pilot), "--tasks", "50")
    assert res.returncode == 2
    assert "shows no variance to plan from" in res.stderr and "Traceback" not in res.stderr


def _outcomes(path: Path, outcomes: list[list[bool]]) -> Path:
    """A trials file: task i's trials have ``outcomes[i]``."""
    path.write_text(
        "".join(
            json.dumps({"task_id": f"t{i}", "trial": k, "success": ok}) + "\n"
            for i, row in enumerate(outcomes)
            for k, ok in enumerate(row)
        )
    )
    return path


@pytest.mark.parametrize(
    ("rows_a", "rows_b", "diff"),
    [
        # Two all-passing pilots (5 tasks × 4 trials): "2 tasks to detect δ = 0.05".
        ([[True] * 4] * 5, [[True] * 4] * 5, "+0"),
        # A always fails, B always passes: B − A is 1 on every task, no spread.
        ([[False] * 2] * 3, [[True] * 2] * 3, "+1"),
        # Each task always passed or always failed, the same way in both.
        ([[True] * 2, [False] * 2, [True] * 2], [[True] * 2, [False] * 2, [True] * 2], "+0"),
    ],
)
@pytest.mark.parametrize("question", [["--delta", "0.05"], ["--tasks", "50"]])
def test_a_pilot_pair_without_variance_is_refused(
    tmp_path: Path,
    rows_a: list[list[bool]],
    rows_b: list[list[bool]],
    diff: str,
    question: list[str],
) -> None:
    # ω² = σ_A² = σ_B² = 0 promised "2 tasks" for any δ and "minimum detectable effect
    # 0.0000 with 50 tasks", as a single pilot without variance did before it was refused.
    a = _outcomes(tmp_path / "a.jsonl", rows_a)
    b = _outcomes(tmp_path / "b.jsonl", rows_b)
    res = run_cli("plan", "--pilot", str(a), "--pilot-b", str(b), *question)
    assert res.returncode == 2, res.stdout
    assert res.stdout == "" and "Traceback" not in res.stderr
    assert "--pilot-b: the two pilots show no variance to plan from" in res.stderr
    assert f"B − A is {diff} on every one of the {len(rows_a)} shared tasks" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_pilot_reports_the_variance_components_it_used(tmp_path: Path) -> None:
    # One trial per task, p = 1, 0, 1, 1: Var_t(p) = 0.25 (ddof 1), split by
    # --within-share 0.3 into σ² = 0.075 and τ² = 0.175, so ω² = 2·0.175 = 0.35.
    # "tau2" echoed 0.25, the whole variance, not the τ² behind ω².
    pilot = _outcomes(tmp_path / "k1.jsonl", [[True], [False], [True], [True]])
    args = ["plan", "--pilot", str(pilot), "--delta", "0.1", "--within-share", "0.3", "--json"]
    d = json.loads(run_cli(*args).stdout)
    assert d["variance"]["omega2"] == pytest.approx(0.35)
    assert d["tau2"] == pytest.approx(0.175) and d["sigma2"] == pytest.approx(0.075)
    assert d["variance"]["omega2"] == pytest.approx(2 * d["tau2"])
    assert d["pilot_variance"] == pytest.approx(0.25) and d["variance_split"] == "within_share"
    assert d["within_share"] == 0.3 and d["within_share_source"] == "--within-share"
    # Four trials per task (1100, 1111, 0000): σ² = 1/9 and τ² = 2/9 estimated apart
    # (tests/stats/test_power.py); the share it measured is (1/9)/(1/9 + 2/9) = 1/3.
    rows = [[True, True, False, False], [True] * 4, [False] * 4]
    pilot = _outcomes(tmp_path / "k4.jsonl", rows)
    args[2] = str(pilot)
    d = json.loads(run_cli(*args[:-3], "--json").stdout)
    assert d["tau2"] == pytest.approx(2 / 9) and d["sigma2"] == pytest.approx(1 / 9)
    assert d["pilot_variance"] == pytest.approx(0.25) and d["variance_split"] == "pilot"
    assert d["variance"]["omega2"] == pytest.approx(4 / 9)
    assert d["within_share"] == pytest.approx(1 / 3) and d["within_share_source"] == "pilot"


_K4 = [[True, True, False, False], [True] * 4, [False] * 4]


@pytest.mark.parametrize(
    ("pair", "share", "shown"),
    [
        # One pilot of four trials per task (1100, 1111, 0000): σ² = 1/9, τ² = 2/9,
        # share (1/9)/(3/9) = 0.33.
        (False, "0.33", "0.333333"),
        # Paired with B = 1111, 1111, 0000: d = 0.5, 0, 0, Var_t(d) = 1/12; s_A² = 1/3
        # on the first task, so σ_A² = 1/9, σ_B² = 0, and ω² = 1/12 − (1/3)/4/3 = 1/18:
        # share (1/9 + 0)/(1/18 + 1/9) = 2/3.
        (True, "0.67", "0.666667"),
    ],
)
def test_plan_refuses_within_share_beside_a_pilot_that_measures_it(
    tmp_path: Path, pair: bool, share: str, shown: str
) -> None:
    # --within-share was accepted and dropped without a word: the same plan for 0.1 and
    # 0.9, which even echoed the share it had not used.
    a = _outcomes(tmp_path / "a.jsonl", _K4)
    b = _outcomes(tmp_path / "b.jsonl", [[True] * 4, [True] * 4, [False] * 4])
    args = ["plan", "--pilot", str(a), *(["--pilot-b", str(b)] if pair else []), "--delta", "0.1"]
    res = run_cli(*args, "--within-share", "0.5")
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1
    what = "the pilots measure" if pair else "the pilot measures"
    assert (
        f"--within-share: {what} the within-task share ({share}) from tasks with two or more trials"
        in res.stderr
    )
    assert "drop --within-share" in res.stderr
    # Without it, the plan says the split is the pilot's, and the share it measured.
    res = run_cli(*args)
    assert res.returncode == 0, res.stderr
    assert f"within_share {shown} (measured by the pilot)" in res.stdout
    d = json.loads(run_cli(*args, "--json").stdout)
    assert d["within_share"] == pytest.approx(float(share), abs=0.005)
    assert d["within_share_source"] == "pilot" and d["variance_split"] == "pilot"
    if pair:
        assert d["pilot_variance"] == pytest.approx(1 / 12)
        assert d["variance"]["omega2"] == pytest.approx(1 / 18)
        assert d["variance"]["sigma2_a"] == pytest.approx(1 / 9)
        assert d["variance"]["sigma2_b"] == 0


def test_plan_uses_within_share_where_the_pilot_pair_cannot_measure_it(tmp_path: Path) -> None:
    # B has one trial per task (1, 1, 0): the pair cannot split Var_t(d) = 1/12 (d = 0.5,
    # 0, 0), so --within-share 0.4 does: ω² = 0.6/12 = 0.05, σ_A² = σ_B² = 0.4/12/2 = 1/60.
    a = _outcomes(tmp_path / "a.jsonl", _K4)
    b = _outcomes(tmp_path / "b.jsonl", [[True], [True], [False]])
    args = ["plan", "--pilot", str(a), "--pilot-b", str(b), "--delta", "0.1"]
    d = json.loads(run_cli(*args, "--within-share", "0.4", "--json").stdout)
    assert d["variance"]["omega2"] == pytest.approx(0.05)
    assert d["variance"]["sigma2_a"] == pytest.approx(1 / 60)
    assert d["variance"]["sigma2_b"] == pytest.approx(1 / 60)
    assert d["within_share"] == 0.4 and d["within_share_source"] == "--within-share"
    assert d["variance_split"] == "within_share" and d["pilot_variance"] == pytest.approx(1 / 12)
    # Without it, the default 0.5 splits it, and says it is an assumption.
    res = run_cli(*args)
    assert "within_share 0.5 (default, assumed)" in res.stdout, res.stderr
    d = json.loads(run_cli(*args, "--json").stdout)
    assert d["within_share"] == 0.5 and d["within_share_source"] == "default"
    assert d["variance"]["omega2"] == pytest.approx(0.5 / 12)


def test_plan_from_assumptions_says_where_its_within_share_came_from() -> None:
    base = ["plan", "--baseline", "0.8", "--delta", "0.1"]
    assert "within_share 0.5 (default, assumed)" in run_cli(*base).stdout
    res = run_cli(*base, "--within-share", "0.3")
    assert "within_share 0.3 (--within-share)" in res.stdout, res.stderr
    d = json.loads(run_cli(*base, "--within-share", "0.3", "--json").stdout)
    assert d["within_share"] == 0.3 and d["within_share_source"] == "--within-share"


def test_a_pilot_pair_with_variance_in_one_run_still_plans(tmp_path: Path) -> None:
    # B − A is 0 on every task but A's and B's trials disagree within tasks: σ² > 0.
    # Per task p = 0.5 with 2 trials: s² = 0.25·2/1 = 0.5, so σ_A² = σ_B² = 0.5, ω² =
    # max(0 − mean(0.5/2 + 0.5/2), 0) = 0, variance per task 0.5 + 0.5 = 1, and
    # n = 7.848880 · 1 / 0.5² = 31.4 → 32.
    rows = [[True, False]] * 3
    a = _outcomes(tmp_path / "a.jsonl", rows)
    b = _outcomes(tmp_path / "b.jsonl", rows)
    res = run_cli("plan", "--pilot", str(a), "--pilot-b", str(b), "--delta", "0.5", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["n_tasks"] == 32


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--delta", "0.03"], "--baseline"),
        (["--baseline", "0.8"], "--delta"),
        (["--baseline", "1.5", "--delta", "0.03"], "--baseline"),
        (["--baseline", "0.8", "--delta", "0.03", "--power", "1"], "--power"),
        # α/2 underflows: z_{1−α/2} is infinite (1e-17 crashed on ceil(∞) before it
        # was taken from the lower tail).
        (["--baseline", "0.5", "--delta", "0.1", "--alpha", "5e-324"], "--alpha: 5e-324"),
        # Power at or below α: non-monotone sizes (0.025 → 2 tasks, 0.01 → 7).
        (["--baseline", "0.5", "--delta", "0.1", "--power", "0.01"], "--power: must be above"),
        (["--baseline", "0.5", "--tasks", "50", "--power", "0.05"], "--power: must be above"),
        # Options the other mode ignores: they were dropped without a word.
        (
            ["--pilot", "P", "--baseline", "0.3", "--delta", "0.1"],
            "--baseline: --pilot SOURCE measures the variance (and rate) that --baseline P",
        ),
        (
            ["--pilot", "P", "--pilot-b", "Q", "--correlation", "0.3", "--delta", "0.1"],
            "--correlation: --pilot-b measures how the two systems' task rates go together",
        ),
        (
            ["--pilot", "P", "--pilot-b", "Q", "--correlation", "0", "--tasks", "50"],
            "and the pilots would win: drop --correlation",
        ),
        (["--baseline", "0.95", "--delta", "0.1"], "--delta"),
        # Two questions at once: the --delta used to be dropped without a word.
        (["--baseline", "0.8", "--delta", "0.03", "--tasks", "50"], "give one"),
    ],
)
def test_plan_bad_input_exits_2(args: list[str], field: str) -> None:
    res = run_cli("plan", *args)
    assert res.returncode == 2 and field in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_plan_refuses_an_ignored_option_before_reading_the_pilot(tmp_path: Path) -> None:
    # Refused before anything is computed: the same pilots plan without the option, and
    # --correlation still shapes a single pilot's ω² = 2(1 − r)τ².
    pilot = _outcomes(tmp_path / "p.jsonl", [[True], [False], [True], [True]])
    other = _outcomes(tmp_path / "q.jsonl", [[True], [True], [False], [True]])
    pair = ["plan", "--pilot", str(pilot), "--pilot-b", str(other), "--delta", "0.1"]
    assert run_cli(*pair).returncode == 0
    res = run_cli(*pair, "--correlation", "0.5")
    assert res.returncode == 2 and res.stdout == ""
    # p = 1, 0, 1, 1: Var = 0.25, τ² = 0.125 at share 0.5; r = 0.5 → ω² = 2·0.5·0.125
    one = run_cli("plan", "--pilot", str(pilot), "--delta", "0.1", "--correlation", "0.5", "--json")
    assert json.loads(one.stdout)["variance"]["omega2"] == pytest.approx(0.125)


def test_plan_with_a_tiny_alpha(tmp_path: Path) -> None:
    # 1 − α/2 rounded to 1 and the size was ceil(∞): an OverflowError traceback, with
    # --baseline or --pilot. (8.573944 + 0.841621)² · 0.49 / 0.01 = 4344.0 → 4344
    # (tests/stats/test_power.py).
    res = run_cli("plan", "--baseline", "0.5", "--delta", "0.1", "--alpha", "1e-17")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("4344 tasks")
    # A pilot of 4 tasks, one trial each, 1 0 1 0: Var(p) = 1/3, split 0.5/0.5, so ω² =
    # 2 · 1/6 and σ² = 1/6 each: 2/3 per task; 88.6529 · (2/3) / 0.01 = 5910.2 → 5911.
    pilot = _outcomes(tmp_path / "p.jsonl", [[True], [False], [True], [False]])
    res = run_cli("plan", "--pilot", str(pilot), "--delta", "0.1", "--alpha", "1e-17")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("5911 tasks")


@pytest.mark.parametrize(
    ("delta", "extra", "message"),
    [
        # δ² underflows to 0: a ZeroDivisionError traceback, exit 1.
        ("1e-300", [], "δ = 1e-300 is too small: δ² underflows double precision"),
        ("-1e-300", [], "δ = -1e-300 is too small: δ² underflows double precision"),
        # n infinite: ceil(∞), an OverflowError traceback.
        ("1e-160", [], "δ = 1e-160 is too small: δ² underflows double precision"),
        ("1.6e-154", ["--alpha", "1e-17"], "δ = 1.6e-154 is too small: the tasks needed,"),
    ],
)
def test_plan_with_a_delta_too_small_to_compute(
    tmp_path: Path, delta: str, extra: list[str], message: str
) -> None:
    pilot = _outcomes(tmp_path / "p.jsonl", [[True], [False], [True], [False]])
    for source in (["--baseline", "0.5"], ["--pilot", str(pilot)]):
        res = run_cli("plan", *source, "--delta", delta, *extra)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr.startswith(f"agentgauge: error: --delta: {message}"), res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    with pytest.raises(InputError, match="--delta: δ = "):
        agentgauge.plan(baseline=0.5, delta=float(delta), alpha=float(extra[-1]) if extra else 0.05)
    with pytest.raises(InputError, match="--delta: δ = "):
        agentgauge.plan(
            pilot=str(pilot), delta=float(delta), alpha=float(extra[-1]) if extra else 0.05
        )


def test_plan_asks_for_the_tasks_compare_needs_and_compare_can_answer(tmp_path: Path) -> None:
    # The formula gives 3 tasks (2.2) for δ = 0.8 on a baseline of 0.1, and plan said 3:
    # compare gives no verdict from fewer than 6 tasks at α = 0.05, whatever happens.
    res = run_cli("plan", "--baseline", "0.1", "--delta", "0.8")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    reason = (
        "the formula gives 3 tasks, but compare needs at least 6 at α = 0.05 to give any "
        "verdict (the exact sign test over 5 tasks cannot go below p = 2 × 0.5^5 = 0.0625)"
    )
    assert lines[0] == "6 tasks to detect δ = 0.8"
    assert lines[3].endswith("= 2.2 → 3 tasks")
    assert lines[4] == f"    → 6 tasks: {reason}"
    d = json.loads(run_cli("plan", "--baseline", "0.1", "--delta", "0.8", "--json").stdout)
    assert (d["n_tasks"], d["min_tasks"], d["n_tasks_reason"]) == (6, 6, reason)
    assert d["n_tasks_exact"] == pytest.approx(2.2075, abs=1e-4)
    d = json.loads(
        run_cli("plan", "--baseline", "0.1", "--delta", "0.8", "--alpha", "0.01", "--json").stdout
    )
    assert (d["n_tasks"], d["min_tasks"]) == (8, 8)
    # The planned design, with the effect it was planned for: compare can now tell.
    n = 6
    a, b = _all_moving(tmp_path / "a.jsonl", n, False), _all_moving(tmp_path / "b.jsonl", n, True)
    res = run_cli("compare", str(a), str(b), "--json")
    assert json.loads(res.stdout)["verdict"] == "B is better"
    # Enough tasks: no reason, no extra line.
    res = run_cli("plan", "--baseline", "0.8", "--delta", "0.03", "--json")
    d = json.loads(res.stdout)
    assert d["n_tasks"] == 2626 and d["min_tasks"] == 6 and "n_tasks_reason" not in d


@pytest.mark.parametrize("source", ["baseline", "pilot"])
def test_plan_detects_nothing_with_fewer_tasks_than_compare_needs(
    tmp_path: Path, source: str
) -> None:
    # "minimum detectable effect 0.2341 with 5 tasks": no effect, however large, gives a
    # verdict with 5 tasks at α = 0.05. Not an error: the answer is "none", and why.
    pilot = _outcomes(tmp_path / "p.jsonl", [[True, False]] * 3 + [[True, True]] * 3)
    # 20 trials a task: with 6 tasks an effect below 1 − the rate is detectable.
    args = ["--baseline", "0.5"] if source == "baseline" else ["--pilot", str(pilot)]
    args += ["--trials", "20"]
    reason = (
        "with 5 tasks compare gives no verdict at α = 0.05, which needs at least 6 (the "
        "exact sign test over 5 tasks cannot go below p = 2 × 0.5^5 = 0.0625)"
    )
    res = run_cli("plan", *args, "--tasks", "5")
    assert res.returncode == 0, res.stderr
    assert " ".join(res.stdout.split()).startswith(f"no detectable effect: {reason}")
    d = json.loads(run_cli("plan", *args, "--tasks", "5", "--json").stdout)
    assert (d["mde"], d["mde_reason"], d["tasks"], d["min_tasks"]) == (None, reason, 5, 6)
    d = json.loads(run_cli("plan", *args, "--tasks", "6", "--json").stdout)
    assert d["mde"] is not None and "mde_reason" not in d
    d = json.loads(run_cli("plan", *args, "--tasks", "1", "--json").stdout)
    assert d["mde"] is None and d["mde_reason"].startswith("with 1 task compare gives no verdict")
    res = run_cli("plan", *args, "--tasks", "0")
    assert res.returncode == 2 and "--tasks: must be at least 1" in res.stderr


def test_a_pilot_plan_stays_within_the_rates_that_exist(tmp_path: Path) -> None:
    # From a pilot, "minimum detectable effect 1.2056 (120.6 percentage points)" with 6
    # tasks, and "9 tasks to detect δ = 0.99" on a pilot at 50% (B at 149%): no effect
    # goes past 1 − the pilot's rate, as from assumptions past 1 − baseline.
    half_a = _outcomes(tmp_path / "xa.jsonl", [[i % 2 == 0] for i in range(10)])
    half_b = _outcomes(tmp_path / "xb.jsonl", [[i % 2 == 1] for i in range(10)])
    low = _outcomes(tmp_path / "a.jsonl", [[i in (5, 6, 7)] for i in range(10)])
    for pilots, rate, formula in (
        (["--pilot", str(half_a), "--pilot-b", str(half_b)], 0.5, "1.2056"),
        (["--pilot", str(low)], 0.7, "0.7813"),
    ):
        reason = (
            f"no improvement up to 1 − the pilot's rate = {rate:g} is detectable with 6 "
            f"tasks (the formula gives {formula})"
        )
        res = run_cli("plan", *pilots, "--tasks", "6")
        assert res.returncode == 0, res.stderr
        assert " ".join(res.stdout.split()).startswith(f"no detectable effect: {reason}")
        d = json.loads(run_cli("plan", *pilots, "--tasks", "6", "--json").stdout)
        assert (d["mde"], d["mde_reason"]) == (None, reason)
        assert d["pilot_rate"] == pytest.approx(1 - rate)
    # Enough tasks: the effect is below the cap and given.
    d = json.loads(run_cli("plan", "--pilot", str(low), "--tasks", "60", "--json").stdout)
    assert 0 < d["mde"] < 0.7 and "mde_reason" not in d
    # A δ that takes the pilot's rate out of [0, 1] is refused, as --baseline's is.
    for delta, total in (("0.99", "1.49"), ("-0.6", "-0.1")):
        res = run_cli("plan", "--pilot", str(half_a), "--delta", delta)
        assert res.returncode == 2 and res.stdout == ""
        assert res.stderr == (
            f"agentgauge: error: --delta: the pilot's rate 0.5 + delta {delta} = {total} "
            "is not a rate in [0, 1]\n"
        )
    res = run_cli("plan", "--pilot", str(half_a), "--pilot-b", str(half_b), "--delta", "0.99")
    assert res.returncode == 2 and "the pilot's rate 0.5 + delta 0.99" in res.stderr
    with pytest.raises(InputError, match=r"--delta: the pilot's rate 0\.5 \+ delta 0\.99"):
        agentgauge.plan(pilot=str(half_a), delta=0.99)


def test_a_pilot_without_base_trials_is_warned_of(tmp_path: Path) -> None:
    # A pilot with only paraphrased trials was planned from silently, while the docs say
    # the pilot is read from the base variant (and compare warns of such a side).
    def pilot(name: str, variant: str, every: int) -> Path:
        path = tmp_path / f"{name}.jsonl"
        rows = [
            {"task_id": f"t{i}", "trial": 0, "variant": variant, "success": i % every == 0}
            for i in range(10)
        ]
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return path

    para, base = pilot("para", "paraphrase:1", 3), pilot("base", "base", 2)
    warning = (
        f"--pilot {para} has no base-variant trial: the plan reads all its variants "
        "(paraphrase:1), while compare reads the base variant of runs that have one; pilot "
        "the base variant to plan from the variance compare will see"
    )
    res = run_cli("plan", "--pilot", str(para), "--delta", "0.1")
    assert res.returncode == 0, res.stderr
    assert " ".join(res.stderr.split()) == f"warning: {warning}"
    assert res.stdout.split(" tasks")[0].isdigit()
    res = run_cli("plan", "--pilot", str(para), "--delta", "0.1", "--json")
    assert json.loads(res.stdout)["warnings"] == [warning]
    res = run_cli("plan", "--pilot", str(base), "--pilot-b", str(para), "--tasks", "50", "--json")
    assert json.loads(res.stdout)["warnings"] == [warning.replace("--pilot ", "--pilot-b ", 1)]
    res = run_cli("plan", "--pilot", str(base), "--delta", "0.1", "--json")
    assert res.stderr == "" and json.loads(res.stdout)["warnings"] == []


def test_plan_with_a_negative_delta() -> None:
    # A regression to detect: accepted (B − A < 0), but the error said "(0, 1)" and the
    # arithmetic read "/ -0.03²", as if dividing by −0.0009.
    res = run_cli("plan", "--baseline", "0.8", "--delta", "-0.03")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("2940 tasks to detect δ = -0.03")
    assert "/ (-0.03)²\n" in res.stdout and "/ -0.03²" not in res.stdout
    for bad in ("0", "1", "-1", "1.5", "nan", "inf"):
        res = run_cli("plan", "--baseline", "0.5", "--delta", bad)
        assert res.returncode == 2
        assert res.stderr == (
            "agentgauge: error: --delta: must be a non-zero difference B − A in (−1, 1) "
            "(negative: B worse than A)\n"
        )


def test_markdown_never_replaces_the_store_it_reads(tmp_path: Path, cli: Cli) -> None:
    # `--markdown s.db` replaced the store with Markdown, exit 0: an input is refused
    # even with --force, before anything is computed or written.
    db = tmp_path / "s.db"
    _store(db)
    before = db.read_bytes()
    for extra in ((), ("--force",)):
        code, out, err = cli("compare", f"{db}:base", f"{db}:cand", "--markdown", str(db), *extra)
        assert code == 2 and out == "", err
        assert err.count("\n") == 1 and "--markdown: is one of this command's inputs" in err
        assert db.read_bytes() == before


def test_markdown_never_replaces_a_parquet_exports_other_files(tmp_path: Path, cli: Cli) -> None:
    # `compare exp/trials.parquet B --markdown exp/events.parquet --force` replaced the
    # export's events, read with its trials file: the export could not be read after.
    a, b = _all_moving(tmp_path / "a.jsonl", 2, False), _all_moving(tmp_path / "b.jsonl", 2, True)
    db = tmp_path / "s.db"
    assert cli("import", "jsonl", str(a), "--store", str(db), "--run-id", "a")[0] == 0
    exported = tmp_path / "exp"
    assert cli("export", f"{db}:a", "--parquet", str(exported))[0] == 0
    before = {p: p.read_bytes() for p in exported.iterdir()}
    for name in ("events.parquet", "grades.parquet", "_agentgauge.json"):
        dest = exported / name
        code, out, err = cli(
            "compare", str(exported / "trials.parquet"), str(b), "--markdown", str(dest), "--force"
        )
        assert code == 2 and out == "", err
        assert err.count("\n") == 1 and "--markdown: is one of this command's inputs" in err
    assert {p: p.read_bytes() for p in exported.iterdir()} == before


def test_markdown_replaces_a_file_only_with_force(tmp_path: Path, cli: Cli) -> None:
    a, b = _all_moving(tmp_path / "a.jsonl", 2, False), _all_moving(tmp_path / "b.jsonl", 2, True)
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    code, _, err = cli("compare", str(a), str(b), "--markdown", str(notes))
    assert code == 2 and "--markdown: exists and is not empty; add --force" in err
    assert notes.read_text() == "my notes\n"
    code, _, err = cli("compare", str(a), str(b), "--markdown", str(notes), "--force")
    assert code == 0, err
    assert "## Comparison record" in notes.read_text()


def test_markdown_to_a_directory_or_a_missing_folder(tmp_path: Path, cli: Cli) -> None:
    # A directory was an IsADirectoryError traceback and a missing folder a
    # FileNotFoundError one, both exit 1 (the code of a failed gate).
    a, b = _all_moving(tmp_path / "a.jsonl", 2, False), _all_moving(tmp_path / "b.jsonl", 2, True)
    code, _, err = cli("compare", str(a), str(b), "--markdown", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("agentgauge: error: ") and "--markdown: is a directory" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl"]
    nested = tmp_path / "new" / "sub" / "rec.md"
    code, _, err = cli("compare", str(a), str(b), "--markdown", str(nested))
    assert code == 0, err
    assert "## Comparison record" in nested.read_text()


def test_markdown_record_escapes_run_labels(tmp_path: Path, cli: Cli) -> None:
    # The title and the record wrote run ids raw: a live link, an <img onerror> and,
    # through a newline, a setext heading "Approved" in the user's notes.
    db = tmp_path / "s.db"
    hostile_a = "<img src=x onerror=alert(1)>"
    hostile_b = "[click me](http://evil.example)\n\nApproved\n===="
    for run_id, passing in ((hostile_a, 3), (hostile_b, 8)):
        rows = [{"task_id": f"t{t}", "success": t < passing} for t in range(10)]
        src = tmp_path / f"{passing}.jsonl"
        src.write_text("".join(json.dumps(r) + "\n" for r in rows))
        code, _, err = cli("import", "jsonl", str(src), "--store", str(db), "--run-id", run_id)
        assert code == 0, err
    md = tmp_path / "rec.md"
    code, _, err = cli("compare", f"{db}:{hostile_a}", f"{db}:{hostile_b}", "--markdown", str(md))
    assert code == 0, err
    text = md.read_text()
    assert "<img" not in text and "[click me](http" not in text  # no tag, no link
    assert "\nApproved\n" not in text and "\n====" not in text
    assert text.startswith("# ")
    assert "s.db:\\[click me\\](http://evil.example)  Approved ==== vs " in text
    assert "&lt;img src=x onerror=alert(1)>" in text


def test_a_pilot_between_task_variance_of_zero_is_zero_not_rounding(tmp_path: Path) -> None:
    # careful's 10 tasks × 4 trials: Var_t(p_t) = 0.05625 = mean_t(s_t²/n_t) exactly, so
    # τ² = 0. The two float sums differ in the last bit, and the plan said "tau2
    # 6.93889e-18" and ω² = 1.4e-17, as if the pilot had measured a between-task spread.
    pilot = Path(__file__).resolve().parents[2] / "examples" / "sample_trials.jsonl"
    res = run_cli("plan", "--pilot", f"{pilot}#agent=careful", "--delta", "0.1", "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    assert d["pilot_variance"] == pytest.approx(0.05625)
    assert d["tau2"] == 0.0 and d["variance"]["omega2"] == 0.0
    assert d["within_share"] == 1.0
    text = run_cli("plan", "--pilot", f"{pilot}#agent=careful", "--delta", "0.1").stdout
    assert "tau2 0," in text and "e-18" not in text


def test_plan_never_prints_a_detectable_effect_of_zero() -> None:
    # A trillion tasks detect δ ≈ 2e-6: it read "minimum detectable effect 0.0000 ...
    # = 0.0000 (0.0 percentage points)", an effect of nothing; 1e8 tasks read "0.0002
    # (0.0 percentage points)".
    res = run_cli("plan", "--baseline", "0.5", "--tasks", "1000000000000")
    assert res.returncode == 0, res.stderr
    mde = json.loads(
        run_cli("plan", "--baseline", "0.5", "--tasks", "1000000000000", "--json").stdout
    )["mde"]
    assert 0 < mde < 1e-5
    assert "0.0000" not in res.stdout and "(0.0 percentage points)" not in res.stdout
    assert res.stdout.startswith(f"minimum detectable effect {mde:.3g} with ")
    assert f"= {mde:.3g} ({100 * mde:.3g} percentage points)" in res.stdout
    res = run_cli("plan", "--baseline", "0.5", "--tasks", "100000000")
    assert "(0.0 percentage points)" not in res.stdout and "percentage points)" in res.stdout
    # Ordinary effects keep their four decimals and one of percentage points.
    res = run_cli("plan", "--baseline", "0.8", "--tasks", "2626")
    assert "minimum detectable effect 0.0300 with 2626 tasks" in res.stdout
    assert "(3.0 percentage points)" in res.stdout


def test_a_tiny_difference_reads_as_a_difference_not_as_zeros(tmp_path: Path, cli: Cli) -> None:
    # 20,000 shared tasks and one flip: one decimal wrote "B − A -0.0 pp   95% CI -0.0 pp
    # to +0.0 pp" (an interval of no width) and "SE paired 0.00 pp" (an SE of 0, which
    # is worded otherwise), in the table and in the record's line 7 alike.
    n = 20000
    for name, fails in (("a", set()), ("b", {0})):
        rows = [{"task_id": f"t{i}", "success": i not in fails, "agent": name} for i in range(n)]
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, out, err = cli("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert code == 0, err
    assert "B − A                 -0.01 pp   95% CI -0.03 pp to +0.01 pp" in out
    assert "SE                    paired 0.005 pp (task)   unpaired 0.005 pp" in out
    assert "score 95% CI (MOVER)  -0.03 pp to +0.01 pp" in out
    assert "B − A = -0.01 pp (95% CI -0.03 pp to +0.01 pp, " in out
    assert "SE paired 0.005 pp vs unpaired 0.005 pp" in out
    assert "0.00 pp" not in out and "-0.0 pp" not in out
