from __future__ import annotations

import math
import sys
from fractions import Fraction
from random import Random

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentgauge.metrics import cost_metrics, cost_of_pass
from agentgauge.metrics.cost import (
    _BAND_MIN,
    _BAND_SAMPLE,
    _BLOCK,
    SUM_OVERFLOW,
    CostMetrics,
    _banded_pair,
    _count_sum,
    _extracted_sum,
    _limb_sum,
    checked_cost_of_pass,
    exact_sum,
    quantiles,
    task_mean,
)

NAN = float("nan")


def arrays(**over: list[float]) -> dict[str, np.ndarray]:
    n = len(next(iter(over.values())))
    base = {
        name: np.full(n, NAN)
        for name in (
            "cost_usd",
            "judge_cost_usd",
            "latency_s",
            "input_tokens",
            "output_tokens",
            "tool_calls",
            "model_calls",
        )
    }
    base.update({k: np.asarray(v, dtype=float) for k, v in over.items()})
    return base


def test_cost_of_pass_examples() -> None:
    # $0.50 per trial at 40%: .50/.40 = $1.25 per success; $2.00 at 90%: 2/.9 = $2.22
    assert cost_of_pass(0.50, 0.40) == pytest.approx(1.25)
    assert cost_of_pass(2.00, 0.90) == pytest.approx(2.2222222)
    assert math.isinf(cost_of_pass(1.0, 0.0))


def test_per_trial_counts_failures_too() -> None:
    # 4 trials costing 1 + 0 + .5 + .5 = 2 -> $.50 per trial; at 40% -> $1.25 per success
    m = cost_metrics(success_rate=0.4, **arrays(cost_usd=[1, 0, 0.5, 0.5]))
    assert m.total == pytest.approx(2.0)
    assert m.per_trial == pytest.approx(0.5)
    assert m.cost_of_pass == pytest.approx(1.25)
    assert m.missing == 0 and not m.reasons


def test_unknown_price_is_never_free() -> None:
    m = cost_metrics(success_rate=0.5, **arrays(cost_usd=[1, NAN, 0.5]))
    assert m.per_trial is None and m.total is None and m.cost_of_pass is None
    assert m.missing == 1
    assert m.reasons["cost_of_pass"] == "price unknown for 1 of 3 trials"


def test_no_successes() -> None:
    m = cost_metrics(success_rate=0.0, **arrays(cost_usd=[1, 1]))
    assert m.per_trial == 1.0 and m.cost_of_pass is None
    assert m.reasons["cost_of_pass"] == "no successes"


def test_judge_cost_kept_apart() -> None:
    m = cost_metrics(
        success_rate=1.0, **arrays(cost_usd=[1, 1, 1, 1], judge_cost_usd=[0.1, NAN, 0.2, NAN])
    )
    assert m.judge_total == pytest.approx(0.3) and m.judge_n == 2  # over the trials judged
    assert m.per_trial == 1.0 and m.cost_of_pass == 1.0
    assert cost_metrics(success_rate=1.0, **arrays(cost_usd=[1.0])).judge_total is None
    # Without ``judged`` (a bare table: no grades) it cannot tell which trials a judge
    # graded: no count of unpriced ones, and no claim that none was.
    assert m.judge_missing is None and "judge_total" not in m.reasons


def _judge(costs: list[float], judged: list[bool]) -> CostMetrics:
    return cost_metrics(
        success_rate=1.0,
        **arrays(cost_usd=[1.0] * len(costs), judge_cost_usd=costs),
        judged=np.array(judged),
    )


def test_no_judge_is_not_applicable_not_unknown() -> None:
    # No grade names a judge model and no trial records a judge cost: no judge ran.
    m = _judge([NAN, NAN], [False, False])
    assert m.judge_total is None and m.judge_n == 0 and m.judge_missing == 0
    assert m.reasons["judge_total"] == "not applicable: no model judge graded these trials"


