"""Cost frontier (SPEC 5.3): dominance worked out by hand."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.metrics.frontier import frontier_from_table, pareto_frontier
from agentgauge.table import TrialTable


def test_frontier_by_hand() -> None:
    # cheap   (0.01, 0.40)  frontier: nothing cheaper
    # mid     (0.05, 0.60)  frontier
    # waste   (0.06, 0.55)  dominated by mid (cheaper and more accurate)
    # tie     (0.05, 0.50)  dominated by mid (as cheap, less accurate)
    # best    (0.20, 0.80)  frontier: most accurate
    # pricey  (0.30, 0.80)  dominated by best (as accurate, dearer)
    # unknown (nan, 0.9)    left out, listed as unpriced
    labels = ["cheap", "mid", "waste", "tie", "best", "pricey", "unknown"]
    cost = [0.01, 0.05, 0.06, 0.05, 0.20, 0.30, np.nan]
    rate = [0.40, 0.60, 0.55, 0.50, 0.80, 0.80, 0.90]
    f = pareto_frontier(labels, cost, rate)
    assert [p.label for p in f.frontier] == ["cheap", "mid", "best"]
    by = {p.label: who for p, who in f.dominated}
    assert by == {"tie": ["mid"], "waste": ["mid"], "pricey": ["best"]}
    assert [p.label for p in f.unpriced] == ["unknown"]
    d = f.to_dict()
    assert d["dominated"][0]["dominated_by"] == ["mid"]


def test_dominators_listed_cheapest_first_and_ties_kept() -> None:
    f = pareto_frontier(["a", "b", "c", "twin"], [1.0, 2.0, 3.0, 1.0], [0.9, 0.9, 0.5, 0.9])
    assert [p.label for p in f.frontier] == ["a", "twin"]  # identical points both stay
    # c (3.0, 0.5) is dominated by b (2.0, 0.9) as well as by the two cheapest.
    assert dict((p.label, w) for p, w in f.dominated) == {
        "b": ["a", "twin"],
        "c": ["a", "twin", "b"],
    }


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=12))
def test_frontier_is_a_staircase(points: list[tuple[int, int]]) -> None:
    labels = [f"p{i}" for i in range(len(points))]
    cost = [float(c) for c, _ in points]
    rate = [r / 5 for _, r in points]
    f = pareto_frontier(labels, cost, rate)
    assert len(f.frontier) + len(f.dominated) == len(points)
    costs = [p.cost_per_trial for p in f.frontier]
    rates = [p.success_rate for p in f.frontier]
    assert costs == sorted(costs)  # type: ignore[type-var]
    # Along the staircase, paying more must buy more (or the same point twice).
    steps = list(zip(costs, rates, strict=True))
    for (c0, r0), (c1, r1) in pairwise(steps):
        assert (c1, r1) == (c0, r0) or (c1 > c0 and r1 > r0)  # type: ignore[operator]


def test_frontier_from_table() -> None:
    t = TrialTable.from_columns(
        6,
        task_id=["a", "a", "b", "a", "b", "b"],
        success=[True, False, True, True, True, False],
        agent=["x", "x", "x", "y", "y", "y"],
        cost_usd=[0.1, 0.1, 0.4, 0.1, 0.1, 0.1],
    )
    # x: task a 0.5, task b 1 → 0.75; cost (0.1+0.1+0.4)/3 = 0.2
    # y: a 1, b 0.5 → 0.75; cost 0.1 → y dominates x
    f = frontier_from_table(t, by=["agent"])
    assert [p.label for p in f.frontier] == ["y"]
    assert f.dominated[0][0].cost_per_trial == pytest.approx(0.2)
    assert f.dominated[0][1] == ["y"]


def test_frontier_of_huge_finite_costs() -> None:
    # Two trials at $1e308 and $1.7e308: the mean, 1.35e308, is a float although the sum
    # is not. The point went to "unpriced" with 0 trials unpriced.
    t = TrialTable.from_columns(
        2, task_id=["a", "b"], success=[True, False], agent=["x", "x"], cost_usd=[1e308, 1.7e308]
    )
    f = frontier_from_table(t, by=["agent"])
    assert f.unpriced == []
    assert f.frontier[0].cost_per_trial == pytest.approx(1.35e308)
