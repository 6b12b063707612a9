"""Fisher's exact test of two k/n counts: hand-computed tables, then scipy."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest, fisher_exact

from agentgauge.stats.exact import binomial_half_two_sided, fisher_exact_2x2


def test_hand_computed_tables() -> None:
    # 0/4 vs 4/4: margins 4 of 8 passed; P(x) = C(4,x)C(4,4-x)/C(8,4) = 1, 16, 36, 16, 1 over 70;
    # the tables as extreme as x = 0 are x = 0 and x = 4: 2/70.
    assert fisher_exact_2x2(0, 4, 4, 4) == 2 / 70
    # 3/4 vs 1/4: P(3) = P(1) = 16/70 (ties, counted both), P(0) = P(4) = 1/70: 34/70.
    assert fisher_exact_2x2(3, 4, 1, 4) == 34 / 70
    # 2/4 vs 2/4 is the mode: every table is at most as likely, p = 1.
    assert fisher_exact_2x2(2, 4, 2, 4) == 1.0
    # 1/3 vs 3/3: m = 4, x in {1, 2, 3}: C(3,x)C(3,4-x) = 3, 9, 3 over 15; p = 6/15.
    assert fisher_exact_2x2(1, 3, 3, 3) == 6 / 15


def test_a_zero_margin_gives_one() -> None:
    assert fisher_exact_2x2(0, 4, 0, 3) == 1.0  # nobody passed
    assert fisher_exact_2x2(5, 5, 2, 2) == 1.0  # everybody passed
    assert fisher_exact_2x2(0, 0, 1, 3) == 1.0  # a side with no trial


def test_symmetric_in_the_two_sides_and_in_pass_and_fail() -> None:
    for c1, n1, c2, n2 in ((1, 5, 4, 6), (0, 7, 3, 3), (2, 9, 8, 10)):
        p = fisher_exact_2x2(c1, n1, c2, n2)
        assert fisher_exact_2x2(c2, n2, c1, n1) == p
        assert fisher_exact_2x2(n1 - c1, n1, n2 - c2, n2) == p


@pytest.mark.parametrize("counts", [(-1, 4, 0, 4), (5, 4, 0, 4), (0, 4, 5, 4)])
def test_impossible_counts_are_refused(counts: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError, match="0 <= c <= n"):
        fisher_exact_2x2(*counts)


@given(st.integers(0, 30), st.integers(0, 30), st.data())
def test_agrees_with_scipy(n1: int, n2: int, data: st.DataObject) -> None:
    c1 = data.draw(st.integers(0, n1))
    c2 = data.draw(st.integers(0, n2))
    expected = float(fisher_exact([[c1, n1 - c1], [c2, n2 - c2]], alternative="two-sided")[1])
    # scipy sums floating-point hypergeometric probabilities; the exact sum differs from
    # it in the last bits at most.
    assert math.isclose(fisher_exact_2x2(c1, n1, c2, n2), expected, rel_tol=1e-12)


def test_agrees_with_scipy_on_large_counts() -> None:
    for c1, n1, c2, n2 in ((30, 100, 50, 100), (400, 1000, 450, 1000), (5, 5000, 20, 5000)):
        expected = float(fisher_exact([[c1, n1 - c1], [c2, n2 - c2]])[1])
        assert math.isclose(fisher_exact_2x2(c1, n1, c2, n2), expected, rel_tol=1e-12)


def test_binomial_at_one_half_by_hand() -> None:
    # 2 of 11: 2·(C(11,0) + C(11,1) + C(11,2))/2^11 = 2·67/2048 = 134/2048.
    assert binomial_half_two_sided(2, 11) == 134 / 2048
    assert binomial_half_two_sided(9, 11) == 134 / 2048  # the mirror image
    # 0 of 5: 2/32; 5 of 10 is the mode: p = 1 (the doubled tail is capped).
    assert binomial_half_two_sided(0, 5) == 2 / 32
    assert binomial_half_two_sided(5, 10) == 1.0
    assert binomial_half_two_sided(0, 0) == 1.0
    with pytest.raises(ValueError, match="0 <= k <= n"):
        binomial_half_two_sided(4, 3)


@given(st.integers(0, 400), st.data())
def test_binomial_agrees_with_scipy(n: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(0, n))
    expected = 1.0 if n == 0 else min(float(binomtest(k, n, 0.5).pvalue), 1.0)
    # scipy's floating-point tail drifts by a few parts in 1e14 at p ~ 1e-39 (n = 297).
    assert math.isclose(binomial_half_two_sided(k, n), expected, rel_tol=1e-12)
