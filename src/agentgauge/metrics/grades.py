"""One grader's grades summed up: how often it passed, its mean score, and its
failure statuses (docs/metrics.md, "One grader's grades").

Input: one list of grades per trial (`agentgauge.schema.Grade` objects or dicts
with the same keys), as `agentgauge.metrics.toolcalls` takes. Trials without a
grade of the grader are left out; unknown grades (``passed`` null) are counted
apart and left out of the pass rate and the mean score, so a grader that could
not decide never reads as a pass or a fail. A rate or mean over no grade is
``None``, never 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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


def _get(grade: Any, key: str) -> Any:
    return grade.get(key) if isinstance(grade, dict) else getattr(grade, key, None)


def grade_summary(grades: Sequence[Sequence[Any]], grader: str) -> GradeSummary:
    """`GradeSummary` of ``grader`` over the trials whose grades are ``grades``."""
    passed = failed = unknown = 0
    scores: list[float] = []
    failures: Counter[str] = Counter()
    for trial_grades in grades:
        for g in trial_grades:
            if _get(g, "grader") != grader:
                continue
            verdict = _get(g, "passed")
            if verdict is None:
                unknown += 1
                continue
            if verdict:
                passed += 1
            else:
                failed += 1
                failures[str(_get(g, "status") or "failed")] += 1
            score = _get(g, "score")
            if isinstance(score, int | float):
                scores.append(float(score))
    decided = passed + failed
    return GradeSummary(
        grader=grader,
        graded=decided + unknown,
        passed=passed,
        failed=failed,
        unknown=unknown,
        pass_rate=passed / decided if decided else None,
        mean_score=sum(scores) / len(scores) if scores else None,
        failures=dict(failures.most_common()),
    )
