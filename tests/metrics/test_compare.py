"""Paired comparison (docs/compare-and-plan.md): hand-computed cases, cross-checks,
simulations."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar

from agentgauge.importers import import_file
from agentgauge.metrics import compute_metrics
from agentgauge.metrics.compare import (
    _p_value,
    compare,
    design_phrase,
    first_families,
    mcnemar_exact,
    too_few_units,
    verdict_sentence,
)
from agentgauge.schema import Trial
from agentgauge.stats.exact import sign_test_min_n
from agentgauge.stats.se import se_clustered
from agentgauge.store import Store
from agentgauge.table import TrialTable


def _table(per_task: dict[str, list[int]], **extra: list[object]) -> TrialTable:
    ids = [t for t, outs in per_task.items() for _ in outs]
    ok = [bool(o) for outs in per_task.values() for o in outs]
    return TrialTable.from_columns(len(ids), task_id=ids, success=ok, **extra)


def test_one_trial_per_task_by_hand() -> None:
    # A: 1,0,1,0,1  B: 1,1,1,0,0 → d = 0, 1, 0, 0, −1; mean 0
    # sd = √((0 + 1 + 0 + 0 + 1)/4) = √0.5 = 0.707107; SE = 0.707107/√5 = 0.316228
    # t_{0.975, 4} = 2.776445 → CI = ±2.776445·0.316228 = ±0.877989; p = 1
    a = _table({"t1": [1], "t2": [0], "t3": [1], "t4": [0], "t5": [1]})
    b = _table({"t1": [1], "t2": [1], "t3": [1], "t4": [0], "t5": [0]})
    c = compare(a, b)
    assert c.mean_diff == 0 and c.se_paired == pytest.approx(0.316228, abs=1e-6)
    assert c.ci95 == pytest.approx((-0.877989, 0.877989), abs=1e-6)
    assert c.p_value == pytest.approx(1.0)
    assert c.df == 4 and c.test == "paired t on tasks, df = 4"
    # 5 tasks are too few to tell at α = 0.05 whatever the data: 2 · 0.5^5 = 0.0625.
    assert c.verdict == (
        "not distinguishable from noise with 5 tasks × 1 trial: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 5 tasks cannot go "
        "below p = 2 × 0.5^5 = 0.0625)"
    )
    assert c.a_only == ["t5"] and c.b_only == ["t2"]
    # McNemar: one discordant task each way → p = 1
    assert c.mcnemar is not None and c.mcnemar.p_value == 1.0
    ref = stats.ttest_rel(c.p_b, c.p_a)
    assert c.p_value == pytest.approx(ref.pvalue)


def test_several_trials_by_hand() -> None:
    # Two trials per task. A: p = 1, 0.5, 0, 0.5 (rate 0.5); B: p = 1, 1, 0.5, 1 (rate 0.875)
    # d = 0, 0.5, 0.5, 0.5: mean 0.375; deviations −0.375, 0.125 ×3 → Σ² = 0.1875
    # sd = √(0.1875/3) = 0.25, SE = 0.25/2 = 0.125; t = 3, df 3 → p = 2·t.sf(3, 3) = 0.057669
    # t_{0.975, 3} = 3.182446 → CI = 0.375 ± 0.397806 = (−0.022806, 0.772806)
    a = _table(
        {"t1": [1, 1], "t2": [1, 0], "t3": [0, 0], "t4": [0, 1]},
        cost_usd=[0.2] * 8,
    )
    b = _table(
        {"t1": [1, 1], "t2": [1, 1], "t3": [1, 0], "t4": [1, 1]},
        cost_usd=[0.3] * 8,
    )
    c = compare(a, b, label_a="old", label_b="new")
    assert c.rate_a == 0.5 and c.rate_b == 0.875 and c.mean_diff == pytest.approx(0.375)
    assert c.se_paired == pytest.approx(0.125)
    assert c.p_value == pytest.approx(0.057669, abs=1e-6)
    assert c.ci95 == pytest.approx((-0.022806, 0.772806), abs=1e-6)
    assert c.verdict == (
        "not distinguishable from noise with 4 tasks × 2 trials: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 4 tasks cannot go "
        "below p = 2 × 0.5^4 = 0.125)"
    )
    # Unpaired: SE_A = sd(1, .5, 0, .5)/2 = √(0.5/3)/2 = 0.204124; SE_B = sd(1,1,.5,1)/2 = 0.125
    #   √(0.204124² + 0.125²) = √(0.041667 + 0.015625) = 0.239357 — pairing nearly halves it.
    assert c.se_unpaired == pytest.approx(0.239357, abs=1e-6)
    # Correlation: deviations A (.5, 0, −.5, 0), B (.125, .125, −.375, .125):
    #   Σ products 0.25, Σ A² 0.5, Σ B² 0.1875 → 0.25/√(0.09375) = 0.816497
    assert c.correlation == pytest.approx(0.816497, abs=1e-6)
    # No majority flips (t2, t4 are 0.5 in A: neither passed nor failed); no McNemar with K = 2.
    assert c.a_only == [] and c.b_only == [] and c.mcnemar is None
    # Cost of pass: A 0.2/0.5 = 0.4; B 0.3/0.875 = 0.342857; ratio 0.857143
    assert c.cost_of_pass_a == pytest.approx(0.4) and c.cost_of_pass_b == pytest.approx(0.342857)
    assert c.cost_ratio == pytest.approx(0.857143, abs=1e-6)


def test_mcnemar_matches_statsmodels() -> None:
    # 2 tasks passed only by A, 9 only by B: p = 2·P(X ≤ 2), X ~ Bin(11, ½)
    #   = 2·(C(11,0) + C(11,1) + C(11,2))/2^11 = 2·(1 + 11 + 55)/2048 = 134/2048 = 0.065430
    m = mcnemar_exact(2, 9)
    assert m.p_value == pytest.approx(134 / 2048)
    ref = mcnemar([[20, 2], [9, 19]], exact=True)
    assert m.p_value == pytest.approx(ref.pvalue)
    assert mcnemar_exact(0, 0).p_value == 1.0
    # The same table through compare: 20 both pass, 2 A only, 9 B only, 19 both fail.
    outs = [(1, 1)] * 20 + [(1, 0)] * 2 + [(0, 1)] * 9 + [(0, 0)] * 19
    a = _table({f"t{i:02d}": [x] for i, (x, _) in enumerate(outs)})
    b = _table({f"t{i:02d}": [y] for i, (_, y) in enumerate(outs)})
    c = compare(a, b)
    assert c.mcnemar is not None and c.mcnemar.p_value == pytest.approx(ref.pvalue)
    assert len(c.a_only) == 2 and len(c.b_only) == 9


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 30), st.integers(0, 30))
def test_mcnemar_property(x: int, y: int) -> None:
    m = mcnemar_exact(x, y)
    ref = mcnemar([[5, x], [y, 5]], exact=True).pvalue
    assert m.p_value == pytest.approx(ref, abs=1e-12)
    assert mcnemar_exact(y, x).p_value == pytest.approx(m.p_value)


def test_clustered_se_uses_families() -> None:
    rng = np.random.default_rng(0)
    tasks = {f"t{i}": [int(x) for x in rng.random(3) < 0.5] for i in range(24)}
    fam = [f"f{int(t[1:]) // 4}" for t, outs in tasks.items() for _ in outs]
    a = _table(tasks, family=fam)
    b = _table({t: [int(x) for x in rng.random(3) < 0.6] for t in tasks}, family=fam)
    c = compare(a, b)
    assert c.se_method == "clustered" and c.n_clusters == 6 and c.df == 5
    d = c.p_b - c.p_a
    assert c.se_paired == pytest.approx(se_clustered(d, [f"f{int(t[1:]) // 4}" for t in c.tasks]))
    assert c.test == "paired t on families, df = 5"
    lo, hi = c.ci95  # type: ignore[misc]
    assert hi - lo == pytest.approx(2 * stats.t.ppf(0.975, 5) * c.se_paired)  # type: ignore[operator]


def _simulated_run(theta: np.ndarray, k: int, seed: int) -> TrialTable:
    """A seeded noisy agent: task t succeeds with probability theta[t] on each trial."""
    rng = np.random.default_rng(seed)
    ok = rng.random((len(theta), k)) < theta[:, None]
    return _table({f"t{i:03d}": list(row.astype(int)) for i, row in enumerate(ok)})


THETA = np.random.default_rng(2024).beta(2, 2, size=60)  # per-task true rates, fixed


def test_same_agent_different_seeds_is_noise() -> None:
    c = compare(_simulated_run(THETA, 4, seed=1), _simulated_run(THETA, 4, seed=2))
    assert c.verdict == "not distinguishable from noise with 60 tasks × 4 trials"
    assert c.superiority == "noise"


def test_false_alarm_rate_is_near_alpha() -> None:
    # 300 pairs of runs of one agent: the paired t test should cry "better/worse" in
    # about 5% of them. Binomial SE at 5% over 300 is 1.26%: accept 1.5%–9.5%.
    verdicts = [
        compare(_simulated_run(THETA, 4, seed=s), _simulated_run(THETA, 4, seed=1000 + s))
        for s in range(300)
    ]
    alarms = np.mean([c.superiority != "noise" for c in verdicts])
    assert 0.015 < alarms < 0.095, alarms


def test_clearly_better_and_worse() -> None:
    a = _simulated_run(THETA, 4, seed=1)
    b = _simulated_run(np.minimum(THETA + 0.25, 1.0), 4, seed=2)
    better = compare(a, b)
    assert better.verdict == "B is better" and better.p_value is not None
    assert better.p_value < 1e-6
    assert compare(b, a).verdict == "B is worse"


def test_margin_non_inferiority() -> None:
    a = _simulated_run(THETA, 4, seed=1)
    b = _simulated_run(THETA, 4, seed=2)
    c = compare(a, b, margin=0.1)
    assert c.ci is not None and c.ci[0] > -0.1
    assert c.verdict == "B is not worse than A by more than 0.1"
    assert c.non_inferior is True and c.non_inferior_at(0.001) is False
    worse = compare(a, _simulated_run(np.maximum(THETA - 0.3, 0.0), 4, seed=2), margin=0.05)
    assert worse.verdict == "B is worse than A by more than 0.05" and worse.non_inferior is False
    assert compare(a, b).non_inferior is None


def test_verdict_sentences() -> None:
    d = "10 tasks × 1 trial"
    noise = f"not distinguishable from noise with {d}"
    assert verdict_sentence((0.01, 0.2), d) == ("B is better", "better")
    assert verdict_sentence((-0.2, -0.01), d) == ("B is worse", "worse")
    assert verdict_sentence((-0.1, 0.1), d) == (noise, "noise")
    assert verdict_sentence(None, d) == (noise, "noise")
    m = 0.05
    assert verdict_sentence((0.01, 0.2), d, m)[0] == "B is better"
    assert verdict_sentence((-0.04, 0.1), d, m)[0] == "B is not worse than A by more than 0.05"
    assert verdict_sentence((-0.3, -0.1), d, m)[0] == "B is worse than A by more than 0.05"
    assert verdict_sentence((-0.08, -0.01), d, m)[0] == "B is worse"
    assert verdict_sentence((-0.08, 0.02), d, m)[0] == (
        f"B may be worse than A by more than 0.05: {noise}"
    )


def _all_moving(n_tasks: int, trials: int) -> tuple[TrialTable, TrialTable]:
    """A fails every trial of every task, B passes them all."""
    return (
        _table({f"t{i}": [0] * trials for i in range(n_tasks)}),
        _table({f"t{i}": [1] * trials for i in range(n_tasks)}),
    )


def test_two_tasks_cannot_tell() -> None:
    # Both tasks fail in A and pass in B, one trial each. The score interval (unchanged)
    # excludes 0: each rate's Wilson bound over 2 is z²/(2 + z²) = 3.841459/5.841459 =
    # .657620 from its end, r = 0 (no spread to correlate), so the lower bound is
    # 1 − .6576198·√2 = .0699852, at p = 0.028 by the test it inverts. But McNemar, the
    # sign test over the 2 tasks, says 2 · 0.5² = 0.5: with 2 tasks no test over tasks
    # reaches 0.05, and the verdict said "B is better" on them.
    c = compare(*_all_moving(2, 1))
    assert c.interval == "score" and c.ci == c.ci95
    assert c.ci95 == pytest.approx((0.0699852, 1.0), abs=1e-6)
    assert c.p_value == pytest.approx(0.028, abs=1e-3)
    assert c.mcnemar is not None and c.mcnemar.p_value == 0.5
    assert c.verdict == (
        "not distinguishable from noise with 2 tasks × 1 trial: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 2 tasks cannot go "
        "below p = 2 × 0.5^2 = 0.5)"
    )
    assert c.superiority == "noise"
    assert (c.unit, c.n_units, c.min_units, c.too_few_units) == ("tasks", 2, 6, True)
    d = c.to_dict()
    assert d["verdict"] == c.verdict and d["superiority"] == "noise"
    assert (d["unit"], d["n_units"], d["min_units"], d["too_few_units"]) == ("tasks", 2, 6, True)
    # A margin is no way around it: the interval's lower bound is above −0.5, but 2 tasks
    # cannot show B within 0.5 of A either.
    m = compare(*_all_moving(2, 1), margin=0.5)
    assert m.verdict == c.verdict and m.non_inferior is False and m.non_inferior_at(1.0) is False


def test_two_tasks_of_three_trials_cannot_tell() -> None:
    # 2 tasks × 3 trials, every trial failing in A and passing in B: each rate's Wilson
    # bound over 6 trials is 3.841459/9.841459 = .390334 from its end, so the interval's
    # lower bound is 1 − .3903343·√2 = .4479840 and p = 0.00014. Trials are not tasks: the
    # sign test over the 2 tasks still cannot go below 0.5.
    c = compare(*_all_moving(2, 3))
    assert c.ci95 == pytest.approx((0.447984, 1.0), abs=1e-6)
    assert c.p_value is not None and c.p_value < 0.001
    assert c.verdict == (
        "not distinguishable from noise with 2 tasks × 3 trials: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 2 tasks cannot go "
        "below p = 2 × 0.5^2 = 0.5)"
    )
    assert c.superiority == "noise" and c.too_few_units


def test_six_tasks_all_moving_are_enough() -> None:
    # 6 tasks is the fewest at α = 0.05: the sign test's 2 · 0.5^6 = 0.03125 ≤ 0.05
    # (McNemar says the same). Each rate's Wilson bound over 6 is .390334, as above.
    c = compare(*_all_moving(6, 1))
    assert c.mcnemar is not None and c.mcnemar.p_value == 0.03125
    assert c.ci95 == pytest.approx((0.447984, 1.0), abs=1e-6)
    assert c.verdict == "B is better" and c.superiority == "better"
    assert (c.n_units, c.min_units, c.too_few_units) == (6, 6, False)
    assert compare(*_all_moving(6, 1), margin=0.05).non_inferior is True


def test_alpha_sets_the_fewest_tasks() -> None:
    # 5 tasks: 2 · 0.5^5 = 0.0625, above 0.05 but within 0.1.
    at_05 = compare(*_all_moving(5, 1))
    assert at_05.superiority == "noise" and at_05.min_units == 6
    assert at_05.verdict.endswith(
        "(the exact sign test over 5 tasks cannot go below p = 2 × 0.5^5 = 0.0625)"
    )
    at_10 = compare(*_all_moving(5, 1), alpha=0.1)
    assert at_10.verdict == "B is better" and at_10.min_units == 5 and not at_10.too_few_units
    # 4 tasks are too few at α = 0.1 (2 · 0.5^4 = 0.125), and the reason names α.
    at_10_4 = compare(*_all_moving(4, 1), alpha=0.1)
    assert at_10_4.verdict == (
        "not distinguishable from noise with 4 tasks × 1 trial: too few tasks to tell at "
        "α = 0.1, which needs at least 5 (the exact sign test over 4 tasks cannot go "
        "below p = 2 × 0.5^4 = 0.125)"
    )


def test_sign_test_min_n_by_hand() -> None:
    # The smallest n with 2 · 0.5^n ≤ α; at α = 2 · 0.5^5 exactly, 5 is enough.
    cases = {0.05: 6, 0.1: 5, 0.0625: 5, 0.01: 8, 0.2: 4, 0.5: 2, 0.9: 2}
    assert {a: sign_test_min_n(a) for a in cases} == cases
    assert too_few_units(6, "tasks", 0.05) is None
    assert too_few_units(1, "families", 0.05) == (
        "too few families to tell at α = 0.05, which needs at least 6 (the exact sign "
        "test over 1 family cannot go below p = 2 × 0.5^1 = 1)"
    )


def test_few_families_are_too_few_units() -> None:
    # Clustered by family, the families are the units (df = C − 1): 12 tasks in 3
    # families, every task moving from fail to pass, cannot tell at α = 0.05.
    fam: list[object] = [f"f{i // 4}" for i in range(12)]
    a = _table({f"t{i}": [0] for i in range(12)}, family=fam)
    b = _table({f"t{i}": [1] for i in range(12)}, family=fam)
    c = compare(a, b)
    assert c.se_method == "clustered" and (c.unit, c.n_units) == ("families", 3)
    assert c.verdict == (
        "not distinguishable from noise with 12 tasks × 1 trial: too few families to tell "
        "at α = 0.05, which needs at least 6 (the exact sign test over 3 families cannot "
        "go below p = 2 × 0.5^3 = 0.25)"
    )


def test_design_phrase() -> None:
    assert design_phrase(50, [4] * 3, [4] * 3) == "50 tasks × 4 trials"
    assert design_phrase(1, [1], [1]) == "1 task × 1 trial"
    assert design_phrase(2, [4, 4], [1, 1]) == "2 tasks × 4 (A) / 1 (B) trials"
    assert design_phrase(2, [1, 4], [2, 2]) == "2 tasks × 1–4 trials"


def test_selection_shared_tasks_variants_heldout_and_cost() -> None:
    a = _table(
        {"t1": [1, 0], "t2": [1], "t3": [0], "only_a": [1]},
        variant=["base", "paraphrase:1", "base", "base", "base"],
        split=["dev", "dev", "dev", "heldout", "dev"],
        cost_usd=[0.1, 0.1, 0.1, 0.1, np.nan],
    )
    b = _table(
        {"t1": [1], "t2": [0], "t3": [1], "only_b": [0]}, split=[None, None, "heldout", None]
    )
    c = compare(a, b)
    # paraphrase row and held-out t3 dropped → shared tasks t1, t2
    assert c.tasks == ["t1", "t2"] and c.tasks_only_a == ["only_a"] and c.tasks_only_b == ["only_b"]
    assert c.trials_a.tolist() == [1, 1]
    assert c.cost_of_pass_a == pytest.approx(0.1)  # 0.1 per trial / rate 1.0
    assert c.cost_of_pass_b is None and c.cost_reason_b == "price unknown for 2 of 2 trials"
    assert compare(a, b, include_heldout=True).tasks == ["t1", "t2", "t3"]
    with pytest.raises(ValueError, match="no task in common"):
        compare(_table({"x": [1]}), _table({"y": [1]}))


def test_degenerate_inputs() -> None:
    one = compare(_table({"t": [1]}), _table({"t": [0]}))
    assert one.se_paired is None and one.p_value is None and one.ci95 is None
    assert one.verdict == (
        "not distinguishable from noise with 1 task × 1 trial: too few tasks to tell at "
        "α = 0.05, which needs at least 6 (the exact sign test over 1 task cannot go "
        "below p = 2 × 0.5^1 = 1)"
    )
    # Every task moves by exactly +1: zero spread, no t statistic (a t test "gave" 0).
    # The verdict's interval is the score one, and the p-value is the test it inverts:
    # below 0.05 exactly as the interval excludes 0. Two tasks cannot tell, though
    # (test_two_tasks_cannot_tell).
    shift = compare(_table({"a": [0], "b": [0]}), _table({"a": [1], "b": [1]}))
    assert shift.se_paired == 0 and shift.interval == "score" and shift.p_method == "score"
    assert shift.superiority == "noise" and shift.too_few_units
    assert shift.ci95 is not None and shift.ci95[0] > 0
    assert shift.p_value is not None and 0.01 < shift.p_value < 0.05
    assert shift.p_test == "the test the MOVER score interval inverts"
    json.dumps(one.to_dict(), allow_nan=False)
    # Two tasks, huge spread: the t interval would pass ±1; it is clipped to [−1, 1].
    wide = compare(_table({"a": [0], "b": [1]}), _table({"a": [1], "b": [0]}))
    assert wide.ci95 == (-1.0, 1.0)


def test_to_dict_has_the_spec_fields() -> None:
    c = compare(_simulated_run(THETA, 2, seed=1), _simulated_run(THETA, 2, seed=2), seed=3)
    d = c.to_dict()
    for key in (
        "schema", "n_tasks", "mean_diff", "se_paired", "se_unpaired", "ci95",
        "p_value", "correlation", "verdict", "flips", "cost_of_pass",
    ):  # fmt: skip
        assert key in d
    assert d["schema"] == "agentgauge.compare/1" and d["n_tasks"] == 60
    assert set(d["flips"]) == {"a_only", "b_only"} and {"a", "b"} <= set(d["cost_of_pass"])
    json.dumps(d, allow_nan=False)
    # The score interval (formerly a seeded bootstrap) is reproducible.
    again = compare(_simulated_run(THETA, 2, seed=1), _simulated_run(THETA, 2, seed=2), seed=3)
    assert again.ci95_score == c.ci95_score


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=25))
def test_swap_negates(pairs: list[tuple[int, int]]) -> None:
    a = _table({f"t{i}": [1] * x + [0] * (3 - x) for i, (x, _) in enumerate(pairs)})
    b = _table({f"t{i}": [1] * y + [0] * (3 - y) for i, (_, y) in enumerate(pairs)})
    ab, ba = compare(a, b), compare(b, a)
    assert ab.mean_diff == pytest.approx(-ba.mean_diff)
    assert ab.a_only == ba.b_only and ab.b_only == ba.a_only
    assert ab.p_value == pytest.approx(ba.p_value)
    same = compare(a, a)
    assert same.mean_diff == 0 and same.superiority == "noise"


def test_taubench_halves_are_noise(shared_data: Path, tmp_path: Path) -> None:
    # gpt-4o on tau-bench airline, 50 tasks × 4 trials: trials 0–1 as A, 2–3 as B. The same
    # agent twice: 43 vs 41 successes of 100 → −0.02, which pairing (r = 0.69) cannot
    # tell from noise. Pairing shrinks the SE from 0.080 (unpaired) to 0.045.
    with Store(tmp_path / "s.db") as db:
        import_file(
            "taubench", shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json", db, "tb"
        )
        t = db.table("tb")
    c = compare(t.take(t.trial < 2), t.take(t.trial >= 2))
    assert c.verdict == "not distinguishable from noise with 50 tasks × 2 trials"
    assert c.rate_a == pytest.approx(0.43) and c.rate_b == pytest.approx(0.41)
    assert c.mean_diff == pytest.approx(-0.02)
    assert c.p_value == pytest.approx(stats.ttest_rel(c.p_b, c.p_a).pvalue)
    assert c.se_paired == pytest.approx(0.04508, abs=1e-5)
    assert c.se_unpaired == pytest.approx(0.08043, abs=1e-5)
    assert c.correlation == pytest.approx(0.6868, abs=1e-4)


def _clustered_theta(rng: np.random.Generator, n_fam: int, per_fam: int) -> tuple[np.ndarray, ...]:
    """True task rates of A and B with family-level effects on both the level and the gap."""
    u = np.repeat(rng.normal(0, 0.15, n_fam), per_fam)
    v = np.repeat(rng.normal(0, 0.15, n_fam), per_fam)
    theta_a = np.clip(0.5 + u + rng.normal(0, 0.1, u.size), 0, 1)
    theta_b = np.clip(theta_a + 0.05 + v, 0, 1)
    return theta_a, theta_b


def test_clustered_interval_covers_the_true_difference() -> None:
    # SPEC 9: 95% intervals should cover a known value 93–97% of the time on clustered
    # data. The estimand is the population mean of θ_B − θ_A (after clipping), found by
    # a large Monte Carlo draw of families. 1000 runs × 15 families × 4 tasks × 2 trials.
    # Measured: 95.0% clustered; 91.7% when the same data are analysed without families,
    # which is why the families matter.
    truth_a, truth_b = _clustered_theta(np.random.default_rng(99), 200_000, 1)
    truth = float(np.mean(truth_b - truth_a))
    rng = np.random.default_rng(123)
    n_fam, per_fam, k = 15, 4, 2
    ids = np.repeat([f"t{i}" for i in range(n_fam * per_fam)], k)
    fams = np.repeat([f"f{i // per_fam}" for i in range(n_fam * per_fam)], k)
    hits = naive = 0
    reps = 1000
    for _ in range(reps):
        ta, tb = _clustered_theta(rng, n_fam, per_fam)
        ya = rng.random((ta.size, k)) < ta[:, None]
        yb = rng.random((tb.size, k)) < tb[:, None]
        a = TrialTable.from_columns(ids.size, task_id=ids, success=ya.ravel(), family=fams)
        b = TrialTable.from_columns(ids.size, task_id=ids, success=yb.ravel(), family=fams)
        c = compare(a, b)
        assert c.ci95 is not None and c.se_method == "clustered"
        hits += c.ci95[0] <= truth <= c.ci95[1]
        a1 = TrialTable.from_columns(ids.size, task_id=ids, success=ya.ravel())
        b1 = TrialTable.from_columns(ids.size, task_id=ids, success=yb.ravel())
        plain = compare(a1, b1).ci95
        assert plain is not None
        naive += plain[0] <= truth <= plain[1]
    assert 0.93 <= hits / reps <= 0.97, hits / reps
    assert naive / reps < 0.93, naive / reps


def test_two_all_passing_runs_get_an_interval_with_width() -> None:
    # 20 tasks × 3 trials, both runs always pass: d = 0 with SE 0. The paired t interval
    # is [0, 0]; the score interval keeps each rate's uncertainty:
    # each rate [60/(60 + z²), 1] = [.939828, 1] → d in ±.060172
    runs = [_table({f"t{i}": [1, 1, 1] for i in range(20)}) for _ in range(2)]
    c = compare(*runs)
    assert c.ci95_score == pytest.approx((-0.060172, 0.060172), abs=1e-6)


def test_runs_that_agree_task_by_task_get_newcombes_corrected_correlation() -> None:
    # One trial per task, A and B alike on all 5 (3 pass both, 2 fail both): d = 0 with
    # SE 0, so the score interval is used, and Pearson's r of the two rates is 1, which
    # made it [0, 0]. Newcombe's (1998) method 10 by hand: each rate 3/5 has the Wilson
    # interval [.230724, .882357]; φ = (AD − BC − N/2)/√((A+B)(C+D)(A+C)(B+D))
    # = (6 − 2.5)/√36 = .583333; lower = −√(.369276² − 2φ·.369276·.282357 + .282357²)
    # = −.307323, upper likewise.
    same = {"t1": [1], "t2": [0], "t3": [1], "t4": [0], "t5": [1]}
    c = compare(_table(same), _table(same), margin=0.05)
    assert c.interval == "score"
    assert c.ci95 == pytest.approx((-0.307323, 0.307323), abs=1e-6)
    assert c.non_inferior is False


def test_tasks_whose_rates_match_but_whose_trials_differ_are_not_certain() -> None:
    # The same rate per task in both runs (1, 0, 1/2, 1/2) from different trials: d = 0
    # with SE 0, and r = 1 gave [0, 0], so a 5-point non-inferiority margin "held" on
    # 8 trials a side. Each rate: SE² = var(1, 0, .5, .5)/4 = .041667; the binomial
    # noise of the tasks, Σ p(1 − p)/(n − 1) / T² = (.25 + .25)/16 = .03125; so
    # ρ = 1 − .03125/.041667 = .25 and r = min(1, √(.25 · .25)) = .25. The design-effect
    # Wilson of each rate: deff = .041667/(.25/8) · (t₃/t₇)² = 1.3333 · 1.81136, n* =
    # 8/2.41515 = 3.31243, half-width 1.959964/(1 + z²/n*) · √(.25/n* + z²/(4n*²))
    # = .36640; d = 0 ± .36640 · √(2 − 2 · .25) = ±.44874.
    a = _table({"a": [1, 1], "b": [0, 0], "c": [1, 0], "d": [0, 1]})
    b = _table({"a": [1, 1], "b": [0, 0], "c": [0, 1], "d": [1, 0]})
    c = compare(a, b, margin=0.05)
    assert c.interval == "score"
    assert c.ci95 == pytest.approx((-0.44874, 0.44874), abs=2e-5)
    assert c.non_inferior is False


def _ceiling_coverage(rate_a: float, rate_b: float, n_families: int, reps: int) -> float:
    """Coverage of ``ci95_score`` for the true difference under the grid's process
    (tests/metrics/test_coverage.py): shared family and task effects on the logit
    scale, 2–6 tasks per family, 1–4 trials per task in each run."""
    from scipy import special

    from agentgauge.metrics.compare import _score_interval

    # The grid's μ for a rate lives in its test module; load it by path (tests are
    # not a package).
    spec = importlib.util.spec_from_file_location(
        "coverage_grid", Path(__file__).with_name("test_coverage.py")
    )
    assert spec is not None and spec.loader is not None
    grid = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grid)
    mu_a, mu_b = grid.logit_mean(rate_a), grid.logit_mean(rate_b)
    rng = np.random.default_rng(round(1000 * rate_a) + round(10 * rate_b) + n_families)
    hits = 0
    for _ in range(reps):
        fam = np.repeat(np.arange(n_families), rng.integers(2, 7, n_families))
        shared = rng.normal(0, 0.6, n_families)[fam] + rng.normal(0, 0.8, fam.size)
        na, nb = rng.integers(1, 5, fam.size), rng.integers(1, 5, fam.size)
        ca = rng.binomial(na, special.expit(mu_a + shared))
        cb = rng.binomial(nb, special.expit(mu_b + shared))
        ci = _score_interval((na, ca), (nb, cb), [str(f) for f in fam])
        assert ci is not None and ci[1] > ci[0]
        hits += ci[0] <= rate_b - rate_a <= ci[1]
    return hits / reps


@pytest.mark.parametrize(
    ("rate_a", "rate_b", "n_families"),
    # Where the paired t interval and the old percentile bootstrap failed: 97% → 99%
    # with 5 families covered 79.4% (t) and 74.1% (bootstrap), zero width in 17–18%.
    [(0.97, 0.99, 5), (0.97, 0.99, 20), (0.9, 0.97, 10), (0.99, 0.9, 20), (0.5, 0.5, 10)],
)
def test_score_interval_covers_near_the_ceiling(
    rate_a: float, rate_b: float, n_families: int
) -> None:
    cov = _ceiling_coverage(rate_a, rate_b, n_families, reps=1000)
    # 1,000 replications: Monte-Carlo SE 0.7 point. Conservative near the ceiling
    # (measured up to 99.5% at 97% → 99% with 5 families), never below 93%.
    assert 0.93 <= cov <= 0.997, cov


#: The pairs (rate A → rate B) and family counts of the coverage table in
#: docs/compare-and-plan.md ("How well `ci95_score` covers");
#: ``python tests/metrics/test_compare.py`` prints it.
TABLE_PAIRS = ((0.5, 0.5), (0.7, 0.8), (0.9, 0.97), (0.97, 0.99), (0.99, 0.9))
TABLE_FAMILIES = (5, 10, 20, 50)


def score_coverage_table(reps: int = 1000) -> str:
    """Markdown table of ``ci95_score``'s coverage (%) over TABLE_PAIRS × TABLE_FAMILIES."""
    head = "| families | " + " | ".join(f"{a:.0%} → {b:.0%}" for a, b in TABLE_PAIRS) + " |"
    lines = [head, "|---:|" + "---:|" * len(TABLE_PAIRS)]
    for fam in TABLE_FAMILIES:
        cov = [100 * _ceiling_coverage(a, b, fam, reps) for a, b in TABLE_PAIRS]
        lines.append(f"| {fam} | " + " | ".join(f"{c:.1f}" for c in cov) + " |")
    return "\n".join(lines)


