"""Confidence intervals for a proportion: Wilson's score interval, its design-effect
form for clustered data, and the normal one.

All stay inside [0, 1]: an interval for a rate that reaches past 100% tells the
reader the method was wrong for the data (Inspect's weakness, STYLE.md).
"""

from __future__ import annotations

from functools import lru_cache
from statistics import NormalDist

import numpy as np
import numpy.typing as npt
from scipy import special

__all__ = [
    "kish_n",
    "mover_difference_interval",
    "normal_interval",
    "wilson_design_effect_interval",
    "wilson_interval",
    "z_value",
]


@lru_cache(maxsize=256)
def _t_quantile(level: float, df: float) -> float:
    # Student's t quantile (what scipy.stats.t.ppf computes, without importing
    # scipy.stats, a second of every command's start-up); cached: the coverage
    # simulation asks for a handful of df. ``df`` need not be a whole number.
    return float(special.stdtrit(df, 0.5 + level / 2))


def z_value(level: float = 0.95) -> float:
    """Two-sided standard normal quantile z_{1−α/2} for a confidence level 1 − α."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return NormalDist().inv_cdf(0.5 + level / 2)


def wilson_interval(
    successes: npt.ArrayLike, n: npt.ArrayLike, *, level: float = 0.95
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Wilson score interval for a binomial proportion (Wilson 1927).

    With p̂ = x/n and z = z_{1−α/2}:

        centre    = (p̂ + z²/2n) / (1 + z²/n)
        halfwidth = z/(1 + z²/n) · √( p̂(1−p̂)/n + z²/4n² )

    It keeps its coverage near 0 and 1 where the normal interval collapses
    (Brown, Cai & DasGupta 2001). Scalars or arrays; NaN where n = 0.
    Returns ``(lo, hi)`` as arrays (0-d for scalar input).
    """
    x = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    if np.any(x < 0) or np.any(x > m):
        raise ValueError("need 0 <= successes <= n")
    z = z_value(level)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = x / m
        denom = 1 + z * z / m
        centre = (p + z * z / (2 * m)) / denom
        half = z / denom * np.sqrt(p * (1 - p) / m + z * z / (4 * m * m))
    # At x = 0 (x = n) the bound is 0 (1) exactly; the formula gives it up to rounding.
    lo = np.where((x == 0) & (m > 0), 0.0, np.clip(centre - half, 0.0, 1.0))
    hi = np.where((x == m) & (m > 0), 1.0, np.clip(centre + half, 0.0, 1.0))
    return lo, hi


