"""Cost, latency and tokens per trial, and the cost of a success (Erol et al.
2025, *Cost-of-Pass*).

Inputs are per-trial arrays with NaN for unknown values. An unknown price is
never read as free: a figure that would need it is ``None`` with the count of
trials whose price is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from agentgauge.report.formats import counted

__all__ = [
    "SUM_OVERFLOW",
    "CostMetrics",
    "checked_cost_of_pass",
    "cost_metrics",
    "cost_of_pass",
    "exact_sum",
    "overflow_reason",
    "quantiles",
    "task_mean",
    "task_weighted_cost_of_pass",
    "unpriced_label",
]

FloatArray = npt.NDArray[np.float64]


def cost_of_pass(cost_per_trial: float, success_rate: float) -> float:
    """Expected spend per success: mean cost per trial (failures included) / success rate.

    Erol et al. 2025, "Cost-of-Pass: An Economic Framework for Evaluating
    Language Models" (arXiv:2504.13359): C_p = E[cost] / R, both expectations
    over the same distribution of problems, so both arguments must be the same
    kind of average (`task_weighted_cost_of_pass` takes both over tasks).
    Infinite when the rate is 0 (no number of attempts buys a success). $0.50
    per trial at 40% costs $1.25 per success; $2.00 at 90% costs $2.22.
    """
    if not 0 <= success_rate <= 1:
        raise ValueError(f"success_rate must be in [0, 1], got {success_rate}")
    if cost_per_trial < 0:
        raise ValueError(f"cost_per_trial must be >= 0, got {cost_per_trial}")
    return float("inf") if success_rate == 0 else cost_per_trial / success_rate


@dataclass(frozen=True)
class CostMetrics:
    """Spend, latency and tokens of one group of trials."""

    per_trial: float | None
    total: float | None
    cost_of_pass: float | None
    judge_total: float | None
    missing: int
    """Trials whose agent price is unknown."""

    latency_p50: float | None
    latency_p95: float | None
    latency_mean: float | None
    input_tokens: float | None
    """Mean input tokens per trial (over trials that report them)."""
    output_tokens: float | None
    input_tokens_total: float | None
    """Sum over the trials; ``None`` unless every trial reports its input tokens."""
    output_tokens_total: float | None
    tool_calls: float | None
    """Mean tool calls per trial."""
    model_calls: float | None
    reasons: dict[str, str] = field(default_factory=dict)
    judge_n: int = 0
    """Trials a model judge graded, or that record a judge cost (the count behind
    `judge_total`); without ``judged``, only those that record one."""
    judge_missing: int | None = None
    """Judged trials whose judge price is unknown; ``None`` when which trials a judge
    graded is not known (``judged`` not given)."""
    input_tokens_n: int = 0
    """Trials that report their input tokens (the count behind `input_tokens`)."""
    output_tokens_n: int = 0
    latency_n: int = 0
    """Trials that report their latency (the count behind the latency figures)."""
    spend_per_success: float | None = None
    """What the trials spent per success: total / successes, pooled over trials (the
    accounting figure; `cost_of_pass` is the expected cost of a success over tasks)."""


def exact_sum(values: FloatArray) -> Fraction | None:
    """The sum of ``values`` (no NaN) as an exact fraction; ``None`` when it passes
    the largest float (or a value is infinite).

    A float sum rounds at every addition: 30 costs of $0.10 added up to
    3.000000000000001, and their mean to 0.10000000000000003, failing a gate ``max:
    0.1``. Here the sum is taken exactly, a slice of bits at a time, by error-free
    extraction (Rump, Ogita & Oishi 2008, "Accurate floating-point summation part I:
    faithful rounding", SIAM J. Sci. Comput. 31(1), section 3, ExtractScalar and
    ExtractVector). With n values r, each of size below 2^e, and σ = 2^(e+k), 2^k ≥ 2n:
    q = (r + σ) − σ is r rounded to a multiple of 2^(e+k−53) (r + σ lies between σ/2
    and 2σ, and the subtraction is exact), of size at most 2^e (rounding is monotone);
    r − q is the rounding error of r + σ, a float, so it too is exact, and at most
    2^(e+k−53) in size. Every sum of n such q's is a multiple of 2^(e+k−53) of size at
    most 2^(e+k−1), at most 2^52 units: a float, so numpy's ``sum`` adds them exactly in
    whatever order it takes. That float is added exactly (in Python's integers), and the
    same is done with the remainders, 52 − k bits or more further down each time, until
    none is left: two or three passes of a few array operations for amounts and
    latencies, over blocks of `_BLOCK` values (k = 16), each block's passes run while it
    sits in the processor's cache. Where σ would pass the largest float (values from
    2^(1023−k) up, about 1e303 in a full block), near the subnormal floats, or after
    `_PASSES` passes (exponents hundreds apart, 1e300 beside 1e-300), what is left is
    added by `_limb_sum` instead (each float taken apart by `numpy.frexp`, the integers
    added in 32-bit limbs, about 0.06 s for a million values). A mean is then this
    divided once and rounded once
    (`_rounded`), so a constant cost averages to itself, in any order of the values.
    """
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    if not x.size:
        return Fraction(0)
    high, low = float(x.max()), float(x.min())
    if not (math.isfinite(high) and math.isfinite(low)):  # an inf, or a NaN
        return None
    exact = _exact(x)
    try:
        float(exact)
    except OverflowError:
        return None
    return exact


def _exact(x: FloatArray) -> Fraction:
    """The exact sum of ``x`` (finite), however large: extraction, then limbs for what
    it leaves."""
    exact, rest = _extracted_sum(x)
    return exact if rest is None else exact + _limb_sum(rest)


#: Extraction passes over a block before `exact_sum` hands what is left to `_limb_sum`:
#: with blocks of 2^15 values each pass takes 36 bits or more, so 8 cover the 53 of a
#: float with exponents up to about 230 apart; a wider spread is cheaper in limbs.
_PASSES = 8

#: Values extracted together: all passes over a block run while it sits in the
#: processor's cache (256 KiB), where passes over a million values each went to memory.
_BLOCK = 1 << 15

#: The lowest unit 2^u an extraction pass rounds to: every σ, q and partial sum then
#: stays a normal float, 53 binary places above the subnormal ones.
_LOWEST_UNIT = -1022 + 53


def _extracted_sum(
    x: FloatArray, passes: int = _PASSES, block: int = _BLOCK
) -> tuple[Fraction, FloatArray | None]:
    """The exact sum of ``x`` (finite) taken by error-free extraction (`exact_sum`), a
    block of ``block`` values at a time, with the remainders extraction left (after
    ``passes`` passes over a block, or where it stops; ``None`` when none is): their sum
    is the sum of ``x``. ``x`` is not changed."""
    n = x.size
    total = 0  # in units of 2^-1074, the smallest subnormal: every float is a whole number
    left: list[FloatArray] = []
    part = np.empty(min(n, block))
    rest = np.empty(min(n, block))
    for start in range(0, n, block):
        values = x[start : start + block]
        m = values.size
        k = (2 * m - 1).bit_length()  # the least k with 2^k >= 2m
        q, r = part[:m], rest[:m]
        top = max(float(values.max()), -float(values.min()))
        for _ in range(passes):
            if top == 0:
                break
            e = math.frexp(top)[1]  # top < 2^e
            if e + k > 1023 or e + k - 53 < _LOWEST_UNIT or k > 52:
                break
            sigma = math.ldexp(1.0, e + k)
            np.add(values, sigma, out=q)
            np.subtract(q, sigma, out=q)  # q: r rounded to a multiple of 2^(e+k-53)
            numerator, denominator = float(q.sum()).as_integer_ratio()  # exact: see above
            total += numerator << (1075 - denominator.bit_length())
            np.subtract(values, q, out=r)
            values = r
            top = max(float(r.max()), -float(r.min()))
        if top:
            left.append(np.array(values))  # a copy: `rest` is used again
    return Fraction(total, 1 << 1074), (np.concatenate(left) if left else None)


def _limb_sum(x: FloatArray) -> Fraction:
    """The exact sum of ``x`` (finite), as whole numbers: the way `exact_sum` takes what
    extraction leaves. Every float is taken apart exactly (`numpy.frexp`: x = m · 2^e,
    m a 53-bit integer once scaled) and the integers are added as whole numbers, each
    moved to its place above the smallest exponent and cut into 32-bit limbs; a limb's
    column is added in doubles (`numpy.bincount`), exact while it stays below 2^53,
    which 2^20 values of at most 2^32 each cannot pass. The limbs are then joined in
    Python's integers."""
    mantissa, exponent = np.frexp(x)  # x = mantissa · 2^exponent, 0.5 <= |mantissa| < 1
    whole = np.ldexp(mantissa, 53).astype(np.int64)  # |whole| < 2^53, exactly
    keep = whole != 0
    if not keep.all():
        whole, exponent = whole[keep], exponent[keep]
        if not whole.size:
            return Fraction(0)
    place = exponent.astype(np.int64) - 53
    lowest = int(place.min())
    shift = place - lowest  # each value is whole · 2^(lowest + shift)
    sign = np.where(whole < 0, -1.0, 1.0)
    magnitude = np.abs(whole).astype(np.uint64)
    total = 0
    for part, at in (
        (magnitude & np.uint64(0xFFFFFFFF), shift),  # the low 32 bits
        (magnitude >> np.uint64(32), shift + 32),  # the high 21
    ):
        limb = at >> 5
        moved = part << (at & 31).astype(np.uint64)  # below 2^63
        for piece, column in (
            (moved & np.uint64(0xFFFFFFFF), limb),
            (moved >> np.uint64(32), limb + 1),
        ):
            signed = piece.astype(np.float64) * sign
            width = int(column.max()) + 1
            for start in range(0, signed.size, _LIMB_ROWS):
                sums = np.bincount(
                    column[start : start + _LIMB_ROWS],
                    weights=signed[start : start + _LIMB_ROWS],
                    minlength=width,
                )
                for index in np.flatnonzero(sums).tolist():
                    total += int(sums[index]) << (32 * index)
    return Fraction(total << lowest) if lowest >= 0 else Fraction(total, 1 << -lowest)


