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
  missing, unexpected, mistyped or wrong values). With no decided ``tool_calls``
  grade, both are ``None`` (nobody counted failed calls), and so is the AST match
  rate, each with a reason in ``null_reasons``;
- **irrelevance_pass_rate**: share passed among ``tool_calls`` grades of
  category ``irrelevance``;
- **trajectory_match_rate**: share of ``trajectory`` grades passed, per mode;
- **action_precision / action_recall**: means over trajectory grades that define them;
- **milestone_score**: mean ``milestones`` score;
- **minefield_hit_rate**: share of trials with a ``minefields`` grade that hit one;
- **minefield_mean_severity**: mean severity of those hits, each read as safety's
  harmlessness reads it (`agentgauge.metrics.safety.violation_severity`);
- **tool_calls_per_trial / turns_per_trial**: means, when counts are given.

A precision, recall or severity outside [0, 1] (a store from before grade evidence
was checked, `agentgauge.evidence`) is left out of its mean, and ``null_reasons``
says how many were.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgauge.facts import WRONG_CALL, taxonomy
from agentgauge.metrics.safety import unreadable_severity, violation_severity

__all__ = ["WRONG_CALL", "taxonomy", "toolcall_metrics"]


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
    from agentgauge.facts import GRADE_FACTS, grade_facts

    n = len(grades_per_trial)
    if task_ids is not None and len(task_ids) != n:
        raise ValueError(f"task_ids has {len(task_ids)} entries for {n} trials")
    rows = [grade_facts(grades) for grades in grades_per_trial]
    facts = {name: [r[name] for r in rows] for name in GRADE_FACTS}
    columns = {
        name: np.array(
            [np.nan if v is None else v for v in values]
            if GRADE_FACTS[name] == "float"
            else values,
            dtype=object if GRADE_FACTS[name] == "label" else None,
        )
        for name, values in facts.items()
    }
    ids = None if task_ids is None else np.array(list(task_ids), dtype=object)
    return _toolcall(n, columns, ids, tool_calls, turns)


def toolcall_metrics_from_facts(table: Any, facts: Any) -> dict[str, Any] | None:
    """The metrics of a group's rows from its table and facts (`agentgauge.facts`), or
    ``None`` when no trial has a tool-call, trajectory, milestone or minefield grade."""
    from agentgauge.facts import ABSENT

    if not any((facts[f"{p}_state"] != ABSENT).any() for p in _PREFIX.values()):
        return None
    return _toolcall(
        len(table), facts, table.codes("task_id"), table.tool_calls, facts["assistant_turns"]
    )


#: The graders whose grades these metrics read, and their facts' prefix.
_PREFIX = {"milestones": "ms", "minefields": "mine", "tool_calls": "tc", "trajectory": "traj"}


