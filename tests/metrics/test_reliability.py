"""Reliability metrics (SPEC 5.2) on hand-built transcripts, values worked out in comments."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.distance import jensenshannon

from agentgauge.metrics.reliability import (
    action_sequences,
    jsd_base2,
    levenshtein,
    reliability,
    reliability_from_trials,
    resource_consistency,
    trajectory_consistency_dist,
    trajectory_consistency_seq,
)
from agentgauge.schema import Trial
from agentgauge.table import TrialTable

# Task t1: three successful runs and one failure (ignored); t2: two successes;
# t3: one success (no pair, left out).
S, G, U = "search", "get", "update"
TASKS = ["t1", "t1", "t1", "t1", "t2", "t2", "t3"]
OK = [True, True, True, False, True, True, True]
ACTIONS: list[tuple[str, ...]] = [
    (S, G, U),  # counts get/search/update = 1,1,1 → f1 = (1/3, 1/3, 1/3)
    (S, G, G, U),  # 2,1,1 → f2 = (1/2, 1/4, 1/4)
    (S, U),  # 0,1,1 → f3 = (0, 1/2, 1/2)
    (U, U, U, U, U),  # failed: not counted
    ("a", "b"),
    ("b", "a"),
    ("x",),
]


def test_jsd_by_hand() -> None:
    # JSD(f1, f2): M = (5/12, 7/24, 7/24)
    #   H(M) = 5/12·log2(12/5) + 2·7/24·log2(24/7) = 0.526264 + 1.036938 = 1.563202
    #   H(f1) = log2 3 = 1.584963, H(f2) = 1.5 → JSD = 1.563202 − 1.542481 = 0.020721
    assert jsd_base2([1, 1, 1], [2, 1, 1]) == pytest.approx(0.020721, abs=1e-6)
    # JSD(f1, f3): M = (1/6, 5/12, 5/12), H(M) = 0.430827 + 1.052528 = 1.483356
    #   − (1.584963 + 1)/2 = 0.190875
    assert jsd_base2([1, 1, 1], [0, 1, 1]) == pytest.approx(0.190875, abs=1e-6)
    # JSD(f2, f3): M = (1/4, 3/8, 3/8), H(M) = 0.5 + 0.75·log2(8/3) = 1.561278 − 1.25 = 0.311278
    assert jsd_base2([2, 1, 1], [0, 1, 1]) == pytest.approx(0.311278, abs=1e-6)
    assert jsd_base2([1, 0], [0, 1]) == 1.0  # disjoint supports: one full bit
    assert jsd_base2([0, 0], [0, 0]) == 0.0  # two empty runs are alike
    assert jsd_base2([0, 0], [3, 1]) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=1, max_size=8))
def test_jsd_matches_scipy(pairs: list[tuple[int, int]]) -> None:
    p = np.array([a for a, _ in pairs], dtype=float)
    q = np.array([b for _, b in pairs], dtype=float)
    if p.sum() == 0 or q.sum() == 0:
        return
    # scipy returns the distance, the square root of the divergence.
    assert jsd_base2(p, q) == pytest.approx(jensenshannon(p, q, base=2) ** 2, abs=1e-9)
    assert 0.0 <= jsd_base2(p, q) <= 1.0
    assert jsd_base2(p, q) == pytest.approx(jsd_base2(q, p))


def test_trajectory_consistency_dist_by_hand() -> None:
    # t1: 1 − mean(0.020721, 0.190875, 0.311278) = 1 − 0.174291 = 0.825709
    # t2: (a,b) and (b,a) have equal frequencies → JSD 0 → 1.0
    # mean over the two tasks = (0.825709 + 1)/2 = 0.912855
    est = trajectory_consistency_dist(TASKS, OK, ACTIONS)
    assert est.n == 2
    assert est.value == pytest.approx(0.912855, abs=1e-6)
    # SE over 2 tasks: sd(0.825709, 1) = 0.174291/√2 = 0.123243, /√2 = 0.087146
    assert est.se == pytest.approx(0.087146, abs=1e-6)


def test_levenshtein_by_hand() -> None:
    assert levenshtein((S, G, U), (S, G, G, U)) == 1  # one insertion
    assert levenshtein((S, G, U), (S, U)) == 1  # one deletion
    assert levenshtein((S, G, G, U), (S, U)) == 2  # two deletions
    assert levenshtein(("a", "b"), ("b", "a")) == 2  # two substitutions
    assert levenshtein("kitten", "sitting") == 3  # the classic example
    assert levenshtein((), ("a",)) == 1


def test_trajectory_consistency_seq_by_hand() -> None:
    # t1 pairs: 1 − 1/4 = 0.75; 1 − 1/3 = 0.666667; 1 − 2/4 = 0.5 → mean 0.638889
    # t2: 1 − 2/2 = 0 (same tools, opposite order: the sequence form sees it)
    # mean = (0.638889 + 0)/2 = 0.319444
    est = trajectory_consistency_seq(TASKS, OK, ACTIONS)
    assert est.value == pytest.approx(0.319444, abs=1e-6)
    assert est.n == 2


def test_trajectory_consistency_needs_two_successes() -> None:
    est = trajectory_consistency_dist(["t"], [True], [("a",)])
    assert est.value is None and est.reason == "no task has two successful runs"
    assert trajectory_consistency_seq(["t", "t"], [True, True], [(), ()]).value == 1.0


def _resource_table() -> TrialTable:
    return TrialTable.from_columns(
        8,
        task_id=["t1", "t1", "t1", "t2", "t2", "t3", "t3", "t3"],
        success=[True] * 8,
        cost_usd=[1, 2, 3, 2, 2, 0, 5, np.nan],
        latency_s=[10, 10, 10, 4, 8, np.nan, np.nan, np.nan],
        tool_calls=[3, 4, 2, 2, 2, 0, 0, 0],
        infra_error=[False] * 7 + [True],
    )


def test_resource_consistency_by_hand() -> None:
    # cost: t1 (1,2,3): mean 2, sd 1 → CV 0.5; t2 (2,2): CV 0; t3 (0,5): one non-zero → out
    #   mean CV = 0.25
    # latency: t1 (10,10,10): 0; t2 (4,8): mean 6, sd √8 = 2.828427 → 0.471405; mean 0.235702
    # tokens: none recorded → out.  tool calls: t1 (3,4,2): mean 3, sd 1 → 1/3; t2: 0 → 0.166667
    # overall: exp(−(0.25 + 0.235702 + 0.166667)/3) = exp(−0.217456) = 0.818731·0.982696 = 0.804563
    rc = resource_consistency(_resource_table())
    assert rc.mean_cv["cost_usd"] == pytest.approx(0.25)
    assert rc.mean_cv["latency_s"] == pytest.approx(0.235702, abs=1e-6)
    assert rc.mean_cv["tokens"] is None and rc.per_resource["tokens"] is None
    assert rc.mean_cv["tool_calls"] == pytest.approx(1 / 6)
    assert rc.n_tasks == {"cost_usd": 2, "latency_s": 2, "tokens": 0, "tool_calls": 2}
    assert rc.value == pytest.approx(0.804563, abs=1e-6)
    assert rc.per_resource["cost_usd"] == pytest.approx(math.exp(-0.25))


def test_resource_consistency_of_huge_finite_values() -> None:
    # $1e308 and $1.7e308 in each task: their sum passes the largest float and the CV was
    # NaN (then `metrics --json` failed). The CV does not depend on the unit: that of
    # (1, 1.7) is sd/mean = (0.7/√2)/1.35 = 0.494975/1.35 = 0.366648, exp(−CV) = 0.693054.
    t = TrialTable.from_columns(
        4,
        task_id=["a", "a", "b", "b"],
        success=[True, False, True, True],
        cost_usd=[1e308, 1.7e308, 1.7e308, 1e308],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rc = resource_consistency(t)
    small = np.array([1.0, 1.7])
    assert rc.mean_cv["cost_usd"] == pytest.approx(small.std(ddof=1) / small.mean(), rel=1e-12)
    assert rc.mean_cv["cost_usd"] == pytest.approx(0.366648, abs=1e-6)
    assert rc.per_resource["cost_usd"] == pytest.approx(0.693054, abs=1e-6)


def test_resource_consistency_none_without_data() -> None:
    t = TrialTable.from_columns(2, task_id=["a", "a"], success=[True, False])
    rc = resource_consistency(t)
    assert rc.value is None and rc.reason


def _trial(task: str, ok: bool, calls: list[str], **kw: object) -> Trial:
    events = [{"type": "tool_call", "name": n, "arguments": {}} for n in calls]
    return Trial.model_validate({"task_id": task, "success": ok, "events": events, **kw})


def test_reliability_from_trials_end_to_end() -> None:
    trials = [_trial(t, ok, list(a)) for t, ok, a in zip(TASKS, OK, ACTIONS, strict=True)]
    # Perturbed runs must not blur consistency: a paraphrase run with odd actions.
    trials.append(_trial("t1", True, ["zzz"], variant="paraphrase:1"))
    assert action_sequences(trials[:2]) == [(S, G, U), (S, G, G, U)]
    rel = reliability_from_trials(trials)
    assert rel.trajectory_consistency_dist.value == pytest.approx(0.912855, abs=1e-6)
    assert rel.trajectory_consistency_seq.value == pytest.approx(0.319444, abs=1e-6)
    # t1 base rate 3/4, paraphrase 1/1 → min(1/0.75, 1) = 1
    assert rel.prompt_robustness.value == 1.0
    assert rel.fault_robustness.value is None and rel.fault_robustness.reason
    assert rel.safety is None  # nothing graded for minefields
    d = rel.to_dict()
    assert set(d) >= {"trajectory_consistency_dist", "prompt_robustness", "safety"}


def test_reliability_checks_action_length() -> None:
    with pytest.raises(ValueError, match="one sequence per table row"):
        reliability(_resource_table(), [()])


def test_distributional_similarity_is_the_same_whatever_the_hash_seed() -> None:
    """Its sums run over the action names in a fixed order: a set's order follows
    PYTHONHASHSEED, and a sum in another order can differ in its last bit, so the
    same trials gave another SE from one process to the next."""
    import os
    import subprocess
    import sys

    code = (
        "from agentgauge.metrics.reliability import _dist_similarity as d\n"
        "x = ('get_order', 'refund', 'search', 'get_user', 'search', 'cancel_order')\n"
        "y = ('search', 'get_user', 'refund', 'get_order', 'get_order', 'exchange', 'x')\n"
        "print(repr(d(x, y)), repr(d(y, x)))\n"
    )
    out = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        out.add(run.stdout)
    assert len(out) == 1, out
    a, b = out.pop().split()
    assert a == b  # symmetric to the last bit


def test_an_infra_error_recorded_as_a_success_is_a_failure_in_every_figure() -> None:
    """Task A: (a, b), (a, b), (b, a) succeed, (z) fails, and an infra error whose record
    says success took (c); task B: (a) and () succeed. The infra error is a failure, as
    in the success rate: not a successful path, nor a success the confidence foresaw."""
    infra = {"status": "error", "error_kind": "infra", "error": "boom"}
    trials = [
        _trial("A", True, ["a", "b"], confidence=0.95),
        _trial("A", True, ["a", "b"], confidence=0.85),
        _trial("A", True, ["b", "a"], confidence=0.15),
        _trial("A", False, ["z"], confidence=0.95),
        _trial("A", True, ["c"], confidence=0.9, **infra),
        _trial("B", True, ["a"]),
        # A transcript without tool calls (its opening message), not a missing one.
        Trial.model_validate(
            {"task_id": "B", "success": True,
             "events": [{"type": "message", "role": "user", "content": "hi"}]}
        ),
    ]  # fmt: skip
    rel = reliability_from_trials(trials)
    # dist: A's three successes use a and b once each → 1; B: (a) vs () → 0; mean 0.5
    # (Read as a success, the infra error's (c) shares nothing with A's three paths:
    # A = (3·1 + 3·0)/6 = 0.5 and the mean 0.25.)
    assert rel.trajectory_consistency_dist.value == pytest.approx(0.5)
    # seq: A pairs 1, 1 − 2/2 = 0, 0 → 1/3; B 0 → 1/6
    assert rel.trajectory_consistency_seq.value == pytest.approx(1 / 6)
    p = rel.predictability
    # Confidences 0.95 ✓, 0.85 ✓, 0.15 ✓, 0.95 ✗, 0.9 ✗ (the infra error). Bin 9 holds
    # 0.95, 0.95, 0.9: |1 − 2.8| = 1.8; bin 8: |1 − 0.85| = 0.15; bin 1: |1 − 0.15| = 0.85
    # → ECE = 2.8/5 = 0.56, calibration 0.44.
    assert p.n_trials == 5
    assert p.calibration == pytest.approx(0.44)
    # Brier: (0.05² + 0.15² + 0.85² + 0.95² + 0.9²)/5 = 2.46/5 = 0.492
    assert p.brier == pytest.approx(0.492)
    # AUROC: successes {0.95, 0.85, 0.15} vs failures {0.95, 0.9}: 0.95 ties one and
    # beats one → 1.5; the others beat none → 1.5/6 = 0.25
    assert p.auroc == pytest.approx(0.25)


def test_an_se_that_one_task_cannot_give_is_null_with_its_reason() -> None:
    """Task A alone has two successful runs: consistency 1 with no SE, and robustness
    over the one task too; each SE is null and null_reasons says why."""
    trials = [
        _trial("A", True, ["a"]),
        _trial("A", True, ["a"]),
        _trial("A", True, ["a"], variant="paraphrase:1"),
        _trial("A", False, ["a"], variant="paraphrase:1"),
    ]
    d = reliability_from_trials(trials).to_dict()
    assert d["trajectory_consistency_dist"] == {"value": 1.0, "se": None, "n": 1}
    assert d["prompt_robustness"]["value"] == 0.5 and d["prompt_robustness"]["se"] is None
    one = "one task: no spread to estimate"
    for name in ("trajectory_consistency_dist", "trajectory_consistency_seq", "prompt_robustness"):
        assert d["null_reasons"][f"{name}.se"] == one
    assert "fault_robustness.se" not in d["null_reasons"]  # no value: its own reason