def test_a_judged_trial_without_a_cost_makes_the_judge_total_unknown() -> None:
    # Three trials a judge graded: $0.10, $0.20 and one whose judge price is unknown (its
    # grade names the judge, no cost recorded); a fourth no judge graded. The sum of the
    # two known, $0.30, was reported as the total over "2 judged trials".
    m = _judge([0.1, 0.2, NAN, NAN], [True, True, True, False])
    assert m.judge_total is None and m.judge_n == 3 and m.judge_missing == 1
    assert m.reasons["judge_total"] == "judge cost unknown for 1 of 3 judged trials"
    # Every judged trial priced: the sum over them, the unjudged one left out.
    m = _judge([0.1, 0.2, NAN], [True, True, False])
    assert m.judge_total == pytest.approx(0.3) and m.judge_n == 2 and m.judge_missing == 0
    assert "judge_total" not in m.reasons
    # A recorded judge cost counts whatever the grades say (an imported record).
    m = _judge([0.25, NAN], [False, False])
    assert m.judge_total == pytest.approx(0.25) and m.judge_n == 1 and m.judge_missing == 0


def test_latency_quantiles_and_tokens() -> None:
    # sorted [1, 2, 3, 4, 100]: p50 = 3; p95 at position .95·4 = 3.8 -> 4 + .8·96 = 80.8
    m = cost_metrics(
        success_rate=1.0,
        **arrays(
            cost_usd=[0] * 6,
            latency_s=[4, 1, 100, 3, 2, NAN],
            input_tokens=[100, 200, 300, NAN, NAN, NAN],
            output_tokens=[10, 20, 30, 40, 50, 60],
            tool_calls=[1, 2, 3, 4, 5, 6],
        ),
    )
    assert m.latency_p50 == pytest.approx(3.0)
    assert m.latency_p95 == pytest.approx(80.8)
    assert m.latency_mean == pytest.approx(22.0)
    # 3 of 6 trials report input tokens: their mean is 200, with its count; the total of
    # the six is unknown (600 was the sum of three, shown as the total of six).
    assert m.input_tokens == pytest.approx(200.0) and m.input_tokens_n == 3
    assert m.input_tokens_total is None
    assert m.reasons["tokens.input_total"] == "unknown for 3 of 6 trials"
    assert m.output_tokens == pytest.approx(35.0) and m.output_tokens_total == 210
    assert m.tool_calls == pytest.approx(3.5) and m.model_calls is None


def test_cost_of_pass_validates() -> None:
    with pytest.raises(ValueError):
        cost_of_pass(1.0, 1.5)
    with pytest.raises(ValueError):
        cost_of_pass(-1.0, 0.5)


@settings(max_examples=200)
@given(
    st.lists(st.sampled_from([0.0, 0.5, 1.25, 3.0, 7.5]) | st.floats(0, 100), min_size=1),
    st.lists(st.floats(0, 1), min_size=1, max_size=4),
)
def test_quantiles_equal_numpy_linear(values: list[float], qs: list[float]) -> None:
    arr = np.array(values)
    got = quantiles(arr, tuple(qs))
    np.testing.assert_allclose(got, np.quantile(arr, qs), rtol=1e-12, atol=1e-12)
    assert arr.tolist() == values  # input untouched


def _type7(values: np.ndarray, q: float) -> float:
    """Hyndman & Fan type 7 from the sorted values, as `quantiles` computes it."""
    s = np.sort(values)
    h = (s.size - 1) * q
    k = int(h)
    low = float(s[k])
    high = float(s[k + 1]) if k + 1 < s.size else low
    return low + (high - low) * (h - k)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(_BAND_MIN, 3 * _BAND_MIN),
    st.integers(0, 2**32 - 1),
    st.sampled_from(["lognormal", "few", "signed", "sorted", "inf"]),
    st.lists(st.floats(0, 1) | st.sampled_from([0.0, 1.0, 0.5, 0.95]), min_size=1, max_size=4),
)
def test_quantiles_of_many_values_are_the_sorted_order_statistics(
    n: int, seed: int, kind: str, qs: list[float]
) -> None:
    # From _BAND_MIN values the order statistics are looked for in a band: the figures
    # are those of the sorted values, to the last bit, ties, -0.0 and inf included.
    rng = np.random.default_rng(seed)
    values = {
        "lognormal": lambda: np.round(rng.lognormal(2.0, 0.5, n), 3),
        "few": lambda: rng.choice([0.0, -0.0, 1.5, 2.0, 7.25], n),
        "signed": lambda: rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n),
        "sorted": lambda: np.sort(rng.random(n)),
        "inf": lambda: np.where(rng.random(n) < 0.1, np.inf, rng.random(n)),
    }[kind]()
    before = values.copy()
    # (inf - inf is NaN, as numpy's is: assert_array_equal takes NaN for NaN.)
    np.testing.assert_array_equal(quantiles(values, tuple(qs)), [_type7(values, q) for q in qs])
    assert np.array_equal(values, before)


