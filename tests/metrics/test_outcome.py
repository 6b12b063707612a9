from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from agentgauge.metrics import outcome_metrics


def test_success_rate_se_consistency_flaky_by_hand() -> None:
    # p = [4/4, 3/4, 0/4, 2/4] = [1, .75, 0, .5]; mean = 2.25/4 = .5625
    # deviations .4375 .1875 -.5625 -.0625; squares .19140625 .03515625 .31640625 .00390625
    # sum .546875; var(ddof=1) = .18229167; sd = .42695628; se = sd/√4 = .21347814
    # consistency (2p-1)²: 1, .25, 1, 0 -> mean .5625; flaky: 0 < c < n -> b, d
    m = outcome_metrics([4, 4, 4, 4], [4, 3, 0, 2], task_ids=["a", "b", "c", "d"], ks=(1, 2))
    assert m.success_rate == pytest.approx(0.5625)
    assert m.se == pytest.approx(math.sqrt(0.546875 / 3) / 2)
    assert m.outcome_consistency == pytest.approx(0.5625)
    assert m.flaky_tasks == ["b", "d"]
    assert (m.n_tasks, m.n_trials, m.n_successes, m.n_clusters) == (4, 16, 9, 4)
    assert m.cluster_unit == "task" and m.se_clustered is None
    # pass^2 per task: C(4,2)/C(4,2)=1, C(3,2)/6=.5, 0, C(2,2)/6=1/6 -> mean (1+.5+1/6)/4 = .416667
    assert m.pass_hat_k[2].value == pytest.approx((1 + 0.5 + 1 / 6) / 4)
    # pass@2 per task: 1, 1 (1 failure < 2), 0, 1 - C(2,2)/6 = 5/6 -> mean (2 + 5/6)/4 = .708333
    assert m.pass_at_k[2].value == pytest.approx((2 + 5 / 6) / 4)
    assert m.pass_at_k[1].value == pytest.approx(0.5625) == m.pass_hat_k[1].value
    # SE of pass^2 across tasks: values 1, .5, 0, 1/6
    assert m.pass_hat_k[2].se == pytest.approx(np.std([1, 0.5, 0, 1 / 6], ddof=1) / 2)


def test_consistency_at_three_quarters() -> None:
    # p = .75: (2·.75 - 1)² = .5² = .25
    assert outcome_metrics([4], [3]).outcome_consistency == pytest.approx(0.25)
    assert outcome_metrics([8], [6]).outcome_consistency == pytest.approx(0.25)


def test_tasks_weigh_equally_whatever_their_trials() -> None:
    # task a: 1 of 10, task b: 2 of 2 -> (.1 + 1)/2 = .55 (pooled would be 3/12 = .25)
    assert outcome_metrics([10, 2], [1, 2]).success_rate == pytest.approx(0.55)


def test_task_averages_are_the_exact_mean_rounded_once() -> None:
    # 6 tasks × 3 trials, successes 1,1,1,2,2,2: 9 of 18, exactly 0.5. The floats
    # 1/3 and 2/3 averaged gave 0.49999999999999994, and a gate `min: 0.5` failed.
    m = outcome_metrics([3] * 6, [1, 1, 1, 2, 2, 2], ks=(1, 2))
    assert m.success_rate == 0.5 == m.pass_at_k[1].value == m.pass_hat_k[1].value
    # pass@2 per task: 1 − C(2,2)/C(3,2) = 2/3 (c=1), 1 − 0 = 1 (c=2): mean 5/6;
    # pass^2: 0 (c=1), C(2,2)/3 = 1/3 (c=2): mean 1/6; consistency (2p − 1)² = 1/9 each.
    assert m.pass_at_k[2].value == 5 / 6 and m.pass_hat_k[2].value == 1 / 6
    assert m.outcome_consistency == 1 / 9
    # Tasks of 3 and 5 trials: (1/3 + 2/3 + 3/5 + 4/5 + 3/5) / 5 = (1 + 2) / 5 = 0.6
    # (the floats averaged to 0.6000000000000001, and `max: 0.6` failed).
    assert outcome_metrics([3, 3, 5, 5, 5], [1, 2, 3, 4, 3]).success_rate == 0.6


@given(st.lists(st.tuples(st.integers(1, 12), st.integers(0, 12)), min_size=1, max_size=40))
def test_success_rate_is_the_correctly_rounded_exact_mean(cells: list[tuple[int, int]]) -> None:
    n = [a for a, _ in cells]
    c = [min(a, b) for a, b in cells]
    exact = sum((Fraction(ci, ni) for ni, ci in zip(n, c, strict=True)), Fraction(0)) / len(n)
    m = outcome_metrics(n, c, ks=(1,))
    assert m.success_rate == float(exact) == m.pass_at_k[1].value == m.pass_hat_k[1].value


def test_wilson_when_one_trial_per_task_and_no_families() -> None:
    m = outcome_metrics([1] * 10, [1] * 7 + [0] * 3)
    assert m.ci_method == "wilson"
    assert m.ci95 == pytest.approx(proportion_confint(7, 10, method="wilson"))


