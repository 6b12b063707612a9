"""Outcome metrics over tasks (docs/metrics.md): success rate with honest error bars,
pass@k and pass^k, outcome consistency and flaky tasks.

Inputs are per-task arrays (trials n_t, successes c_t, cluster labels), built by
`agentgauge.metrics.compute_metrics` from a `TrialTable` with ``np.bincount``.
Every task weighs the same, whatever its number of trials.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import partial

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.passk import pass_at_k, pass_hat_k
from agentgauge.report.formats import counted
from agentgauge.stats import (
    cluster_codes,
    kish_n,
    normal_interval,
    se_clustered,
    se_mean,
    wilson_design_effect_interval,
    wilson_interval,
)
from agentgauge.table import sorted_codes

__all__ = [
    "NORMAL_FROM_CLUSTERS",
    "NORMAL_RATES",
    "OutcomeMetrics",
    "PassK",
    "outcome_metrics",
    "success_interval",
    "task_mean",
    "task_rate_fraction",
    "task_success_counts",
]

#: From this many clusters up the CLT interval is accurate away from 0 and 1; below it,
#: intervals on the SE alone under-cover (Bowyer et al. 2025).
NORMAL_FROM_CLUSTERS = 200
#: The normal interval is used only for rates in this range. Beyond it its tails go
#: lopsided (250 families at 97%: 5.1% of intervals lie above the truth, 1.1% below;
#: at 99%: 6.3% and 0.8%) and the design-effect Wilson takes over, the rule of SAS
#: SURVEYFREQ's PSMALL option (Curtin et al. 2006) with the range measured here
#: (tests/metrics/test_coverage.py: the normal interval still holds at 90%).
NORMAL_RATES = (0.1, 0.9)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PassK:
    """pass@k or pass^k for one k: the task average, its SE, or why it is missing."""

    value: float | None
    se: float | None
    reason: str | None = None


@dataclass(frozen=True)
class OutcomeMetrics:
    """Outcome of one group of trials."""

    n_tasks: int
    n_trials: int
    n_successes: int
    n_clusters: int
    """Independent units behind the interval: families, or tasks when there are none."""
    cluster_unit: str
    """``family`` or ``task``."""
    success_rate: float | None
    se: float | None
    se_clustered: float | None
    ci95: tuple[float, float] | None
    ci_method: str | None
    """``wilson``, ``wilson_design_effect`` or ``normal`` (docs/metrics.md)."""
    pass_at_k: dict[int, PassK]
    pass_hat_k: dict[int, PassK]
    outcome_consistency: float | None
    flaky_tasks: list[str]
    reasons: dict[str, str] = field(default_factory=dict)
    """Why a figure is null, keyed by its name (``ci95``, ``outcome_consistency``...)."""
    n_families: int = 0
    """Of the ``n_clusters``, how many are families; the rest are tasks without one,
    each its own cluster. 0 when ``cluster_unit`` is ``task``."""


def task_success_counts(
    task_id: npt.NDArray[np.object_] | npt.NDArray[np.str_],
    success: npt.NDArray[np.bool_],
    *,
    coded: tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]] | None = None,
) -> tuple[list[str], IntArray, IntArray]:
    """Per task, in sorted id order: trials n_t and successes c_t = Σ success.

    The one place per-task rates p_t = c_t / n_t start from (compare, plan,
    robustness, validity). ``success`` is the caller's choice of success column:
    ``table.success & ~table.infra_error`` where an infra error counts as a
    failure (docs/metrics.md, "Infrastructure errors"), ``table.success`` where
    the flag is read as recorded.
    Counting by ``np.bincount`` over the task codes keeps it one pass. ``coded``: the
    `agentgauge.table.factorize` of the column these ids were taken from (its values,
    and these rows' codes), which spares coding the ids again.
    """
    ids: npt.NDArray[np.object_] = np.asarray(task_id, dtype=object)
    uniq, idx = sorted_codes(ids, coded)
    n = np.bincount(idx, minlength=len(uniq)).astype(np.int64)
    c = np.bincount(idx[np.asarray(success, dtype=bool)], minlength=len(uniq)).astype(np.int64)
    return [str(t) for t in uniq], n, c


#: Per distinct (n_t, c_t): how many tasks have it (`_pairs`).
_Pairs = list[tuple[int, int, int]]


def _pairs(n: IntArray, c: IntArray) -> _Pairs:
    """``(n_t, c_t, tasks)`` per distinct pair: a suite has a handful of trial counts,
    so 100,000 tasks hold a few dozen pairs."""
    width = int(c.max(initial=0)) + 1
    pair = n * width + c
    low = int(pair.min(initial=0))
    if int(pair.max(initial=0)) - low <= 4 * pair.size + 1024:
        # A few small trial counts (the usual suite): one counting pass, not a sort.
        held = np.bincount(pair - low)
        present = np.flatnonzero(held)
        codes, counts = present + low, held[present]
    else:
        codes, counts = np.unique(pair, return_counts=True)
    return [
        (*divmod(code, width), count)
        for code, count in zip(codes.tolist(), counts.tolist(), strict=True)
    ]


def _exact_fraction(
    pairs: _Pairs,
    numerator: Callable[[int, int], int],
    denominator: Callable[[int], int],
) -> Fraction | None:
    """mean_t numerator(n_t, c_t)/denominator(n_t) as an exact fraction, summed as
    integers per trial count; ``None`` when there are no tasks."""
    sums: dict[int, int] = {}
    tasks = 0
    for n_t, c_t, count in pairs:
        sums[n_t] = sums.get(n_t, 0) + count * numerator(n_t, c_t)
        tasks += count
    if not tasks:
        return None
    total = sum((Fraction(s, denominator(n_t)) for n_t, s in sums.items()), Fraction(0))
    return total / tasks


def _exact_mean(
    pairs: _Pairs,
    numerator: Callable[[int, int], int],
    denominator: Callable[[int], int],
) -> float:
    """`_exact_fraction` divided once (see `task_mean`); NaN when there are no tasks."""
    total = _exact_fraction(pairs, numerator, denominator)
    # A Fraction's float is its int / int, which rounds correctly.
    return float("nan") if total is None else float(total)


def _rate(_n: int, c: int) -> int:
    return c


def _trials(n: int) -> int:
    return n


def task_mean(
    n: npt.ArrayLike,
    c: npt.ArrayLike,
    numerator: Callable[[int, int], int] = _rate,
    denominator: Callable[[int], int] = _trials,
) -> float:
    """The mean over tasks of ``numerator(n_t, c_t) / denominator(n_t)``, the exact
    rational mean rounded once to the nearest float; by default the success rate
    mean_t c_t/n_t. NaN when there are no tasks.

    Averaging the floats c_t/n_t rounds each term and the sum: successes (1,1,1,2,2,2)
    of 3 trials each, 9 of 18, averaged to 0.49999999999999994, and a gate ``min: 0.5``
    failed on a rate its line printed as 0.5. Here 9/18 is 0.5 exactly."""
    n_arr = np.asarray(n, dtype=np.int64).reshape(-1)
    c_arr = np.asarray(c, dtype=np.int64).reshape(-1)
    return _exact_mean(_pairs(n_arr, c_arr), numerator, denominator)


def task_rate_fraction(n: npt.ArrayLike, c: npt.ArrayLike) -> Fraction | None:
    """The success rate mean_t c_t/n_t as an exact fraction (``None`` with no tasks):
    for a figure built from task rates (a difference of two, a ratio) that is to be
    rounded once, as `task_mean` rounds the rate itself."""
    n_arr = np.asarray(n, dtype=np.int64).reshape(-1)
    c_arr = np.asarray(c, dtype=np.int64).reshape(-1)
    return _exact_fraction(_pairs(n_arr, c_arr), _rate, _trials)


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def success_interval(
    p: FloatArray,
    n: IntArray,
    c: IntArray,
    clusters: npt.NDArray[np.intp] | None,
    *,
    level: float = 0.95,
) -> tuple[tuple[float, float] | None, str | None, str | None]:
    """The 95% interval of the success rate: ``(ci, method, reason)``; at another
    ``level`` by the same rule (`compare` asks for its 1 − α).

    - ``wilson``: every task has one trial and there are no families; Wilson on (Σc, T);
    - ``wilson_design_effect``: fewer than 200 clusters (families, or tasks when
      there are none); Wilson on the effective sample size, the Kish n of the
      trials divided by the design effect of the clustered SE, widened for an SE
      estimated from C clusters (Korn & Graubard 1998; see
      `wilson_design_effect_interval`). It keeps its coverage near 0% and 100%,
      where a percentile bootstrap collapses to [1, 1] (docs/metrics.md);
    - ``normal``: from 200 clusters up with a rate between 10% and 90% and an SE
      above 0, the normal interval on the clustered SE (the plain task SE when
      every task is its own cluster), clipped to [0, 1]; outside that range the
      design-effect Wilson again.
    """
    t = p.size
    if t == 0:
        return None, None, "no tasks"
    if clusters is None and bool(np.all(n == 1)):
        lo, hi = wilson_interval(int(c.sum()), t, level=level)
        return (float(lo), float(hi)), "wilson", None
    n_units = t if clusters is None else cluster_codes(clusters)[1]
    if n_units < 2:
        return None, None, "fewer than 2 clusters: no interval can be estimated"
    se = se_mean(p) if clusters is None else se_clustered(p, clusters)
    rate = task_mean(n, c)
    normal = NORMAL_RATES[0] <= rate <= NORMAL_RATES[1] and se > 0
    if n_units < NORMAL_FROM_CLUSTERS or not normal:
        ci = wilson_design_effect_interval(rate, se, kish_n(n), n_units - 1, level=level)
        return ci, "wilson_design_effect", None
    lo, hi = normal_interval(rate, se, level=level)
    return (float(lo), float(hi)), "normal", None


# The numerators over C(n, k) of the exact per-task values: pass@k = 1 − C(n−c, k)/C(n, k)
# (Chen et al. 2021), pass^k = C(c, k)/C(n, k) (Yao et al. 2024).
def _at_k(k: int, n: int, c: int) -> int:
    return math.comb(n, k) - math.comb(n - c, k)


def _hat_k(k: int, _n: int, c: int) -> int:
    return math.comb(c, k)


def _pass_aggregate(
    per_task: FloatArray, n: IntArray, pairs: _Pairs, k: int, numerator: Callable[[int, int], int]
) -> PassK:
    """The task average of a per-task estimator and its SE. The average is `task_mean`
    of its exact values ``numerator(n_t, c_t) / C(n_t, k)``, not of the rounded floats
    in ``per_task``: pass@1 is the success rate, to the last digit."""
    if n.size == 0:
        return PassK(None, None, "no tasks")
    undefined = int(np.count_nonzero(np.isnan(per_task)))
    if undefined:
        # Averaging only the tasks with enough trials would change the task set; say why instead.
        return PassK(
            None,
            None,
            f"k={k} exceeds the trials of {undefined} of {counted(n.size, 'task')} "
            f"(fewest: {int(n.min())})",
        )
    value = _exact_mean(pairs, numerator, lambda n_t: math.comb(n_t, k))
    return PassK(value, _finite(se_mean(per_task)))


def outcome_metrics(
    n: npt.ArrayLike,
    c: npt.ArrayLike,
    *,
    task_ids: Sequence[str] | npt.NDArray[np.object_] | None = None,
    clusters: npt.ArrayLike | None = None,
    families: int | None = None,
    ks: Sequence[int] = (1, 2, 4),
) -> OutcomeMetrics:
    """Outcome metrics from per-task trial counts ``n`` and success counts ``c``.

    - success_rate = mean_t p_t, p_t = c_t/n_t; ``se`` = sd_t(p_t, ddof=1)/√T;
      ``se_clustered`` (Miller 2024) when ``clusters`` (one family code per task)
      is given; ``ci95`` and ``ci_method`` by `success_interval`. ``families``: how
      many of the clusters are families, when some are tasks without one (every
      cluster is a family when it is not given).
    - pass@k (Chen et al. 2021) and pass^k (Yao et al. 2024) per task, averaged
      over tasks with their SE across tasks; ``None`` with a reason when k > n_t
      for any task.
    - outcome_consistency = mean_t (2p_t − 1)² (Rabanser et al. 2026, corrected
      form): 1 when every task always or never succeeds, 0 for coin flips;
      ``None`` when a task has fewer than 2 trials.
    - flaky tasks: 0 < c_t < n_t.
    """
    n_arr = np.asarray(n, dtype=np.int64)
    c_arr = np.asarray(c, dtype=np.int64)
    if n_arr.ndim != 1 or n_arr.shape != c_arr.shape:
        raise ValueError("n and c must be 1-D arrays of equal length")
    if np.any(n_arr < 1) or np.any(c_arr < 0) or np.any(c_arr > n_arr):
        raise ValueError("need n_t >= 1 and 0 <= c_t <= n_t for every task")
    t = n_arr.size
    ids = np.asarray(task_ids if task_ids is not None else np.arange(t).astype(str), dtype=object)
    cl = None if clusters is None else np.asarray(clusters).reshape(-1)
    if cl is not None and cl.size != t:
        raise ValueError("clusters needs one label per task")
    reasons: dict[str, str] = {}

    p = c_arr / n_arr if t else np.empty(0)
    pairs = _pairs(n_arr, c_arr)
    rate = _exact_mean(pairs, _rate, _trials) if t else None
    se = _finite(se_mean(p)) if t else None
    if t and se is None:
        reasons["se"] = "one task: no spread to estimate"
    se_cl = _finite(se_clustered(p, cl)) if cl is not None and t else None
    if cl is not None and t and se_cl is None:
        reasons["se_clustered"] = "fewer than 2 families"
    elif cl is None and t:
        # Null, and said why, as every other null figure is (a gate on it read "is null").
        reasons["se_clustered"] = (
            "no trial records a family: the tasks are the clusters, and se is their standard error"
        )
    ci, method, why = success_interval(p, n_arr, c_arr, cl)
    if why:
        reasons["ci95"] = why
    n_clusters = cluster_codes(cl)[1] if cl is not None else t
    n_families = 0 if cl is None else n_clusters if families is None else families

    at_k: dict[int, PassK] = {}
    hat_k: dict[int, PassK] = {}
    for k in ks:
        at_k[k] = _pass_aggregate(
            np.asarray(pass_at_k(n_arr, c_arr, k)), n_arr, pairs, k, partial(_at_k, k)
        )
        hat_k[k] = _pass_aggregate(
            np.asarray(pass_hat_k(n_arr, c_arr, k)), n_arr, pairs, k, partial(_hat_k, k)
        )
        if at_k[k].reason:
            reasons[f"pass_at_k.{k}"] = reasons[f"pass_hat_k.{k}"] = str(at_k[k].reason)
    for name, aggs in (("pass_at_k", at_k), ("pass_hat_k", hat_k)):
        for k, agg in aggs.items():
            if agg.value is not None and agg.se is None:  # a value over one task
                reasons[f"{name}_se.{k}"] = "one task: no spread to estimate"

    consistency: float | None = None
    single = int(np.count_nonzero(n_arr < 2))
    if t and not single:
        # (2p − 1)² = (2c − n)²/n², averaged exactly as the rate is.
        consistency = task_mean(
            n_arr, c_arr, lambda n_t, c_t: (2 * c_t - n_t) ** 2, lambda n_t: n_t * n_t
        )
    elif t:
        have = "1 task has" if single == 1 else f"{single} tasks have"
        reasons["outcome_consistency"] = f"needs >= 2 trials per task; {have} 1"
    else:
        reasons["outcome_consistency"] = "no tasks"

    flaky = ids[(c_arr > 0) & (c_arr < n_arr)]
    return OutcomeMetrics(
        n_tasks=t,
        n_trials=int(n_arr.sum()),
        n_successes=int(c_arr.sum()),
        n_clusters=n_clusters,
        cluster_unit="task" if cl is None else "family",
        success_rate=rate,
        se=se,
        se_clustered=se_cl,
        ci95=ci,
        ci_method=method,
        pass_at_k=at_k,
        pass_hat_k=hat_k,
        outcome_consistency=consistency,
        flaky_tasks=flaky.tolist(),
        reasons=reasons,
        n_families=n_families,
    )
