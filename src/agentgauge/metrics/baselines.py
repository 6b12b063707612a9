"""The four baselines a comparison is read against (docs/compare-and-plan.md, "Baselines").

- **null**: a do-nothing agent; what it passes is a defect of the tasks, not a
  skill (an empty-response agent scored 38% on tau-bench airline; Zhu et al.
  2025, "Establishing Best Practices for Building Rigorous Agentic Benchmarks").
- **previous**: the system in production today, which B must beat.
- **human**: the person who does the task today, graded by the same graders;
  their time priced at an hourly rate gives a cost per success the agent's is
  set against (METR used $143.61/h: Kwa et al. 2025, "Measuring AI Ability to
  Complete Long Tasks").
- **ablation**: the simplest version of the same system (one model call with
  good context, no orchestration): what the orchestration adds is B minus it.

A run is given a role with ``--baseline-role`` (run, import) or marked later
(``agentgauge runs --mark RUN ROLE``); the role lives in the run's config under
`ROLE_KEY`. This module is pure: it summarises trial tables, the caller finds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from agentgauge.errors import InputError
from agentgauge.metrics.cost import checked_cost_of_pass, overflow_reason, quantiles
from agentgauge.metrics.engine import compute_metrics
from agentgauge.report.formats import counted
from agentgauge.schema import ROLE_KEY as RUN_ROLE_KEY
from agentgauge.table import TrialTable

__all__ = [
    "BASELINE_ROLES",
    "ROLE_KEY",
    "Baseline",
    "BaselineRole",
    "check_role",
    "human_cost_of_pass",
    "relative_to_human",
    "summarize_baseline",
]

BaselineRole = Literal["null", "previous", "human", "ablation"]
#: In the order the record lists them.
BASELINE_ROLES: tuple[BaselineRole, ...] = get_args(BaselineRole)
#: The key of a run's config that holds its role (defined with `Run`, which a listing of
#: runs reads without the metrics).
ROLE_KEY = RUN_ROLE_KEY


def check_role(role: str, *, field: str = "--baseline-role") -> BaselineRole:
    """``role`` as a `BaselineRole`, or `InputError` naming the roles there are."""
    if role not in BASELINE_ROLES:
        raise InputError(
            f"unknown baseline role {role!r}; use one of {', '.join(BASELINE_ROLES)}",
            field=field,
        )
    return role


@dataclass(frozen=True)
class Baseline:
    """One baseline's figures, on the rows the comparison reads."""

    role: BaselineRole
    label: str
    """Where it came from (a run id, a SOURCE, ``A``)."""
    n_tasks: int
    score: float | None
    """Task-averaged success rate (infra errors count as failures)."""
    ci95: tuple[float, float] | None
    cost_of_pass: float | None
    """The agent's spend per success (Erol et al. 2025); for the human, see
    `human_cost_of_pass`."""
    cost_reason: str | None
    """Why ``cost_of_pass`` is ``None``."""
    latency_p50: float | None
    """Median seconds per trial (for the human, their time)."""
    note: str | None = None
    """What the reader must know to compare it (the human graded by other graders)."""
    latency_reason: str | None = None
    """Why ``latency_p50`` is ``None`` when a reason is known (a time past the largest
    float); ``None`` when no trial records one."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "label": self.label,
            "n_tasks": self.n_tasks,
            "score": self.score,
            "ci95": None if self.ci95 is None else list(self.ci95),
            "cost_of_pass": self.cost_of_pass,
            "cost_reason": self.cost_reason,
            "latency_p50": self.latency_p50,
            "latency_reason": self.latency_reason,
            "note": self.note,
        }


def human_seconds(table: TrialTable) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each human trial's time: ``latency_s``, else ``human_minutes`` × 60 (NaN: unknown;
    ∞ where minutes × 60 passes the largest float, which finite minutes can)."""
    with np.errstate(over="ignore"):
        return np.where(np.isnan(table.latency_s), table.human_minutes * 60.0, table.latency_s)


