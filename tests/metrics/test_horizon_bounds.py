"""Time horizons the data only bound: no successes, no failures, a flat fit, and
bootstrap replicates like them. Such a horizon is null with a status (``below``,
``above``, ``undefined``) and the task length it is bounded by, never 0 or ∞."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pytest
from rich.console import Console

from agentgauge.cli.horizon import render
from agentgauge.metrics.horizon import HorizonReport, censored_percentiles, horizon
from agentgauge.table import TrialTable


def table(rows: list[tuple[str, float, float]], agent: str = "a") -> TrialTable:
    """Rows of (task_id, human_minutes, score), each task its own family."""
    score = np.array([r[2] for r in rows], dtype=float)
    return TrialTable.from_columns(
        len(rows),
        task_id=[r[0] for r in rows],
        family=[None] * len(rows),
        human_minutes=np.array([r[1] for r in rows], dtype=float),
        score=score,
        success=score >= 1 - 1e-6,
        agent=[agent] * len(rows),
    )


def shown(report: HorizonReport) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render(report))
    return out.getvalue()


def test_no_successes_is_below_the_shortest_task_not_zero() -> None:
    # Every run fails on tasks of 4, 8 and 30 minutes: the data say the horizon lies
    # below 4 minutes, not that it is 0.
    rows = [(f"t{m:g}", m, 0.0) for m in (4.0, 8.0, 30.0) for _ in range(2)]
    report = horizon(table(rows), bootstrap=100)
    g = report.to_dict()["groups"][0]
    json.dumps(g, allow_nan=False)
    assert g["p50_minutes"] is None and g["p80_minutes"] is None
    assert g["horizons"] == {"0.5": None, "0.8": None}
    assert g["status"] == {"0.5": "below", "0.8": "below"}
    assert g["bound_minutes"] == {"0.5": 4.0, "0.8": 4.0}
    assert (g["p50_status"], g["p50_bound_minutes"]) == ("below", 4.0)
    assert (g["p80_status"], g["p80_bound_minutes"]) == ("below", 4.0)
    assert g["ci95"] is None and g["ci95_status"] is None and g["ci95_bound_minutes"] is None
    # Ord's half-life: T½ → 0 with no success, as unmeasured as the logistic horizon.
    assert g["half_life"]["t_half_minutes"] is None
    assert g["half_life"]["status"] == "below" and g["half_life"]["bound_minutes"] == 4.0
    assert g["half_life"]["horizons"] == {"0.5": None, "0.8": None}
    assert (
        "no successes: every horizon lies below the shortest task (4 min); none is estimated"
        in g["warnings"]
    )
    grp = report.groups[0]
    assert all(math.isnan(h) for h in grp.horizons.values())
    assert grp.status == {0.5: "below", 0.8: "below"}
    row = shown(report).splitlines()
    assert any("< 4" in line and "a" in line for line in row)
    assert not any(" 0 " in f" {line} " and line.startswith(" a") for line in row)


def test_no_failures_is_above_the_longest_task() -> None:
    rows = [(f"t{m:g}", m, 1.0) for m in (1.0, 2.0, 60.0) for _ in range(2)]
    report = horizon(table(rows), bootstrap=0)
    g = report.to_dict()["groups"][0]
    assert g["horizons"] == {"0.5": None, "0.8": None}
    assert g["status"] == {"0.5": "above", "0.8": "above"}
    assert g["bound_minutes"] == {"0.5": 60.0, "0.8": 60.0}
    assert g["half_life"]["status"] == "above" and g["half_life"]["bound_minutes"] == 60.0
    assert (
        "no failures: every horizon lies above the longest task (60 min); none is estimated"
        in (g["warnings"])
    )
    text = shown(report)
    assert "> 60" in text and "∞" not in text


def test_a_flat_fit_is_bounded_by_the_task_lengths_and_a_tie_is_undefined() -> None:
    # 3 of 5 pass at 1, 2 and 5 minutes: flat, σ(b0) = 0.6. p50 lies above 5 minutes,
    # p80 below 1 minute, and p60 is a tie: undefined, with no bound.
    rows = [(f"t{m:g}", m, float(k < 3)) for m in (1.0, 2.0, 5.0) for k in range(5)]
    report = horizon(table(rows), q=(0.5, 0.6, 0.8), bootstrap=0)
    g = report.to_dict()["groups"][0]
    assert g["horizons"] == {"0.5": None, "0.6": None, "0.8": None}  # p80 was 0.0
    assert g["status"] == {"0.5": "above", "0.6": "undefined", "0.8": "below"}
    assert g["bound_minutes"] == {"0.5": 5.0, "0.6": None, "0.8": 1.0}
    assert (g["p80_status"], g["p80_bound_minutes"]) == ("below", 1.0)
    assert [w for w in g["warnings"] if not w.startswith("slope b1")] == [
        "p50 lies above the longest task (5 min): the slope is 0 and the predicted success "
        "(0.6) is above 0.5 at every task length",
        "p60 is undefined: the slope is 0 and the predicted success is 0.6 at every task length",
        "p80 lies below the shortest task (1 min): the slope is 0 and the predicted success "
        "(0.6) is below 0.8 at every task length",
    ]
    line = next(x for x in shown(report).splitlines() if x.lstrip().startswith("a "))
    assert "> 5" in line and "—" in line and "< 1" in line


def test_an_estimate_says_so() -> None:
    rows = [("s", 1.0, float(k < 4)) for k in range(5)] + [
        ("l", 4.0, float(k < 1)) for k in range(5)
    ]
    g = horizon(table(rows), bootstrap=0, regularization=1e12).to_dict()["groups"][0]
    # b0 = ln 4, b1 = −ln 4: p50 = 2 min.
    assert g["p50_minutes"] == pytest.approx(2.0, rel=1e-6)
    assert g["status"] == {"0.5": "estimated", "0.8": "estimated"}
    assert g["bound_minutes"] == {"0.5": None, "0.8": None}
    assert g["p50_status"] == "estimated" and g["p50_bound_minutes"] is None


def test_censored_percentiles_hand_computed() -> None:
    # Kinds: −1 below its bound, 0 an estimate, +1 above its bound. Ranked: below (2),
    # below (3), 5, 7, above (10); linear interpolation at (n − 1)·p/100.
    kind = np.array([-1, 0, -1, 1, 0])
    value = np.array([3.0, 5.0, 2.0, 10.0, 7.0])
    got = censored_percentiles(kind, value, (2.5, 30, 50, 97.5))
    # 2.5: position 0.1 between below 2 and below 3: below 2·0.9 + 3·0.1 = 2.1.
    assert got[0] == ("below", pytest.approx(2.1))
    # 30: position 1.2 between below 3 and 5: below 3·0.8 + 5·0.2 = 3.4.
    assert got[1] == ("below", pytest.approx(3.4))
    assert got[2] == ("estimated", 5.0)
    # 97.5: position 3.9 between 7 and above 10: above 7·0.1 + 10·0.9 = 9.7.
    assert got[3] == ("above", pytest.approx(9.7))
    # Between a replicate below and one above nothing is known.
    assert censored_percentiles(np.array([-1, 1]), np.array([1.0, 2.0]), (50,)) == [
        ("undefined", None)
    ]


def test_bootstrap_replicates_with_no_successes_bound_the_lower_end() -> None:
    # Ten one-task families of 1, 2, 4, ..., 512 minutes, one run each; only the 1-minute
    # task passes. A replicate draws no 1-minute task with P = 0.9^10 = 0.35: it has no
    # success, so its horizon lies below the shortest task it drew. Those replicates rank
    # below every estimate (as the 0 they used to count as did), so the interval's lower
    # end falls among them: it lies below 2 minutes (such a replicate drew no 1-minute
    # task, and nearly all of them drew a 2-minute one), which it used to report as 0.
    rows = [(f"t{2**i}", float(2**i), float(i == 0)) for i in range(10)]
    report = horizon(table(rows), bootstrap=1000, seed=3)
    grp = report.groups[0]
    assert grp.bootstrap_horizons is not None
    none_pass = grp.bootstrap_horizons[0.5] == 0.0
    assert none_pass.mean() == pytest.approx(0.9**10, abs=0.05)
    g = report.to_dict()["groups"][0]
    json.dumps(g, allow_nan=False)
    assert g["status"]["0.5"] == "estimated"
    lo, hi = g["ci95"]["0.5"]
    assert lo is None and hi is not None and hi > 0
    assert g["ci95_status"]["0.5"] == ["below", "estimated"]
    assert g["ci95_bound_minutes"]["0.5"] == [2.0, None]
    assert "[< 2," in shown(report)


def test_bootstrap_replicates_with_no_failures_bound_the_upper_end() -> None:
    # The mirror image: only the 512-minute task fails. A replicate without it never
    # fails, and its horizon lies above the longest task it drew (256 minutes, nearly
    # always).
    rows = [(f"t{2**i}", float(2**i), float(i != 9)) for i in range(10)]
    report = horizon(table(rows), bootstrap=1000, seed=3)
    g = report.to_dict()["groups"][0]
    assert g["ci95_status"]["0.5"] == ["estimated", "above"]
    assert g["ci95"]["0.5"][1] is None and g["ci95"]["0.5"][0] is not None
    assert g["ci95_bound_minutes"]["0.5"] == [None, 256.0]
    assert ", > 256]" in shown(report)


def test_a_horizon_below_the_smallest_float_is_below_the_shortest_task() -> None:
    # The mirror of a horizon past the largest float: 0.1 at 1 min and 0.0999 at 2 min
    # give b1 = logit(0.0999) − logit(0.1) ≈ −0.00111 per doubling and log2 p50 =
    # −2.197/0.00111 ≈ −1979: 2^−1979 rounds to 0, which read as a horizon of 0 minutes.
    g = horizon(table([("a", 1.0, 0.1), ("b", 2.0, 0.0999)]), bootstrap=0).to_dict()["groups"][0]
    assert g["slope"] == pytest.approx(-0.001112, abs=1e-5)
    assert g["p50_minutes"] is None and g["horizons"]["0.5"] is None
    assert (g["p50_status"], g["p50_bound_minutes"]) == ("below", 1.0)
    assert g["status"]["0.5"] == "below" and g["bound_minutes"]["0.5"] == 1.0
    assert any(w.startswith("p50 falls below the smallest float") for w in g["warnings"])


def test_an_interval_bounded_on_one_side_at_both_ends_is_written_once() -> None:
    # A nearly flat fit below the smallest float, and its replicates with it: both ends
    # of each interval lie below the shortest task. The table said "[< 1, < 1]", an
    # interval of no width to the eye; the data say only that it lies below 1 minute.
    rows = [(f"{x}{i}", m, s) for x, m, s in (("a", 1.0, 0.1), ("b", 2.0, 0.0999))
            for i in range(3)]  # fmt: skip
    report = horizon(table(rows), bootstrap=200, seed=0)
    g = report.to_dict()["groups"][0]
    assert g["ci95_status"]["0.5"] == ["below", "below"]  # the JSON as it was
    assert g["ci95_bound_minutes"]["0.5"] == [1.0, 1.0]
    text = shown(report)
    assert "[< 1, < 1]" not in text
    assert text.count("[< 1]") == 2  # p50 and p80


def test_interval_ends_are_never_written_alike_unless_bounded_alike() -> None:
    from agentgauge.cli.horizon import fmt_interval

    below, above, est = "below", "above", "estimated"
    assert fmt_interval((math.nan, math.nan), (below, below), (2.0, 2.0)) == "[< 2]"
    assert fmt_interval((math.nan, math.nan), (below, below), (2.0, 4.0)) == "[< 2, < 4]"
    assert fmt_interval((math.nan, math.nan), (above, above), (60.0, 60.0)) == "[> 60]"
    assert fmt_interval((math.nan, math.nan), (below, above), (2.0, 60.0)) == "[< 2, > 60]"
    # Two estimated ends three significant digits write alike get the digits that
    # tell them apart (the bootstrap never reports an interval of no width).
    assert fmt_interval((2.0001, 2.0004), (est, est), (math.nan, math.nan)) == "[2.0001, 2.0004]"
    assert fmt_interval((1.5, 2.95), (est, est), (math.nan, math.nan)) == "[1.5, 2.95]"
    assert fmt_interval((math.nan, 2.95), (below, est), (2.0, math.nan)) == "[< 2, 2.95]"
    assert fmt_interval((math.nan, math.nan), ("undefined", est), (math.nan, math.nan)) == (
        "[—, —]"
    )
