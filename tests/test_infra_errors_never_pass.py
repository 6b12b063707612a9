"""An infra-error trial counts as a failure everywhere, even when its record says
success (docs/metrics.md, "Infrastructure errors"), as it does in the success rate.

Each consumer of the success flag reads fixtures/infra/trials.jsonl (its README has
the table): three tasks whose rates are 1, 0.5 and 0 once the infra error on task
``long`` counts as a failure, and 1, 0.5 and 0.5 when the recorded flag is read.
Every test checks the first reading and, where the number is a rate or a count, that
the second would have been different: each of these consumers once read the flag.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import Cli

from agentgauge.metrics.engine import compute_metrics
from agentgauge.metrics.frontier import frontier_from_table
from agentgauge.metrics.horizon import horizon
from agentgauge.metrics.validity import never_passed_tasks
from agentgauge.schema import Trial
from agentgauge.sources import load_trials
from agentgauge.table import TrialTable

TRIALS = Path(__file__).parent / "fixtures" / "infra" / "trials.jsonl"


@pytest.fixture
def trials() -> list[Trial]:
    return load_trials(TRIALS)


def infra_trial(trials: list[Trial]) -> Trial:
    (t,) = [t for t in trials if t.is_infra_error]
    return t


def recorded_as(trials: list[Trial], **fields: object) -> list[Trial]:
    """The trials with the infra error's record rewritten (e.g. as a completed trial:
    what a consumer reading the recorded flag saw)."""
    return [t.model_copy(update=fields) if t.is_infra_error else t for t in trials]


def as_completed_success(trials: list[Trial]) -> list[Trial]:
    return recorded_as(trials, status="completed", error=None, error_kind=None)


def as_infra_failure(trials: list[Trial]) -> list[Trial]:
    return recorded_as(trials, success=False, score=0.0)


def test_the_file_is_as_its_readme_says(trials: list[Trial]) -> None:
    t = infra_trial(trials)
    assert (t.task_id, t.status, t.error_kind, t.success, t.score) == (
        "long", "error", "infra", True, 1.0
    )  # fmt: skip
    assert [x.passed for x in trials] == [True, True, True, False, False, False]
    g = compute_metrics(TrialTable.from_trials(trials), by=()).groups[0]
    assert g.outcome.success_rate == pytest.approx(0.5) and g.infra_errors == 1


# --------------------------------------------------------------------------- metrics


def test_frontier_success_rate_counts_the_infra_error_as_a_failure(trials: list[Trial]) -> None:
    def rate(ts: list[Trial]) -> float:
        (point,) = frontier_from_table(TrialTable.from_trials(ts)).frontier
        return point.success_rate

    assert rate(trials) == pytest.approx(0.5)  # (1 + 0.5 + 0) / 3, the success rate's
    assert rate(as_completed_success(trials)) == pytest.approx(2 / 3)  # the flag as recorded


@pytest.mark.parametrize("outcome", ["success", "score", "auto"])
def test_horizon_fits_the_infra_error_as_a_failure_with_no_credit(
    trials: list[Trial], outcome: str
) -> None:
    def fit(ts: list[Trial]) -> dict[float, float]:
        report = horizon(ts, bootstrap=0, outcome=outcome)  # type: ignore[arg-type]
        return report.groups[0].horizons

    fitted = fit(trials)
    # As if its record said failure, score 0 (the harness's record of an infra error)...
    assert fitted == pytest.approx(fit(as_infra_failure(trials)))
    # ... and not as if it had passed: the flag (and score 1) as recorded put p50 at
    # about 31 minutes, where the fit puts it at 8.
    assert fitted[0.5] == pytest.approx(8.0, rel=1e-3)
    assert fit(as_completed_success(trials))[0.5] == pytest.approx(31.06, rel=1e-3)


def test_horizon_gives_no_credit_for_an_infra_errors_partial_score(trials: list[Trial]) -> None:
    partial = recorded_as(trials, success=False, score=0.9)
    a = horizon(partial, bootstrap=0, outcome="score")
    b = horizon(as_infra_failure(trials), bootstrap=0, outcome="score")
    assert a.groups[0].horizons == pytest.approx(b.groups[0].horizons)
    assert a.warnings == [
        "1 infra-error trial counted as failures (score 0), as in the success rate"
    ]


def test_never_passed_tasks_do_not_count_an_infra_error_as_a_pass(trials: list[Trial]) -> None:
    assert never_passed_tasks([TrialTable.from_trials(trials)]) == ["long"]
    assert never_passed_tasks([TrialTable.from_trials(as_completed_success(trials))]) == []


# --------------------------------------------------------------------------- report


def test_html_report_counts_the_infra_error_as_a_failure(trials: list[Trial]) -> None:
    from agentgauge.report.build import ReportInputs, build_report
    from agentgauge.schema import Run
    from agentgauge.sources import TrialSource

    run = Run(run_id="r", created_at="2026-01-01T00:00:00+00:00")
    suite = build_report(
        ReportInputs(sources=[TrialSource(label="r", trials=trials, run=run)], ks=[1])
    ).suites[0]
    cells = {row["task_id"]: row["cells"]["a / m"] for row in suite.tasks}  # per system
    # Task cells: 0 of 2 on long (the recorded flag read 1 of 2, a flaky task).
    assert (cells["long"]["k"], cells["long"]["n"], cells["long"]["flaky"]) == (0, 2, False)
    # The horizon plot's task points, at the rate the heatmap shows.
    (fit,) = suite.horizon
    assert {p["task_id"]: p["rate"] for p in fit["tasks"]} == {"short": 1, "mid": 0.5, "long": 0}
    # The frontier's point agrees with the outcome table's success rate.
    (point,) = suite.frontier
    (group,) = suite.metrics["groups"]
    assert point["success_rate"] == pytest.approx(group["success_rate"]["value"]) == 0.5
    # Failing transcripts: long failed on both trials, not "1 of 2, passed on the others".
    long_tr = next(t for t in suite.transcripts if t["view"]["task_id"] == "long")
    assert long_tr["summary"] == "2 of 2 trials failed" and not long_tr["flip"]
    assert "long" in next(r for r in suite.sections[-1]["rows"] if r[0].startswith("never"))[2]


# --------------------------------------------------------------------------- show


def test_show_lists_the_infra_error_among_the_failures(trials: list[Trial]) -> None:
    from agentgauge.report.show import failures_document, select_trials, trials_document

    doc = failures_document(trials, source="f")
    assert doc["n_failed_trials"] == 3  # the recorded flag read 2
    rows = {r["task_id"]: r for r in doc["failures"]}
    assert (rows["long"]["failed"], rows["long"]["trials"]) == (2, [0, 1])
    assert rows["long"]["classes"] == {"infra error": 1, "failed": 1}
    assert not rows["long"]["flaky"] and doc["n_flaky_cells"] == 1  # mid only
    assert [t.trial for t in select_trials(trials, task="long", failed=True)] == [0, 1]
    shown = trials_document(trials, source="f", task="long", trial=1)["trials"][0]
    assert (shown["success"], shown["passed"], shown["why"]) == (True, False, "infra error")


def test_show_in_the_terminal_says_the_infra_error_did_not_pass(cli: Cli) -> None:
    code, out, err = cli("show", str(TRIALS), "--task", "long", "--trial", "1")
    assert code == 0, err
    assert "did not pass (its record says success) — infra error" in out
    assert "passed" not in out.replace("did not pass", "")
    code, out, err = cli("show", str(TRIALS), "--task", "long", "--failed", "--json")
    assert code == 0, err
    assert [t["trial"] for t in json.loads(out)["trials"]] == [0, 1]


# --------------------------------------------------------------------------- run


def test_the_end_of_run_line_counts_the_infra_error_as_a_failure(
    trials: list[Trial], capsys: pytest.CaptureFixture[str]
) -> None:
    from agentgauge.cli.run import _print_summary

    _print_summary(trials, "r", "s.db", 0)
    out = capsys.readouterr().out
    assert "6 trials, success 50.0%, 1 infra error" in out  # the recorded flag: 66.7%
    assert "agentgauge show s.db:r --failed" in out


def test_the_live_pass_rate_counts_the_infra_error_as_a_failure(trials: list[Trial]) -> None:
    from agentgauge.harness.progress import RunProgress

    progress = RunProgress(len(trials), 0, enabled=False)
    for t in trials:
        progress.advance(t)
    assert (progress.passed, progress.finished, progress.errors) == (3, 6, 1)


# --------------------------------------------------------------------------- grade


def test_regrade_success_before_and_after_count_the_infra_error_as_a_failure(
    trials: list[Trial], tmp_path: Path
) -> None:
    from agentgauge.graders import regrade
    from agentgauge.schema import AnswerSpec, Expectations, Run, Task
    from agentgauge.store import Store, utc_now

    # Each task passes an answer that says "done"; the trials answer as they passed.
    answered = [t.model_copy(update={"answer": "done" if t.success else "no"}) for t in trials]
    done = Expectations(answer=AnswerSpec(contains=["done"]))
    tasks = [Task(id=i, instruction="do it", expectations=done) for i in ("short", "mid", "long")]
    with Store(tmp_path / "s.db") as db:
        with db.transaction():
            db.create_run(Run(run_id="r", created_at=utc_now()))
            db.add_tasks("r", tasks)
        db.add_trials("r", answered)
        result = regrade(db, "r", [])
    # The infra error is not graded (the run grades no trial that ended in an error)
    # but counts in the success shares, as in the run's success rate.
    assert (result.n_trials, result.n_unfinished, result.n_changed) == (5, 1, 0)
    # 3 of 6 under both versions: the infra error keeps its record and never passes.
    assert result.success_before == pytest.approx(0.5)  # the recorded flag read 4 of 6
    assert result.success_after == pytest.approx(0.5)


def test_passed_is_the_engines_rule_for_one_trial(trials: list[Trial]) -> None:
    table = TrialTable.from_trials(trials)
    assert np.array_equal([t.passed for t in trials], table.success & ~table.infra_error)
    agent_error = trials[0].model_copy(update={"status": "error", "error_kind": "agent"})
    assert agent_error.passed  # the agent's error with a success counts, as in the metrics