def normal_interval(
    estimate: npt.ArrayLike, se: npt.ArrayLike, *, level: float = 0.95
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Normal (Wald) interval estimate ± z·se, clipped to [0, 1].

    Accurate when the estimate is a mean over enough independent clusters for
    the central limit theorem to hold (a few hundred; Bowyer et al. 2025).
    NaN where se is NaN.
    """
    est = np.asarray(estimate, dtype=np.float64)
    s = np.asarray(se, dtype=np.float64)
    z = z_value(level)
    return np.clip(est - z * s, 0.0, 1.0), np.clip(est + z * s, 0.0, 1.0)


def kish_n(trials: npt.ArrayLike) -> float:
    """Kish's effective number of trials when every task weighs the same.

    A task with n_t trials gives each of them the weight 1/(T·n_t), and Kish's
    n = (Σw)² / Σw² (Kish 1965, *Survey Sampling*, §11.7) becomes

        n_srs = T² / Σ_t 1/n_t,

    the number of independent trials that would give a task-weighted mean the
    same binomial variance: T·K when every task has K trials.
    """
    m = np.asarray(trials, dtype=np.float64)
    if m.ndim != 1 or m.size == 0 or np.any(m < 1):
        raise ValueError("need one trial count >= 1 per task")
    return float(m.size * m.size / np.sum(1.0 / m))


def wilson_design_effect_interval(
    estimate: float, se: float, n_srs: float, df: int, *, level: float = 0.95
) -> tuple[float, float]:
    """Wilson's interval on the design-effect-adjusted effective sample size.

    For a rate estimated from clustered trials (Korn & Graubard 1998, "Confidence
    intervals for proportions with small expected number of positive counts
    estimated from survey data"; the "modified Wilson" limits of survey software):

        deff  = se² / ( p̂(1−p̂) / n_srs )                     Kish's design effect
        deff* = max(1, deff · (t_{df} / t_{n_srs−1})²)        df adjustment, floor 1
        n*    = n_srs / deff*,   x* = p̂ · n*

    and the interval is Wilson's on (x*, n*). The factor (t_{df}/t_{n−1})² is Korn
    and Graubard's degrees-of-freedom adjustment of the effective sample size, with
    n the sample size the design effect is measured against: it widens the interval
    for a variance estimated from df + 1 clusters instead of from n observations
    (R's ``survey::svyciprop(method = "beta")`` and the CDC's ``surveytable``
    apply it in this form, the latter also capping the adjusted n at n). The floor
    of 1 is that cap: clustered trials never carry more information than as many
    independent ones, which also keeps the interval from shrinking when the SE
    happens to come out small. Where the design effect cannot be estimated (p̂ at
    0 or 1, or se = 0) it is 1: all-passing data keep an upper bound of 1 and a
    lower bound below 1, never a zero-width interval. ``n_srs`` is `kish_n` of the
    trial counts; ``df`` is the number of clusters less one.
    """
    if not (0.0 <= estimate <= 1.0) or not np.isfinite(se) or se < 0:
        raise ValueError(f"need 0 <= estimate <= 1 and a finite se >= 0, got {estimate}, {se}")
    if not n_srs > 0 or df < 1:
        raise ValueError(f"need n_srs > 0 and df >= 1, got {n_srs}, {df}")
    t_design = _t_quantile(level, float(df))
    # n_srs >= tasks >= clusters, so n_srs − 1 >= df and the factor is at least 1; the
    # max keeps it so for a caller whose n_srs is below its cluster count.
    t_srs = _t_quantile(level, max(float(n_srs) - 1.0, float(df)))
    binomial_var = estimate * (1.0 - estimate) / n_srs
    deff = 1.0
    if se > 0 and binomial_var > 0:
        deff = max(1.0, se * se / binomial_var * (t_design / t_srs) ** 2)
    n_eff = n_srs / deff
    lo, hi = wilson_interval(estimate * n_eff, n_eff, level=level)
    return float(lo), float(hi)


def mover_difference_interval(
    rate_a: float,
    ci_a: tuple[float, float],
    rate_b: float,
    ci_b: tuple[float, float],
    correlation: float,
) -> tuple[float, float]:
    """Interval of d = rate_b − rate_a from an interval for each rate (MOVER).

    The method of variance estimates recovery for correlated estimates (Zou &
    Donner 2008, "Construction of confidence limits about effect measures: a
    general approach"; for paired proportions with Wilson limits, Newcombe 1998,
    "Improved confidence intervals for the difference between binomial proportions
    based on paired data", method 10). With (l, u) each rate's interval and r the
    correlation of the two estimates:

        lower = d − √( (b − l_b)² + (u_a − a)² − 2r (b − l_b)(u_a − a) )
        upper = d + √( (u_b − b)² + (a − l_a)² − 2r (u_b − b)(a − l_a) )

    It inherits the asymmetry of the rates' intervals near 0 and 1, so it keeps
    its width where an interval on the SE of d collapses (two all-passing runs:
    d = 0 with SE 0). Clipped to [−1, 1].
    """
    if not -1.0 <= correlation <= 1.0:
        raise ValueError(f"correlation must be in [-1, 1], got {correlation}")
    (la, ua), (lb, ub) = ci_a, ci_b
    d = rate_b - rate_a
    down_b, up_a = rate_b - lb, ua - rate_a
    up_b, down_a = ub - rate_b, rate_a - la
    lo = d - np.sqrt(max(0.0, down_b**2 + up_a**2 - 2 * correlation * down_b * up_a))
    hi = d + np.sqrt(max(0.0, up_b**2 + down_a**2 - 2 * correlation * up_b * down_a))
    return max(float(lo), -1.0), min(float(hi), 1.0)