def _toolcall(
    n: int,
    facts: Any,
    task_ids: np.ndarray[Any, Any] | tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None,
    tool_calls: Sequence[float] | np.ndarray[Any, Any] | None,
    turns: Sequence[float] | np.ndarray[Any, Any] | None,
) -> dict[str, Any]:
    from agentgauge.facts import FAILED, PASSED, UNKNOWN

    tc = np.asarray(facts["tc_state"])
    decided = (tc == PASSED) | (tc == FAILED)
    passed = tc[decided] == PASSED
    failed = tc == FAILED
    per_task: float | None = None
    if task_ids is not None and decided.any():
        from agentgauge.table import factorize

        if isinstance(task_ids, tuple):  # a table's coding of its task ids, at hand
            from agentgauge.table import compact

            _, codes = compact(task_ids[1][decided], len(task_ids[0]))
        else:
            _, codes = factorize(np.asarray(task_ids, dtype=object)[decided])
        from agentgauge.metrics.outcome import task_mean

        # The exact mean of the tasks' shares, rounded once, as the success rate is:
        # the float mean of rounded shares read 9 of 18 as 0.49999999999999994.
        per_task = task_mean(np.bincount(codes), np.bincount(codes, passed.astype(np.int64)))
    statuses = np.asarray(facts["tc_status"], dtype=object)[failed]
    errors = Counter(statuses.tolist())
    classes = Counter(np.asarray(facts["tc_class"], dtype=object)[failed].tolist())
    irrelevance = (tc == PASSED)[decided & np.asarray(facts["tc_irrelevance"], dtype=bool)]
    traj = np.asarray(facts["traj_state"])
    traj_decided = (traj == PASSED) | (traj == FAILED)
    modes = np.asarray(facts["traj_mode"], dtype=object)[traj_decided]
    traj_passed = traj[traj_decided] == PASSED
    by_mode: dict[str, list[bool]] = defaultdict(list)
    if modes.size:
        for mode in sorted(set(modes.tolist())):
            by_mode[mode] = traj_passed[modes == mode].tolist()
    reasons: dict[str, str] = {}
    precision = _unit(facts["traj_precision"], traj_decided, "action_precision", reasons)
    recall = _unit(facts["traj_recall"], traj_decided, "action_recall", reasons)
    ms = np.asarray(facts["ms_state"])
    milestones = _finite(facts["ms_score"], (ms == PASSED) | (ms == FAILED))
    mine = np.asarray(facts["mine_state"])
    mine_decided = (mine == PASSED) | (mine == FAILED)
    hits_mask = mine == FAILED
    severities = violation_severity(facts["mine_max_severity"], facts["mine_hit_severity"])
    severities = severities[hits_mask]
    readable = np.isfinite(severities) & (severities >= 0) & (severities <= 1)
    if not readable.all():
        n_bad = int(np.count_nonzero(~readable))
        reasons["minefield_mean_severity"] = unreadable_severity(n_bad, "the mean severity")
        severities = severities[readable]
    unknown = {
        name: int(np.count_nonzero(np.asarray(facts[f"{p}_state"]) == UNKNOWN))
        for name, p in sorted(_PREFIX.items())
    }
    measured = bool(decided.any())
    if not measured:
        # No AST verdict: the failed calls were never counted, which is not "none failed".
        why = (
            f"every tool_calls grade is unknown ({unknown['tool_calls']})"
            if unknown["tool_calls"]
            else "no trial has a tool_calls (AST) grade"
        )
        for figure in ("ast_match_rate", "error_types", "error_classes"):
            reasons[figure] = why
    out: dict[str, Any] = {
        "n_trials": n,
        "ast_match_rate": {
            "per_trial": _rate(passed.tolist()),
            "per_task": per_task if task_ids is not None else None,
            "n": int(passed.size),
        },
        "error_types": dict(sorted(errors.items())) if measured else None,
        "error_classes": {
            k: classes.get(k, 0) for k in ("wrong_arguments", "wrong_call", "partial_resolution")
        }
        if measured
        else None,
        "irrelevance_pass_rate": _rate(irrelevance.tolist()),
        "trajectory_match_rate": {m: _rate(v) for m, v in sorted(by_mode.items())},
        "action_precision": _mean(precision),
        "action_recall": _mean(recall),
        "milestone_score": _mean(milestones),
        "minefield_hit_rate": _rate((mine[mine_decided] == FAILED).tolist()),
        "minefield_mean_severity": _mean(severities.tolist()),
        "tool_calls_per_trial": None if tool_calls is None else _nanmean(tool_calls),
        "turns_per_trial": None if turns is None else _nanmean(turns),
        "n_unknown": {k: v for k, v in unknown.items() if v},
        "null_reasons": reasons,
    }
    # A figure nobody measured is null and says why, as the AST figures above do (a
    # gate on one read "cannot check: tool_use.minefield_hit_rate is null").
    no_mines = "no trial has a decided minefields grade"
    why_null = {
        "irrelevance_pass_rate": "no decided tool_calls grade of an irrelevance task "
        "(one where no call is due)",
        "action_precision": "no trial has a decided trajectory grade",
        "action_recall": "no trial has a decided trajectory grade",
        "milestone_score": "no trial has a decided milestones grade",
        "minefield_hit_rate": no_mines,
        "minefield_mean_severity": "no trial hit a minefield" if mine_decided.any() else no_mines,
        "tool_calls_per_trial": "no trial records a tool-call count",
        "turns_per_trial": "no trial records its assistant turns",
    }
    for figure, why in why_null.items():
        if out[figure] is None:
            reasons.setdefault(figure, why)
    return out


def _unit(
    values: Any, rows: np.ndarray[Any, Any], figure: str, reasons: dict[str, str]
) -> list[float]:
    """The rows' values that are rates in [0, 1]. One outside (a stored grade from
    before its evidence was checked, `agentgauge.evidence`) is left out, and
    ``reasons[figure]`` counts them: a mean with it would be no rate."""
    kept = np.asarray(_finite(values, rows), dtype=np.float64)
    ok = np.isfinite(kept) & (kept >= 0) & (kept <= 1)
    if not ok.all():
        n_bad = int(np.count_nonzero(~ok))
        name = figure.removeprefix("action_")
        whose = (
            "1 trial's trajectory grade has"
            if n_bad == 1
            else f"{n_bad} trials' trajectory grades have"
        )
        reasons[figure] = f"{whose} a {name} outside [0, 1]: left out"
    out: list[float] = kept[ok].tolist()
    return out


def _finite(values: Any, rows: np.ndarray[Any, Any]) -> list[float]:
    picked = np.asarray(values, dtype=np.float64)[rows]
    kept: list[float] = picked[~np.isnan(picked)].tolist()
    return kept


def _nanmean(values: Sequence[float] | np.ndarray[Any, Any]) -> float | None:
    arr = np.asarray(values, dtype=np.float64)
    if arr.size == 0 or np.all(np.isnan(arr)):
        return None
    return float(np.nanmean(arr))
