"""The repetition-aware run diff, on hand-computed cases."""

from __future__ import annotations

import json
import math

import pytest

from agentgauge.metrics.compare import compare
from agentgauge.report.diff import run_diff
from agentgauge.schema import Trial
from agentgauge.table import TrialTable


def _table(counts: dict[str, tuple[int, int]], **extra: object) -> TrialTable:
    """task -> (passes, trials), passes first."""
    trials = [
        Trial(task_id=task, trial=k, success=k < passed, **extra)  # type: ignore[arg-type]
        for task, (passed, n) in counts.items()
        for k in range(n)
    ]
    return TrialTable.from_trials(trials)


def _row(diff: dict[str, object], task: str) -> dict[str, object]:
    rows = diff["tasks"]
    assert isinstance(rows, list)
    return next(r for r in rows if r["task_id"] == task)


def test_counts_changes_and_fisher_p_values_by_hand() -> None:
    a = _table({"up": (0, 4), "down": (4, 4), "half": (3, 4), "same": (2, 4), "gone": (1, 2)})
    b = _table({"up": (4, 4), "down": (1, 4), "half": (1, 4), "same": (2, 4), "new": (2, 2)})
    d = run_diff(a, b, label_a="old", label_b="new")
    json.dumps(d)  # JSON-ready, no numpy values
    up = _row(d, "up")
    assert up["a"] == {"passed": 0, "n": 4} and up["b"] == {"passed": 4, "n": 4}
    assert up["change"] == "gained" and up["difference"] == 1.0
    # Hypergeometric with margins 4/8: two tables as extreme, each 1/70.
    assert math.isclose(up["p_value"], 2 / 70)  # type: ignore[arg-type]
    down = _row(d, "down")
    assert down["change"] == "lost" and down["difference"] == -0.75
    half = _row(d, "half")
    # 3/4 vs 1/4: P(3) = P(1) = 16/70, P(4) = P(0) = 1/70, all <= P(observed).
    assert half["change"] == "lost" and math.isclose(half["p_value"], 34 / 70)  # type: ignore[arg-type]
    same = _row(d, "same")
    assert same["change"] == "same" and same["p_value"] == 1.0
    assert _row(d, "gone")["change"] == "only_a" and _row(d, "gone")["b"] is None
    assert _row(d, "new")["change"] == "only_b" and _row(d, "new")["p_value"] is None
    assert d["changes"] == {
        "gained": 1,
        "lost": 2,
        "better": 0,
        "worse": 0,
        "same": 1,
        "only_a": 1,
        "only_b": 1,
    }
    assert d["n_changed"] == 5
    assert d["a"] == {
        "label": "old",
        "n_tasks": 5,
        "passed": 10,
        "n": 18,
        "variant": "base",
        "scope": "base variant",
    }
    # Flips first (lost, larger change first), then gained, then the rest by id.
    assert [r["task_id"] for r in d["tasks"]] == ["down", "half", "up", "gone", "new", "same"]  # type: ignore[index, union-attr]


def test_comparison_is_the_paired_comparison_over_shared_tasks() -> None:
    a = _table({f"t{i}": (i % 3, 3) for i in range(12)})
    b = _table({f"t{i}": ((i + 1) % 4 if i % 4 else 3, 3) for i in range(12)})
    d = run_diff(a, b, label_a="A", label_b="B")
    direct = compare(a, b, label_a="A", label_b="B").to_dict()
    assert d["comparison"] == direct
    assert d["verdict"] == direct["verdict"] and d["reason"] is None


def test_variant_scope_held_out_and_infra_errors() -> None:
    base = [Trial(task_id="t", trial=k, success=True) for k in range(2)]
    para = [Trial(task_id="t", trial=k, success=False, variant="paraphrase") for k in range(2)]
    held = [Trial(task_id="secret", trial=0, success=True, split="heldout")]
    infra = [
        Trial(task_id="u", trial=0, success=True, status="error", error="boom", error_kind="infra")
    ]
    a = TrialTable.from_trials(base + para + held + infra)
    b = TrialTable.from_trials(base + para + infra)
    d = run_diff(a, b)
    assert {r["task_id"] for r in d["tasks"]} == {"t", "u"}  # type: ignore[union-attr]
    assert _row(d, "t")["a"] == {"passed": 2, "n": 2}
    assert _row(d, "u")["a"] == {"passed": 0, "n": 1}  # an infra error is a failure
    only_para = run_diff(a, b, variant="paraphrase")
    assert _row(only_para, "t")["b"] == {"passed": 0, "n": 2}


@pytest.mark.parametrize("variant", ["base", "nonexistent"])
def test_no_comparison_says_why(variant: str) -> None:
    a = _table({"x": (1, 2)})
    b = _table({"y": (1, 2)})
    d = run_diff(a, b, label_a="A", label_b="B", variant=variant)
    assert d["comparison"] is None and d["verdict"] is None
    assert d["reason"]
    if variant == "base":
        assert "no task in common" in d["reason"]
    else:
        assert "no trial of variant 'nonexistent'" in d["reason"]


def test_a_side_with_no_base_trial_is_read_whole_as_compare_reads_it() -> None:
    # A run of paraphrases only: the diff kept the base variant alone and gave "A has no
    # trial of variant 'base'" where `compare` compares all its trials, with a warning.
    a = _table({f"t{i}": (i % 3, 3) for i in range(8)}, variant="paraphrase:1")
    b = _table({f"t{i}": ((i + 1) % 4, 3) for i in range(8)})  # base variant
    d = run_diff(a, b, label_a="A", label_b="B")
    direct = compare(a, b, label_a="A", label_b="B")
    assert d["comparison"] == direct.to_dict() and d["reason"] is None
    assert d["variant"] is None
    assert (d["a"]["variant"], d["a"]["scope"]) == (None, "all its variants (paraphrase:1)")
    assert (d["b"]["variant"], d["b"]["scope"]) == ("base", "base variant")
    assert d["a"]["n"] == 24 and _row(d, "t2")["a"] == {"passed": 2, "n": 3}
    (warning,) = direct.scope_warnings
    assert warning.startswith("A (A) has no base-variant trial: the comparison reads all its")
    assert d["notes"][0] == warning
    # A variant named is that variant alone: B has none of it.
    strict = run_diff(a, b, label_a="A", label_b="B", variant="base")
    assert strict["comparison"] is None
    assert strict["reason"] == "A has no trial of variant 'base'"
    assert len(strict["notes"]) == 1