def test_the_verdict_of_two_all_passing_runs_has_width() -> None:
    # Every task passes in both runs: d_t = 0 for all, the paired SE is 0, and a
    # paired t interval would be [0, 0]: certainty that 5 tasks cannot give.
    every = {f"t{i}": [1, 1, 1] for i in range(5)}
    c = compare(_table(every), _table(every), margin=0.05)
    assert c.se_paired == 0 and c.interval == "score"
    assert c.ci95 == c.ci == c.ci95_score
    assert c.ci95 is not None and c.ci95[0] < 0 < c.ci95[1]
    assert c.non_inferior is False  # 5 tasks cannot show "within 5 points"
    assert "MOVER" in c.test and c.to_dict()["interval"] == "score"
    many = {f"t{i}": [1, 1, 1] for i in range(400)}
    assert compare(_table(many), _table(many)).non_inferior_at(0.05) is True


def test_first_families_is_the_first_family_seen_row_by_row() -> None:
    def table(rows: list[tuple[str, str | None]]) -> TrialTable:
        trials = [
            Trial(task_id=t, trial=k, success=True, family=f) for k, (t, f) in enumerate(rows)
        ]
        return TrialTable.from_trials(trials)

    a = table([("t1", None), ("t2", "g"), ("t1", "f"), ("t1", "h"), ("t3", None)])
    b = table([("t3", "k"), ("t1", "z"), ("t4", None), ("t3", "m")])
    # The row loop it replaces: the first row of a task with a family, A before B.
    expected: dict[str, object] = {}
    for tab in (a, b):
        for tid, fam in zip(tab.task_id.astype(str), tab.family, strict=True):
            if fam is not None and tid not in expected:
                expected[tid] = fam
    assert first_families((a, b)) == expected == {"t2": "g", "t1": "f", "t3": "k"}


