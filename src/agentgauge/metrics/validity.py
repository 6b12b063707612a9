"""Validity checks: is the benchmark measuring what it claims?

- **Null agent**: every task a do-nothing agent passes is an outcome-validity
  defect (an empty-response agent scored 38% on tau-bench airline; Zhu et al.
  2025, "Establishing Best Practices for Building Rigorous Agentic Benchmarks").
- **Never-passed tasks**: 0 successes across every agent and trial is most often
  a broken task, not a hard one: check it.
- **Saturated tasks**: passed on every trial of the last N runs; they no longer
  separate agents and are candidates for rotation.
- **Held-out use**: every inclusion of ``heldout`` tasks is written to the
  store's audit log (`Store.audit`) under `HELDOUT_ACTION`; reports say how often.

Pure functions over `TrialTable`s and audit records; the store is read by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgauge.metrics.outcome import task_mean, task_success_counts
from agentgauge.table import TrialTable

__all__ = [
    "HELDOUT_ACTION",
    "HeldoutUsage",
    "NullAgentCheck",
    "heldout_usage",
    "never_passed_tasks",
    "null_agent_check",
    "saturated_tasks",
]

#: The audit-log action recorded each time held-out tasks are included in a computation.
HELDOUT_ACTION = "heldout_included"


def _task_rates(table: TrialTable) -> tuple[list[str], np.ndarray[Any, np.dtype[np.float64]]]:
    # Infra errors count as failures, as in the headline success rate.
    ids, n, c = task_success_counts(table.task_id, table.success & ~table.infra_error)
    return ids, c / np.maximum(n, 1)


@dataclass(frozen=True)
class NullAgentCheck:
    """The score of a do-nothing agent and the tasks it passes."""

    score: float | None
    """Task-averaged success rate of the null agent (``None`` without trials)."""
    tasks_passed: list[str]
    """Tasks the null agent passed at least once: each one is a task defect."""
    n_tasks: int

    def to_dict(self) -> dict[str, Any]:
        return {"score": self.score, "tasks_passed": self.tasks_passed, "n_tasks": self.n_tasks}


def null_agent_check(null_trials: TrialTable) -> NullAgentCheck:
    """Score = mean_t p_t of the null agent's trials; tasks with any success are listed."""
    if len(null_trials) == 0:
        return NullAgentCheck(None, [], 0)
    ids, rates = _task_rates(null_trials)
    passed = [t for t, r in zip(ids, rates, strict=True) if r > 0]
    _, n, c = task_success_counts(
        null_trials.task_id, null_trials.success & ~null_trials.infra_error
    )
    return NullAgentCheck(task_mean(n, c), passed, len(ids))  # exact, as the success rate


def never_passed_tasks(tables: Sequence[TrialTable]) -> list[str]:
    """Tasks with no success in any trial of any table (all agents, all runs), sorted;
    an infra error is no success, as in the success rate (`_task_rates`)."""
    seen: set[str] = set()
    passed: set[str] = set()
    for t in tables:
        # The ids as Python strings: numpy's fixed-width text (``astype(str)``) drops
        # trailing NULs, which merged "a\x00" into "a".
        ids = [str(x) for x in t.task_id.tolist()]
        seen.update(ids)
        ok = (t.success & ~t.infra_error).tolist()
        passed.update(i for i, good in zip(ids, ok, strict=True) if good)
    return sorted(seen - passed)


def saturated_tasks(runs: Sequence[TrialTable], last_n: int = 3) -> list[str]:
    """Tasks passed on every trial in each of the last ``last_n`` runs (oldest first).

    A task must appear in every one of those runs: a task missing from one has
    not shown it is saturated. Fewer runs than ``last_n`` gives no candidates.
    """
    if last_n < 1:
        raise ValueError("last_n must be at least 1")
    if len(runs) < last_n:
        return []
    candidates: set[str] | None = None
    for table in runs[-last_n:]:
        ids, rates = _task_rates(table)
        perfect = {t for t, r in zip(ids, rates, strict=True) if r == 1.0}
        candidates = perfect if candidates is None else candidates & perfect
    return sorted(candidates or ())


@dataclass(frozen=True)
class HeldoutUsage:
    """How often the held-out split was used, from the audit log."""

    uses: int
    runs: list[str]
    """Runs whose held-out tasks were included, in order of first use."""
    first_at: str | None
    last_at: str | None
    entries: list[Mapping[str, Any]] = field(default_factory=list)

    def sentence(self) -> str:
        if self.uses == 0:
            return "held-out tasks never used"
        times = "once" if self.uses == 1 else f"{self.uses} times"
        return f"held-out tasks used {times} (last {self.last_at})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "uses": self.uses,
            "runs": self.runs,
            "first_at": self.first_at,
            "last_at": self.last_at,
        }


def heldout_usage(
    audit_log: Sequence[Mapping[str, Any]], *, action: str = HELDOUT_ACTION
) -> HeldoutUsage:
    """Summarise `Store.audit_log` records (``{at, run_id, action, detail}``) of held-out use."""
    hits = [e for e in audit_log if e.get("action") == action]
    runs: list[str] = []
    for e in hits:
        detail = e.get("detail")
        named = detail.get("runs", []) if isinstance(detail, Mapping) else []
        for rid in [*named, e.get("run_id")]:
            if rid is not None and str(rid) not in runs:
                runs.append(str(rid))
    times = [str(e["at"]) for e in hits if e.get("at")]
    return HeldoutUsage(
        uses=len(hits),
        runs=runs,
        first_at=min(times) if times else None,
        last_at=max(times) if times else None,
        entries=hits,
    )
