"""Power analysis (SPEC 5.8): textbook sizes, pilots, and a simulation of the promised power."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.power import NormalIndPower

from agentgauge.importers import import_file
from agentgauge.stats.power import (
    VarianceComponents,
    components_from_assumptions,
    components_from_pilot,
    components_from_pilot_pair,
    mde_from_assumptions,
    min_tasks,
    minimum_detectable_effect,
    pilot_variance,
    plan,
    plan_from_assumptions,
    tasks_needed,
    z_sum,
    z_two_sided,
)
from agentgauge.store import Store


def test_textbook_two_proportion_sample_size() -> None:
    # Classic unpooled two-proportion size, independent systems, one trial per task:
    #   n = (z_{0.975} + z_{0.80})² · (p_A(1−p_A) + p_B(1−p_B)) / δ²
    #   z_{0.975} = 1.959964, z_{0.80} = 0.841621, sum = 2.801585, squared = 7.848880
    #   p_A = 0.80 → 0.80·0.20 = 0.1600;  p_B = 0.83 → 0.83·0.17 = 0.1411;  sum = 0.3011
    #   n = 7.848880 · 0.3011 / 0.03² = 2.363298 / 0.0009 = 2625.89  → 2626 tasks
    p = plan_from_assumptions(0.8, delta=0.03, trials=1, correlation=0.0)
    assert p.n_tasks == 2626
    assert p.n_tasks_exact == pytest.approx(2625.886, abs=1e-3)
    assert p.z == pytest.approx(2.801585, abs=1e-6)
    # The within-task share is irrelevant for independent systems with one trial:
    # ω² + σ_A² + σ_B² = (1−s)(V_A+V_B) + s(V_A+V_B) = V_A + V_B.
    for s in (0.0, 0.3, 1.0):
        q = plan_from_assumptions(0.8, delta=0.03, within_share=s)
        assert q.n_tasks_exact == pytest.approx(p.n_tasks_exact, rel=1e-12)
    d = p.to_dict()
    assert d["schema"] == "agentgauge.plan/1" and d["n_tasks"] == 2626
    assert d["baseline"] == 0.8 and d["delta"] == 0.03 and d["correlation"] == 0.0


def test_textbook_matches_statsmodels_normal_power() -> None:
    # statsmodels' NormalIndPower with a standardized effect δ/√((V_A+V_B)/2) and equal
    # groups solves the same normal approximation (it also counts the far tail's
    # rejections, which shifts n by far less than one task here).
    va, vb = 0.8 * 0.2, 0.83 * 0.17
    effect = 0.03 / math.sqrt((va + vb) / 2)
    ref = NormalIndPower().solve_power(effect_size=effect, alpha=0.05, power=0.8, ratio=1.0)
    ours = tasks_needed(0.03, components_from_assumptions(0.8, 0.03))
    assert ours == pytest.approx(ref, abs=0.01)


def test_tiny_alpha_has_a_finite_critical_value() -> None:
    # 1 − 1e-17/2 rounds to 1.0 and Φ⁻¹(1) = ∞: the size was ceil(∞), an OverflowError.
    # From the lower tail, z_{1−α/2} = −Φ⁻¹(5e-18) = 8.573944 (scipy's isf agrees).
    assert z_two_sided(1e-17) == pytest.approx(stats.norm.isf(5e-18), rel=1e-12)
    assert z_two_sided(1e-17) == pytest.approx(8.573944, abs=1e-6)
    # baseline 0.5, δ 0.1: (8.573944 + 0.841621)² · (0.25 + 0.24) / 0.01 = 4344.0 → 4344
    p = plan_from_assumptions(0.5, delta=0.1, alpha=1e-17)
    assert p.n_tasks == 4344
    # statsmodels solves the same normal approximation at this α.
    effect = 0.1 / math.sqrt((0.25 + 0.24) / 2)
    ref = NormalIndPower().solve_power(effect_size=effect, alpha=1e-17, power=0.8, ratio=1.0)
    assert p.n_tasks_exact == pytest.approx(ref, abs=0.01)
    # α/2 underflows to 0 only below the smallest double: there z is not finite.
    with pytest.raises(ValueError, match="too small"):
        z_sum(5e-324, 0.8)


@pytest.mark.parametrize("power", [0.05, 0.025, 0.01, 0.001])
def test_power_at_or_below_alpha_is_refused(power: float) -> None:
    # z_{0.975} + z_{power} is 0 at power 0.025 and grows again below: 0.025 asked for
    # 2 tasks, 0.01 for 7, 0.001 for 63.
    with pytest.raises(ValueError, match="power must exceed alpha"):
        plan_from_assumptions(0.5, delta=0.1, power=power)
    # Just above α the size is small but the formula is monotone.
    assert z_sum(0.05, 0.06) > 0


def test_correlation_and_trials_reduce_the_tasks_needed() -> None:
    # baseline 0.5, δ = 0.1, s = 0.5: V_A = 0.25, V_B = 0.24, τ² = 0.125/0.12, σ² = 0.125/0.12
    # r = 0.5: ω² = 0.125 + 0.12 − 2·0.5·√(0.125·0.12) = 0.245 − 0.122474 = 0.122526
    # K = 4: per-task variance = 0.122526 + 0.125/4 + 0.12/4 = 0.183776
    # n = 7.848880 · 0.183776 / 0.01 = 144.24 → 145
    comp = components_from_assumptions(0.5, 0.1, correlation=0.5, within_share=0.5)
    assert comp.omega2 == pytest.approx(0.122526, abs=1e-6)
    p = plan_from_assumptions(0.5, delta=0.1, trials=4, correlation=0.5, within_share=0.5)
    assert p.n_tasks_exact == pytest.approx(144.245, abs=1e-2)
    assert p.n_tasks == 145
    indep = plan_from_assumptions(0.5, delta=0.1)
    assert indep.n_tasks is not None and indep.n_tasks > p.n_tasks


def test_minimum_detectable_effect_inverts_the_size() -> None:
    comp = VarianceComponents(omega2=0.05, sigma2_a=0.1, sigma2_b=0.1, source="pilot")
    # δ = 2.801585 · √((0.05 + 0.1/2 + 0.1/2)/100) = 2.801585 · √0.0015 = 0.108505
    mde = minimum_detectable_effect(100, comp, trials_a=2, trials_b=2)
    assert mde == pytest.approx(0.108505, abs=1e-6)
    assert tasks_needed(mde, comp, trials_a=2, trials_b=2) == pytest.approx(100)
    # With assumption-based variance the MDE solves δ = z·√(V(δ)/n).
    p = plan_from_assumptions(0.8, tasks=2626)
    assert p.mde is not None and p.mde == pytest.approx(0.03, abs=2e-5)
    assert p.to_dict()["mde"] == p.mde and "n_tasks" not in p.to_dict()


def test_mde_none_when_nothing_is_detectable() -> None:
    assert mde_from_assumptions(3, 0.9) is None
    p = plan_from_assumptions(0.9, tasks=6)
    assert p.mde is None and p.mde_reason and "with 6 tasks" in p.mde_reason


def test_min_tasks_is_compares_rule() -> None:
    from agentgauge.metrics.compare import too_few_units

    for alpha, need in ((0.05, 6), (0.1, 5), (0.01, 8), (0.0625, 5)):
        assert min_tasks(alpha) == need
        assert too_few_units(need, "tasks", alpha) is None
        assert too_few_units(need - 1, "tasks", alpha) is not None


@pytest.mark.parametrize(("alpha", "need"), [(0.05, 6), (0.01, 8)])
def test_a_plan_is_never_fewer_tasks_than_compare_can_tell(alpha: float, need: int) -> None:
    # The formula gives 3 tasks for δ = 0.8 on a 0.1 baseline (2.2 unrounded); compare
    # can give no verdict with fewer than 6 tasks at α = 0.05, so `plan` said 3 (floored
    # at 2) for a design that could never show a difference.
    p = plan_from_assumptions(0.1, delta=0.8, alpha=alpha)
    assert p.n_tasks == need and p.min_tasks == need
    assert p.n_tasks_exact is not None and p.n_tasks_exact < need
    formula = math.ceil(p.n_tasks_exact)
    assert p.n_tasks_reason == (
        f"the formula gives {formula} tasks, but compare needs at least {need} at "
        f"α = {alpha:g} to give any verdict (the exact sign test over {need - 1} tasks "
        f"cannot go below p = 2 × 0.5^{need - 1} = {2 * 0.5 ** (need - 1):.4g})"
    )
    d = p.to_dict()
    assert (d["n_tasks"], d["min_tasks"], d["n_tasks_reason"]) == (need, need, p.n_tasks_reason)
    # Enough tasks: no reason, and the formula's count stands.
    q = plan_from_assumptions(0.8, delta=0.03, alpha=alpha)
    assert q.n_tasks_reason is None and "n_tasks_reason" not in q.to_dict()
    assert q.to_dict()["min_tasks"] == need
    # Fixed components: zero variance gives the fewest tasks, not 2 (nor 0).
    zero = VarianceComponents(omega2=0.0, sigma2_a=0.0, sigma2_b=0.0, source="pilot")
    z = plan(zero, delta=0.1, alpha=alpha)
    assert z.n_tasks == need and z.n_tasks_reason and "gives 0 tasks" in z.n_tasks_reason


@pytest.mark.parametrize("tasks", [1, 2, 5])
def test_no_detectable_effect_with_fewer_tasks_than_compare_can_tell(tasks: int) -> None:
    # 5 tasks, 20 trials each and correlated systems: "minimum detectable effect 0.2341
    # with 5 tasks", which compare would never turn into a verdict.
    reason = (
        f"with {tasks} task{'s' if tasks != 1 else ''} compare gives no verdict at α = 0.05, "
        f"which needs at least 6 (the exact sign test over {tasks} "
        f"task{'s' if tasks != 1 else ''} cannot go below p = 2 × 0.5^{tasks} = "
        f"{min(1.0, 2 * 0.5**tasks):.4g})"
    )
    p = plan_from_assumptions(0.5, tasks=tasks, trials=20, correlation=0.9)
    assert (p.mde, p.mde_reason) == (None, reason)
    d = p.to_dict()
    assert (d["mde"], d["mde_reason"], d["min_tasks"]) == (None, reason, 6)
    comp = components_from_assumptions(0.5, 0.1)
    q = plan(comp, tasks=tasks)
    assert (q.mde, q.mde_reason) == (None, reason)
    # From 6 on, a number.
    assert plan_from_assumptions(0.5, tasks=6, trials=20, correlation=0.9).mde is not None
    assert plan(comp, tasks=6).mde is not None
    with pytest.raises(ValueError, match="tasks must be at least 1"):
        plan(comp, tasks=0)


@pytest.mark.parametrize(
    ("delta", "alpha", "message"),
    [
        # δ² underflows to 0: ZeroDivisionError.
        (1e-300, 0.05, "δ = 1e-300 is too small: δ² underflows double precision"),
        (-1e-300, 0.05, "δ = -1e-300 is too small: δ² underflows"),
        # δ² subnormal: n was +inf, and ceil(inf) an OverflowError.
        (1e-160, 0.05, "δ = 1e-160 is too small: δ² underflows"),
        # δ² normal, n past the largest float.
        (
            1.6e-154,
            1e-17,
            "δ = 1.6e-154 is too small: the tasks needed, 88.65 · 0.5 / 2.56e-308, pass the "
            "largest float",
        ),
    ],
)
def test_a_delta_too_small_to_compute_is_a_value_error(
    delta: float, alpha: float, message: str
) -> None:
    comp = components_from_assumptions(0.5, 0.0)
    with pytest.raises(ValueError, match=re.escape(message)):
        tasks_needed(delta, comp, alpha=alpha)
    with pytest.raises(ValueError, match="too small"):
        plan_from_assumptions(0.5, delta=delta, alpha=alpha)
    # The smallest δ that still computes gives a (large) finite count.
    assert math.isfinite(tasks_needed(1e-150, comp))


@settings(max_examples=60, deadline=None)
@given(
    base=st.floats(0.05, 0.9),
    n=st.integers(10, 5000),
    r=st.floats(-0.9, 0.9),
    s=st.floats(0.0, 1.0),
    k=st.integers(1, 8),
)
def test_mde_round_trip(base: float, n: int, r: float, s: float, k: int) -> None:
    mde = mde_from_assumptions(n, base, correlation=r, within_share=s, trials_a=k, trials_b=k)
    if mde is None:
        return
    comp = components_from_assumptions(base, mde, correlation=r, within_share=s)
    if comp.per_task(k, k) == 0:
        return
    assert tasks_needed(mde, comp, trials_a=k, trials_b=k) == pytest.approx(n, rel=1e-6)


def test_pilot_variance_by_hand() -> None:
    # task 0: 1,1,0,0 → p = 0.5, s² = 0.25·4/3 = 1/3;  task 1: 1,1,1,1 → p = 1, s² = 0;
    # task 2: 0,0,0,0 → p = 0, s² = 0.  σ² = (1/3)/3 = 1/9.
    # Var(p) ddof=1: mean 0.5, squares 0, 0.25, 0.25 → 0.5/2 = 0.25.
    # τ² = 0.25 − mean(s²/n) = 0.25 − (1/12)/3 = 0.25 − 1/36 = 2/9.
    idx = np.repeat([0, 1, 2], 4)
    y = np.array([1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0])
    pv = pilot_variance(idx, y)
    assert pv.sigma2 == pytest.approx(1 / 9)
    assert pv.tau2 == pytest.approx(2 / 9)
    assert pv.total == pytest.approx(0.25)
    comp = components_from_pilot(pv, correlation=0.25)
    # ω² = 2·(1 − 0.25)·2/9 = 1/3
    assert comp.omega2 == pytest.approx(1 / 3) and comp.sigma2_a == pytest.approx(1 / 9)
    # The within-task share it measured: σ²/(τ² + σ²) = (1/9)/(3/9) = 1/3.
    assert pv.within_share == pytest.approx(1 / 3)


def test_pilot_with_one_trial_per_task_splits_by_share() -> None:
    pv = pilot_variance(np.arange(4), np.array([1, 0, 1, 1]))
    # p = 1,0,1,1: mean 0.75, Var ddof=1 = (3·0.0625 + 0.5625)/3 = 0.25
    assert pv.sigma2 is None and pv.total == pytest.approx(0.25)
    assert pv.within_share is None  # nothing measured: the split is assumed
    comp = components_from_pilot(pv, within_share=0.4)
    # σ² = 0.4·0.25 = 0.1, τ² = 0.15, ω² = 2·0.15 = 0.3
    assert comp.sigma2_a == pytest.approx(0.1) and comp.omega2 == pytest.approx(0.3)


def test_paired_pilot_by_hand() -> None:
    # Two trials per task. A: p = 0.5, 1, 0;  B: p = 1, 1, 0.5.  d = 0.5, 0, 0.5
    # Var(d) ddof=1: mean 1/3, squares 1/36, 1/9, 1/36 → (6/36)/2 = 1/12
    # s_A² = 0.25·2/1 = 0.5, 0, 0;  s_B² = 0, 0, 0.5
    # correction = mean_t(s_A²/2 + s_B²/2) = (0.25 + 0 + 0.25)/3 = 1/6
    # ω² = max(1/12 − 1/6, 0) = 0;  σ_A² = σ_B² = 0.5/3 = 1/6
    n = np.full(3, 2.0)
    comp = components_from_pilot_pair(
        n, np.array([0.5, 1, 0]), n, np.array([1, 1, 0.5]), within_share=0.5
    )
    assert comp.omega2 == 0.0
    assert comp.sigma2_a == pytest.approx(1 / 6) and comp.sigma2_b == pytest.approx(1 / 6)


def _simulated_power(
    n: int, p_a: float, delta: float, r: float, s: float, k: int, reps: int, seed: int
) -> float:
    """Share of paired t-tests rejecting at 5% on data with the planned moments.

    True per-task rates are p ± τ (Rademacher signs), B's sign equal to A's with
    probability r and independent otherwise: mean p, variance τ² = (1−s)p(1−p),
    corr r, and E[θ(1−θ)] = p(1−p) − τ² = s·p(1−p), as the assumptions say.
    """
    rng = np.random.default_rng(seed)
    p_b = p_a + delta
    tau_a = math.sqrt((1 - s) * p_a * (1 - p_a))
    tau_b = math.sqrt((1 - s) * p_b * (1 - p_b))
    za = rng.choice([-1.0, 1.0], size=(reps, n))
    same = rng.random((reps, n)) < r
    zb = np.where(same, za, rng.choice([-1.0, 1.0], size=(reps, n)))
    theta_a, theta_b = p_a + tau_a * za, p_b + tau_b * zb
    pa = rng.binomial(k, theta_a) / k
    pb = rng.binomial(k, theta_b) / k
    d = pb - pa
    t = d.mean(axis=1) / (d.std(axis=1, ddof=1) / math.sqrt(n))
    return float(np.mean(np.abs(t) > stats.t.ppf(0.975, n - 1)))


@pytest.mark.parametrize(
    ("p_a", "delta", "r", "s", "k"),
    [(0.5, 0.1, 0.0, 0.5, 1), (0.5, 0.1, 0.5, 0.5, 4), (0.6, 0.15, 0.8, 0.7, 2)],
)
def test_planned_size_delivers_the_power(
    p_a: float, delta: float, r: float, s: float, k: int
) -> None:
    plan = plan_from_assumptions(p_a, delta=delta, trials=k, correlation=r, within_share=s)
    assert plan.n_tasks is not None
    power = _simulated_power(plan.n_tasks, p_a, delta, r, s, k, reps=4000, seed=11)
    # 4000 replicates: binomial SE of a 0.80 rate is 0.0063; allow ±3 SE.
    assert abs(power - 0.8) < 0.02, power


def test_bad_inputs() -> None:
    with pytest.raises(ValueError, match="baseline"):
        components_from_assumptions(1.2, 0.1)
    with pytest.raises(ValueError, match="not a rate"):
        components_from_assumptions(0.95, 0.1)
    with pytest.raises(ValueError, match="alpha"):
        z_sum(0.0, 0.8)
    with pytest.raises(ValueError, match="give delta"):
        plan_from_assumptions(0.5)


def test_pilot_on_taubench_gpt4o(shared_data: Path, tmp_path: Path) -> None:
    # 50 airline tasks × 4 trials of gpt-4o (tau-bench's published file): the figures the
    # DEFAULT_WITHIN_SHARE comment quotes. Mean rate 0.42 (84 of 200 trials).
    with Store(tmp_path / "s.db") as db:
        import_file(
            "taubench", shared_data / "taubench" / "taubench_v1_gpt-4o-airline.json", db, "tb"
        )
        table = db.table("tb")
    _, idx = table.task_index()
    pv = pilot_variance(idx, table.success)
    assert pv.mean_rate == pytest.approx(0.42) and pv.n_tasks == 50
    assert pv.sigma2 == pytest.approx(0.14667, abs=1e-4)
    assert pv.tau2 == pytest.approx(0.09966, abs=1e-4)
    assert pv.sigma2 / (pv.sigma2 + pv.tau2) == pytest.approx(0.595, abs=1e-3)
