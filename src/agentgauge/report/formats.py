"""How figures are written in every report: terminal, Markdown, HTML and the record.

One rule per kind of figure, so the same number reads the same everywhere.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = [
    "DASH",
    "HUGE",
    "bounds",
    "clusters_text",
    "counted",
    "counted_trials",
    "estimate",
    "fraction",
    "judge_cost",
    "money",
    "no_spread_count",
    "no_spread_tasks",
    "number",
    "percent",
    "plural",
    "points_interval",
    "shown_decimals",
    "success_se",
    "success_se_of",
]

#: What a figure nobody measured shows (the reason is printed beside or below it).
DASH = "—"


def bounds(
    lo: float, hi: float, digits: int, *, scale: float = 1.0, signed: bool = False
) -> tuple[str, str]:
    """An interval's two bounds (times ``scale``: 100 for percent) written with
    ``digits`` decimals, or more where that many would write two different bounds
    alike: 1,000 tasks all passing have Wilson's 99.6–100%, which no decimal wrote
    "100–100%", and 0 of 10,000 trials 0–0.04%, which one decimal wrote "0.0–0.0%":
    an interval of no width, which a rate estimated from finite data never has.
    ``signed``: each with its sign (a difference's interval, ``-0.03`` to ``+0.01``
    where one decimal wrote ``-0.0`` to ``+0.0``). Zero is never written ``-0.0``."""
    a, b = scale * float(lo) + 0.0, scale * float(hi) + 0.0  # + 0.0: no negative zero
    sign = "+" if signed else ""
    for d in range(digits, digits + 6):
        x, y = f"{a:{sign}.{d}f}", f"{b:{sign}.{d}f}"
        if float(x) != float(y):  # "-0.0" and "+0.0" are alike too
            break
    return x, y


def points_interval(lo: float, hi: float, digits: int = 1) -> str:
    """A difference of rates' interval in signed percentage points, ``-2.1 pp to +4.0
    pp``, with the decimals that tell its ends apart (`bounds`): 20,000 shared tasks
    and one flip have ``-0.03 pp to +0.01 pp``, which one decimal wrote ``-0.0 pp to
    +0.0 pp``."""
    a, b = bounds(lo, hi, digits, scale=100, signed=True)
    return f"{a} pp to {b} pp"


#: From this magnitude on a figure is written in scientific notation (`number`).
HUGE = 1e12


def number(x: float, digits: int = 1, *, grouped: bool = True) -> str:
    """A figure with ``digits`` decimals (``1,234.5``; thousands separated unless not
    ``grouped``), or in scientific notation from `HUGE` on (``1.00e+308``): a latency,
    cost or token count that large (a corrupt or hostile file) would otherwise print
    as hundreds of digits. Not finite: as Python writes it (``inf``, ``nan``)."""
    if isinstance(x, int) and abs(x) >= HUGE:
        digits_ = str(abs(x))  # an int past the largest float has no float to write
        return f"{'-' if x < 0 else ''}{digits_[0]}.{digits_[1:3]}e+{len(digits_) - 1:02d}"
    if math.isfinite(x) and abs(x) >= HUGE:
        return f"{x:.2e}"
    x = x + 0.0 if isinstance(x, float) else x  # a negative zero (-0.0 s) reads as 0
    return f"{x:,.{digits}f}" if grouped else f"{x:.{digits}f}"


def money(x: float | None) -> str:
    """US dollars: cents from $1 (and for exactly 0), three significant figures below.

    Agent costs per trial are often fractions of a cent, where two decimals would
    print $0.00 for a figure that is not zero.
    """
    if x is None or math.isnan(x):
        return DASH
    if x == 0 or abs(x) >= 1:
        return f"${number(x, 2)}"
    return f"${x:.3g}" if abs(x) >= 1e-4 else f"${x:.2e}"


def judge_cost(cost: dict[str, Any], n_trials: int | None) -> str:
    """The judge's total spend (a metrics group's ``cost``): ``$0.0420``, with ``(2 of 3
    trials)`` where a judge graded only some; ``no judge`` where none graded the trials
    (``judge_missing`` 0 and nothing judged); ``unknown (1 of 3 judged trials
    unpriced)`` where a judged trial's price is unknown; a dash otherwise (not known
    whether a judge graded them, or a sum past the largest float)."""
    total, judged, missing = (
        cost.get("judge_total"),
        cost.get("n_judged"),
        cost.get("judge_missing"),
    )
    if total is None and missing:
        return f"unknown ({missing} of {judged} judged trials without a cost)"
    if total is None and missing == 0 and not judged:
        return "no judge"
    out = money(total)
    if total is not None and judged and n_trials and judged < n_trials:
        out += f" ({judged} of {n_trials} trials)"
    return out


def plural(n: int | None, one: str, many: str | None = None) -> str:
    """The noun for ``n`` things: ``one`` for 1, else ``many`` (``one`` + "s" unless
    given: ``plural(n, "family", "families")``). For a count written apart from its noun
    (``f"{n:,} {plural(n, 'trial')}"``, ``f"{k} of {n} {plural(n, 'trial')}"``)."""
    if n == 1:
        return one
    return one + "s" if many is None else many


def counted(n: int | None, one: str, many: str | None = None) -> str:
    """``n`` and its noun, singular for 1: ``1 trial``, ``0 trials``, ``3 families``.
    Every count a user reads is written with it (or `plural`), never ``f"{n} trials"``,
    which says "1 trials"."""
    return f"{n} {plural(n, one, many)}"


def clusters_text(n_clusters: int, n_families: int | None, cluster_unit: str | None) -> str:
    """The clusters a success rate's interval is over: ``4 families``, ``9 tasks``, or
    ``2 families and 2 tasks without a family`` when some tasks name none (each is then
    its own cluster: docs/metrics.md), which "4 families" would have miscounted."""
    if cluster_unit != "family":
        return counted(n_clusters, "task")
    families = n_clusters if n_families is None else n_families
    text = counted(families, "family", "families")
    if n_clusters > families:
        text += f" and {counted(n_clusters - families, 'task')} without a family"
    return text


def success_se(
    se: float | None, se_clustered: float | None, cluster_unit: str | None
) -> float | None:
    """The SE a success rate is shown with: the clustered SE (Miller 2024) when the
    tasks are grouped in families and it could be estimated, else the SE over tasks.
    Its 95% interval is made the same way (`metrics.outcome.success_interval`), so the
    "±" and the interval beside it agree, here as in the comparison record."""
    if cluster_unit == "family" and se_clustered is not None:
        return se_clustered
    return se


def success_se_of(group: dict[str, Any]) -> float | None:
    """`success_se` of a group of ``agentgauge.metrics/1``."""
    sr = group.get("success_rate") or {}
    return success_se(sr.get("se"), sr.get("se_clustered"), group.get("cluster_unit"))


def no_spread_count(se: float | None, n_successes: int | None, n_trials: int | None) -> str | None:
    """``(12/12)`` where a rate's SE is 0 (every trial passed, or none did): there is no
    spread to estimate an SE from, and "± 0.0" would claim a certainty a handful of trials
    cannot give, so the count says how much data stands behind it. ``None`` otherwise."""
    if se != 0 or not n_trials or n_successes is None:
        return None
    return f"({n_successes}/{n_trials})"


def no_spread_tasks(value: float | None, se: float | None, n_tasks: int | None) -> str | None:
    """``(10/10 tasks)``, or ``(each of 10 tasks)``, where a task average's SE is 0 (every
    task has the same value: each passes at k, or none does): as for `no_spread_count`,
    the count stands in for a "± 0". ``None`` otherwise."""
    if value is None or se != 0 or not n_tasks:
        return None
    if value in (0.0, 1.0):
        return f"({round(value * n_tasks)}/{n_tasks} tasks)"
    return f"(each of {n_tasks} tasks)"


def difference_se(se: float | None, *, paired: bool, decimals: int = 2) -> str:
    """A comparison's SE in points (``1.52 pp``), ``—`` when unknown, and where it is 0
    what that says instead of "0.00 pp": a paired SE of 0 means every shared task's
    difference is the same, an unpaired one that each run has the same rate on every
    task. Neither is a certainty; the interval beside it (which then comes from each
    run's own interval, not from this SE) is the one to read."""
    if se is None or math.isnan(se):
        return "—"
    if se == 0:
        return zero_difference_se(paired=paired)
    return f"{100 * se:.{shown_decimals(100 * se, decimals)}f} pp"


def percent(x: float, digits: int = 1) -> str:
    """A rate in percent, ``52.3%``, with more decimals where ``digits`` would write a
    rate short of 1 as 100% (19,999 of 20,000 trials: ``99.995%``, not ``100.0%``, which
    reads as every trial passing) or one above 0 as 0% (``0.005%``). Exactly 0 and 1
    keep ``digits``; never ``-0.0%``."""
    v = 100 * float(x) + 0.0
    d = digits
    while 0 < x < 1 and d < digits + 4 and float(f"{v:.{d}f}") in (0.0, 100.0):
        d += 1
    return f"{v:.{d}f}%"


def fraction(x: float, digits: int = 3) -> str:
    """A rate as a fraction, ``0.523``, with the decimals that keep one short of 1 from
    reading ``1.000`` and one above 0 from reading ``0.000`` (19,999 of 20,000:
    ``0.99995``), as `percent` does in percent."""
    d = digits
    while 0 < x < 1 and d < digits + 4 and float(f"{x:.{d}f}") in (0.0, 1.0):
        d += 1
    return number(x, d, grouped=False)


def shown_decimals(x: float, decimals: int) -> int:
    """``decimals``, or more where that many would write a figure that is not 0 as 0: a
    comparison's SE of 0.005 pp is ``0.005 pp``, not ``0.00 pp``, which reads as the SE
    of 0 that `zero_difference_se` words otherwise."""
    limit = decimals + 8
    while x and decimals < limit and float(f"{x:.{decimals}f}") == 0:
        decimals += 1
    return decimals


def zero_difference_se(*, paired: bool) -> str:
    """What a comparison's SE of 0 is shown as (`difference_se`), in every view."""
    if paired:
        return "none (every task's difference is the same)"
    return "none (each run's rate is the same on every task)"


def estimate(d: dict[str, Any] | None) -> str | None:
    """A reliability figure (consistency, robustness: ``{"value", "se", "n"}`` or
    ``{..., "n_tasks"}``) as ``0.750 ± 0.050``; where every unit has the same value (SE
    0) there is no spread to estimate an SE from, and the count of units stands in for
    the "± 0" (``0.500 (each of 3)``); a robustness ratio whose every resample is capped
    at 1 says so (``1.000 (capped in every resample of 3 tasks)``): its tasks need not be
    alike. Without an SE (one task), the value alone.
    ``None`` for a figure nobody measured (each medium prints its own dash)."""
    if not d or d.get("value") is None:
        return None
    se = d.get("se")
    units = d.get("n", d.get("n_tasks"))
    if se == 0 and isinstance(units, int) and units:
        if "acc_base" in d and d["value"] == 1.0:
            # A robustness ratio at its cap: every resample's ratio is capped at 1, an SD
            # of 0 although the tasks' rates differ, so not "each of" (each task alike).
            return f"1.000 (capped in every resample of {units} tasks)"
        return f"{d['value']:.3f} (each of {units})"
    return f"{d['value']:.3f}" if se is None else f"{d['value']:.3f} ± {se:.3f}"


def counted_trials(control: dict[str, Any]) -> str:
    """`` (7 of 8 trials)`` after missed confirmations where only some trials have the
    control grade's irreversible-call counts (the rate is over those); ``""`` when all
    of them do, or the figure is not measured."""
    k, n = (control.get("counts") or {}).get("trials_with_counts"), control.get("n")
    if control.get("missed_confirmation") is None or k is None or not n or k >= n:
        return ""
    return f" ({k} of {n} trials)"
