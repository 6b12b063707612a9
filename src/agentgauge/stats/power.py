"""Power analysis for a paired comparison of two agents over tasks (Miller 2024).

The paired difference of two runs over T tasks, with K_A and K_B trials per task,
has variance (ω² + σ_A²/K_A + σ_B²/K_B)/T, where

- ω² is the variance across tasks of the *true* per-task difference
  θ_B,t − θ_A,t (what no number of trials averages away), and
- σ² is a system's mean within-task trial variance E_t[θ_t(1 − θ_t)] (what
  more trials per task do average away).

A two-sided level-α test then has power 1 − β for a true mean difference δ when

    n = (z_{1−α/2} + z_{1−β})² · (ω² + σ_A²/K_A + σ_B²/K_B) / δ²

(Miller 2024, "Adding error bars to evals", section on power; the usual normal
approximation, ignoring the negligible far-tail rejection). Solving for δ at a
given n gives the minimum detectable effect.

Variance from assumptions
-------------------------
A system whose trials succeed at rate p has total trial variance V = p(1 − p),
split by the law of total variance into a between-task part τ² = Var_t(θ_t) and a
within-task part σ² = E_t[θ_t(1 − θ_t)], with τ² + σ² = V. Given the share of
variance within tasks s, σ² = s·V and τ² = (1 − s)·V. With p_A = baseline,
p_B = baseline + δ and r the correlation between the two systems' true per-task
rates,

    ω² = τ_A² + τ_B² − 2·r·τ_A·τ_B.

For independent systems (r = 0) with one trial per task, ω² + σ_A² + σ_B² =
V_A + V_B = p_A(1 − p_A) + p_B(1 − p_B) whatever s is: the classic (unpooled)
two-proportion sample size.

Variance from a pilot run
-------------------------
Per task with n_t ≥ 2 trials and observed rate p_t, the unbiased within-task
variance is s_t² = p_t(1 − p_t)·n_t/(n_t − 1); σ² = mean_t s_t². The between-task
variance of true rates is the method-of-moments τ² = Var_t(p_t) − mean_t(s_t²/n_t),
floored at 0 (one-way random-effects ANOVA). A single-system pilot gives
ω² = 2(1 − r)·τ² (B assumed to spread across tasks like A); a paired pilot of two
systems gives ω² = Var_t(d_t) − mean_t(s_A,t²/n_A,t + s_B,t²/n_B,t) directly.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import special

from agentgauge.defaults import DEFAULT_WITHIN_SHARE
from agentgauge.report.formats import counted
from agentgauge.stats.exact import binomial_half_two_sided, sign_test_min_n

__all__ = [
    "DEFAULT_WITHIN_SHARE",
    "PilotVariance",
    "Plan",
    "VarianceComponents",
    "components_from_assumptions",
    "components_from_pilot",
    "components_from_pilot_pair",
    "mde_from_assumptions",
    "measured_within_share",
    "min_tasks",
    "minimum_detectable_effect",
    "paired_variance",
    "pilot_variance",
    "plan",
    "plan_from_assumptions",
    "raised_to_min_reason",
    "round_up_tasks",
    "tasks_needed",
    "too_few_tasks_reason",
    "z_sum",
    "z_two_sided",
]


FloatArray = npt.NDArray[np.float64]


def _check_prob(
    name: str, value: float, *, open_low: bool = False, open_high: bool = False
) -> None:
    lo_ok = value > 0 if open_low else value >= 0
    hi_ok = value < 1 if open_high else value <= 1
    if not (math.isfinite(value) and lo_ok and hi_ok):
        lo = "(0" if open_low else "[0"
        hi = "1)" if open_high else "1]"
        raise ValueError(f"{name} must be in {lo}, {hi}, got {value!r}")


def z_two_sided(alpha: float) -> float:
    """z_{1−α/2}, the two-sided level-α critical value of the standard normal.

    Taken as −Φ⁻¹(α/2), from the lower tail: 1 − α/2 rounds to 1 in double
    precision for α below about 1e-16, and Φ⁻¹(1) is infinite, while α/2 itself
    is representable down to about 1e-323 (z = 8.57 at α = 1e-17). Infinite only
    when α/2 underflows to 0.
    """
    _check_prob("alpha", alpha, open_low=True, open_high=True)
    return float(-special.ndtri(alpha / 2))


def z_sum(alpha: float = 0.05, power: float = 0.8) -> float:
    """z_{1−α/2} + z_{1−β} with 1 − β = power (two-sided test at level α).

    Power must exceed α: a two-sided level-α test rejects with probability α when
    there is no difference and more when there is one, so no design has power at or
    below α against a true δ ≠ 0. Below it the formula is meaningless: z_{1−α/2} +
    z_{1−β} falls to 0 at power α/2 and its square grows again (power 0.025 asked
    for 2 tasks, 0.001 for 63).
    """
    _check_prob("power", power, open_low=True, open_high=True)
    z_alpha = z_two_sided(alpha)
    if not math.isfinite(z_alpha):
        raise ValueError(f"alpha = {alpha!r} is too small: z_(1−α/2) is not a finite number")
    if power <= alpha:
        raise ValueError(f"power must exceed alpha = {alpha:g}, got {power!r}")
    return z_alpha + float(special.ndtri(power))  # normal quantiles


@dataclass(frozen=True)
class VarianceComponents:
    """ω², σ_A², σ_B² of the sample-size formula, and where they came from."""

    omega2: float
    """Variance across tasks of the true per-task difference θ_B,t − θ_A,t."""
    sigma2_a: float
    """System A's mean within-task trial variance."""
    sigma2_b: float
    """System B's mean within-task trial variance."""
    source: str
    """``assumptions``, ``pilot`` or ``pilot-pair``."""

    def per_task(self, trials_a: int = 1, trials_b: int = 1) -> float:
        """Variance of one task's observed difference: ω² + σ_A²/K_A + σ_B²/K_B."""
        if trials_a < 1 or trials_b < 1:
            raise ValueError("trials per task must be at least 1")
        return self.omega2 + self.sigma2_a / trials_a + self.sigma2_b / trials_b

    def to_dict(self) -> dict[str, Any]:
        return {
            "omega2": self.omega2,
            "sigma2_a": self.sigma2_a,
            "sigma2_b": self.sigma2_b,
            "source": self.source,
        }