def test_design_effect_wilson_below_200_clusters_normal_from_200() -> None:
    rng = np.random.default_rng(0)
    c = rng.integers(0, 5, size=199)
    small = outcome_metrics(np.full(199, 4), c)
    assert small.ci_method == "wilson_design_effect"
    c200 = np.append(c, 3)
    big = outcome_metrics(np.full(200, 4), c200)
    assert big.ci_method == "normal"
    assert big.success_rate is not None and big.se is not None and big.ci95 is not None
    assert big.ci95 == pytest.approx(
        (big.success_rate - 1.959964 * big.se, big.success_rate + 1.959964 * big.se), abs=1e-6
    )
    # one trial per task but with families: no longer Wilson (trials are clustered)
    fam = outcome_metrics([1] * 20, [1, 0] * 10, clusters=np.arange(20) // 4)
    assert fam.ci_method == "wilson_design_effect" and fam.n_clusters == 5


def test_normal_interval_uses_clustered_se_with_families() -> None:
    rng = np.random.default_rng(1)
    clusters = np.arange(600) // 2  # 300 families of 2 tasks
    c = rng.integers(0, 4, size=600)
    m = outcome_metrics(np.full(600, 3), c, clusters=clusters)
    assert m.ci_method == "normal" and m.n_clusters == 300 and m.cluster_unit == "family"
    assert m.se_clustered is not None and m.success_rate is not None and m.ci95 is not None
    half = (m.ci95[1] - m.ci95[0]) / 2
    assert half == pytest.approx(1.959964 * m.se_clustered, rel=1e-6)


def test_interval_is_deterministic() -> None:
    # Formerly seeded bootstrap; the design-effect Wilson has no randomness to seed.
    a = outcome_metrics([4] * 30, list(range(5)) * 6)
    b = outcome_metrics([4] * 30, list(range(5)) * 6)
    assert a.ci95 == b.ci95


def test_k_above_some_tasks_trials_is_null_with_reason() -> None:
    m = outcome_metrics([3, 4], [3, 2], ks=(1, 3, 4))
    assert m.pass_hat_k[3].value is not None
    assert m.pass_hat_k[4].value is None and m.pass_at_k[4].value is None
    assert m.reasons["pass_hat_k.4"] == "k=4 exceeds the trials of 1 of 2 tasks (fewest: 3)"


def test_consistency_needs_two_trials() -> None:
    m = outcome_metrics([1, 4], [1, 2])
    assert m.outcome_consistency is None
    assert "1 task has 1" in m.reasons["outcome_consistency"]


def test_single_task_has_no_se_and_one_cluster_no_interval() -> None:
    m = outcome_metrics([4], [3])
    assert m.se is None and m.ci95 is None and "se" in m.reasons and "ci95" in m.reasons


def test_rejects_bad_counts() -> None:
    with pytest.raises(ValueError):
        outcome_metrics([2], [3])
    with pytest.raises(ValueError):
        outcome_metrics([0], [0])


def test_every_task_average_is_the_exact_one() -> None:
    """The frontier's rate, a grader's pass rate and the null agent's score averaged
    the floats c/n as the success rate once did: 9 of 18 read 0.49999999999999994."""
    from agentgauge.metrics.frontier import frontier_from_table
    from agentgauge.metrics.grades import grade_summary
    from agentgauge.metrics.validity import null_agent_check
    from agentgauge.schema import Grade
    from agentgauge.table import TrialTable

    passes = {f"t{i}": c for i, c in enumerate((1, 1, 1, 2, 2, 2))}
    rows = [(t, j < c) for t, c in passes.items() for j in range(3)]
    table = TrialTable.from_columns(
        len(rows),
        task_id=np.array([t for t, _ in rows], dtype=object),
        success=np.array([ok for _, ok in rows]),
        cost_usd=np.zeros(len(rows)),
    )
    assert float(np.mean([c / 3 for c in passes.values()])) != 0.5  # the float mean
    (point,) = frontier_from_table(table).frontier
    assert point.success_rate == 0.5
    assert null_agent_check(table).score == 0.5
    grades = [[Grade(grader="state", passed=ok, score=float(ok))] for _, ok in rows]
    summary = grade_summary(grades, "state", task_ids=[t for t, _ in rows])
    assert summary.pass_rate == 0.5


@given(
    st.lists(st.tuples(st.integers(1, 12), st.integers(0, 12)), max_size=50),
    st.sampled_from([1, 10**6]),
)
def test_pairs_count_each_distinct_pair_as_unique_does(
    cells: list[tuple[int, int]], scale: int
) -> None:
    # Small counts go through a counting pass, large ones (scale) through np.unique.
    from agentgauge.metrics.outcome import _pairs

    n = np.array([a * scale for a, _ in cells], dtype=np.int64)
    c = np.array([min(a, b) * scale for a, b in cells], dtype=np.int64)
    width = int(c.max(initial=0)) + 1
    codes, counts = np.unique(n * width + c, return_counts=True)
    want = [(*divmod(x, width), m) for x, m in zip(codes.tolist(), counts.tolist(), strict=True)]
    assert _pairs(n, c) == want
