"""One grader's grades summed up: how often it passed, its mean score, and its
failure statuses (docs/metrics.md, "One grader's grades").

Input: one list of grades per trial (`agentgauge.schema.Grade` objects or dicts
with the same keys), as `agentgauge.metrics.toolcalls` takes. Trials without a
grade of the grader are left out; unknown grades (``passed`` null) are counted
apart and left out of the pass rate and the mean score, so a grader that could
not decide never reads as a pass or a fail. A rate or mean over no grade is
``None``, never 0.

Given each trial's task id, the pass rate is the success rate's: the mean over
tasks of each task's share of passing grades, with the success rate's 95% interval
(tasks as clusters, docs/metrics.md); without them it is the share of passing grades,
with no interval.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentgauge.metrics.outcome import success_interval, task_mean, task_success_counts

__all__ = ["GradeSummary", "grade_summary"]


@dataclass(frozen=True)
class GradeSummary:
    """One grader over a set of trials."""

    grader: str
    graded: int
    """Trials with a grade of this grader."""
    passed: int
    failed: int
    unknown: int
    pass_rate: float | None
    """passed / (passed + failed); ``None`` when no grade decided."""
    mean_score: float | None
    """Mean of the decided grades' scores; ``None`` when none has one."""
    failures: dict[str, int] = field(default_factory=dict)
    """Failed statuses (``exec:timeout``, ``response_match:below_threshold``...), most
    frequent first."""
    ci95: tuple[float, float] | None = None
    """The pass rate's 95% interval, when task ids were given and it can be estimated."""
    n_tasks: int | None = None
    """Tasks with a decided grade, when task ids were given."""


def _get(grade: Any, key: str) -> Any:
    return grade.get(key) if isinstance(grade, dict) else getattr(grade, key, None)


def grade_summary(
    grades: Sequence[Sequence[Any]], grader: str, *, task_ids: Sequence[str] | None = None
) -> GradeSummary:
    """`GradeSummary` of ``grader`` over the trials whose grades are ``grades``
    (``task_ids[i]`` the task of ``grades[i]``, for the task-clustered interval)."""
    passed = failed = unknown = 0
    scores: list[float] = []
    failures: Counter[str] = Counter()
    decided_tasks: list[str] = []
    decided_pass: list[bool] = []
    for i, trial_grades in enumerate(grades):
        for g in trial_grades:
            if _get(g, "grader") != grader:
                continue
            verdict = _get(g, "passed")
            if verdict is None:
                unknown += 1
                continue
            if task_ids is not None:
                decided_tasks.append(str(task_ids[i]))
                decided_pass.append(bool(verdict))
            if verdict:
                passed += 1
            else:
                failed += 1
                failures[str(_get(g, "status") or "failed")] += 1
            score = _get(g, "score")
            if isinstance(score, int | float):
                scores.append(float(score))
    decided = passed + failed
    rate = passed / decided if decided else None
    ci: tuple[float, float] | None = None
    n_tasks: int | None = None
    if task_ids is not None:
        if len(task_ids) != len(grades):
            raise ValueError(f"{len(task_ids)} task ids for {len(grades)} trials")
        n_tasks = len(set(decided_tasks))
        if decided_tasks:
            ids = np.asarray(decided_tasks, dtype=object)
            _, n, c = task_success_counts(ids, np.asarray(decided_pass, dtype=bool))
            p = c / n
            rate = task_mean(n, c)  # exact, as the success rate (`task_mean`)
            ci, _, _ = success_interval(p, n, c, None)
    return GradeSummary(
        grader=grader,
        graded=decided + unknown,
        passed=passed,
        failed=failed,
        unknown=unknown,
        pass_rate=rate,
        mean_score=sum(scores) / len(scores) if scores else None,
        failures=dict(failures.most_common()),
        ci95=ci,
        n_tasks=n_tasks,
    )