def components_from_assumptions(
    baseline: float,
    delta: float,
    *,
    correlation: float = 0.0,
    within_share: float = DEFAULT_WITHIN_SHARE,
) -> VarianceComponents:
    """Variance components from a baseline rate, an effect and two shape assumptions.

    p_A = baseline, p_B = baseline + delta; V = p(1 − p); σ² = s·V, τ² = (1 − s)·V;
    ω² = τ_A² + τ_B² − 2·r·τ_A·τ_B (module docstring).
    """
    _check_prob("baseline", baseline)
    _check_prob("within_share", within_share)
    if not -1 <= correlation <= 1:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation!r}")
    p_b = baseline + delta
    if not 0 <= p_b <= 1:
        raise ValueError(f"baseline + delta = {p_b:g} is not a rate in [0, 1]")
    v_a = baseline * (1 - baseline)
    v_b = p_b * (1 - p_b)
    tau_a2, tau_b2 = (1 - within_share) * v_a, (1 - within_share) * v_b
    omega2 = tau_a2 + tau_b2 - 2 * correlation * math.sqrt(tau_a2 * tau_b2)
    return VarianceComponents(
        omega2=max(omega2, 0.0),
        sigma2_a=within_share * v_a,
        sigma2_b=within_share * v_b,
        source="assumptions",
    )


