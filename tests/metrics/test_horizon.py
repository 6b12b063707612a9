"""Time horizon (SPEC 5.4): hand-computed cases, properties, and METR's data
cross-checked against scikit-learn."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agentgauge
from agentgauge.errors import InputError
from agentgauge.importers.metr import read as read_metr
from agentgauge.metrics.horizon import horizon, percentile_with_inf, q_label
from agentgauge.metrics.horizon_fit import (
    bootstrap_masses,
    fit_half_life,
    fit_logistic,
    horizon_from_coefficients,
    metr_weights,
    weighted_log_loss,
)
from agentgauge.table import TrialTable

LN4 = math.log(4.0)


def table(
    rows: list[tuple[str, str | None, float, float]], agent: str = "a", success: Any = None
) -> TrialTable:
    """Rows of (task_id, family, human_minutes, score); success = score ≥ 1 − 1e-6 unless given."""
    score = np.array([r[3] for r in rows], dtype=float)
    return TrialTable.from_columns(
        len(rows),
        task_id=[r[0] for r in rows],
        family=[r[1] for r in rows],
        human_minutes=np.array([r[2] for r in rows], dtype=float),
        score=score,
        success=score >= 1 - 1e-6 if success is None else np.asarray(success, dtype=bool),
        agent=[agent] * len(rows),
    )


def two_lengths(successes_short: int, successes_long: int, n: int = 5) -> TrialTable:
    """Task s (1 min, x = 0) and task l (4 min, x = 2), n runs each, own families."""
    rows = [("s", None, 1.0, float(i < successes_short)) for i in range(n)]
    rows += [("l", None, 4.0, float(i < successes_long)) for i in range(n)]
    return table(rows)


# --------------------------------------------------------------------------- weights


def test_metr_weights_hand_computed() -> None:
    # Family A: task 0 (2 runs), task 1 (1 run); family B: task 2 (1 run).
    # Raw w = 1/(runs in task · √tasks in family):
    #   task 0 runs: 1/(2·√2) = 0.353553 each; task 1: 1/(1·√2) = 0.707107; task 2: 1/(1·1) = 1
    #   sum = 2·0.353553 + 0.707107 + 1 = 2.414214
    # Normalised: 0.146447, 0.146447, 0.292893, 0.414214.
    w = metr_weights(np.array([0, 0, 1, 2]), np.array([0, 0, 0, 1]))
    np.testing.assert_allclose(w, [0.146447, 0.146447, 0.292893, 0.414214], atol=1e-6)
    assert w.sum() == pytest.approx(1.0)


def test_metr_weights_match_metr_own_column(shared_data: Path) -> None:
    # METR ships its own normalised weights (invsqrt_task_weight) per agent.
    rows = [json.loads(line) for line in (shared_data / "metr" / "all_runs.jsonl").open()]
    for alias in {r["alias"] for r in rows}:
        rs = [r for r in rows if r["alias"] == alias]
        _, task = np.unique([r["task_id"] for r in rs], return_inverse=True)
        _, fam = np.unique([r["task_family"] for r in rs], return_inverse=True)
        ours = metr_weights(task, fam)
        theirs = np.array([r["invsqrt_task_weight"] for r in rs])
        np.testing.assert_allclose(ours, theirs, atol=1e-9, err_msg=alias)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(1, 5)), min_size=1, max_size=8))
def test_metr_weights_properties(tasks: list[tuple[int, int]]) -> None:
    # tasks[k] = (family, runs). Weights sum to 1; within a family every task
    # carries the same total; a family's total is proportional to √(its tasks).
    family_of_task = np.array([f for f, _ in tasks])
    task = np.repeat(np.arange(len(tasks)), [r for _, r in tasks])
    w = metr_weights(task, family_of_task[task])
    assert w.sum() == pytest.approx(1.0)
    per_task = np.bincount(task, weights=w)
    for f in set(family_of_task.tolist()):
        in_f = per_task[family_of_task == f]
        np.testing.assert_allclose(in_f, in_f[0])
        n_f = in_f.size
        # total of family f = n_f · (1/√n_f) / Z = √n_f / Z
        z = sum(math.sqrt(int((family_of_task == g).sum())) for g in set(family_of_task.tolist()))
        assert in_f.sum() == pytest.approx(math.sqrt(n_f) / z)


# --------------------------------------------------------------------------- fit


def test_known_coefficients_from_symmetric_data() -> None:
    # 4/5 succeed at 1 min (x = 0), 1/5 at 4 min (x = 2). Two lengths, two
    # parameters: the unpenalised fit reproduces both rates exactly:
    #   σ(b0) = 0.8        -> b0 = ln(0.8/0.2) = ln 4 = 1.386294
    #   σ(b0 + 2·b1) = 0.2 -> b0 + 2·b1 = −ln 4     -> b1 = −ln 4 = −1.386294
    # p50: log2 h = (0 − ln 4)/(−ln 4) = 1 -> 2 min; p80: (ln 4 − ln 4)/b1 = 0 -> 1 min.
    report = horizon(two_lengths(4, 1), bootstrap=0, regularization=1e12)
    g = report.groups[0]
    assert g.intercept == pytest.approx(LN4, abs=1e-8)
    assert g.slope == pytest.approx(-LN4, abs=1e-8)
    assert g.horizons[0.5] == pytest.approx(2.0, abs=1e-8)
    assert g.horizons[0.8] == pytest.approx(1.0, abs=1e-8)
    assert g.warnings == []
    # The default C = 1e5 shrinks the slope by a relative ~1e-5 only.
    default = horizon(two_lengths(4, 1), bootstrap=0).groups[0]
    assert default.slope == pytest.approx(-LN4, rel=1e-4)
    # A strong penalty (C small) pulls the slope towards 0.
    strong = horizon(two_lengths(4, 1), bootstrap=0, regularization=0.1).groups[0]
    assert -LN4 < strong.slope < 0


def test_fractional_scores_split_into_weighted_rows() -> None:
    # One run scoring 0.8 at 1 min and one scoring 0.2 at 4 min: split into
    # (1-row, weight 0.8·w) + (0-row, 0.2·w), the data are those of the 4/5 and
    # 1/5 case above, so b0 = ln 4, b1 = −ln 4 again.
    t = table([("s", None, 1.0, 0.8), ("l", None, 4.0, 0.2)])
    g = horizon(t, bootstrap=0, regularization=1e12).groups[0]
    assert g.outcome == "score"
    assert g.intercept == pytest.approx(LN4, abs=1e-8)
    assert g.slope == pytest.approx(-LN4, abs=1e-8)
    # Binarised, neither run succeeded: no successes, a horizon below the shortest task
    # (1 min; it read 0), with a warning.
    b = horizon(t, bootstrap=0, outcome="success").groups[0]
    assert b.outcome == "success"
    assert math.isnan(b.horizons[0.5])
    assert (b.status[0.5], b.bound_minutes[0.5]) == ("below", 1.0)
    assert any("no successes" in w for w in b.warnings)


def test_auto_outcome_uses_success_when_scores_are_on_another_scale() -> None:
    # Run 1 succeeded with score 0.7 (a threshold below 1, as METR's binarised
    # AI R&D scores): scores are not success probabilities, so auto -> success.
    t = table(
        [("s", None, 1.0, 0.7), ("s", None, 1.0, 0.0), ("l", None, 4.0, 0.1)],
        success=[True, False, False],
    )
    assert horizon(t, bootstrap=0).groups[0].outcome == "success"
    assert horizon(t, bootstrap=0, outcome="score").groups[0].outcome == "score"


def test_horizon_formula_hand_computed() -> None:
    # b0 = 1, b1 = −0.5, q = 0.8: log2 h = (ln 4 − 1)/(−0.5) = (1.386294 − 1)/(−0.5)
    # = −0.772589, h = 2^−0.772589 = e^(−0.772589·0.693147) = e^−0.535515 = 0.585366 min.
    h = horizon_from_coefficients(np.array([1.0]), np.array([-0.5]), 0.8)
    assert h[0] == pytest.approx(0.585366, abs=1e-6)
    # Limits: only successes (b0 = +∞) -> ∞; only failures -> 0; flat slope by σ(b0) vs q.
    lim = horizon_from_coefficients(
        np.array([np.inf, -np.inf, 2.0, -2.0]), np.array([0.0, 0.0, 0.0, 0.0]), 0.5
    )
    assert lim.tolist() == [np.inf, 0.0, np.inf, 0.0]


def test_flat_slope_at_exactly_q_is_undefined_not_zero() -> None:
    # b1 = 0 and σ(b0) = q: success is q at every length, so no length is the horizon.
    # logit(0.5) = 0; q = 0.25 has logit ln(0.25/0.75) = −ln 3.
    tie = horizon_from_coefficients(np.array([0.0, 1.0]), np.array([0.0, 0.0]), 0.5)
    assert np.isnan(tie[0])  # before: 0
    assert tie[1] == np.inf  # σ(1) > 0.5
    quarter = horizon_from_coefficients(np.array([np.log(0.25 / 0.75)]), np.array([0.0]), 0.25)
    assert np.isnan(quarter[0])


def test_a_tie_reports_a_null_horizon_with_a_warning() -> None:
    # One success and one failure at 1 minute and again at 4: the rate is 0.5 at both
    # lengths, so the fit is flat, b1 = 0, and b0 = logit(0.5) = 0, the tie at q = 0.5.
    trials = [
        agentgauge.Trial(task_id=t, success=ok, human_minutes=m)
        for t, ok, m in (("a", True, 1), ("b", False, 1), ("c", True, 4), ("d", False, 4))
    ]
    g = agentgauge.horizon(trials, bootstrap=0).to_dict()["groups"][0]
    assert g["slope"] == 0 and g["intercept"] == 0
    assert g["p50_minutes"] is None and g["horizons"]["0.5"] is None
    # σ(0) = 0.5 < 0.8: shorter than any task (it read 0.0)
    assert g["p80_minutes"] is None and g["p80_status"] == "below"
    assert g["p80_bound_minutes"] == 1.0
    assert any("p50 is undefined" in w for w in g["warnings"])
    json.dumps(g, allow_nan=False)


def flat_table(lengths: list[float], successes: int = 3, runs: int = 5) -> TrialTable:
    """Every task (own family) passes the same `successes` of its `runs`: no slope at all."""
    return table([(f"t{m:g}", None, m, float(k < successes)) for m in lengths for k in range(runs)])


@pytest.mark.parametrize("lengths", [[1.0, 2.0], [1.0, 2.0, 5.0], [1.0, 2.0, 5.0, 7.0]])
def test_a_flat_fit_follows_the_flat_rule_not_the_sign_of_rounding(lengths: list[float]) -> None:
    # 3 of 5 pass at every length: the optimum is b1 = 0, b0 = logit(0.6) = ln 1.5. Newton
    # stopped at b1 = ±1e-17..1e-33, and its sign made p50 0 and p80 ∞ (tasks 1, 2, 5 min,
    # b1 = 1.06e-32) or the reverse. Flat, σ(b0) = 0.6: p50 unbounded, p80 0, and q = 0.6
    # is a tie though b0 differs from ln 1.5 by ~3e-16.
    g = horizon(flat_table(lengths), q=(0.5, 0.6, 0.8), bootstrap=0).groups[0]
    assert g.slope == 0.0
    assert g.intercept == pytest.approx(math.log(1.5), abs=1e-12)
    assert g.status == {0.5: "above", 0.6: "undefined", 0.8: "below"}
    assert all(math.isnan(h) for h in g.horizons.values())
    assert g.to_dict()["horizons"] == {"0.5": None, "0.6": None, "0.8": None}
    longest = f"{max(lengths):.3g} min"
    assert [w for w in g.warnings if not w.startswith("slope b1")] == [
        f"p50 lies above the longest task ({longest}): the slope is 0 and the predicted "
        "success (0.6) is above 0.5 at every task length",
        "p60 is undefined: the slope is 0 and the predicted success is 0.6 at every task length",
        "p80 lies below the shortest task (1 min): the slope is 0 and the predicted success "
        "(0.6) is below 0.8 at every task length",
    ]


def test_flat_tolerance_is_relative_to_the_lengths_held() -> None:
    # A slope that moves the log-odds by less than 1e-9 across the lengths is 0; one that
    # moves them by more is kept (b1 = −0.00111 per doubling stays; see the test of a
    # horizon past the largest float).
    x = np.array([0.0, 2.0])
    pos, neg = np.array([[0.3, 0.3], [0.3, 0.0]]), np.array([[0.2, 0.2], [0.2, 0.0]])
    fit = fit_logistic(x, pos, neg)
    assert fit.slope.tolist() == [0.0, 0.0]  # flat data; one length held (x = 0)
    tie, above = horizon_from_coefficients(np.array([1e-10, 2e-9]), np.array([0.0, 0.0]), 0.5)
    assert math.isnan(tie) and above == math.inf


@pytest.mark.parametrize(
    "rows",
    [
        # Nine tasks of 10 minutes in three families, some passing.
        [(f"t{i}", f"f{i % 3}", 10.0, float(i % 2)) for i in range(9)],
        # One task, half its runs passing: σ(b0) = 0.5, where p50 read "—" and p80 "0".
        [("t", None, 10.0, float(k % 2)) for k in range(4)],
    ],
)
def test_one_task_length_identifies_no_slope_and_no_horizon(
    rows: list[tuple[str, str | None, float, float]],
) -> None:
    # With every task the same length only the success rate at that length is fitted;
    # the penalty sets b1 = 0, and the flat-fit rule turned that into p50 = 0 [0, ∞] and
    # p80 = 0 [0, 0] beside the warning that the slope is not identified.
    g = horizon(table(rows), bootstrap=200).groups[0]
    assert not g.slope_identified
    assert all(math.isnan(h) for h in g.horizons.values())
    assert g.ci95 is not None and all(math.isnan(v) for ci in g.ci95.values() for v in ci)
    d = g.to_dict()
    json.dumps(d, allow_nan=False)
    assert d["p50_minutes"] is None and d["p80_minutes"] is None and d["slope"] is None
    assert d["horizons"] == {"0.5": None, "0.8": None}
    assert d["ci95"] == {"0.5": [None, None], "0.8": [None, None]}
    assert d["warnings"] == [
        "all tasks have the same length (10 min): the slope is not identified, so no "
        "horizon is (every horizon and its interval is null)"
    ]
    # Ord's half-life has one parameter, which one length does identify: with one task
    # at 50%, S(10) = 2^(−10/T) = 0.5 gives T = 10 min.
    if len(rows) == 4:
        assert g.half_life_minutes == pytest.approx(10.0, rel=1e-6)


def test_perfectly_separable_is_warned_and_bounded_by_the_penalty() -> None:
    # Successes at 1 and 2 min (x = 0, 1), failures at 8 and 16 min (x = 3, 4):
    # symmetric about x = 2, so the p50 is 2^2 = 4 min whatever the slope; the
    # slope itself is limited only by the penalty and grows with C.
    rows = [("t1", "f1", 1.0, 1.0), ("t2", "f2", 2.0, 1.0)]
    rows += [("t3", "f3", 8.0, 0.0), ("t4", "f4", 16.0, 0.0)]
    t = table(rows)
    g = horizon(t, bootstrap=0).groups[0]
    assert g.horizons[0.5] == pytest.approx(4.0, rel=1e-6)
    assert any("perfectly separated" in w for w in g.warnings)
    weaker = horizon(t, bootstrap=0, regularization=1e7).groups[0]
    assert weaker.slope < g.slope < 0


def test_separation_the_wrong_way_round_is_warned_too() -> None:
    # Tasks of 1..32 min, 2 runs each, success iff at least 8 min: every failure is
    # shorter than every success. Only "slope ≥ 0" was said, though the slope (and the
    # tight interval) are set by C, as for separation the usual way round.
    rows = [(f"t{m}", None, float(m), float(m >= 8)) for m in range(1, 33) for _ in range(2)]
    t = table(rows)
    g = horizon(t, bootstrap=0).groups[0]
    assert g.slope > 0
    assert (
        "successes and failures are perfectly separated by task length, the wrong way "
        "round (longest failure 7 min, shortest success 8 min: every failure is shorter "
        "than every success): the slope is bounded only by the penalty (C = 100000)"
    ) in g.warnings
    assert not any(
        w.startswith("successes and failures are perfectly separated by task length (")
        for w in g.warnings
    )
    stronger = horizon(t, bootstrap=0, regularization=10).groups[0]
    assert 0 < stronger.slope < g.slope
    assert any("the wrong way round" in w and "(C = 10)" in w for w in stronger.warnings)


def test_positive_slope_is_warned() -> None:
    report = horizon(two_lengths(1, 4), bootstrap=0)
    g = report.groups[0]
    assert g.slope > 0
    assert any("slope b1" in w and "≥ 0" in w for w in g.warnings)


def test_extrapolation_is_warned() -> None:
    # 0.9 at x = 0 and 0.7 at x = 2 (n = 10): b0 = ln 9 = 2.197225,
    # b0 + 2·b1 = ln(7/3) = 0.847298 -> b1 = −0.674963;
    # p50: log2 h = −b0/b1 = 2.197225/0.674963 = 3.255324 -> h = 9.5488 min,
    # above the longest task (4 min).
    g = horizon(two_lengths(9, 7, n=10), bootstrap=0, regularization=1e12).groups[0]
    assert g.horizons[0.5] == pytest.approx(2**3.255324, rel=1e-5)
    assert any("p50" in w and "above the longest task" in w for w in g.warnings)
    assert not any("p80" in w for w in g.warnings)  # p80 lies inside [1, 4] min


def test_groups_are_fitted_apart_and_can_be_pooled() -> None:
    a = table([("s", None, 1.0, 1.0), ("l", None, 4.0, 0.0), ("m", None, 2.0, 1.0)], agent="a")
    rows_b = [("s", None, 1.0, 1.0), ("l", None, 4.0, 1.0), ("m", None, 2.0, 0.0)]
    b = table(rows_b, agent="b")
    both = TrialTable(**{k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in vars(a)})
    per_agent = horizon(both, bootstrap=0)
    assert [g.labels["agent"] for g in per_agent.groups] == ["a", "b"]
    assert per_agent.groups[0].n_runs == 3
    pooled = horizon(both, bootstrap=0, by=None)
    assert len(pooled.groups) == 1 and pooled.groups[0].n_runs == 6
    assert pooled.groups[0].labels == {"agent": None}  # two agents: no single name


def test_by_as_text_is_split_at_its_commas() -> None:
    # horizon(by="agent,model") was refused as one label of that name ("cannot group by
    # 'agent,model'"), and by="" as a label "", where the CLI's --by splits the text.
    a = table([("s", None, 1.0, 1.0), ("l", None, 4.0, 0.0), ("m", None, 2.0, 1.0)], agent="a")
    rows_b = [("s", None, 1.0, 1.0), ("l", None, 4.0, 1.0), ("m", None, 2.0, 0.0)]
    b = table(rows_b, agent="b")
    both = TrialTable(**{k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in vars(a)})
    as_text = horizon(both, bootstrap=0, by="agent, model")
    assert [g.labels for g in as_text.groups] == [
        g.labels for g in horizon(both, bootstrap=0, by=["agent", "model"]).groups
    ]
    assert [g.labels for g in as_text.groups] == [
        {"agent": "a", "model": None},
        {"agent": "b", "model": None},
    ]
    pooled = horizon(both, bootstrap=0, by="")
    assert len(pooled.groups) == 1 and pooled.groups[0].n_runs == 6
    with pytest.raises(InputError, match="by: cannot group by 'colour'; choose from agent"):
        horizon(both, bootstrap=0, by="agent,colour")


def test_missing_minutes_are_left_out_with_a_warning() -> None:
    t = table([("s", None, 1.0, 1.0), ("l", None, 4.0, 0.0), ("n", None, float("nan"), 1.0)])
    g = horizon(t, bootstrap=0).groups[0]
    assert g.n_runs == 2
    assert any("without human_minutes" in w for w in g.warnings)


def test_input_errors() -> None:
    t = two_lengths(4, 1)
    with pytest.raises(InputError, match="q"):
        horizon(t, q=(0.5, 1.0))
    with pytest.raises(InputError, match="bootstrap"):
        horizon(t, bootstrap=-1)
    with pytest.raises(InputError, match="regularization"):
        horizon(t, regularization=0)
    with pytest.raises(InputError, match="human_minutes"):
        horizon(table([("s", None, float("nan"), 1.0)]))
    two_families = table([("s", "A", 1.0, 1.0), ("s", "B", 1.0, 0.0), ("l", "A", 4.0, 0.0)])
    with pytest.raises(InputError) as refused:
        horizon(two_families, bootstrap=0)
    assert refused.value.reason.startswith(
        "task 's' appears under more than one family ('A', 'B'); "
    )


def test_q_is_keyed_and_named_with_all_its_digits() -> None:
    # Keys and labels had six significant digits: q = 0.5 and 0.5000001 shared the key
    # "0.5" (one horizon lost from the JSON), and 0.9999999 was named "p100".
    t = table([("s", None, 1.0, 1.0), ("s", None, 1.0, 0.0), ("l", None, 4.0, 0.0)])
    rows = [(f"t{m}", None, float(m), float(k < 6 - m)) for m in range(1, 6) for k in range(5)]
    d = horizon(table(rows), q=(0.5, 0.5000001, 0.9999999), bootstrap=20).to_dict()
    [g] = d["groups"]
    keys = ["0.5", "0.5000001", "0.9999999"]
    assert list(g["horizons"]) == keys and list(g["ci95"]) == keys
    assert list(g["half_life"]["horizons"]) == keys
    assert g["horizons"]["0.5"] != g["horizons"]["0.5000001"]
    assert any(w.startswith("p99.99999 = ") for w in g["warnings"])
    assert not any("p100" in w for w in g["warnings"])
    assert q_label(0.5) == "p50" and q_label(0.8) == "p80" and q_label(0.001) == "p0.1"
    # A q given twice would be one horizon under two names: refused.
    with pytest.raises(InputError) as twice:
        horizon(t, q=(0.5, 0.8, 0.50), bootstrap=0)
    assert twice.value.field == "q" and twice.value.reason == "each q once, got 0.5 more than once"


# --------------------------------------------------------------------------- batched Newton


def random_masses(rng: np.random.Generator, n_rep: int, n_cells: int) -> tuple[Any, Any, Any]:
    x = rng.uniform(0, 10, n_cells)
    p_true = 1 / (1 + np.exp(-(3 - 0.6 * x)))
    w = rng.uniform(0.1, 1, (n_rep, n_cells))
    y = rng.uniform(size=(n_rep, n_cells)) < p_true
    return x, w * y, w * ~y


def test_batched_fit_equals_one_fit_per_replicate_and_sklearn() -> None:
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(1)
    x, pos, neg = random_masses(rng, 6, 40)
    batched = fit_logistic(x, pos, neg, regularization=10.0)
    assert batched.converged.all()
    for b in range(6):
        one = fit_logistic(x, pos[b], neg[b], regularization=10.0)
        assert one.intercept[0] == pytest.approx(batched.intercept[b], abs=1e-9)
        assert one.slope[0] == pytest.approx(batched.slope[b], abs=1e-9)
        # scikit-learn minimises C·Σ w·loss + ½·β², the same optimum as ours.
        xx = np.concatenate([x, x])[:, None]
        yy = np.concatenate([np.ones_like(x), np.zeros_like(x)])
        sk = LogisticRegression(C=10.0, tol=1e-12, max_iter=10_000)
        sk.fit(xx, yy, sample_weight=np.concatenate([pos[b], neg[b]]))
        assert sk.coef_[0, 0] == pytest.approx(batched.slope[b], abs=1e-5)
        assert sk.intercept_[0] == pytest.approx(batched.intercept[b], abs=1e-5)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), c=st.sampled_from([0.5, 10.0, 1e5]))
def test_fit_is_a_stationary_point(seed: int, c: float) -> None:
    # At the optimum the penalised gradient vanishes:
    #   Σ(n·p − pos) = 0 and Σ(n·p − pos)·x + b1/C = 0.
    rng = np.random.default_rng(seed)
    x, pos, neg = random_masses(rng, 1, 12)
    if pos.sum() == 0 or neg.sum() == 0:
        return
    fit = fit_logistic(x, pos[0], neg[0], regularization=c)
    b0, b1 = fit.intercept[0], fit.slope[0]
    p = 1 / (1 + np.exp(-(b0 + b1 * x)))
    resid = (pos[0] + neg[0]) * p - pos[0]
    scale = (pos + neg).sum()
    assert abs(resid.sum()) < 1e-7 * scale
    assert abs(resid @ x + b1 / c) < 1e-6 * scale * (1 + abs(b1))


@settings(max_examples=30, deadline=None)
@given(
    b0=st.floats(-5, 5), b1=st.floats(-3, -0.01), q=st.floats(0.01, 0.98), dq=st.floats(0.001, 0.01)
)
def test_horizon_falls_as_q_rises_when_slope_is_negative(
    b0: float, b1: float, q: float, dq: float
) -> None:
    lo = horizon_from_coefficients(np.array([b0]), np.array([b1]), q)[0]
    hi = horizon_from_coefficients(np.array([b0]), np.array([b1]), q + dq)[0]
    assert hi <= lo


# --------------------------------------------------------------------------- bootstrap


def test_bootstrap_single_task_keeps_total_mass() -> None:
    # One family, one task, 4 runs: each replicate draws the family once, the
    # task once and 4 runs, so the total mass is Σ draws·w = 4·0.25 = 1.
    rng = np.random.default_rng(0)
    pos = np.array([0.25, 0.25, 0.0, 0.0])
    neg = 0.25 - pos
    bp, bn = bootstrap_masses(
        rng, 500, np.array([0]), np.zeros(4, np.intp), np.zeros(4, np.intp), 1, pos, neg
    )
    np.testing.assert_allclose(bp + bn, 1.0)
    # Successes drawn ~ Binomial(4, 0.5): masses are multiples of 0.25, mean 0.5.
    assert set(np.round(bp[:, 0] * 4).astype(int)) <= {0, 1, 2, 3, 4}
    assert bp.mean() == pytest.approx(0.5, abs=0.05)


def test_bootstrap_multiplicities_are_unbiased() -> None:
    # E[K_family] = 1, E[M_task | K] = K, E[m_run | M] = M, so every run's
    # expected multiplicity is 1 and mean replicate masses equal the data's.
    rng = np.random.default_rng(3)
    family_of_task = np.array([0, 0, 0, 1, 2, 2])
    task_of_run = np.array([0, 0, 1, 2, 2, 2, 3, 4, 5, 5])
    w = metr_weights(task_of_run, family_of_task[task_of_run])
    y = np.array([1, 0, 1, 0, 0, 1, 1, 0, 1, 1], dtype=float)
    cell = task_of_run
    bp, bn = bootstrap_masses(rng, 40_000, family_of_task, task_of_run, cell, 6, w * y, w * (1 - y))
    expect_pos = np.bincount(cell, weights=w * y)
    expect_neg = np.bincount(cell, weights=w * (1 - y))
    np.testing.assert_allclose(bp.mean(axis=0), expect_pos, atol=0.01)
    np.testing.assert_allclose(bn.mean(axis=0), expect_neg, atol=0.01)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=3), min_size=1, max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_bootstrap_places_every_run_draw(sizes: list[list[int]], seed: int) -> None:
    # sizes[f][k] = runs of the k-th task of family f; scores fractional, so a task
    # has several classes of runs and the binomial chain has several links.
    rng = np.random.default_rng(seed)
    family_of_task = np.array([f for f, fam in enumerate(sizes) for _ in fam])
    runs = [r for fam in sizes for r in fam]
    task_of_run = np.repeat(np.arange(len(runs)), runs)
    y = rng.choice([0.0, 0.25, 1.0], size=task_of_run.size)
    w = metr_weights(task_of_run, family_of_task[task_of_run])
    bp, bn = bootstrap_masses(
        rng, 50, family_of_task, task_of_run, task_of_run, len(runs), w * y, w * (1 - y)
    )
    assert (bp >= 0).all() and (bn >= 0).all()
    # A task drawn M times receives exactly M·r run draws, each of weight w_t:
    # its total mass divided by w_t·r is a whole number.
    w_task = np.bincount(task_of_run, weights=w) / np.array(runs)
    draws_per_r = (bp + bn) / (w_task * np.array(runs))
    np.testing.assert_allclose(draws_per_r, np.round(draws_per_r), atol=1e-9)
    # Family level: a family's tasks together get K·n task draws (K its draw count).
    for f, fam in enumerate(sizes):
        cols = np.flatnonzero(family_of_task == f)
        per_family = np.round(draws_per_r[:, cols]).sum(axis=1)
        assert (per_family % len(fam) == 0).all()


def test_bootstrap_with_fractional_scores_is_unbiased() -> None:
    rng = np.random.default_rng(11)
    family_of_task = np.array([0, 0, 1])
    task_of_run = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2])
    y = np.array([0.3, 1.0, 0.3, 0.0, 0.6, 0.9, 0.1, 0.1, 1.0])
    w = metr_weights(task_of_run, family_of_task[task_of_run])
    bp, bn = bootstrap_masses(
        rng, 40_000, family_of_task, task_of_run, task_of_run, 3, w * y, w * (1 - y)
    )
    np.testing.assert_allclose(bp.mean(axis=0), np.bincount(task_of_run, w * y), atol=0.01)
    np.testing.assert_allclose(bn.mean(axis=0), np.bincount(task_of_run, w * (1 - y)), atol=0.01)


def test_bootstrap_resamples_whole_families() -> None:
    # Two families of two tasks each, one run per task. A family not drawn
    # removes both its tasks at once, so "task 0 absent" implies "task 1 absent"
    # far more often than independent task sampling would give.
    rng = np.random.default_rng(5)
    family_of_task = np.array([0, 0, 1, 1])
    task_of_run = np.arange(4)
    w = np.full(4, 0.25)
    bp, _ = bootstrap_masses(rng, 20_000, family_of_task, task_of_run, task_of_run, 4, w, 0 * w)
    absent = bp == 0
    # P(family 0 not drawn) = (1/2)^2 = 0.25; both tasks absent then. Given the family
    # drawn once (p = 0.5), P(both absent) = 0; drawn twice (0.25): 4 task draws from 2,
    # never both absent. So P(task 0 and task 1 both absent) = 0.25, against
    # (2/4)^4 = 0.0625 if the 4 tasks were drawn ignoring families.
    assert (absent[:, 0] & absent[:, 1]).mean() == pytest.approx(0.25, abs=0.015)


def test_a_replicate_of_one_length_has_no_horizon_and_is_named() -> None:
    # Two families of one task each: 1 min passing 4 runs in 5, 4 min passing 1 in 5.
    # Half the replicates draw one family twice, so hold one length: their slope is not
    # identified (the penalty sets 0). They read 0 or ∞ by the flat rule or by rounding
    # (4 in 5 at 1 min is σ(b0) = 0.8, a tie at p80 called "slope 0, predicted success
    # exactly q"), and counted as "had slope ≥ 0". Like the full data with one length,
    # they have no horizon: left out of the interval, with their own warning.
    rows = [("s", "A", 1.0, float(k < 4)) for k in range(5)]
    rows += [("l", "B", 4.0, float(k < 1)) for k in range(5)]
    n_boot = 1000
    g = horizon(table(rows), bootstrap=n_boot).groups[0]
    assert g.bootstrap_horizons is not None
    # A replicate of one length has no horizon at any q (a tie has none at one q only:
    # here a replicate whose two tasks both drew 4 passes in 5 is flat at σ(b0) = 0.8).
    one = np.isnan(g.bootstrap_horizons[0.5]) & np.isnan(g.bootstrap_horizons[0.8])
    # P(one family drawn twice) = 1/2; its task is then drawn twice, 10 runs from its 5,
    # all passing (or all failing) with P = 0.8^10 + 0.2^10 = 0.107, and then there is no
    # fit at all (0 or ∞): 0.5 · 0.893 = 0.446 of the replicates (sd 0.016).
    assert one.sum() == pytest.approx(0.446 * n_boot, abs=60)
    assert (
        f"{one.sum()} of {n_boot} bootstrap replicates drew tasks of one length only: the "
        "slope is not identified in them, so they have no horizon and the interval omits them"
    ) in g.warnings
    assert not any("p50 undefined" in w or "largest float" in w for w in g.warnings)
    ties = np.isnan(g.bootstrap_horizons[0.8]) & ~one
    assert (
        not ties.any()
        or (
            f"{ties.sum()} of {n_boot} bootstrap replicates left p80 undefined (slope 0, "
            "predicted success exactly q); the interval omits them"
        )
        in g.warnings
    )
    positive = [w for w in g.warnings if w.endswith("had slope ≥ 0")]
    assert not positive or int(positive[0].split()[0]) < 0.05 * n_boot
    assert g.ci95 is not None
    assert g.ci95_status is not None and g.ci95_bound_minutes is not None
    for q in (0.5, 0.8):
        kept = g.bootstrap_horizons[q][~np.isnan(g.bootstrap_horizons[q])]
        # The replicates with no fit (0 or ∞ in `bootstrap_horizons`) rank as those did;
        # an end that falls among them is bounded, and only an estimated end has a value.
        for end, status, value in zip(
            g.ci95[q], g.ci95_status[q], percentile_with_inf(kept, (2.5, 97.5)), strict=True
        ):
            if status == "estimated":
                assert end == value
            else:
                assert math.isnan(end) and (status, value) in (("below", 0.0), ("above", math.inf))


def test_percentile_keeps_infinity() -> None:
    assert percentile_with_inf(np.array([1.0, 2.0, np.inf, np.inf]), [97.5]) == [np.inf]
    # Linear interpolation at 50%: position 1.5 between 2 and 3 -> 2.5.
    assert percentile_with_inf(np.array([3.0, 1.0, 2.0, 4.0]), [50]) == [2.5]


# --------------------------------------------------------------------------- Ord, log-loss


def test_half_life_hand_computed() -> None:
    # One length t = 8 min, 1 success in 4: the MLE sets S(8) = 1/4 = 2^(−8/T),
    # so T_half = 8 / log2(4) = 4 min.
    t = np.array([8.0])
    assert fit_half_life(t, np.array([1.0]), np.array([3.0])) == pytest.approx(4.0, rel=1e-6)
    assert fit_half_life(t, np.array([1.0]), np.array([0.0])) == math.inf
    assert fit_half_life(t, np.array([0.0]), np.array([1.0])) == 0.0


def test_weighted_log_loss_hand_computed() -> None:
    # p = 0.8 against masses 0.8 / 0.2: −(0.8·ln 0.8 + 0.2·ln 0.2) = 0.178515 + 0.321888 = 0.500402
    assert weighted_log_loss(np.array([0.8]), np.array([0.8]), np.array([0.2])) == pytest.approx(
        0.500402, abs=1e-6
    )


def test_both_models_reported_with_log_loss() -> None:
    g = horizon(two_lengths(4, 1), bootstrap=0).groups[0]
    # The logistic fit is saturated here (two lengths, two parameters), so it cannot
    # lose to the one-parameter half-life model.
    assert g.log_loss["logistic"] <= g.log_loss["half_life"]
    assert 1.0 < g.half_life_minutes < 16.0
    assert g.half_life_horizons[0.5] == pytest.approx(g.half_life_minutes)


# --------------------------------------------------------------------------- report


def test_report_object_matches_spec_7() -> None:
    rows = [("s", "f", 1.0, 1.0), ("s", "f", 1.0, 0.0), ("l", "g", 4.0, 0.0), ("m", "g", 2.0, 1.0)]
    report = agentgauge.horizon(table(rows), bootstrap=50, seed=1)
    d = report.to_dict()
    json.dumps(d, allow_nan=False)  # no NaN or Infinity reaches JSON
    assert d["schema"] == "agentgauge.horizon/1"
    g = d["groups"][0]
    for key in ("agent", "p50_minutes", "p80_minutes", "ci95", "slope", "intercept"):
        assert key in g
    assert g["agent"] == "a" and g["n_runs"] == 4 and g["n_tasks"] == 3
    assert set(g["ci95"]) == {"0.5", "0.8"}
    assert isinstance(g["warnings"], list)
    assert set(g["log_loss"]) == {"logistic", "half_life"}


def test_unbounded_horizon_is_null_in_json() -> None:
    g = horizon(table([("s", None, 1.0, 1.0), ("l", None, 4.0, 1.0)]), bootstrap=0).groups[0]
    assert math.isnan(g.horizons[0.5]) and g.status[0.5] == "above"
    d = g.to_dict()
    assert d["p50_minutes"] is None and d["horizons"]["0.5"] is None
    assert d["status"]["0.5"] == "above" and d["bound_minutes"]["0.5"] == 4.0
    assert any("no failures" in w for w in d["warnings"])


def test_a_horizon_past_the_largest_float_is_null_and_says_so() -> None:
    # 0.9 at 1 min and 0.8999 at 2 min: b1 = logit(0.8999) − logit(0.9) = ln(8.990010) −
    # ln 9 = 2.196115 − 2.197225 = −0.001110 per doubling, so log2 p50 = 2.197225/0.001110
    # ≈ 1979 and p50 = 2^1979 minutes, past the largest float: ∞, JSON null, and the warning said
    # "p50 = inf min lies above the longest task".
    t = table([("a", None, 1.0, 0.9), ("b", None, 2.0, 0.8999)])
    g = horizon(t, bootstrap=0).groups[0]
    assert g.slope == pytest.approx(-0.001110, abs=1e-6)
    assert math.isnan(g.horizons[0.5])
    d = g.to_dict()
    assert d["p50_minutes"] is None and d["horizons"]["0.5"] is None
    # All the data say is that it lies past the longest task (2 min).
    assert (d["p50_status"], d["p50_bound_minutes"]) == ("above", 2.0)
    assert any(
        w.startswith("p50 passes the largest float (about 1.8e308 min)") for w in d["warnings"]
    )
    assert not any("inf min" in w for w in d["warnings"])
    # p80: log2 = (ln 4 − 2.197225)/(−0.001110) ≈ 730: a float, and an extrapolation.
    assert 1e219 < g.horizons[0.8] < 1e220
    assert any(w.startswith("p80 = ") and "above the longest task" in w for w in d["warnings"])


def test_huge_finite_task_lengths_fit_without_numeric_warnings() -> None:
    # Lengths of 1e300 and 1e308 minutes overflowed −ln S = t·ln 2 / T_half to ∞ inside
    # the half-life search (0·∞ = NaN in its loss; a RuntimeWarning, an error under
    # python -W error). The half-life scales with the unit: T(c·t) = c·T(t).
    pos, neg = np.array([1.0, 0.5]), np.array([0.2, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = fit_half_life(np.array([1e300, 1e308]), pos, neg)
        rows = [(f"t{i}", None, 2.0**i, float(i < 3)) for i in range(6)]
        rows.append(("big", None, 1e308, 0.0))
        horizon(table(rows), bootstrap=20)
    small = fit_half_life(np.array([1.0, 1e8]), pos, neg)
    # The bounded search stops within √ε·|ln T| of ln T: 1e-5 at ln T ≈ 707.
    assert huge == pytest.approx(small * 1e300, rel=1e-4)


# --------------------------------------------------------------------------- METR data


@pytest.fixture(scope="module")
def metr_trials() -> list[Any]:
    # Module scope (loaded once for the two tests): the same path as the shared_data fixture.
    path = (
        Path(__file__).resolve().parents[2].parent / "shared" / "data" / "metr" / "all_runs.jsonl"
    )
    if not path.is_file():
        pytest.skip(f"reference data not found at {path}")
    return read_metr(path).trials


def test_metr_horizons_agree_with_sklearn(shared_data: Path, metr_trials: list[Any]) -> None:
    from sklearn.linear_model import LogisticRegression

    ours = {g.labels["agent"]: g for g in horizon(metr_trials, bootstrap=0).groups}
    # Independent side: METR's own weight column, straight from the file.
    rows = [json.loads(line) for line in (shared_data / "metr" / "all_runs.jsonl").open()]
    checked = 0
    for alias in sorted({r["alias"] for r in rows}):
        rs = [r for r in rows if r["alias"] == alias]
        y = np.array([r["score_binarized"] for r in rs])
        if y.min() == y.max():  # davinci-002 never succeeds: sklearn cannot fit one class
            assert ours[alias].status[0.5] == "below"
            continue
        x = np.log2([r["human_minutes"] for r in rs])[:, None]
        w = np.array([r["invsqrt_task_weight"] for r in rs])
        sk = LogisticRegression(C=1e5, tol=1e-12, max_iter=100_000).fit(x, y, sample_weight=w)
        for q in (0.5, 0.8):
            expected = 2 ** ((math.log(q / (1 - q)) - sk.intercept_[0]) / sk.coef_[0, 0])
            assert ours[alias].horizons[q] == pytest.approx(expected, rel=0.01), (alias, q)
        assert ours[alias].outcome == "success"
        checked += 1
    assert checked == 10


def test_metr_bootstrap_is_reproducible_from_its_seed(metr_trials: list[Any]) -> None:
    sonnet = [t for t in metr_trials if t.agent == "Claude 3.5 Sonnet (New)"]
    a = horizon(sonnet, bootstrap=1000, seed=7).groups[0]
    b = horizon(sonnet, bootstrap=1000, seed=7).groups[0]
    c = horizon(sonnet, bootstrap=1000, seed=8).groups[0]
    assert a.ci95 == b.ci95
    assert a.ci95 != c.ci95
    assert a.ci95 is not None and c.ci95 is not None
    lo, hi = a.ci95[0.5]
    assert lo < a.horizons[0.5] < hi
    # Two seeds of 1000 replicates agree on the interval to within a few percent... of a
    # log-scale width: the interval is a property of the data, not of the seed.
    assert math.log(c.ci95[0.5][0]) == pytest.approx(math.log(lo), abs=0.25)
    assert math.log(c.ci95[0.5][1]) == pytest.approx(math.log(hi), abs=0.25)


def test_metr_intervals_are_those_docs_horizon_md_shows(metr_trials: list[Any]) -> None:
    # docs/horizon.md, "How to read the numbers" (B = 1000, seed 0): each bound as shown,
    # to the significant digits shown.
    groups = {g.labels["agent"]: g for g in horizon(metr_trials, bootstrap=1000, seed=0).groups}
    shown = {
        "Claude 3.5 Sonnet (New)": (("18.9", "192"), ("0.24", "22.8")),
        "o1": (("3.14", "250"), ("0.0002", "12.8")),
        "GPT-4o": (("0.95", "27.5"), ("0.006", "4.37")),
    }
    for agent, intervals in shown.items():
        ci = groups[agent].ci95
        assert ci is not None
        for q, bounds in zip((0.5, 0.8), intervals, strict=True):
            for got, text in zip(ci[q], bounds, strict=True):
                digits = len(text.replace(".", "").lstrip("0"))
                assert float(f"{got:.{digits}g}") == float(text), (agent, q, got, text)


def test_a_group_interval_does_not_depend_on_the_other_groups() -> None:
    # Two agents with the same runs. The bootstrap seeds were spawned in group order, so
    # b's interval changed when a was in the source (b [9.45, 53.21] beside a, [10.53,
    # 49.19] alone). Each group is now seeded from the seed and its own labels.
    rows = [
        (f"t{m:g}", f"f{i % 3}", m, float(k < 4 - 0.7 * i))
        for i, m in enumerate([1.0, 2.0, 4.0, 8.0, 16.0, 32.0])
        for k in range(4)
    ]
    a, b = table(rows, agent="a"), table(rows, agent="b")
    both = TrialTable(**{k: np.concatenate([getattr(a, k), getattr(b, k)]) for k in vars(a)})
    swapped = TrialTable(**{k: np.concatenate([getattr(b, k), getattr(a, k)]) for k in vars(a)})
    alone = horizon(b, bootstrap=300).groups[0]
    for together in (horizon(both, bootstrap=300), horizon(swapped, bootstrap=300)):
        [in_pair] = [g for g in together.groups if g.labels["agent"] == "b"]
        assert in_pair.ci95 == alone.ci95
        assert in_pair.bootstrap_horizons is not None and alone.bootstrap_horizons is not None
        np.testing.assert_array_equal(
            in_pair.bootstrap_horizons[0.5], alone.bootstrap_horizons[0.5]
        )
    # The seed still matters, and another agent draws its own replicates.
    assert horizon(b, bootstrap=300, seed=1).groups[0].ci95 != alone.ci95
    assert horizon(a, bootstrap=300).groups[0].ci95 != alone.ci95


def test_all_failures_give_no_interval_slope_or_loss_and_a_group_without_lengths_is_named() -> None:
    # All 16 runs of agent a fail: the horizon lies below 1 min (it read 0), and the interval was
    # [0, 0] (every bootstrap replicate repeats the same all-failure fit), the slope 0.0
    # and the log-loss 0.0 (a perfect fit). Agent b has no task lengths and vanished.
    rows = [
        {"task_id": f"t{i}", "trial": k, "success": False, "human_minutes": 2.0**i, "agent": "a"}
        for i in range(8)
        for k in range(2)
    ] + [{"task_id": "u", "trial": 0, "success": True, "agent": "b"}]
    table = TrialTable.from_trials([agentgauge.Trial.model_validate(r) for r in rows])
    report = horizon(table, bootstrap=200).to_dict()
    [g] = report["groups"]
    assert g["agent"] == "a" and g["horizons"] == {"0.5": None, "0.8": None}
    assert g["status"] == {"0.5": "below", "0.8": "below"}
    assert g["bound_minutes"] == {"0.5": 1.0, "0.8": 1.0}
    assert g["ci95"] is None and g["slope"] is None
    assert g["log_loss"] == {"logistic": None, "half_life": None}
    assert "no interval: every bootstrap replicate would repeat the same fit" in g["warnings"]
    assert report["warnings"] == ["agent=b: left out, its one trial has no human_minutes"]
