"""The four baselines: roles, the human's cost per success and the ratio to it."""

from __future__ import annotations

import math

import pytest

from agentgauge.errors import InputError
from agentgauge.metrics.baselines import (
    BASELINE_ROLES,
    check_role,
    human_cost_of_pass,
    relative_to_human,
    summarize_baseline,
)
from agentgauge.table import TrialTable


def humans(**columns: list[object]) -> TrialTable:
    """Two tasks, one human trial each: h1 passed, h2 failed."""
    return TrialTable.from_columns(2, task_id=["h1", "h2"], success=[True, False], **columns)


def test_the_four_roles_and_a_bad_one() -> None:
    assert BASELINE_ROLES == ("null", "previous", "human", "ablation")
    assert check_role("human") == "human"
    with pytest.raises(InputError, match="unknown baseline role 'boss'; use one of null, prev"):
        check_role("boss")


def test_human_cost_of_pass_from_minutes() -> None:
    # 30 and 90 minutes at $120/h cost $60 and $180: $120 per task on average; the
    # success rate is 1/2, so a success costs $120 / 0.5 = $240.
    cost, reason = human_cost_of_pass(humans(human_minutes=[30.0, 90.0]), 120.0)
    assert reason is None and cost == pytest.approx(240.0)


def test_latency_is_the_human_time_when_recorded() -> None:
    # latency_s wins over human_minutes: 1800 s and 5400 s are the same 30 and 90 minutes.
    table = humans(latency_s=[1800.0, 5400.0], human_minutes=[1.0, 1.0])
    cost, _ = human_cost_of_pass(table, 120.0)
    assert cost == pytest.approx(240.0)
    b = summarize_baseline("human", "people", table, human_rate=120.0)
    assert b.score == 0.5 and b.cost_of_pass == pytest.approx(240.0)
    assert b.latency_p50 == pytest.approx(3600.0)  # median of 1800 and 5400


def test_human_cost_unknown_without_rate_or_time() -> None:
    assert human_cost_of_pass(humans(human_minutes=[30.0, 90.0]), None) == (
        None,
        "no hourly rate (give --human-rate USD)",
    )
    assert human_cost_of_pass(humans(human_minutes=[30.0, math.nan]), 120.0) == (
        None,
        "time unknown for 1 of 2 trials",
    )
    nobody = TrialTable.from_columns(
        2, task_id=["h1", "h2"], success=[False, False], human_minutes=[30.0, 90.0]
    )
    assert human_cost_of_pass(nobody, 120.0) == (None, "no successes")


def test_ratio_to_the_human_and_unknown_stays_unknown() -> None:
    human = summarize_baseline(
        "human", "people", humans(human_minutes=[30.0, 90.0]), human_rate=120.0
    )
    # The agent's $1.20 per success against the human's $240: 1.2 / 240 = 0.005.
    assert relative_to_human(1.2, None, human) == (pytest.approx(0.005), None)
    ratio, why = relative_to_human(None, "price unknown for 3 of 3 trials", human)
    assert ratio is None and why == "agent's cost unknown (price unknown for 3 of 3 trials)"
    no_rate = summarize_baseline("human", "people", humans(human_minutes=[30.0, 90.0]))
    ratio, why = relative_to_human(1.2, None, no_rate)
    assert ratio is None and why is not None and "no hourly rate" in why


def test_an_agent_baseline_keeps_its_unknown_cost() -> None:
    b = summarize_baseline(
        "ablation", "abl", humans(cost_usd=[0.1, math.nan], latency_s=[2.0, 4.0])
    )
    assert b.cost_of_pass is None and b.cost_reason == "price unknown for 1 of 2 trials"
    assert b.latency_p50 == pytest.approx(3.0) and b.score == 0.5


def test_human_time_and_cost_past_the_largest_float() -> None:
    # 1e308 minutes is a finite time, but × 60 it is no float in seconds: the median time
    # is null with the reason (it was inf, and `compare --json` failed on it). The cost
    # is taken in hours, 1e308 / 60 = 1.67e306, and × $1000/h passes the largest float.
    table = humans(human_minutes=[1e308, 1e308])
    b = summarize_baseline("human", "people", table, human_rate=1000.0)
    assert b.latency_p50 is None
    assert b.latency_reason == (
        "a trial's time in seconds (human_minutes × 60) passes the largest float (about 1.8e308)"
    )
    assert b.cost_of_pass is None
    assert b.cost_reason == "a trial's time × hourly rate passes the largest float (about 1.8e308)"
    assert b.to_dict()["latency_reason"] == b.latency_reason
    # $1/h: hours 1.67e306 each, mean 1.67e306, over rate 0.5: 3.33e306, a number.
    cost, why = human_cost_of_pass(table, 1.0)
    assert why is None and cost == pytest.approx(1e308 / 60 / 0.5)
    # Two middle times of 1.7e308 s: their mean overflowed; the median is 1.7e308.
    both = summarize_baseline("human", "p", humans(latency_s=[1.7e308, 1.7e308]))
    assert both.latency_p50 == 1.7e308 and both.latency_reason is None


def test_ratio_to_the_human_past_the_largest_float() -> None:
    human = summarize_baseline(
        "human", "people", humans(human_minutes=[0.06, 0.06]), human_rate=1e-300
    )
    # human: 0.001 h × $1e-300/h = $1e-303 per trial, / 0.5 = $2e-303 per success
    assert human.cost_of_pass == pytest.approx(2e-303)
    ratio, why = relative_to_human(1e10, None, human)
    assert ratio is None
    assert why == (
        "the agent's cost per success / the human's passes the largest float (about 1.8e308)"
    )