def tasks_needed(
    delta: float,
    components: VarianceComponents,
    *,
    trials_a: int = 1,
    trials_b: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """Unrounded n = (z_{1−α/2} + z_{1−β})² · (ω² + σ_A²/K_A + σ_B²/K_B) / δ².

    Round up (``math.ceil``) for a count of tasks. A δ whose square underflows
    double precision (|δ| below about 1.5e-154), or so small that n passes the
    largest float, raises ``ValueError`` (it was a ZeroDivisionError, or an
    OverflowError when n was rounded up).
    """
    if not math.isfinite(delta) or delta == 0:
        raise ValueError("delta must be a non-zero difference")
    z = z_sum(alpha, power)
    d2 = delta * delta
    if d2 < sys.float_info.min:
        raise ValueError(
            f"δ = {delta!r} is too small: δ² underflows double precision (below "
            f"{sys.float_info.min:.4g}), so the tasks needed, (z_(1−α/2) + z_(1−β))² · "
            "variance / δ², cannot be computed"
        )
    per_task = components.per_task(trials_a, trials_b)
    n = z * z * per_task / d2
    if not math.isfinite(n):
        raise ValueError(
            f"δ = {delta!r} is too small: the tasks needed, {z * z:.4g} · {per_task:.4g} / "
            f"{d2:.4g}, pass the largest float ({sys.float_info.max:.4g})"
        )
    return n


def round_up_tasks(exact: float) -> int:
    """The formula's count of tasks: ``exact`` rounded up, where a value that is an
    integer up to rounding noise adds no task."""
    return max(math.ceil(exact - 1e-9), 0)


def min_tasks(alpha: float = 0.05) -> int:
    """The fewest tasks with which ``compare`` can give any verdict at ``alpha``.

    `sign_test_min_n` (α), the rule ``compare`` applies (`agentgauge.metrics.compare.
    too_few_units`): with n tasks the exact sign test cannot go below p = 2 · 0.5^n,
    so 6 at α = 0.05, 8 at 0.01. A plan never answers fewer tasks than this, and no
    effect is detectable with fewer.
    """
    return sign_test_min_n(alpha)


def _sign_floor(n: int) -> str:
    """Why ``n`` tasks cannot reach a smaller p: the exact sign test's floor."""
    tasks = f"{n} task{'s' if n != 1 else ''}"
    p = binomial_half_two_sided(0, n)
    return f"the exact sign test over {tasks} cannot go below p = 2 × 0.5^{n} = {p:.4g}"


def raised_to_min_reason(n: int, alpha: float) -> str | None:
    """Why a plan answers `min_tasks` rather than the formula's ``n`` (``None`` when
    ``n`` is enough): "the formula gives 3 tasks, but compare needs at least 6 at α =
    0.05 to give any verdict (the exact sign test over 5 tasks cannot go below p = 2 ×
    0.5^5 = 0.0625)"."""
    need = min_tasks(alpha)
    if n >= need:
        return None
    return (
        f"the formula gives {n} task{'s' if n != 1 else ''}, but compare needs at least "
        f"{need} at α = {alpha:g} to give any verdict ({_sign_floor(need - 1)})"
    )


def too_few_tasks_reason(tasks: int, alpha: float) -> str | None:
    """Why no effect is detectable with ``tasks`` tasks at ``alpha`` (``None`` when one
    can be): "with 5 tasks compare gives no verdict at α = 0.05, which needs at least
    6 (the exact sign test over 5 tasks cannot go below p = 2 × 0.5^5 = 0.0625)"."""
    need = min_tasks(alpha)
    if tasks >= need:
        return None
    return (
        f"with {tasks} task{'s' if tasks != 1 else ''} compare gives no verdict at "
        f"α = {alpha:g}, which needs at least {need} ({_sign_floor(tasks)})"
    )


def minimum_detectable_effect(
    n_tasks: int,
    components: VarianceComponents,
    *,
    trials_a: int = 1,
    trials_b: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
) -> float:
    """δ = (z_{1−α/2} + z_{1−β}) · √((ω² + σ_A²/K_A + σ_B²/K_B) / n) for fixed components."""
    if n_tasks < 2:
        raise ValueError("n_tasks must be at least 2")
    return z_sum(alpha, power) * math.sqrt(components.per_task(trials_a, trials_b) / n_tasks)


def mde_from_assumptions(
    n_tasks: int,
    baseline: float,
    *,
    correlation: float = 0.0,
    within_share: float = DEFAULT_WITHIN_SHARE,
    trials_a: int = 1,
    trials_b: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    drop: bool = False,
) -> float | None:
    """Smallest improvement δ > 0 over ``baseline`` detectable with ``n_tasks`` tasks
    (with ``drop``: the size δ > 0 of the smallest detectable drop, B at baseline − δ).

    The variance depends on δ through p_B = baseline ± δ, so δ solves
    δ = z·√(V(±δ)/n) (Brent's method on (0, 1 − baseline], or (0, baseline] for a
    drop). ``None`` when even δ = 1 − baseline (baseline) is not detectable: at a
    baseline of 1 no improvement exists, and a drop still may be detectable.
    """
    if n_tasks < 2:
        raise ValueError("n_tasks must be at least 2")
    z = z_sum(alpha, power)
    sign = -1.0 if drop else 1.0

    def gap(delta: float) -> float:
        comp = components_from_assumptions(
            baseline, sign * delta, correlation=correlation, within_share=within_share
        )
        return delta - z * math.sqrt(comp.per_task(trials_a, trials_b) / n_tasks)

    top = baseline if drop else 1 - baseline
    if top <= 0 or gap(top) < 0:
        return None
    if gap(1e-12) >= 0:  # zero variance: any effect is detectable
        return 0.0
    from scipy import optimize  # here: a seventh of a second to import

    return float(optimize.brentq(gap, 1e-12, top, xtol=1e-12))


# --------------------------------------------------------------------------- pilots


@dataclass(frozen=True)
class PilotVariance:
    """One system's variance components estimated from a pilot run."""

    tau2: float
    """Between-task variance of true success rates (method of moments, floored at 0)."""
    sigma2: float | None
    """Mean within-task trial variance; ``None`` when no task has two trials."""
    total: float
    """Var_t(p_t) with ddof = 1: the observed spread of per-task rates."""
    n_tasks: int
    mean_trials: float
    mean_rate: float

    @property
    def within_share(self) -> float | None:
        """The measured share of trial variance within tasks, σ²/(τ² + σ²).

        ``None`` when the pilot cannot separate them (one trial per task) or shows
        no variance at all.
        """
        return measured_within_share(self.sigma2, self.tau2)


def measured_within_share(within: float | None, between: float) -> float | None:
    """``within``/(``between`` + ``within``): the within-task share a pilot measured.

    ``None`` when ``within`` is (one trial per task: nothing measured) or both are 0.
    """
    if within is None or within + between <= 0:
        return None
    return within / (within + between)


def _less(total: float, part: float) -> float:
    """``total − part`` floored at 0, and 0 where the two are equal up to round-off: two
    float sums of one exact value (Var_t(p_t) and mean_t(s_t²/n_t) of a pilot whose tasks
    do not spread beyond their trials) differ in the last bits, and the plan showed a
    between-task variance of 6.9e-18, as `agentgauge.stats.se.se_mean` zeroes such
    residuals."""
    if abs(total - part) <= 64 * np.finfo(float).eps * max(abs(total), abs(part)):
        return 0.0
    return max(total - part, 0.0)


def _per_task(
    task_index: npt.NDArray[np.intp], success: FloatArray
) -> tuple[FloatArray, FloatArray]:
    n = np.bincount(task_index).astype(np.float64)
    c = np.bincount(task_index, weights=success)
    keep = n > 0
    return n[keep], c[keep] / n[keep]


def _within(n: FloatArray, p: FloatArray) -> FloatArray:
    """Unbiased within-task variance p(1 − p)·n/(n − 1); NaN where n < 2."""
    out = np.full(len(n), np.nan)
    ok = n >= 2
    out[ok] = p[ok] * (1 - p[ok]) * n[ok] / (n[ok] - 1)
    return out


def pilot_variance(task_index: npt.ArrayLike, success: npt.ArrayLike) -> PilotVariance:
    """Estimate τ² and σ² from one system's trials (module docstring).

    ``task_index`` gives each trial's task as an integer 0..T−1, ``success`` its outcome.
    """
    idx = np.asarray(task_index, dtype=np.intp)
    y = np.asarray(success, dtype=np.float64)
    if idx.shape != y.shape or idx.ndim != 1 or len(idx) == 0:
        raise ValueError("task_index and success must be equal-length, non-empty 1-d arrays")
    n, p = _per_task(idx, y)
    if len(p) < 2:
        raise ValueError("a pilot needs at least two tasks")
    total = float(np.var(p, ddof=1))
    s2 = _within(n, p)
    has = ~np.isnan(s2)
    if has.any():
        sigma2: float | None = float(s2[has].mean())
        # Tasks with one trial contribute their whole (unknown) within variance to
        # Var(p_t); only tasks with ≥ 2 trials enter the correction term.
        tau2 = _less(total, float(np.mean(np.where(has, s2 / n, 0.0))))
    else:
        sigma2, tau2 = None, total
    return PilotVariance(
        tau2=tau2,
        sigma2=sigma2,
        total=total,
        n_tasks=len(p),
        mean_trials=float(n.mean()),
        mean_rate=float(p.mean()),
    )


def components_from_pilot(
    pilot: PilotVariance,
    *,
    correlation: float = 0.0,
    within_share: float = DEFAULT_WITHIN_SHARE,
) -> VarianceComponents:
    """ω² = 2(1 − r)τ², σ_A² = σ_B² = σ² from a one-system pilot.

    With one trial per task the pilot cannot separate τ² from σ²; its observed
    variance is then split by ``within_share`` as for assumptions.
    """
    if not -1 <= correlation <= 1:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation!r}")
    if pilot.sigma2 is None:
        sigma2 = within_share * pilot.total
        tau2 = (1 - within_share) * pilot.total
    else:
        sigma2, tau2 = pilot.sigma2, pilot.tau2
    return VarianceComponents(
        omega2=2 * (1 - correlation) * tau2, sigma2_a=sigma2, sigma2_b=sigma2, source="pilot"
    )


