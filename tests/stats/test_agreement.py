"""Agreement statistics: hand-computed vectors, statsmodels cross-checks, invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa

from agentgauge.stats.agreement import (
    cohens_kappa,
    cohens_kappa_table,
    confusion_table,
    krippendorff_alpha_nominal,
    raw_agreement,
    unknown_share,
)

NAN = np.nan


def labels_from_table(table: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    a, b = [], []
    for i, row in enumerate(table):
        for j, n in enumerate(row):
            a += [i] * n
            b += [j] * n
    return np.array(a), np.array(b)


# --------------------------------------------------------------------------- Cohen's κ


def test_kappa_hand_computed() -> None:
    # table [[20, 5], [10, 15]], n = 50
    # p_o = (20 + 15) / 50 = 0.70
    # marginals: rows 25, 25; columns 30, 20
    # p_e = (25·30 + 25·20) / 50² = (750 + 500) / 2500 = 0.50
    # κ = (0.70 − 0.50) / (1 − 0.50) = 0.40
    a, b = labels_from_table([[20, 5], [10, 15]])
    res = cohens_kappa(a, b)
    assert res.kappa == pytest.approx(0.40)
    assert res.raw_agreement == pytest.approx(0.70)
    assert res.expected_agreement == pytest.approx(0.50)
    assert res.n == 50
    assert res.table.tolist() == [[20, 5], [10, 15]]


@pytest.mark.parametrize(
    "table",
    [
        [[20, 5], [10, 15]],
        [[45, 15], [25, 15]],
        [[88, 14, 18], [10, 40, 10], [2, 6, 12]],
        [[0, 7], [3, 0]],  # systematic disagreement: κ < 0
        [[12, 0], [0, 9]],
    ],
)
def test_kappa_agrees_with_statsmodels(table: list[list[int]]) -> None:
    expected = sm_cohens_kappa(np.array(table)).kappa
    assert cohens_kappa_table(table) == pytest.approx(expected, abs=1e-12)
    a, b = labels_from_table(table)
    assert cohens_kappa(a, b, n_boot=0).kappa == pytest.approx(expected, abs=1e-12)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # statsmodels' z-test on 0/0
@given(st.lists(st.lists(st.integers(0, 30), min_size=3, max_size=3), min_size=3, max_size=3))
def test_kappa_agrees_with_statsmodels_on_random_tables(table: list[list[int]]) -> None:
    t = np.array(table)
    ours = cohens_kappa_table(t)
    n = t.sum()
    pe = (t.sum(0) * t.sum(1)).sum() / n**2 if n else 1.0
    if n < 2 or math.isclose(pe, 1.0):
        assert math.isnan(ours)  # undefined, not 0 or 1 (statsmodels gives 0 for one item)
    else:
        assert ours == pytest.approx(sm_cohens_kappa(t).kappa, abs=1e-9)
        assert ours <= 1 + 1e-12


@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=1, max_size=50))
def test_kappa_is_symmetric_and_bounded(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    k_ab = cohens_kappa(a, b, n_labels=3, n_boot=0).kappa
    k_ba = cohens_kappa(b, a, n_labels=3, n_boot=0).kappa
    if math.isnan(k_ab):
        assert math.isnan(k_ba)
    else:
        assert k_ab == pytest.approx(k_ba, abs=1e-12)
        assert -1 - 1e-12 <= k_ab <= 1 + 1e-12
    self_kappa = cohens_kappa(a, a, n_labels=3, n_boot=0).kappa
    if len(set(a.tolist())) == 1:
        assert math.isnan(self_kappa)  # p_e = 1
    else:
        assert self_kappa == pytest.approx(1.0)


def test_bootstrap_interval_is_seeded_and_near_the_asymptotic_one() -> None:
    a, b = labels_from_table([[120, 30], [40, 110]])
    r1 = cohens_kappa(a, b, n_boot=4000, seed=7)
    r2 = cohens_kappa(a, b, n_boot=4000, seed=7)
    assert r1.ci95 == r2.ci95  # same seed, same interval
    assert cohens_kappa(a, b, n_boot=4000, seed=8).ci95 != r1.ci95
    sm = sm_cohens_kappa(np.array([[120, 30], [40, 110]]))
    # n = 300: the percentile bootstrap and the asymptotic interval agree closely
    assert r1.ci95[0] == pytest.approx(sm.kappa_low, abs=0.02)
    assert r1.ci95[1] == pytest.approx(sm.kappa_upp, abs=0.02)
    assert r1.ci95[0] < r1.kappa < r1.ci95[1]


def test_bootstrap_interval_covers_the_true_kappa_by_simulation() -> None:
    # Rater b copies rater a with probability 0.6, else draws at random; prevalence 0.5.
    # Then p_o = 0.6 + 0.4·0.5 = 0.8, p_e = 0.5, so the population κ = 0.6.
    rng = np.random.default_rng(11)
    covered, reps, n = 0, 200, 150
    for rep in range(reps):
        a = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, 2, n))
        lo, hi = cohens_kappa(a, b, n_boot=400, seed=rep).ci95
        covered += lo <= 0.6 <= hi
    # nominal 95%; with 200 repetitions the binomial SE is ~1.5 points
    assert 0.89 <= covered / reps <= 0.99


def test_missing_labels_are_dropped_before_kappa() -> None:
    a = np.array([0, 0, 1, 1, -1, 0])
    b = np.array([0, 1, 1, 1, 0, -1])
    res = cohens_kappa(a, b, n_boot=0)
    # decided pairs: (0,0) (0,1) (1,1) (1,1): p_o = 3/4
    # rows 2, 2; columns 1, 3; p_e = (2·1 + 2·3)/16 = 0.5; κ = (0.75 − 0.5)/0.5 = 0.5
    assert res.n == 4
    assert res.kappa == pytest.approx(0.5)
    assert raw_agreement(a, b) == pytest.approx(0.75)
    assert unknown_share(a) == pytest.approx(1 / 6)


def test_kappa_undefined_when_both_raters_use_one_category() -> None:
    res = cohens_kappa(np.ones(10, dtype=int), np.ones(10, dtype=int), n_labels=2)
    assert math.isnan(res.kappa)  # p_e = 1: 0/0
    assert res.raw_agreement == 1.0
    assert math.isnan(res.ci95[0]) and res.n_boot_undefined == res.n_boot


def test_kappa_undefined_from_one_item() -> None:
    # One disagreeing item: p_o = 0, marginals (1, 0) and (0, 1), p_e = 0, so the formula
    # gives (0 − 0)/(1 − 0) = 0 — a κ from no sample, not a measured chance-level agreement.
    res = cohens_kappa([0], [1], n_labels=2)
    assert math.isnan(res.kappa) and res.n == 1
    assert res.raw_agreement == 0.0  # the one item's agreement is still reported
    assert math.isnan(cohens_kappa_table([[0, 1], [0, 0]]))
    # Two items are enough: [[1, 0], [1, 0]] gives p_o = 1/2, p_e = (1·2 + 1·0)/4 = 1/2, κ = 0.
    assert cohens_kappa([0, 1], [0, 0], n_labels=2, n_boot=0).kappa == 0.0


def test_inputs_are_not_mutated_and_bad_shapes_fail() -> None:
    a = np.array([0, 1, -1, 1])
    b = np.array([0, 1, 1, 0])
    a0, b0 = a.copy(), b.copy()
    cohens_kappa(a, b, n_boot=50)
    assert (a == a0).all() and (b == b0).all()
    with pytest.raises(ValueError, match="same length"):
        cohens_kappa([0, 1], [0])
    with pytest.raises(ValueError, match="integer"):
        confusion_table([0.5, 1.0], [0, 1])


# --------------------------------------------------------------------------- Krippendorff's α


def test_alpha_hand_computed_small_example() -> None:
    # 3 raters (rows) × 4 units (columns); NaN = missing.
    data = [
        [0, 0, 1, NAN],
        [0, 1, 1, 0],
        [NAN, 1, 1, NAN],
    ]
    # Unit 1: values {0, 0}, m=2 -> o_00 += 2/1 = 2
    # Unit 2: values {0, 1, 1}, m=3 -> ordered pairs: (0,1)×2, (1,0)×2, (1,1)×2, each /2
    #         -> o_01 += 1, o_10 += 1, o_11 += 1
    # Unit 3: values {1, 1, 1}, m=3 -> 6 ordered (1,1) pairs /2 -> o_11 += 3
    # Unit 4: one value: not pairable.
    # o = [[2, 1], [1, 4]], n_0 = 3, n_1 = 5, n = 8
    # α = 1 − (n − 1)·(o_01 + o_10) / (2·n_0·n_1) = 1 − 7·2 / 30 = 1 − 14/30 = 8/15
    assert krippendorff_alpha_nominal(data) == pytest.approx(8 / 15)


def test_alpha_textbook_example() -> None:
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the
    # 4 observers × 12 units nominal example with missing values; published α = 0.743.
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
    assert krippendorff_alpha_nominal(data) == pytest.approx(0.743, abs=5e-4)


def test_alpha_extremes_and_undefined() -> None:
    assert krippendorff_alpha_nominal([[0, 1, 0, 1], [0, 1, 0, 1]]) == 1.0
    # one category only: D_e = 0, undefined
    assert math.isnan(krippendorff_alpha_nominal([[1, 1], [1, 1]]))
    # nothing pairable
    assert math.isnan(krippendorff_alpha_nominal([[0, NAN], [NAN, 1]]))
    # one pairable unit: its pairs are both the observed and the expected disagreement,
    # so the formula gives 1 − (m − 1)·[(m² − Σn_c²)/(m − 1)]/(m² − Σn_c²) = 0 whatever
    # the labels: not a measurement (m = 3, values 0, 0, 1 here)
    assert math.isnan(krippendorff_alpha_nominal([[0, NAN], [0, 1], [1, NAN]]))
    with pytest.raises(ValueError):
        krippendorff_alpha_nominal([[0.5, 1], [0, 1]])


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=40))
def test_alpha_for_two_raters_is_scotts_pi_corrected(pairs: list[tuple[int, int]]) -> None:
    # With two raters and no missing values, Fleiss' κ is Scott's π, and
    # α = 1 − (1 − π)·(n − 1)/n with n = 2N pairable values (Krippendorff 2004, §11.3).
    data = np.array(pairs, dtype=float).T
    alpha = krippendorff_alpha_nominal(data)
    counts = np.stack([(data == c).sum(axis=0) for c in range(3)], axis=1)
    if len(np.unique(data)) == 1:
        assert math.isnan(alpha)
        return
    pi = fleiss_kappa(counts, method="fleiss")
    n = 2 * len(pairs)
    assert alpha == pytest.approx(1 - (1 - pi) * (n - 1) / n, abs=1e-9)