if __name__ == "__main__":
    # An optional argument sets the replications per cell (the docs' table: 1,000,
    # the simulation test's count, Monte-Carlo SE 0.7 point near 95%).
    import sys

    print(score_coverage_table(int(sys.argv[1]) if len(sys.argv) > 1 else 1000))


def test_a_shift_equal_in_exact_arithmetic_has_no_spread() -> None:
    # Every task loses one of its 3 passes: d = 1/3 − 2/3, 0 − 1/3, 2/3 − 1 are all −1/3
    # exactly, but differ by round-off in floating point; that gave an SE of 2e-17 and a
    # paired t interval of width 1e-16. Now the SE is 0, the interval is the score one,
    # and the p-value the test that interval inverts.
    a = _table({"a": [1, 1, 0], "b": [1, 0, 0], "c": [1, 1, 1]})
    b = _table({"a": [1, 0, 0], "b": [0, 0, 0], "c": [1, 1, 0]})
    c = compare(a, b)
    assert c.se_paired == 0.0 and c.interval == "score"
    assert c.ci95 is not None and c.ci95[1] - c.ci95[0] > 0.5
    assert c.p_method == "score" and c.p_value == pytest.approx(0.2569, abs=1e-3)
    # Its sign test, where no run has an interval to invert, would be 2 · (1/2)³ = 0.25.
    assert _p_value(c.mean_diff, 0.0, 2) == (0.25, "sign")