def paired_variance(
    n_a: FloatArray, p_a: FloatArray, n_b: FloatArray, p_b: FloatArray
) -> tuple[float, float | None, float | None, float]:
    """(ω², σ_A², σ_B², Var_t(d_t)) from per-task trial counts and rates of two systems.

    Arrays are aligned by task. ω² = Var_t(d_t) − mean_t(s_A,t²/n_A,t + s_B,t²/n_B,t),
    floored at 0; tasks with one trial add no correction (their within variance
    is then counted in ω², which errs on the side of more tasks).
    """
    d = p_b - p_a
    if len(d) < 2:
        raise ValueError("a paired pilot needs at least two shared tasks")
    var_d = float(np.var(d, ddof=1))
    sa, sb = _within(n_a, p_a), _within(n_b, p_b)
    corr = np.where(np.isnan(sa), 0.0, sa / n_a) + np.where(np.isnan(sb), 0.0, sb / n_b)
    omega2 = _less(var_d, float(corr.mean()))
    sig_a = None if np.isnan(sa).all() else float(np.nanmean(sa))
    sig_b = None if np.isnan(sb).all() else float(np.nanmean(sb))
    return omega2, sig_a, sig_b, var_d


def components_from_pilot_pair(
    n_a: FloatArray,
    p_a: FloatArray,
    n_b: FloatArray,
    p_b: FloatArray,
    *,
    within_share: float = DEFAULT_WITHIN_SHARE,
) -> VarianceComponents:
    """Components from a paired pilot of two systems on the same tasks.

    When either system has one trial per task everywhere, ω² and its σ² are not
    separable; the observed Var_t(d_t) is then split by ``within_share``.
    """
    omega2, sig_a, sig_b, var_d = paired_variance(n_a, p_a, n_b, p_b)
    if sig_a is None or sig_b is None:
        # With one trial per task Var(d) = ω² + σ_A² + σ_B² and the parts are not
        # identifiable: split by the assumed share, half the within part each.
        within = within_share * var_d
        return VarianceComponents(
            omega2=(1 - within_share) * var_d,
            sigma2_a=within / 2,
            sigma2_b=within / 2,
            source="pilot-pair",
        )
    return VarianceComponents(omega2=omega2, sigma2_a=sig_a, sigma2_b=sig_b, source="pilot-pair")


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class Plan:
    """The answer of ``agentgauge plan``: tasks needed, or the minimum detectable effect."""

    components: VarianceComponents
    """The variance the answer rests on."""
    alpha: float
    power: float
    trials_a: int
    trials_b: int
    z: float
    """z_{1−α/2} + z_{1−β}."""
    delta: float | None = None
    """The difference to detect (for ``n_tasks``)."""
    n_tasks: int | None = None
    """Tasks needed, rounded up (when ``delta`` was given), and never below `min_tasks`."""
    n_tasks_exact: float | None = None
    """The unrounded formula value."""
    n_tasks_reason: str | None = None
    """Why ``n_tasks`` is `min_tasks` rather than the formula's value, when it is."""
    tasks: int | None = None
    """Tasks available (for ``mde``)."""
    mde: float | None = None
    """Minimum detectable effect with ``tasks`` tasks."""
    mde_reason: str | None = None
    """Why ``mde`` is ``None`` when it is (fewer tasks than `min_tasks`, or no effect up
    to 1 − baseline detectable)."""
    mde_drop: float | None = None
    """The size of the smallest drop detectable with ``tasks`` tasks (B below A by it):
    near 100% no improvement may be detectable where a drop is."""
    mde_drop_reason: str | None = None
    """Why ``mde_drop`` is ``None`` when it is (fewer tasks than `min_tasks`, or no drop
    down to a rate of 0 detectable)."""
    inputs: dict[str, Any] | None = None
    """The assumptions or pilot the plan was made from, echoed for the record."""
    warnings: list[str] = field(default_factory=list)
    """What the user must know to read the plan (a pilot read on other variants than
    its base one)."""

    @property
    def min_tasks(self) -> int:
        """The fewest tasks with which ``compare`` gives any verdict at ``alpha``
        (`min_tasks`)."""
        return min_tasks(self.alpha)

    def to_dict(self) -> dict[str, Any]:
        """The ``agentgauge.plan/1`` object: ``n_tasks`` or ``mde``, and every input."""
        out: dict[str, Any] = {"schema": "agentgauge.plan/1"}
        if self.tasks is None:
            out["n_tasks"] = self.n_tasks
            out["n_tasks_exact"] = self.n_tasks_exact
            if self.n_tasks_reason:
                out["n_tasks_reason"] = self.n_tasks_reason
        else:
            out["mde"] = self.mde
            if self.mde_reason:
                out["mde_reason"] = self.mde_reason
            out["mde_drop"] = self.mde_drop
            if self.mde_drop_reason:
                out["mde_drop_reason"] = self.mde_drop_reason
            out["tasks"] = self.tasks
        out["min_tasks"] = self.min_tasks
        out.update(self.inputs or {})
        out.update(
            {
                "delta": self.delta,
                "alpha": self.alpha,
                "power": self.power,
                "trials_a": self.trials_a,
                "trials_b": self.trials_b,
                "z_alpha_plus_z_beta": self.z,
                "variance": self.components.to_dict(),
                "variance_per_task": self.components.per_task(self.trials_a, self.trials_b),
                "warnings": self.warnings,
            }
        )
        return out


