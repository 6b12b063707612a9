"""Cost of pass takes its numerator and its denominator over the same average: tasks.

Erol et al. 2025 define cost-of-pass as E[cost] / R over a distribution of
problems; the suite's tasks, weighted equally, are that distribution (as for the
success rate). Before, the numerator was the mean over *trials* and the
denominator the mean over *tasks*, which disagree whenever tasks have unequal
trial counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentgauge.metrics import compute_metrics
from agentgauge.metrics.compare import compare
from agentgauge.schema import Trial
from agentgauge.table import TrialTable


def table(rows: list[tuple[str, bool, float]]) -> TrialTable:
    return TrialTable.from_trials([Trial(task_id=t, success=ok, cost_usd=c) for t, ok, c in rows])


# Task a: 10 passing trials at $1; task b: one failing trial at $10.
UNEQUAL = [("a", True, 1.0)] * 10 + [("b", False, 10.0)]


def test_unequal_trial_counts_use_task_averages_on_both_sides() -> None:
    g = compute_metrics(table(UNEQUAL), by=()).groups[0]
    # rate = (10/10 + 0/1) / 2 = 0.5; cost per task = (1 + 10) / 2 = 5.5 → 5.5 / 0.5 = 11.
    # (Before: pooled cost 20/11 = 1.818 over the task rate 0.5 = 3.64.)
    assert g.outcome.success_rate == pytest.approx(0.5)
    assert g.cost.cost_of_pass == pytest.approx(11.0)
    # per_trial stays the spend per trial actually run: $20 / 11 trials.
    assert g.cost.per_trial == pytest.approx(20 / 11)


def test_the_issues_example() -> None:
    # 10 passing trials of task a and 1 failing trial of task b, $1 each: a task of
    # this suite costs $1 per attempt and is solved half the time → $2.00 per pass
    # (pooled both ways it would be $11 / 10 = $1.10; the cost side alone, pooled
    # with the rate per task, gave $2.00 by accident of equal prices).
    rows = [("a", True, 1.0)] * 10 + [("b", False, 1.0)]
    assert compute_metrics(table(rows), by=()).groups[0].cost.cost_of_pass == pytest.approx(2.0)


def test_equal_trial_counts_are_unchanged() -> None:
    rows = [("a", True, 1.0), ("a", False, 3.0), ("b", True, 2.0), ("b", True, 2.0)]
    g = compute_metrics(table(rows), by=()).groups[0]
    # Pooled and task-weighted agree: mean cost 2.0, rate (0.5 + 1)/2 = 0.75 → 2.667.
    assert g.cost.cost_of_pass == pytest.approx(2.0 / 0.75)


def test_compare_uses_the_same_rule() -> None:
    other = table([("a", True, 1.0), ("b", True, 1.0)])
    c = compare(table(UNEQUAL), other)
    assert c.cost_of_pass_a == pytest.approx(11.0)  # as the metrics engine gives
    assert c.cost_of_pass_b == pytest.approx(1.0)


def test_cli_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(
            json.dumps({"task_id": t, "success": ok, "cost_usd": c}) + "\n" for t, ok, c in UNEQUAL
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "agentgauge", "metrics", str(path), "--json"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out)["groups"][0]["cost"]["cost_of_pass"] == pytest.approx(11.0)


def test_spend_per_success_is_the_pooled_accounting_figure() -> None:
    # The issue's case: task a with 10 passing trials, task b with 1 failing one, $1 each.
    rows = [("a", True, 1.0)] * 10 + [("b", False, 1.0)]
    g = compute_metrics(table(rows), by=()).groups[0]
    assert g.cost.spend_per_success == pytest.approx(11 / 10)  # $11 spent, 10 successes
    assert g.cost.cost_of_pass == pytest.approx(2.0)  # $1 per task-attempt / rate 0.5
    assert g.to_dict()["cost"]["spend_per_success"] == pytest.approx(1.1)
    none = compute_metrics(table([("a", False, 1.0)] * 3), by=()).groups[0]
    assert none.cost.spend_per_success is None
    assert none.cost.reasons["spend_per_success"] == "no successes"
    unknown = compute_metrics(
        TrialTable.from_trials([Trial(task_id="a", success=True, cost_usd=None)]), by=()
    ).groups[0]
    assert unknown.cost.spend_per_success is None
    assert "price unknown for 1 of 1" in unknown.cost.reasons["spend_per_success"]