#: Values added in one `numpy.bincount` column: each at most 2^32, so 2^20 of them stay
#: below 2^53, where every double sum of whole numbers is exact.
_LIMB_ROWS = 1 << 20


def _rounded(value: Fraction | None) -> float:
    """``value`` rounded once to a float (a Fraction's float rounds correctly); inf for
    a sum that passed the largest float (`exact_sum`'s ``None``), which callers report
    as `SUM_OVERFLOW`."""
    if value is None:
        return math.inf
    try:
        return float(value)
    except OverflowError:
        return math.inf


def task_mean(
    values: FloatArray, task: npt.NDArray[np.intp], counts: npt.NDArray[np.int64] | None = None
) -> float:
    """Mean over tasks of each task's mean value (tasks weigh equally, whatever
    their trial counts); ``task`` codes each row's task, and ``counts`` (rows per
    task code, when the caller has them) saves counting again.

    The exact mean, rounded once: (1/T) Σ_m S_m / m over the trial counts m, with
    S_m the `exact_sum` of the values of the tasks run m times (tasks with equal
    counts share a denominator, so the sum needs one exact sum per count, not per
    task). inf when a sum passes the largest float.
    """
    if values.shape != task.shape or values.size == 0:
        raise ValueError("values and task need one entry per trial, and at least one")
    n = np.bincount(task) if counts is None else counts
    present = n > 0
    sizes = np.unique(n[present]).tolist()
    per_row = n[task] if len(sizes) > 1 else None  # one size (the usual run): every row
    mean = Fraction(0)
    for m in sizes:
        total = exact_sum(values if per_row is None else values[per_row == m])
        if total is None:
            return math.inf
        mean += total / m
    return _rounded(mean / int(np.count_nonzero(present)))