def plan(
    components: VarianceComponents,
    *,
    delta: float | None = None,
    tasks: int | None = None,
    trials_a: int = 1,
    trials_b: int = 1,
    alpha: float = 0.05,
    power: float = 0.8,
    inputs: dict[str, Any] | None = None,
    rate: float | None = None,
    rate_name: str = "baseline",
) -> Plan:
    """Tasks needed for ``delta``, or (with ``tasks``) the detectable effect, for fixed components.

    The tasks needed are never fewer than `min_tasks` (α), the fewest with which
    ``compare`` gives a verdict: the formula's smaller answer is raised to it, with
    ``n_tasks_reason``. With fewer ``tasks`` than that, ``mde`` is ``None`` with
    ``mde_reason``. For assumption-based variance that depends on δ, use
    `plan_from_assumptions`.

    ``rate`` is A's success rate when known (a pilot's; ``rate_name`` names it in the
    reasons): no effect beyond 1 − ``rate`` exists, so an ``mde`` above it is ``None``
    with ``mde_reason``, and a ``delta`` taking ``rate`` out of [0, 1] raises
    ``ValueError``, as from assumptions.
    """
    z = z_sum(alpha, power)
    common: dict[str, Any] = {
        "components": components,
        "alpha": alpha,
        "power": power,
        "trials_a": trials_a,
        "trials_b": trials_b,
        "z": z,
        "inputs": inputs,
    }
    if tasks is not None:
        if tasks < 1:
            raise ValueError("tasks must be at least 1")
        few = too_few_tasks_reason(tasks, alpha)
        if few is not None:
            return Plan(
                delta=delta,
                tasks=tasks,
                mde=None,
                mde_reason=few,
                mde_drop=None,
                mde_drop_reason=few,
                **common,
            )
        mde = minimum_detectable_effect(
            tasks, components, trials_a=trials_a, trials_b=trials_b, alpha=alpha, power=power
        )
        # The variance is fixed, so a drop as large as an improvement is as detectable;
        # B cannot pass more than every trial nor fewer than none: an effect past
        # 1 − rate up (120 points, say), or past rate down, is no effect at all.
        up = None if rate is None or mde <= 1 - rate else (1 - rate, f"1 − {rate_name}")
        down = None if rate is None or mde <= rate else (rate, rate_name)
        return Plan(
            delta=delta,
            tasks=tasks,
            mde=mde if up is None else None,
            mde_reason=None
            if up is None
            else f"no improvement up to {up[1]} = {up[0]:g} is detectable with "
            f"{counted(tasks, 'task')} (the formula gives {mde:.4f})",
            mde_drop=mde if down is None else None,
            mde_drop_reason=None
            if down is None
            else f"no drop down to 0, {down[1]} = {down[0]:g}, is detectable with "
            f"{counted(tasks, 'task')} (the formula gives {mde:.4f})",
            **common,
        )
    if delta is None:
        raise ValueError("give delta (tasks needed) or tasks (minimum detectable effect)")
    if rate is not None and not 0 <= rate + delta <= 1:
        raise ValueError(
            f"{rate_name} {rate:g} + delta {delta:g} = {rate + delta:g} is not a rate in [0, 1]"
        )
    exact = tasks_needed(
        delta, components, trials_a=trials_a, trials_b=trials_b, alpha=alpha, power=power
    )
    n = round_up_tasks(exact)
    return Plan(
        delta=delta,
        n_tasks=max(n, min_tasks(alpha)),
        n_tasks_exact=exact,
        n_tasks_reason=raised_to_min_reason(n, alpha),
        **common,
    )


