"""Exact tests of counts in exact integer arithmetic: Fisher's test of two k/n counts
and the two-sided binomial test at ½ (McNemar's exact test).

`fisher_exact_2x2` is the two-sided test ``scipy.stats.fisher_exact`` computes on
the table ``[[c1, n1 - c1], [c2, n2 - c2]]`` (Fisher 1935, *The Design of
Experiments*; Agresti 1992, "A survey of exact inference for contingency tables",
Statistical Science 7(1)), and `binomial_half_two_sided` the one
``scipy.stats.binomtest(k, n, 0.5)`` computes, both without importing
``scipy.stats``, which costs the viewer's diff page more than half a second on its
first visit. Sums of exact integers, divided once at the end, are correctly rounded.
"""

from __future__ import annotations

from math import comb

__all__ = ["binomial_half_two_sided", "fisher_exact_2x2", "sign_test_min_n"]


def fisher_exact_2x2(c1: int, n1: int, c2: int, n2: int) -> float:
    """Two-sided Fisher exact p of ``c1`` successes in ``n1`` trials against ``c2``
    in ``n2``.

    Given the margins, the successes of the first row follow the hypergeometric
    law P(x) = C(n1, x) · C(n2, m − x) / C(n1 + n2, m), with m = c1 + c2. The
    p-value is the sum of P(x) over every x with P(x) ≤ P(c1), the tables at
    least as extreme as the one observed. Each C(n1, x) · C(n2, m − x) is an exact
    integer, so equally likely tables (the mirror image of the observed one, for
    n1 = n2) are recognised as ties without a tolerance, and the one division
    at the end is correctly rounded. A margin of 0 gives p = 1, as in scipy.
    """
    if not (0 <= c1 <= n1 and 0 <= c2 <= n2):
        raise ValueError(f"counts must satisfy 0 <= c <= n, got {c1}/{n1} and {c2}/{n2}")
    m = c1 + c2
    lo, hi = max(0, m - n2), min(n1, m)
    weights = [comb(n1, x) * comb(n2, m - x) for x in range(lo, hi + 1)]
    observed = weights[c1 - lo]
    total = sum(weights)  # = C(n1 + n2, m) (Vandermonde)
    extreme = sum(w for w in weights if w <= observed)
    return min(extreme / total, 1.0)


def binomial_half_two_sided(k: int, n: int) -> float:
    """Two-sided exact binomial p of ``k`` successes in ``n`` trials against a
    success probability of ½.

    Bin(n, ½) is symmetric, so the outcomes at most as likely as k are those at
    least as far from n/2: p = min(1, 2 · Σ_{i ≤ min(k, n − k)} C(n, i) / 2ⁿ).
    With n = 0, p = 1. McNemar's exact test of discordant pairs is this test with
    k the pairs one way (McNemar 1947).
    """
    if not 0 <= k <= n:
        raise ValueError(f"counts must satisfy 0 <= k <= n, got {k}/{n}")
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(k, n - k) + 1))
    return min(tail / (1 << (n - 1)), 1.0)  # 2 · tail / 2ⁿ


def sign_test_min_n(alpha: float) -> int:
    """The fewest pairs with which the two-sided exact sign test can reach p ≤ ``alpha``.

    Its smallest p over n pairs is that of every pair moving the same way,
    ``binomial_half_two_sided(0, n)`` = 2 · (1/2)ⁿ, so this is the smallest n with
    2 · (1/2)ⁿ ≤ α: 6 at α = 0.05 (2 · 0.5⁶ = 0.03125), 5 at α = 0.1, 8 at α = 0.01
    (Conover 1999, *Practical Nonparametric Statistics*, 3rd ed., §3.4). With fewer,
    no exact test whose null is that each pair is equally likely to go either way
    (the sign test, the permutation test of the paired differences) can reach α:
    under that null the 2ⁿ sign patterns are equally likely, and the observed one
    and its mirror image are always among those at least as extreme. Powers of ½
    are exact in floating point, so α = 0.0625 gives 5.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    n = 1
    while 2.0 * 0.5**n > alpha:
        n += 1
    return n