def task_weighted_cost_of_pass(
    cost_usd: FloatArray,
    task: npt.NDArray[np.intp],
    success_rate: float,
    counts: npt.NDArray[np.int64] | None = None,
) -> float:
    """Cost of pass with numerator and denominator averaged the same way: over tasks.

    C_p = mean_t(mean cost of task t's trials) / mean_t(p_t), the task-weighted
    success rate the reports show. Erol et al. (2025) define cost-of-pass as
    E[cost] / R over a distribution of problems; the suite's tasks, equally
    weighted, are that distribution here, as for every task average
    (docs/metrics.md, "Cost"). Taking the numerator per trial instead would let
    a task that was run more often weigh more in the cost than in the rate: task
    a with 10 passing trials and task b with 1 failing one, at $1 each, give
    $1 / 0.5 = $2.00 (pooled both ways it would be $11 / 10 passes = $1.10; the
    two agree whenever every task has the same number of trials). ``cost_usd``
    must be fully known (no NaN); ``counts`` as in `task_mean`.
    """
    return cost_of_pass(task_mean(cost_usd, task, counts), success_rate)


def overflow_reason(what: str) -> str:
    """Why a figure computed from finite values is missing: ``what`` went past the
    largest float. JSON has no infinity, and an infinite cost would read as "no
    number of attempts buys a success", which is not what the data say."""
    return f"{what} passes the largest float (about 1.8e308)"