def test_quantiles_fall_back_where_the_sample_misses_the_band() -> None:
    # Every value the evenly spaced sample takes is large, the rest small: the band the
    # sample puts around the median holds none of the values there, and the order
    # statistics are selected from all values instead.
    n = 4 * _BAND_MIN
    stride = n // _BAND_SAMPLE
    values = np.random.default_rng(5).random(n)
    values[::stride] += 1000.0
    sample = np.sort(values[::stride])
    k = (n - 1) // 2
    assert _banded_pair(values, sample, k) is None
    assert quantiles(values, (0.5, 0.95)) == [_type7(values, 0.5), _type7(values, 0.95)]
    # The band holds them in plain data.
    plain = np.random.default_rng(6).random(n)
    found = _banded_pair(plain, np.sort(plain[::stride]), k)
    assert found == (float(np.sort(plain)[k]), float(np.sort(plain)[k + 1]))
    # A NaN (which no band bound compares with) leaves the band aside: NaN, as before.
    with_nan = plain.copy()
    with_nan[3] = np.nan
    assert math.isnan(quantiles(with_nan, (0.5,))[0])
    with pytest.raises(ValueError, match="quantile must be in"):
        quantiles(plain, (0.5, 1.5))


# ---------------------------------------------------------------- finite values, huge results


def test_cost_of_pass_past_the_largest_float_is_null_with_its_reason() -> None:
    # Task a: one failing trial at $1.7e308; task b: 1 success in 1000 trials at $1. The
    # total, 1.7e308 + 1000, fits, but the task-averaged cost (1.7e308 + 1)/2 = 8.5e307
    # over the task-averaged rate (0 + 0.001)/2 = 0.0005 is 1.7e311: past the largest
    # float. It was inf, and `metrics --json` then failed on it.
    cost = np.array([1.7e308] + [1.0] * 1000)
    task = np.array([0] + [1] * 1000)
    success_rate = 0.0005
    m = cost_metrics(
        success_rate=success_rate, **arrays(cost_usd=list(cost)), task=task, successes=1
    )
    assert m.cost_of_pass is None
    assert m.reasons["cost_of_pass"] == (
        "cost per trial / success rate passes the largest float (about 1.8e308)"
    )
    # What was spent per success is the total over one success: it fits.
    assert m.spend_per_success == pytest.approx(1.7e308 + 1000)
    assert checked_cost_of_pass(cost, task, success_rate) == (None, m.reasons["cost_of_pass"])
    # A task whose trials add up past it: the sum's reason.
    two = np.array([1e308, 1e308])
    assert checked_cost_of_pass(two, np.array([0, 0]), 0.5) == (None, SUM_OVERFLOW)
    # Ordinary values are unchanged: $0.50 per trial at 40% → $1.25.
    assert checked_cost_of_pass(np.array([0.5, 0.5]), np.array([0, 1]), 0.4) == (
        pytest.approx(1.25),
        None,
    )


def test_judge_total_past_the_largest_float_is_null_with_its_reason() -> None:
    m = cost_metrics(success_rate=0.5, **arrays(judge_cost_usd=[1.7e308, 1.7e308]))
    assert m.judge_total is None and m.judge_n == 2
    assert m.reasons["judge_total"] == SUM_OVERFLOW


