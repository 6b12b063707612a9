"""Predictability from reported confidence (SPEC 5.2), cross-checked against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import brier_score_loss, roc_auc_score

from agentgauge.metrics.predictability import predictability

CONF = np.array([0.95, 0.85, 0.85, 0.6, 0.3, 0.05, np.nan])
OK = np.array([1, 1, 0, 1, 0, 0, 1], dtype=bool)  # the last trial has no confidence: left out


def test_predictability_by_hand() -> None:
    # Bins: 0.95→9, 0.85→8 (two), 0.6→6, 0.3→3, 0.05→0.  n_b·|acc_b − conf_b|:
    #   bin 9: |1 − 0.95| = 0.05; bin 8: 2·|0.5 − 0.85| = 0.70; bin 6: |1 − 0.6| = 0.40;
    #   bin 3: |0 − 0.3| = 0.30; bin 0: |0 − 0.05| = 0.05; sum 1.50 → ECE = 1.5/6 = 0.25
    # AUROC: successes {0.95, 0.85, 0.6} vs failures {0.85, 0.3, 0.05}:
    #   0.95 beats 3; 0.85 ties one (0.5) and beats 2 → 2.5; 0.6 beats 2 → 7.5/9 = 0.833333
    # Brier: (0.05² + 0.15² + 0.85² + 0.4² + 0.3² + 0.05²)/6
    #   = (0.0025 + 0.0225 + 0.7225 + 0.16 + 0.09 + 0.0025)/6 = 1.0/6 = 0.166667
    p = predictability(CONF, OK)
    assert p.n_trials == 6
    assert p.ece == pytest.approx(0.25) and p.calibration == pytest.approx(0.75)
    assert p.auroc == pytest.approx(7.5 / 9)
    assert p.brier == pytest.approx(1 / 6) and p.brier_skill == pytest.approx(5 / 6)
    has = ~np.isnan(CONF)
    assert p.auroc == pytest.approx(roc_auc_score(OK[has], CONF[has]))
    assert p.brier == pytest.approx(brier_score_loss(OK[has], CONF[has]))


def test_edge_of_bins() -> None:
    # 1.0 falls in the last bin with 0.9; 0.1 opens the second bin.
    p = predictability([1.0, 0.9, 0.1], [True, True, False])
    # bin 9: |1 − 0.95|·2 = 0.1; bin 1: |0 − 0.1| = 0.1 → ECE = 0.2/3
    assert p.ece == pytest.approx(0.2 / 3)


def test_one_class_and_no_confidence() -> None:
    assert predictability([0.2, 0.9], [True, True]).auroc is None
    empty = predictability([np.nan], [True])
    assert empty.calibration is None and empty.reason == "no trial reports a confidence"
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        predictability([1.5], [True])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 1.0]), st.booleans()),
        min_size=2,
        max_size=40,
    )
)
def test_auroc_matches_sklearn_with_ties(pairs: list[tuple[float, bool]]) -> None:
    c = np.array([a for a, _ in pairs])
    y = np.array([b for _, b in pairs])
    p = predictability(c, y)
    if y.all() or not y.any():
        assert p.auroc is None
        return
    assert p.auroc == pytest.approx(roc_auc_score(y, c), abs=1e-12)
    assert 0 <= p.ece <= 1  # type: ignore[operator]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.9, 1.0]) | st.floats(0, 1), max_size=40))
def test_average_ranks_are_scipys(values: list[float]) -> None:
    # The AUROC's ranks, computed without scipy.stats: the same as its rankdata (ties
    # share the mean of their ranks), drawn from few values so that ties are common.
    from scipy import stats

    from agentgauge.metrics.predictability import _average_ranks

    x = np.array(values, dtype=np.float64)
    np.testing.assert_allclose(_average_ranks(x), stats.rankdata(x), rtol=0, atol=1e-12)
