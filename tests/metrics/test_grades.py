"""grade_summary: one grader's grades counted by hand, unknowns apart, None over nothing."""

from __future__ import annotations

from agentgauge.metrics.grades import grade_summary
from agentgauge.schema import Grade


def test_grade_summary_by_hand() -> None:
    grades = [
        [Grade(grader="executable", passed=True, score=1.0, status="passed")],
        [Grade(grader="executable", passed=False, score=0.0, status="exec:raised")],
        [
            Grade(grader="executable", passed=False, score=0.0, status="exec:raised"),
            Grade(grader="state", passed=True, score=1.0),
        ],
        [Grade(grader="executable", passed=None, status="unknown:callable not found")],
        [Grade(grader="state", passed=False, score=0.0)],  # no executable grade: left out
        [{"grader": "executable", "passed": False, "score": 0.5, "status": "exec:timeout"}],
    ]
    s = grade_summary(grades, "executable")
    # 5 graded: 1 passed, 3 failed, 1 unknown. Pass rate 1/4; mean score (1 + 0 + 0 + 0.5)/4.
    assert (s.graded, s.passed, s.failed, s.unknown) == (5, 1, 3, 1)
    assert s.pass_rate == 0.25 and s.mean_score == 0.375
    assert s.failures == {"exec:raised": 2, "exec:timeout": 1}


def test_nothing_decided_is_none_not_zero() -> None:
    only_unknown = [[Grade(grader="response_match", passed=None, status="unknown:x")]]
    s = grade_summary(only_unknown, "response_match")
    assert (s.graded, s.unknown, s.pass_rate, s.mean_score) == (1, 1, None, None)
    s = grade_summary([], "response_match")
    assert (s.graded, s.pass_rate, s.mean_score, s.failures) == (0, None, None, {})


def test_with_task_ids_the_pass_rate_is_the_success_rate_with_its_interval() -> None:
    import numpy as np

    from agentgauge.metrics.outcome import outcome_metrics

    def g(passed: bool | None) -> list[Grade]:
        return [Grade(grader="response_match", passed=passed, score=float(bool(passed)))]

    grades = [g(True), g(False), g(True), g(True), g(False), g(None), g(True), g(False)]
    tasks = ["a", "a", "b", "b", "c", "c", "d", "d"]
    s = grade_summary(grades, "response_match", task_ids=tasks)
    # Per task, over decided grades: a 1/2, b 2/2, c 0/1, d 1/2 -> mean 0.5 (pooled: 4/7).
    assert s.pass_rate == 0.5 and s.n_tasks == 4 and s.unknown == 1
    # The interval is the one the success rate gets for the same verdicts as outcomes.
    o = outcome_metrics(np.array([2, 2, 1, 2]), np.array([1, 2, 0, 1]), ks=())
    assert o.ci95 is not None and s.ci95 == (float(o.ci95[0]), float(o.ci95[1]))
    assert s.ci95[0] < 0.5 < s.ci95[1]
    # Without task ids: the pooled share, and no interval claimed.
    plain = grade_summary(grades, "response_match")
    assert plain.pass_rate == 4 / 7 and plain.ci95 is None and plain.n_tasks is None
