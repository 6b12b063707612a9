"""Confidence intervals for a proportion: Wilson's score interval and the normal one.

Both stay inside [0, 1]: an interval for a rate that reaches past 100% tells the
reader the method was wrong for the data (Inspect's weakness, STYLE.md).
"""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import numpy.typing as npt

__all__ = ["normal_interval", "wilson_interval", "z_value"]


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
    lo = np.clip(centre - half, 0.0, 1.0)
    hi = np.clip(centre + half, 0.0, 1.0)
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