def test_a_constant_cost_averages_to_itself() -> None:
    # Float sums rounded at every addition: 30 trials at $0.10 gave a total of
    # 3.000000000000001 and $0.10000000000000003 per trial, so `max: 0.1` failed on
    # a run that cost exactly $0.10 a trial. The exact sum is 30 × 0.1 (the double),
    # rounded once: 3.0; divided once: 0.1.
    m = cost_metrics(
        success_rate=1.0, **arrays(cost_usd=[0.1] * 30), task=np.repeat(np.arange(10), 3),
        successes=30,
    )  # fmt: skip
    assert (m.total, m.per_trial, m.cost_of_pass, m.spend_per_success) == (3.0, 0.1, 0.1, 0.1)
    # 4 tasks × 5 trials at $0.03 (the pytest plugin's record_cost): 0.03000000000000001.
    m = cost_metrics(success_rate=1.0, **arrays(cost_usd=[0.03] * 20))
    assert m.per_trial == 0.03 and m.total == 0.6
    # The task average: each task's 0.1 + 0.1 + 0.1 = 0.30000000000000004 in floats,
    # / 3 = 0.10000000000000002; exact, 0.1. Unequal counts (3 trials and 7): 0.1.
    assert task_mean(np.full(30, 0.1), np.repeat(np.arange(10), 3)) == 0.1
    assert task_mean(np.full(10, 0.1), np.array([0] * 3 + [1] * 7)) == 0.1
    # Judges' spend too: $0.1 + $0.2 + $0.3 summed in floats is 0.6000000000000001.
    judged = cost_metrics(
        success_rate=1.0, **arrays(cost_usd=[0] * 3, judge_cost_usd=[0.1, 0.2, 0.3])
    )
    assert judged.judge_total == 0.6


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 4),
            st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.1, 0.03, 1e-9]),
        ),
        min_size=1,
        max_size=40,
    )
)
# Found by CI: an fsum and one remainder held about 106 bits, short of $500,000 beside
# 1e-38 (the total came out one unit in the last place low).
@example([(0, 1.0), (0, 524287.87163045333), (0, 1.175494351e-38)])
def test_cost_figures_are_the_exact_means_rounded_once(rows: list[tuple[int, float]]) -> None:
    # Fractions hold the floats exactly: the exact sum and means, each rounded once.
    task = np.array([t for t, _ in rows])
    cost = np.array([c for _, c in rows])
    exact = sum((Fraction(c) for c in cost.tolist()), Fraction(0))
    m = cost_metrics(success_rate=1.0, **arrays(cost_usd=list(cost)), task=task, successes=3)
    assert m.total == float(exact) and m.per_trial == float(exact / len(rows))
    assert m.spend_per_success == float(exact / 3)
    tasks = sorted(set(task.tolist()))
    by_task = [
        sum((Fraction(c) for t, c in rows if t == k), Fraction(0)) / task.tolist().count(k)
        for k in tasks
    ]
    assert task_mean(cost, task) == float(sum(by_task, Fraction(0)) / len(tasks))
    assert m.cost_of_pass == float(sum(by_task, Fraction(0)) / len(tasks))