def plan_from_assumptions(
    baseline: float,
    *,
    delta: float | None = None,
    tasks: int | None = None,
    trials: int = 1,
    correlation: float = 0.0,
    within_share: float = DEFAULT_WITHIN_SHARE,
    alpha: float = 0.05,
    power: float = 0.8,
) -> Plan:
    """A plan from a baseline rate and assumptions (module docstring for the derivation)."""
    if trials < 1:
        raise ValueError("trials must be at least 1")
    inputs = {
        "method": "assumptions",
        "baseline": baseline,
        "correlation": correlation,
        "within_share": within_share,
        "trials": trials,
    }
    if tasks is not None:
        if tasks < 1:
            raise ValueError("tasks must be at least 1")
        few = too_few_tasks_reason(tasks, alpha)

        def smallest(drop: bool) -> float | None:
            return mde_from_assumptions(
                tasks,
                baseline,
                correlation=correlation,
                within_share=within_share,
                trials_a=trials,
                trials_b=trials,
                alpha=alpha,
                power=power,
                drop=drop,
            )

        mde, drop = (None, None) if few is not None else (smallest(False), smallest(True))
        # Report the variance at the detectable improvement, else at the detectable drop
        # (or at δ = 0 when neither is).
        shown = mde if mde is not None else (-drop if drop is not None else 0.0)
        comp = components_from_assumptions(
            baseline, shown, correlation=correlation, within_share=within_share
        )
        return Plan(
            components=comp,
            alpha=alpha,
            power=power,
            trials_a=trials,
            trials_b=trials,
            z=z_sum(alpha, power),
            delta=delta,
            tasks=tasks,
            mde=mde,
            mde_reason=few
            or (
                None
                if mde is not None
                else f"no improvement up to 1 − baseline = {1 - baseline:g} is detectable "
                f"with {counted(tasks, 'task')}"
            ),
            mde_drop=drop,
            mde_drop_reason=few
            or (
                None
                if drop is not None
                else f"no drop down to 0, baseline = {baseline:g}, is detectable "
                f"with {counted(tasks, 'task')}"
            ),
            inputs=inputs,
        )
    if delta is None:
        raise ValueError("give delta (tasks needed) or tasks (minimum detectable effect)")
    comp = components_from_assumptions(
        baseline, delta, correlation=correlation, within_share=within_share
    )
    return plan(
        comp,
        delta=delta,
        trials_a=trials,
        trials_b=trials,
        alpha=alpha,
        power=power,
        inputs=inputs,
    )