#: Why a sum or what depends on it is missing when the values are finite but huge.
SUM_OVERFLOW = overflow_reason("the sum")


def checked_cost_of_pass(
    cost_usd: FloatArray,
    task: npt.NDArray[np.intp],
    success_rate: float,
    counts: npt.NDArray[np.int64] | None = None,
) -> tuple[float | None, str | None]:
    """`task_weighted_cost_of_pass`, or ``None`` with the reason when it is not a
    finite number: a task's costs add up past the largest float (`SUM_OVERFLOW`),
    or the quotient does ($1e308 per trial at a 50% rate), or nothing passed.
    ``cost_usd`` must be fully known, as there."""
    if success_rate == 0:
        return None, "no successes"
    # A task's trials may add up past the largest float (two of $1e308): inf, then null.
    per_trial = task_mean(cost_usd, task, counts)
    if not math.isfinite(per_trial):
        return None, SUM_OVERFLOW
    cop = cost_of_pass(per_trial, success_rate)
    if not math.isfinite(cop):
        return None, overflow_reason("cost per trial / success rate")
    return cop, None


def unpriced_label(missing: int, n_trials: int) -> str:
    """How reports show a cost figure that unpriced trials make unknown."""
    return f"unknown ({missing} of {counted(n_trials, 'trial')} unpriced)"


