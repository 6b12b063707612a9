from __future__ import annotations

import math

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgauge.stats import cluster_correlation, se_clustered, se_mean


def test_se_mean_hand_computed() -> None:
    # mean 0.75; squared deviations .0625+.5625+.0625+.0625 = .75; var(ddof=1) = .75/3 = .25
    # sd = .5; se = .5/√4 = .25
    assert se_mean([1, 0, 1, 1]) == pytest.approx(0.25)


def test_se_mean_needs_two_tasks() -> None:
    assert math.isnan(se_mean([0.3]))


def test_se_clustered_hand_computed() -> None:
    # mean .5; e = +.5 +.5 | -.5 -.5 | +.5 -.5 ; cluster sums 1, -1, 0 -> Σ² = 2
    # C/(C-1) = 3/2 -> 3; √3 / T = 1.7320508 / 6 = 0.2886751
    values = [1, 1, 0, 0, 1, 0]
    fams = ["a", "a", "b", "b", "c", "c"]
    assert se_clustered(values, fams) == pytest.approx(math.sqrt(3) / 6)
    # the unclustered SE is smaller: var(ddof=1) = 6·.25/5 = .3 -> √.3/√6 = 0.2236068
    assert se_mean(values) == pytest.approx(math.sqrt(0.3 / 6))


def test_se_clustered_singletons_equal_plain_se() -> None:
    # With every task its own cluster: C/(C-1)·Σe²/T² = Σe²/((T-1)T) = var/T.
    rng = np.random.default_rng(1)
    v = rng.random(37)
    assert se_clustered(v, np.arange(37)) == pytest.approx(se_mean(v))


def test_se_clustered_of_families_alike_is_exactly_zero() -> None:
    # Each family holds a 2/3 task and a 1/3 task, so every family averages the overall
    # mean 1/2: the residual sums are 0, and round-off (2e-17 before) must not make an SE.
    values = [2 / 3, 1 / 3, 1 / 3, 2 / 3, 2 / 3, 1 / 3]
    assert se_clustered(values, ["a", "a", "b", "b", "c", "c"]) == 0.0
    # A real spread of the same order as the tolerance's scale is kept.
    assert se_clustered([0.5, 0.5 + 1e-9, 0.5, 0.5], ["a", "a", "b", "b"]) > 0


def test_se_clustered_one_cluster_is_nan() -> None:
    assert math.isnan(se_clustered([0.1, 0.9], ["a", "a"]))


def test_inputs_not_mutated() -> None:
    v = np.array([0.2, 0.4, 0.9])
    c = np.array([2, 1, 2])
    se_clustered(v, c)
    assert v.tolist() == [0.2, 0.4, 0.9] and c.tolist() == [2, 1, 2]


def test_rejects_bad_shapes_and_nan() -> None:
    with pytest.raises(ValueError):
        se_clustered([0.1, 0.2], [1])
    with pytest.raises(ValueError):
        se_mean([0.1, float("nan")])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0, 1, allow_nan=False), st.integers(0, 6)), min_size=3, max_size=40
    )
)
def test_se_clustered_equals_statsmodels_cluster_robust_ols(
    rows: list[tuple[float, int]],
) -> None:
    # Cross-check: intercept-only OLS with cov_type="cluster" (statsmodels applies
    # G/(G-1)·(N-1)/(N-K) with K = 1, i.e. G/(G-1)) is Miller's clustered SE.
    values = np.array([r[0] for r in rows])
    groups = np.array([r[1] for r in rows])
    if np.unique(groups).size < 2:
        return
    fit = sm.OLS(values, np.ones_like(values)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert se_clustered(values, groups) == pytest.approx(float(fit.bse[0]), rel=1e-9, abs=1e-12)


def test_se_clustered_statsmodels_fixed_example() -> None:
    rng = np.random.default_rng(7)
    groups = rng.integers(0, 12, size=200)
    values = np.clip(0.5 + 0.3 * rng.standard_normal(12)[groups] + 0.1 * rng.random(200), 0, 1)
    fit = sm.OLS(values, np.ones(200)).fit(cov_type="cluster", cov_kwds={"groups": groups})
    assert se_clustered(values, groups) == pytest.approx(float(fit.bse[0]), rel=1e-10)


def test_cluster_correlation() -> None:
    rng = np.random.default_rng(4)
    x, y = rng.random(30), rng.random(30)
    # every task its own cluster: Pearson's r
    assert cluster_correlation(x, y, np.arange(30)) == pytest.approx(np.corrcoef(x, y)[0, 1])
    # by hand: clusters {0,1}, {2,3}; x = 1,0,0,0 (x̄ .25), y = 1,1,0,0 (ȳ .5)
    # cluster sums of e: .5, −.5; of f: 1, −1 → r = (.5 + .5)/√(.5·2) = 1
    assert cluster_correlation([1, 0, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1]) == pytest.approx(1.0)
    # no spread in one run: 0, not NaN
    assert cluster_correlation([1, 1, 1], [1, 0, 1], [0, 1, 2]) == 0.0