def _human_hours(table: TrialTable) -> np.ndarray[Any, np.dtype[np.float64]]:
    """`human_seconds` in hours, divided down from each unit so it cannot overflow."""
    return np.where(np.isnan(table.latency_s), table.human_minutes / 60.0, table.latency_s / 3600.0)


def _median_time(seconds: np.ndarray[Any, np.dtype[np.float64]]) -> tuple[float | None, str | None]:
    """Median of the known times, or ``None`` with the reason."""
    known = seconds[~np.isnan(seconds)]
    if not known.size:
        return None, None  # no trial records a time: "not recorded"
    if not np.isfinite(known).all():
        return None, overflow_reason("a trial's time in seconds (human_minutes × 60)")
    with np.errstate(over="ignore"):
        median = float(np.median(known))
    # The mean of two middle values of 1.7e308 overflows; interpolating between them
    # does not (the same number).
    return (median if np.isfinite(median) else quantiles(known, (0.5,))[0]), None


def human_cost_of_pass(
    table: TrialTable, rate_usd_per_hour: float | None
) -> tuple[float | None, str | None]:
    """The human's cost per success: time × hourly rate per trial, task-averaged, over
    the task-averaged success rate (Erol et al. 2025's cost of pass, as for agents).

    Two tasks, one trial each, 30 and 90 minutes, one success, at $120/h: costs
    $60 and $180, mean $120, rate 0.5, so $240 per success. ``None`` with the
    reason when there is no rate, a trial's time is unknown, or nothing passed.
    """
    if rate_usd_per_hour is None:
        return None, "no hourly rate (give --human-rate USD)"
    if len(table) == 0:
        return None, "no trials"
    hours = _human_hours(table)
    missing = int(np.isnan(hours).sum())
    if missing:
        return None, f"time unknown for {missing} of {counted(len(table), 'trial')}"
    rate = compute_metrics(table, k=1, by=()).groups[0].outcome.success_rate
    if not rate:
        return None, "no successes"
    with np.errstate(over="ignore"):
        cost = hours * rate_usd_per_hour
    if not np.isfinite(cost).all():
        return None, overflow_reason("a trial's time × hourly rate")
    return checked_cost_of_pass(cost, table.codes("task_id")[1], rate)


def summarize_baseline(
    role: BaselineRole,
    label: str,
    table: TrialTable,
    *,
    human_rate: float | None = None,
) -> Baseline:
    """Score with its interval, cost per success and median latency of ``table``."""
    if len(table) == 0:
        return Baseline(role, label, 0, None, None, None, "no trials", None)
    g = compute_metrics(table, k=1, by=()).groups[0]
    o = g.outcome
    latency_reason: str | None = None
    if role == "human":
        cop, reason = human_cost_of_pass(table, human_rate)
        latency, latency_reason = _median_time(human_seconds(table))
    else:
        cop, reason = g.cost.cost_of_pass, g.cost.reasons.get("cost_of_pass")
        latency = g.cost.latency_p50
    return Baseline(
        role,
        label,
        o.n_tasks,
        o.success_rate,
        o.ci95,
        cop,
        reason,
        latency,
        latency_reason=None if latency is not None else latency_reason,
    )


def relative_to_human(
    agent_cost_of_pass: float | None, agent_reason: str | None, human: Baseline
) -> tuple[float | None, str | None]:
    """The agent's cost per success over the human's; unknown when either is."""
    if agent_cost_of_pass is None:
        return None, f"agent's cost unknown ({agent_reason or 'not recorded'})"
    if human.cost_of_pass is None:
        return None, f"human's cost unknown ({human.cost_reason or 'not recorded'})"
    if human.cost_of_pass == 0:
        return None, "human's cost is $0"
    ratio = agent_cost_of_pass / human.cost_of_pass
    if not math.isfinite(ratio):
        return None, overflow_reason("the agent's cost per success / the human's")
    return ratio, None