def quantiles(values: FloatArray, qs: tuple[float, ...]) -> list[float]:
    """Sample quantiles by linear interpolation between order statistics.

    Hyndman & Fan (1996) type 7, numpy's default: with h = (n−1)·q,
    Q(q) = x_(⌊h⌋) + (h − ⌊h⌋)·(x_(⌊h⌋+1) − x_(⌊h⌋)). Same values as
    ``np.quantile``. From `_BAND_MIN` values on, each pair of order statistics is
    found among the values between two bounds that an evenly spaced sample puts around
    it (`_banded_pair`: a few comparisons over the values and a partition of a
    twentieth of them); where the bounds miss, and for fewer values, they are selected
    one quantile at a time, from the highest down, each within the part left of the
    previous one, because numpy's multi-index partition is several times slower than
    single ones on a million values.
    """
    x = np.asarray(values, dtype=np.float64)
    n = x.size
    if n == 0:
        raise ValueError("no values")
    order = sorted(qs, reverse=True)
    for q in order:
        if not 0 <= q <= 1:
            raise ValueError(f"quantile must be in [0, 1], got {q}")
    sample = None
    if x.ndim == 1 and n >= _BAND_MIN and not math.isnan(float(x.max())):  # no NaN
        sample = np.sort(x[:: n // _BAND_SAMPLE])
    found: dict[float, float] = {}
    copy: FloatArray | None = None  # partitioning reorders: never the caller's array
    hi = n
    for q in order:
        h = (n - 1) * q
        k = int(h)
        pair = None if sample is None else _banded_pair(x, sample, k)
        if pair is None:
            if copy is None:
                copy = np.array(x, dtype=np.float64)
            part = copy[: max(hi, k + 1)]
            part.partition(k)
            # Everything right of k is >= x[k]: the next order statistic is their minimum.
            pair = float(copy[k]), float(copy[k + 1 :].min()) if k + 1 < n else float(copy[k])
            hi = k + 1
        low, high = pair
        found[q] = low + (high - low) * (h - k)
    return [found[q] for q in qs]


#: From how many values `quantiles` looks for order statistics in a band, and about how
#: many values (evenly spaced) the sample that places the band's bounds takes.
_BAND_MIN = 1 << 15
_BAND_SAMPLE = 1 << 13


def _banded_pair(x: FloatArray, sample: FloatArray, k: int) -> tuple[float, float] | None:
    """The order statistics x_(k) and x_(k+1) (x_(k) twice for the last) of ``x`` (no
    NaN), found in the band [lo, hi] around sample rank k·m/n of the sorted ``sample``
    (m values of ``x``), some 2√m sample ranks each side; ``None`` when the band does
    not hold both. The values below lo number b; the band's values, sorted, are x_(b),
    x_(b+1), ... so x_(k) is the band's (k − b)-th: a partition of the band finds it."""
    n, m = x.size, sample.size
    j = k * m // n
    reach = 2 * math.isqrt(m) + 4
    lo = float(sample[j - reach]) if j - reach > 0 else -math.inf
    hi = float(sample[j + reach]) if j + reach < m - 1 else math.inf
    inside = x <= hi
    below = x < lo
    n_below = int(np.count_nonzero(below))
    np.logical_xor(inside, below, out=inside)  # lo <= x <= hi (lo <= hi: below ⊂ inside)
    i = k - n_below
    need = 2 if k + 1 < n else 1
    if i < 0 or i + need > int(np.count_nonzero(inside)):
        return None
    band = x[inside]
    band.partition(i)
    low = float(band[i])
    return low, (float(band[i + 1 :].min()) if need == 2 else low)


#: A float sum of non-negative whole numbers that comes out below this is exact: the
#: first addition that rounded would have reached 2^53, and none after it goes lower.
_EXACT_WHOLE = 2.0**53


def _count_sum(values: FloatArray) -> tuple[int, float, float | None]:
    """How many values are known (not NaN), their sum and their mean (``None`` for none).

    The sum is `exact_sum`'s, rounded once, and the mean that exact sum divided and
    rounded once, as the cost per trial is: the same in any order, where a float sum
    rounds at each addition (the latencies 0.1, 0.2, 0.3 averaged 0.20000000000000004,
    and 0.3, 0.2, 0.1 0.19999999999999998; the mean of both is 0.2 now), and token
    counts past 2^53 kept a 1 or lost it by their order. Whole numbers whose sum is
    below 2^53 (token and call counts, nearly always) numpy adds exactly, in one fast
    pass to the same sum. Where the sum passes the largest float (two latencies of
    1e308), it is inf and the mean is the ``math.fsum`` (correctly rounded, so in any
    order the same) of the values each divided by their count first (`_divided_first`).
    """
    with np.errstate(over="ignore"):
        total = float(values.sum())
    known = values
    if math.isnan(total):  # a NaN among them (or inf and -inf): take the known ones
        unknown = np.isnan(values)
        if unknown.any():
            known = values[~unknown]
            with np.errstate(over="ignore"):
                total = float(known.sum())
    count = known.size
    if not count:
        return 0, 0.0, None
    # Whole: x − trunc(x) is 0 (and exact) for each of these finite non-negative values.
    if 0 <= total < _EXACT_WHOLE and known.min() >= 0 and not _fractional(known):
        return count, total, total / count
    exact = exact_sum(known)
    if exact is None or not math.isfinite(_rounded(exact)):
        return count, math.inf, _divided_first(known)
    return count, _rounded(exact), _rounded(exact / count)


def _divided_first(known: FloatArray) -> float:
    """The mean of values whose sum passes the largest float: the ``math.fsum`` of each
    divided by their count first. Where fsum's own partial sums pass it (three values of
    1.7e308, each a third of it, add up to it), which it reports as an error, the exact
    sum divided and rounded once (at most the largest value, so a float), or ±inf when
    the values hold infinities of one sign."""
    try:
        return math.fsum((known / known.size).tolist())
    except OverflowError:
        finite = np.isfinite(known)
        if finite.all():
            return _rounded(_exact(known) / known.size)
        infinities = np.unique(known[~finite])
        if infinities.size > 1:  # inf and -inf: no mean
            raise
        return float(infinities[0])


def _fractional(values: FloatArray) -> bool:
    """Whether any of ``values`` (finite) has a fractional part: ``values % 1 != 0``
    in three fast passes, where ``%`` (a division per value) took several times that;
    the first few values alone answer for latencies and amounts."""
    if values.size > _FIRST and _fractional(values[:_FIRST]):
        return True
    part = np.trunc(values)
    np.subtract(values, part, out=part)
    return bool(part.any())


#: How many values `_fractional` looks at first.
_FIRST = 64


def _one_size(task: npt.NDArray[np.intp], counts: npt.NDArray[np.int64] | None) -> bool:
    """Whether every task present has the same number of rows."""
    n = np.bincount(task) if counts is None else counts
    present = n[n > 0]
    return bool((present == present[0]).all()) if present.size else True


def cost_metrics(
    *,
    success_rate: float | None,
    cost_usd: FloatArray,
    judge_cost_usd: FloatArray,
    latency_s: FloatArray,
    input_tokens: FloatArray,
    output_tokens: FloatArray,
    tool_calls: FloatArray,
    model_calls: FloatArray,
    task: npt.NDArray[np.intp] | None = None,
    task_trials: npt.NDArray[np.int64] | None = None,
    successes: int | None = None,
    judged: npt.NDArray[np.bool_] | None = None,
) -> CostMetrics:
    """Cost per trial and in total, cost of pass, judge cost, latency, tokens.

    - per_trial = Σ cost / N over all N trials; total = Σ cost (the exact sum,
      `exact_sum`, divided and rounded once: a constant cost is its own mean). Both ``None``
      when any trial's price is unknown (``missing`` counts them).
    - cost_of_pass = task-averaged cost per trial / the task-averaged
      ``success_rate`` (`task_weighted_cost_of_pass`; ``task`` codes each row's
      task, and without it every row is its own task; ``task_trials``, the rows
      per task code, spares a count); ``None`` with reason
      ``no successes`` when the rate is 0, or with the missing count.
    - spend_per_success = total / ``successes`` (pooled: what was spent per
      success, whichever tasks they came from); ``None`` without successes or with
      an unknown price.
    - judge_total: the graders' spend, never added to the agent's. With ``judged``
      (per trial: a model judge graded it, the `agentgauge.facts` fact) it is the sum
      over the ``judge_n`` trials a judge graded, ``None`` with reason ``not
      applicable: no model judge graded these trials`` when none was, and ``None``
      with ``judge cost unknown for M of N judged trials`` when a judged trial
      records no cost (``judge_missing`` = M): a sum without them is not the total.
      Without ``judged``, the sum over the trials that record a cost (a trial no
      judge graded records none, and neither does one whose judge's price is unknown).
    - token totals: ``None`` when any trial lacks its count (reasons
      ``tokens.input_total``, ``tokens.output_total``: unknown for N of M trials);
      the means are over the ``input_tokens_n`` / ``output_tokens_n`` that have one.
    - latency p50 and p95 (linear interpolation between order statistics,
      numpy's default) and mean, over trials that report a latency; every sum is the
      same in any order of the trials (`_count_sum`).
    """
    n = cost_usd.size
    trials = counted(n, "trial")  # "of 1 trial", "of 4 trials"
    reasons: dict[str, str] = {}
    missing = int(np.count_nonzero(np.isnan(cost_usd)))  # NaN = price unknown
    # Exact, then divided and rounded once (`exact_sum`): $0.03 × 20 trials is $0.03.
    cost_sum = exact_sum(cost_usd) if n and not missing else None
    total: float | None = None
    per_trial: float | None = None
    overflow = bool(n) and not missing and not math.isfinite(_rounded(cost_sum))
    if overflow:
        reasons["per_trial"] = reasons["total"] = SUM_OVERFLOW
    elif cost_sum is not None:
        total = float(cost_sum)
        per_trial = float(cost_sum / n)
    elif missing:
        reasons["per_trial"] = reasons["total"] = f"price unknown for {missing} of {trials}"

    cop: float | None = None
    if success_rate == 0:
        reasons["cost_of_pass"] = "no successes"
    elif missing:
        reasons["cost_of_pass"] = f"price unknown for {missing} of {trials}"
    elif overflow:
        reasons["cost_of_pass"] = SUM_OVERFLOW
    elif per_trial is not None and success_rate is not None:
        # With as many trials of every task, the task average is the exact mean per
        # trial (S/(T·m) = S/N): no second exact sum.
        if task is None or _one_size(task, task_trials):
            cop = cost_of_pass(per_trial, success_rate)
            if not math.isfinite(cop):  # $1e308 per trial at 50%
                cop = None
                reasons["cost_of_pass"] = overflow_reason("cost per trial / success rate")
        else:
            cop, why = checked_cost_of_pass(cost_usd, task, success_rate, task_trials)
            if why:
                reasons["cost_of_pass"] = why

    spend: float | None = None
    if successes is not None:
        if successes == 0:
            reasons["spend_per_success"] = "no successes"
        elif missing:
            reasons["spend_per_success"] = f"price unknown for {missing} of {trials}"
        elif overflow:
            reasons["spend_per_success"] = SUM_OVERFLOW
        elif cost_sum is not None:
            spend = float(cost_sum / successes)  # at most the total: finite when it is

    n_lat, _, lat_mean = _count_sum(latency_s)
    p50 = p95 = None
    if n_lat:
        lat = latency_s if n_lat == n else latency_s[~np.isnan(latency_s)]
        p50, p95 = quantiles(lat, (0.5, 0.95))
    n_in, in_sum, in_mean = _count_sum(input_tokens)
    n_out, out_sum, out_mean = _count_sum(output_tokens)
    _, _, tool_mean = _count_sum(tool_calls)
    _, _, model_mean = _count_sum(model_calls)
    judge_unknown = np.isnan(judge_cost_usd)
    judge_known = judge_cost_usd[~judge_unknown] if judge_unknown.any() else judge_cost_usd
    n_judge = judge_known.size
    judge_missing: int | None = None
    if judged is not None:
        # A judged trial with no cost is one whose judge's price is unknown; one that
        # records a cost was judged whatever its grades say (an imported record).
        unpriced = judged & judge_unknown
        judge_missing = int(np.count_nonzero(unpriced))
        n_judge += judge_missing
    # A total over the trials that recorded a figure is not the total: one that some
    # trials lack is unknown, and says for how many (the means stay, over those that
    # recorded it, with their count). The judges' spend is summed over the trials a
    # judge graded, with their count: a trial no judge graded records none.
    for key, known in (("tokens.input_total", n_in), ("tokens.output_total", n_out)):
        if 0 < known < n:
            reasons[key] = f"unknown for {n - known} of {trials}"
    # Token and call counts are at most 2**63 − 1 each (`bounds.check_count`): their
    # sums stay far below the largest float. Judge costs are amounts, and can pass it.
    judge_total: float | None = None
    if n_judge and not judge_missing:
        judge_total = _rounded(exact_sum(judge_known))
    if judge_missing:
        reasons["judge_total"] = (
            f"judge cost unknown for {judge_missing} of {counted(n_judge, 'judged trial')}"
        )
    elif judge_missing == 0 and n_judge == 0 and n:
        reasons["judge_total"] = "not applicable: no model judge graded these trials"
    if judge_total is not None and not math.isfinite(judge_total):
        judge_total = None
        reasons["judge_total"] = SUM_OVERFLOW
    return CostMetrics(
        per_trial=per_trial,
        total=total,
        cost_of_pass=cop,
        judge_total=judge_total,
        judge_n=n_judge,
        judge_missing=judge_missing,
        missing=missing,
        latency_p50=p50,
        latency_p95=p95,
        latency_mean=lat_mean,
        input_tokens=in_mean,
        output_tokens=out_mean,
        input_tokens_total=in_sum if n_in == n and n else None,
        output_tokens_total=out_sum if n_out == n and n else None,
        input_tokens_n=n_in,
        output_tokens_n=n_out,
        latency_n=n_lat,
        tool_calls=tool_mean,
        model_calls=model_mean,
        reasons=reasons,
        spend_per_success=spend,
    )
