from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from agentgauge.stats import (
    kish_n,
    mover_difference_interval,
    normal_interval,
    wilson_design_effect_interval,
    wilson_interval,
    z_value,
)


def test_wilson_hand_computed_8_of_10() -> None:
    # z = 1.9599640, z² = 3.8414588, p = .8, denom = 1 + z²/10 = 1.3841459
    # centre = (.8 + z²/20) / denom = .9920729 / 1.3841459 = .7167402
    # half = z/denom · √(.8·.2/10 + z²/400) = 1.4160097 · √.0256036 = .2265777
    # -> (.7167402 - .2265777, .7167402 + .2265777) = (.4901625, .9433179)
    lo, hi = wilson_interval(8, 10)
    assert float(lo) == pytest.approx(0.4901625, abs=1e-6)
    assert float(hi) == pytest.approx(0.9433179, abs=1e-6)


def test_wilson_extremes_stay_in_unit_interval() -> None:
    lo, hi = wilson_interval(0, 5)
    assert float(lo) == 0.0 and 0 < float(hi) < 1
    lo, hi = wilson_interval(5, 5)
    assert 0 < float(lo) < 1 and float(hi) == 1.0


def test_wilson_zero_trials_is_nan() -> None:
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_matches_statsmodels(xn: tuple[int, int]) -> None:
    x, n = xn
    lo, hi = wilson_interval(x, n)
    ref_lo, ref_hi = proportion_confint(x, n, alpha=0.05, method="wilson")
    assert float(lo) == pytest.approx(ref_lo, abs=1e-12)
    assert float(hi) == pytest.approx(ref_hi, abs=1e-12)


def test_wilson_vectorised() -> None:
    lo, hi = wilson_interval(np.array([1, 2, 3]), np.array([4, 4, 4]))
    for i, x in enumerate([1, 2, 3]):
        ref = proportion_confint(x, 4, method="wilson")
        assert (lo[i], hi[i]) == pytest.approx(ref)


def test_normal_interval_is_clipped() -> None:
    # .95 ± 1.959964·.05 = (.852, 1.048) -> upper clipped to 1
    lo, hi = normal_interval(0.95, 0.05)
    assert float(lo) == pytest.approx(0.95 - 1.959964 * 0.05, abs=1e-6)
    assert float(hi) == 1.0


def test_z_value() -> None:
    assert z_value(0.95) == pytest.approx(1.959963985)
    with pytest.raises(ValueError):
        z_value(1.0)


def test_kish_n_of_task_weighted_trials() -> None:
    # T = 2 tasks with 1 and 4 trials: T² / Σ 1/n_t = 4 / (1 + 0.25) = 3.2
    assert kish_n([1, 4]) == pytest.approx(3.2)
    # equal trial counts: T·K
    assert kish_n([3] * 20) == pytest.approx(60.0)
    with pytest.raises(ValueError):
        kish_n([])


def test_wilson_design_effect_by_hand() -> None:
    # p̂ = .8, se = .1 from 5 clusters (df 4), Kish n = 40:
    # binomial var = .16/40 = .004, deff = .01/.004 = 2.5,
    # Korn & Graubard's (t_4/t_39)² = (2.776445/2.022691)² = 1.884166 (t tables:
    # t_{.975,4} = 2.776, t_{.975,39} = 2.023), deff* = 4.710415,
    # n* = 40/4.710415 = 8.491821, x* = .8·n* = 6.793457 -> Wilson on (x*, n*)
    lo, hi = wilson_design_effect_interval(0.8, 0.1, 40, 4)
    ref = proportion_confint(0.8 * 40 / 4.710415, 40 / 4.710415, method="wilson")
    assert (lo, hi) == pytest.approx(ref, abs=1e-6)
    # the rule it replaced, (t_4/z)² = 2.006698: wider, [.4544, .9505]
    old = proportion_confint(0.8 * 40 / 5.016745, 40 / 5.016745, method="wilson")
    assert lo > old[0] and hi < old[1]


def test_wilson_design_effect_never_below_binomial_information() -> None:
    # An SE far below the binomial one (deff < 1) is floored at deff = 1: Wilson on (10, 20).
    lo, hi = wilson_design_effect_interval(0.5, 0.01, 20, 19)
    assert (lo, hi) == pytest.approx(proportion_confint(10, 20, method="wilson"), abs=1e-12)


def test_wilson_design_effect_at_the_edges_keeps_width() -> None:
    # All passing (se = 0): deff = 1, Wilson on (60, 60): [60/(60 + z²), 1]
    lo, hi = wilson_design_effect_interval(1.0, 0.0, 60, 19)
    assert hi == 1.0 and lo == pytest.approx(60 / (60 + 1.959964**2), abs=1e-6)
    lo, hi = wilson_design_effect_interval(0.0, 0.0, 60, 19)
    assert lo == 0.0 and hi == pytest.approx(1.959964**2 / (60 + 1.959964**2), abs=1e-6)
    with pytest.raises(ValueError):
        wilson_design_effect_interval(1.2, 0.1, 10, 3)


def test_mover_by_hand() -> None:
    # a = .5 in (.3, .7), b = .8 in (.6, .9), r = .5; d = .3
    # lower = .3 − √(.2² + .2² − 2·.5·.2·.2) = .3 − √.04 = .1
    # upper = .3 + √(.1² + .2² − 2·.5·.1·.2) = .3 + √.03 = .473205
    lo, hi = mover_difference_interval(0.5, (0.3, 0.7), 0.8, (0.6, 0.9), 0.5)
    assert (lo, hi) == pytest.approx((0.1, 0.3 + 0.03**0.5), abs=1e-12)
    # Independent Wald intervals: MOVER is the Wald interval of the difference.
    lo, hi = mover_difference_interval(0.5, (0.4, 0.6), 0.5, (0.3, 0.7), 0.0)
    assert (lo, hi) == pytest.approx((-((0.1**2 + 0.2**2) ** 0.5), (0.1**2 + 0.2**2) ** 0.5))


def test_mover_keeps_width_when_both_rates_are_at_the_ceiling() -> None:
    lo, hi = mover_difference_interval(1.0, (0.94, 1.0), 1.0, (0.94, 1.0), 0.0)
    assert lo == pytest.approx(-0.06) and hi == pytest.approx(0.06)
    with pytest.raises(ValueError):
        mover_difference_interval(0.5, (0.4, 0.6), 0.5, (0.4, 0.6), 1.5)