def test_latency_and_token_means_do_not_depend_on_the_order() -> None:
    # In floats 0.1 + 0.2 + 0.3 = 0.6000000000000001 (/ 3 = 0.20000000000000004) and
    # 0.3 + 0.2 + 0.1 = 0.6 (/ 3 = 0.19999999999999998). The exact sum of the three
    # doubles, divided once and rounded once, is 0.2 in either order.
    for latencies in ([0.1, 0.2, 0.3], [0.3, 0.2, 0.1]):
        m = cost_metrics(success_rate=1.0, **arrays(latency_s=latencies))
        assert m.latency_mean == 0.2
    # 2^53 + 1 + 1 in floats is 2^53 (each 1 rounds away), 1 + 1 + 2^53 is 2^53 + 2.
    big = 2.0**53
    for tokens in ([big, 1, 1], [1, 1, big]):
        m = cost_metrics(success_rate=1.0, **arrays(input_tokens=tokens, tool_calls=tokens))
        assert m.input_tokens_total == big + 2
        assert m.input_tokens == float((Fraction(2**53) + 2) / 3) == m.tool_calls


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(0, 1e6, allow_nan=False) | st.sampled_from([0.1, 0.2, 0.3]), min_size=1),
    st.randoms(use_true_random=False),
)
def test_latency_and_token_means_are_exact_means_rounded_once(
    values: list[float], rnd: Random
) -> None:
    shuffled = values[:]
    rnd.shuffle(shuffled)
    exact = sum((Fraction(v) for v in values), Fraction(0))
    whole = [float(int(v)) for v in values]
    exact_whole = sum((Fraction(v) for v in whole), Fraction(0))
    for order in (values, shuffled):
        m = cost_metrics(
            success_rate=1.0,
            **arrays(latency_s=order, output_tokens=[float(int(v)) for v in order]),
        )
        assert m.latency_mean == float(exact / len(values))
        assert m.output_tokens == float(exact_whole / len(whole))
        assert m.output_tokens_total == float(exact_whole)


def test_a_latency_mean_past_the_largest_float_sum_is_finite() -> None:
    # 1e308 + 1e308 passes the largest float; each halved first, the mean is 1e308.
    m = cost_metrics(success_rate=1.0, **arrays(latency_s=[1e308, 1e308]))
    assert m.latency_mean == 1e308
    # Three of the largest float: each a third, their fsum passed it on the way to it
    # ("intermediate overflow in fsum", and `metrics` failed); the exact mean is it.
    top = 1.7976931348623157e308
    m = cost_metrics(success_rate=1.0, **arrays(latency_s=[top] * 3, tool_calls=[top] * 3))
    assert m.latency_mean == top == m.tool_calls


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False)
        | st.sampled_from([0.1, -0.1, 5e-324, -5e-324, 2.0**-1022, 1.7976931348623157e308, -0.0]),
        max_size=60,
    )
)
@example([1.0, 524287.87163045333, 1.175494351e-38])
@example([1.7976931348623157e308, 1.7976931348623157e308, -1.7976931348623157e308])
def test_exact_sum_is_the_sum_of_the_floats_as_fractions(values: list[float]) -> None:
    # Every double, subnormals and the largest included, of either sign: the sum of
    # their exact values, or None where that sum is past the largest float.
    exact = sum((Fraction(v) for v in values), Fraction(0))
    got = exact_sum(np.array(values, dtype=np.float64))
    if abs(exact) > Fraction(sys.float_info.max):
        # past the largest double: None, unless it still rounds down to it
        assert got is None or got == exact
    else:
        assert got == exact


