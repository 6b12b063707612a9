"""Tool-call and trajectory metrics, from the graders' grades.

Input: one list of grades per trial (`agentgauge.schema.Grade` objects or
dicts with the same keys), optionally the trials' task ids, tool-call counts
and turn counts. Unknown grades (``passed`` null) are left out of every rate
and counted. Definitions:

- **ast_match_rate**: ``per_trial`` = share of ``tool_calls`` grades passed;
  ``per_task`` = mean over tasks of that share within the task (tasks weigh
  equally, as in every task average);
- **error_types**: histogram of failed ``tool_calls`` statuses, and the
  tau-bench taxonomy (Yao et al. 2024): ``wrong_call`` (wrong or malformed
  function, a call where none was due, none where one was), ``partial_resolution``
  (fewer calls than expected, but some), ``wrong_arguments`` (everything else:
  missing, unexpected, mistyped or wrong values);
- **irrelevance_pass_rate**: share passed among ``tool_calls`` grades of
  category ``irrelevance``;
- **trajectory_match_rate**: share of ``trajectory`` grades passed, per mode;
- **action_precision / action_recall**: means over trajectory grades that define them;
- **milestone_score**: mean ``milestones`` score;
- **minefield_hit_rate**: share of trials with a ``minefields`` grade that hit one;
- **tool_calls_per_trial / turns_per_trial**: means, when counts are given.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["WRONG_CALL", "taxonomy", "toolcall_metrics"]

WRONG_CALL = frozenset(
    {"wrong_func_name", "malformed_call", "irrelevance:called", "relevance:no_call"}
)


def _get(grade: Any, key: str) -> Any:
    if isinstance(grade, Mapping):
        return grade.get(key)
    return getattr(grade, key, None)


def taxonomy(status: str, evidence: Any = None) -> str:
    """tau-bench's error class for an AST-match failure status."""
    if status in WRONG_CALL:
        return "wrong_call"
    if status == "wrong_count":
        n_calls = _get(evidence, "n_calls") if isinstance(evidence, Mapping) else None
        n_expected = _get(evidence, "n_expected") if isinstance(evidence, Mapping) else None
        if n_calls is not None and n_expected is not None and 0 < n_calls < n_expected:
            return "partial_resolution"
        return "wrong_call"
    return "wrong_arguments"


def _rate(values: Sequence[bool]) -> float | None:
    return None if not values else float(np.mean(values))


def _mean(values: Sequence[float]) -> float | None:
    return None if not values else float(np.mean(values))


def toolcall_metrics(
    grades_per_trial: Sequence[Sequence[Any]],
    *,
    task_ids: Sequence[str] | None = None,
    tool_calls: Sequence[float] | np.ndarray[Any, Any] | None = None,
    turns: Sequence[float] | np.ndarray[Any, Any] | None = None,
) -> dict[str, Any]:
    """The tool-call and trajectory metrics as a plain dict (see module doc)."""
    n = len(grades_per_trial)
    if task_ids is not None and len(task_ids) != n:
        raise ValueError(f"task_ids has {len(task_ids)} entries for {n} trials")
    ast_pass: list[bool] = []
    ast_by_task: dict[str, list[bool]] = defaultdict(list)
    errors: Counter[str] = Counter()
    classes: Counter[str] = Counter()
    irrelevance: list[bool] = []
    traj: dict[str, list[bool]] = defaultdict(list)
    precision: list[float] = []
    recall: list[float] = []
    milestones: list[float] = []
    mine_hits: list[bool] = []
    severities: list[float] = []
    unknown: Counter[str] = Counter()
    for i, grades in enumerate(grades_per_trial):
        for g in grades:
            name, passed = _get(g, "grader"), _get(g, "passed")
            evidence = _get(g, "evidence")
            ev = evidence if isinstance(evidence, Mapping) else {}
            if name not in ("tool_calls", "trajectory", "milestones", "minefields"):
                continue
            if passed is None:
                unknown[name] += 1
                continue
            if name == "tool_calls":
                ast_pass.append(bool(passed))
                if task_ids is not None:
                    ast_by_task[task_ids[i]].append(bool(passed))
                if ev.get("category") == "irrelevance":
                    irrelevance.append(bool(passed))
                if not passed:
                    status = str(_get(g, "status"))
                    errors[status] += 1
                    classes[taxonomy(status, ev)] += 1
            elif name == "trajectory":
                traj[str(ev.get("mode", "unknown"))].append(bool(passed))
                if ev.get("precision") is not None:
                    precision.append(float(ev["precision"]))
                if ev.get("recall") is not None:
                    recall.append(float(ev["recall"]))
            elif name == "milestones":
                score = _get(g, "score")
                if score is not None:
                    milestones.append(float(score))
            else:
                hit = not passed
                mine_hits.append(hit)
                if hit:
                    severities.append(float(ev.get("max_severity", 1.0)))
    per_task = [float(np.mean(v)) for v in ast_by_task.values()]
    return {
        "n_trials": n,
        "ast_match_rate": {
            "per_trial": _rate(ast_pass),
            "per_task": _mean(per_task) if task_ids is not None else None,
            "n": len(ast_pass),
        },
        "error_types": dict(sorted(errors.items())),
        "error_classes": {
            k: classes.get(k, 0) for k in ("wrong_arguments", "wrong_call", "partial_resolution")
        },
        "irrelevance_pass_rate": _rate(irrelevance),
        "trajectory_match_rate": {m: _rate(v) for m, v in sorted(traj.items())},
        "action_precision": _mean(precision),
        "action_recall": _mean(recall),
        "milestone_score": _mean(milestones),
        "minefield_hit_rate": _rate(mine_hits),
        "minefield_mean_severity": _mean(severities),
        "tool_calls_per_trial": None if tool_calls is None else _nanmean(tool_calls),
        "turns_per_trial": None if turns is None else _nanmean(turns),
        "n_unknown": dict(sorted(unknown.items())),
    }


def _nanmean(values: Sequence[float] | np.ndarray[Any, Any]) -> float | None:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0 or np.all(np.isnan(arr)):
        return None
    return float(np.nanmean(arr))