def test_the_score_interval_follows_alpha() -> None:
    # Two all-passing runs of 5 tasks × 4 trials: at α = 0.1 the verdict's interval was
    # the paired t one, [0, 0], and a non-inferiority margin of 0.05 passed on it.
    a = _table({f"t{i}": [1, 1, 1, 1] for i in range(5)})
    b = _table({f"t{i}": [1, 1, 1, 1] for i in range(5)})
    c95, c90 = compare(a, b, margin=0.05), compare(a, b, margin=0.05, alpha=0.1)
    assert c90.interval == "score" and c90.ci is not None and c90.ci95 == c95.ci95
    assert c90.ci[0] < -0.05 and 0 < c90.ci[1] - c90.ci[0] < c95.ci[1] - c95.ci[0]
    assert c90.non_inferior is False
    assert c90.ci95_score == c95.ci95_score  # always at 95%
    assert c90.p_value == 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=2, max_size=12),
    st.sampled_from([0.01, 0.05, 0.1, 0.2]),
)
def test_p_value_agrees_with_the_verdicts_interval(
    counts: list[tuple[int, int]], alpha: float
) -> None:
    # p < α exactly when the (1 − α) interval excludes 0, whichever interval it is (the
    # paired t, or the score interval near 0% and 100%): a t or sign test beside a
    # score interval said p = 0.008 while the interval held 0.
    a = _table({f"t{i}": [k < x for k in range(3)] for i, (x, _) in enumerate(counts)})
    b = _table({f"t{i}": [k < y for k in range(3)] for i, (_, y) in enumerate(counts)})
    c = compare(a, b, alpha=alpha)
    assert c.ci is not None and c.p_value is not None
    excludes = c.ci[0] > 0 or c.ci[1] < 0
    if abs(c.p_value - alpha) > 1e-6:  # at the boundary either reading holds
        assert excludes == (c.p_value < alpha), (c.ci, c.p_value, c.interval)


def test_rates_and_difference_are_exact_task_averages() -> None:
    # Successes (1, 1, 1, 2, 2, 2) of 3 trials each: 9 of 18, a rate of 0.5. Averaging the
    # float task rates gave 0.49999999999999994 here while `metrics` said 0.5, and a mean
    # difference of 0.5000000000000001 against an all-passing B.
    a = _table({f"t{i}": [1] * k + [0] * (3 - k) for i, k in enumerate([1, 1, 1, 2, 2, 2])})
    b = _table({f"t{i}": [1, 1, 1] for i in range(6)})
    c = compare(a, b)
    shown = compute_metrics(a, by=()).to_dict()["groups"][0]["success_rate"]["value"]
    assert c.rate_a == 0.5 == shown and c.rate_b == 1.0 and c.mean_diff == 0.5
    assert c.to_dict()["a"]["success_rate"] == 0.5
    # The same rates the other way round differ by exactly 0 (the floats said 1.9e-17).
    swapped = _table({f"t{i}": [1] * k + [0] * (3 - k) for i, k in enumerate([2, 2, 2, 1, 1, 1])})
    assert compare(a, swapped).mean_diff == 0.0