def test_exact_sum_over_more_values_than_one_limb_column_holds() -> None:
    # 2^20 + 3 values whose 32-bit limbs are all ones: a column summed in one pass past
    # 2^20 rows could pass 2^53 and round; each 2^20 rows is summed apart.
    n = (1 << 20) + 3
    values = np.full(n, float(2**53 - 1))
    assert exact_sum(values) == Fraction(n * (2**53 - 1))
    mixed = np.resize(np.array([2**53 - 1, -(2.0**-60), 0.1]), n)
    expected = sum((Fraction(v) * c for v, c in zip(
        [2**53 - 1, -(2.0**-60), 0.1], [(n + 2) // 3, (n + 1) // 3, n // 3], strict=True
    )), Fraction(0))  # fmt: skip
    assert exact_sum(mixed) == expected
    assert exact_sum(np.array([np.inf, 1.0])) is None and exact_sum(np.array([])) == 0


def _fraction_sum(values: np.ndarray) -> Fraction:
    return sum((Fraction(v) for v in values.tolist()), Fraction(0))


def _expected(values: np.ndarray) -> Fraction | None:
    """What `exact_sum` gives: the exact sum, or None where it rounds past the largest
    float (a Fraction's float raises there)."""
    exact = _fraction_sum(values)
    try:
        float(exact)
    except OverflowError:
        return None
    return exact


@st.composite
def spread_floats(draw: st.DrawFn) -> np.ndarray:
    """Floats of either sign with exponents in a window of a drawn width (0 to 1,100
    binary places) anywhere in the double range, some repeated, zeros, -0.0 and
    subnormals among them: sums that take one extraction pass, several, more than
    `_PASSES`, or none (values near the largest float)."""
    n = draw(st.integers(1, 300))
    width = draw(st.integers(0, 1100))
    low = draw(st.integers(-1074, 1023 - min(width, 1023 + 1074)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    mantissa = rng.random(n) * rng.choice([-1.0, 1.0], n)
    exponent = rng.integers(low, low + width + 1, n)
    with np.errstate(over="ignore", under="ignore"):
        values = np.ldexp(mantissa, exponent)
    values[~np.isfinite(values)] = np.finfo(float).max
    special = draw(
        st.lists(
            st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1.7976931348623157e308]),
            max_size=3,
        )
    )
    return np.concatenate([values, np.array(special, dtype=float)])


@settings(max_examples=400, deadline=None)
@given(spread_floats())
def test_exact_sum_by_extraction_or_limbs_is_the_sum_of_the_fractions(
    values: np.ndarray,
) -> None:
    assert exact_sum(values) == _expected(values)
    exact = _fraction_sum(values)
    assert _limb_sum(values) == exact
    # Blocks of a few values too: some extracted to the end, some left to the limbs.
    for block in (_BLOCK, 64, 7):
        taken, rest = _extracted_sum(values, block=block)
        assert taken + (0 if rest is None else _limb_sum(rest)) == exact


def test_exact_sum_takes_both_ways_and_says_none_where_they_pass_the_largest_float() -> None:
    # Amounts and latencies: extraction alone, in a few passes.
    rng = np.random.default_rng(7)
    amounts = np.round(rng.gamma(2.0, 0.01, 10_000), 6)
    taken, rest = _extracted_sum(amounts)
    assert rest is None and taken == _fraction_sum(amounts) == exact_sum(amounts)
    # 1e300 beside 1e-300: more passes than `_PASSES` would take; the limbs add the rest.
    wide = np.array([1e300, 1e-300, -3.5, 0.1] * 25)
    taken, rest = _extracted_sum(wide)
    assert rest is not None and rest.any()
    assert taken + _limb_sum(rest) == _fraction_sum(wide) == exact_sum(wide)
    # One pass, then the rest: what is left is the exact remainder, the input unchanged.
    before = amounts.copy()
    taken, rest = _extracted_sum(amounts, passes=1)
    assert rest is not None and taken + _limb_sum(rest) == _fraction_sum(amounts)
    assert np.array_equal(amounts, before)
    # Near the largest float σ = 2^(e+k) would overflow: no pass at all.
    huge = np.array([1.7976931348623157e308, -1e308, 1e308, 5e-324])
    taken, rest = _extracted_sum(huge)
    assert taken == 0 and rest is not None and np.array_equal(rest, huge)
    assert exact_sum(huge) == _fraction_sum(huge)
    # Subnormals alone: left to the limbs too.
    tiny = np.array([5e-324, 2.0**-1050, -(2.0**-1060)])
    taken, rest = _extracted_sum(tiny)
    assert taken == 0 and rest is not None and np.array_equal(rest, tiny)
    assert exact_sum(tiny) == _fraction_sum(tiny)
    # Past the largest float: None, both ways, exactly where the exact sum rounds past it.
    top = 1.7976931348623157e308
    assert exact_sum(np.array([top, top, -top])) == Fraction(top)
    assert exact_sum(np.array([top, 2.0**970])) is None  # rounds up to 2^1024
    assert exact_sum(np.array([top, 2.0**969])) == Fraction(top) + 2**969  # rounds down
    assert exact_sum(np.array([1e308, 1e308])) is None
    assert exact_sum(np.array([1.0, np.nan])) is None and exact_sum(np.array([-np.inf])) is None


@pytest.mark.parametrize(
    "n", [_BLOCK - 1, _BLOCK, _BLOCK + 1, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 1 << 21]
)
def test_exact_sum_of_millions_where_every_pass_is_at_its_bound(n: int) -> None:
    # Equal values just below 2^e: each pass's q's over a full block of m = 2^15 add up
    # to m · 2^e, the 2^(e+k-1) the bound allows (2^k = 2m); a last block is shorter.
    below = 2.0**10 - 2.0**-42
    assert exact_sum(np.full(n, below)) == n * Fraction(below)
    assert exact_sum(np.full(n, -below)) == -n * Fraction(below)
    # Every value with all 53 bits set, of mixed signs and exponents 60 apart.
    rng = np.random.default_rng(n)
    values = np.ldexp(rng.choice([-1.0, 1.0], n) * (1 - 2.0**-53), rng.integers(-40, 20, n))
    taken, rest = _extracted_sum(values)
    assert rest is None and taken == _limb_sum(values) == exact_sum(values)


def test_exact_sum_of_two_million_amounts_is_the_fraction_sum() -> None:
    rng = np.random.default_rng(3)
    n = 1 << 21
    values = np.round(rng.gamma(2.0, 0.01, n), 6) * rng.choice([-1.0, 1.0], n)
    values[::1000] = rng.lognormal(2.0, 3.0, values[::1000].size)
    # The reference: every float's exact ratio over 2^1074, added as Python integers.
    scale = 1074
    expected = Fraction(
        sum(
            p << (scale - (q.bit_length() - 1))
            for p, q in map(float.as_integer_ratio, values.tolist())
        ),
        1 << scale,
    )
    assert exact_sum(values) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=True, allow_infinity=False)
        | st.integers(0, 2**60).map(float)
        | st.sampled_from([0.0, -0.0, 0.5, -1.0, NAN, math.inf, 2.0**53, 1.7976931348623157e308]),
        max_size=40,
    )
)
@example([1.0, NAN, 2.0])
@example([math.inf, 1.0])
@example([-0.0, 3.0])
@example([2.0**53, 1.0, 1.0])
@example([-(2.0**53), 1.0, 2.0**53])
@example([1.7976931348623157e308] * 3)  # fsum of the thirds failed: "intermediate overflow"
@example([math.inf, 1.7976931348623157e308, 1.7976931348623157e308])
def test_count_sum_is_the_exact_sum_and_mean_rounded_once(values: list[float]) -> None:
    # Known values (not NaN) counted, their exact sum and mean each rounded once; where
    # the sum passes the largest float (or a value is inf), inf and the correctly
    # rounded sum of each value divided first.
    got = _count_sum(np.array(values, dtype=float))
    known = [v for v in values if not math.isnan(v)]
    if not known:
        assert got == (0, 0.0, None)
        return
    count = len(known)
    exact = exact_sum(np.array(known))
    if exact is None:
        try:
            mean = math.fsum(v / count for v in known)
        except OverflowError:  # fsum's partial sums past the largest float
            finite = all(map(math.isfinite, known))
            mean = float(sum(map(Fraction, known)) / count) if finite else math.inf
        assert got == (count, math.inf, mean)
    else:
        assert got == (count, float(exact), float(exact / count))


@pytest.mark.parametrize("at", [None, 0, 63, 64, 9_999])
def test_count_sum_finds_a_fraction_anywhere_among_whole_numbers(at: int | None) -> None:
    # 10,000 token counts, one of them 0.5 more (or none): the sum of whole numbers is
    # numpy's, any other the exact sum; both the same figures.
    values = np.random.default_rng(2).integers(0, 9000, 10_000).astype(float)
    values[17] = NAN
    if at is not None:
        values[at] += 0.5
    known = values[~np.isnan(values)]
    exact = sum((Fraction(v) for v in known.tolist()), Fraction(0))
    assert _count_sum(values) == (known.size, float(exact), float(exact / known.size))
