"""Recovery from tool errors (docs/metrics.md, "Recovery from tool errors").

HAL (Kapoor et al. 2025, *Holistic Agent Leaderboard*) found that agents which
fixed a tool-call error mid-run were 1.5 to 4 times more likely to succeed than
agents that did not. Per group of trials this module reports:

- **with_tool_error**: the share of trials with at least one tool error (a tool
  result flagged ``is_error``: a fault, a rejected argument, an unknown tool);
- **recovered**: among those, the share in which the agent recovered from every
  error: each error is followed later in the transcript by a successful call of
  the *same* tool, or by an explicit ``recover`` control decision. A retry of a
  different tool is not a recovery;
- **success_with_recovery** / **success_without_recovery**: the success rate of
  trials with a tool error that recovered, and of those that did not, and
  **recovery_ratio**, the first over the second (HAL's 1.5 to 4);
- **error_types**: tool errors by type, counted in successful trials as well as
  in failed ones (an error in a trial that still succeeded is no harm done; the
  same error type in failed trials is where to look).

Every rate is a task average with the interval of the outcome metrics (tasks
weigh equally and are the clusters; `outcome_metrics`), with the number of
trials and tasks behind it; a rate over no trial is ``None`` with the reason, and
so is the SE or interval of a rate over one task (``success_with_recovery.ci95``).

The per-trial facts (`trial_recovery`) are derived once from a transcript and
are plain columns (has an error, recovered, error types), so the rates
(`recovery_metrics`) are array arithmetic that does not need the events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import ERROR_TYPES, Coded, TrialRecovery, error_type, trial_recovery
from agentgauge.metrics.outcome import outcome_metrics, task_success_counts

__all__ = ["ERROR_TYPES", "TrialRecovery", "error_type", "recovery_metrics", "trial_recovery"]


def _rate(
    task_ids: npt.NDArray[np.object_],
    hit: npt.NDArray[np.bool_],
    coded: tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]]
    | npt.NDArray[np.intp]
    | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """A task-averaged rate of ``hit`` with its interval (tasks are the clusters), and
    why its SE or interval is null where the rate is not (one task: no spread to
    estimate), as `outcome_metrics` says. ``coded``: the rows' task codes (ids equal
    as text sharing one), or a coding of their ids to turn into such codes."""
    if task_ids.size == 0:
        return {
            "value": None,
            "se": None,
            "ci95": None,
            "ci_method": None,
            "n_trials": 0,
            "n_tasks": 0,
            "count": 0,
        }, {}
    if isinstance(coded, np.ndarray):
        n_all = np.bincount(coded)
        held = n_all > 0
        n = n_all[held].astype(np.int64)
        c = np.bincount(coded[hit], minlength=n_all.size)[held].astype(np.int64)
    else:
        _, n, c = task_success_counts(task_ids, hit, coded=coded)
    o = outcome_metrics(n, c, ks=())
    return {
        "value": o.success_rate,
        "se": o.se,
        "ci95": None if o.ci95 is None else [float(o.ci95[0]), float(o.ci95[1])],
        "ci_method": o.ci_method,
        "n_trials": o.n_trials,
        "n_tasks": o.n_tasks,
        "count": o.n_successes,
    }, {k: v for k, v in o.reasons.items() if k in ("se", "ci95")}


def recovery_metrics(
    task_ids: Sequence[str] | npt.NDArray[np.object_],
    success: Sequence[bool] | npt.NDArray[np.bool_],
    has_error: Sequence[bool] | npt.NDArray[np.bool_],
    recovered: Sequence[bool] | npt.NDArray[np.bool_],
    error_types: Sequence[Mapping[str, int]] | Coded | None = None,
    *,
    task_codes: tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]] | None = None,
) -> dict[str, Any]:
    """The recovery section of one group (see the module docstring), from per-trial
    columns: task id, success (an infra error already counted as a failure), whether
    the trial had a tool error, whether it recovered, and its errors by type.

    Example: 4 trials of one task; two with an error, one of them recovered and
    succeeded, the other not recovered and failed: with_tool_error = 2/4,
    recovered = 1/2, success with recovery 1/1, without 0/1, ratio ``None``
    (nothing to divide by: the reason says so).
    """
    ids = np.asarray(task_ids, dtype=object)
    ok = np.asarray(success, dtype=bool)
    err = np.asarray(has_error, dtype=bool)
    rec = np.asarray(recovered, dtype=bool) & err
    if not ids.shape == ok.shape == err.shape == rec.shape:
        raise ValueError("task_ids, success, has_error and recovered need one entry per trial")
    reasons: dict[str, str] = {}

    by_task: npt.NDArray[np.intp] | None = None
    if task_codes is not None and all(type(u) is str for u in task_codes[0].tolist()):
        by_task = task_codes[1]  # distinct texts: the codes group tasks as their ids do

    def coded(rows: npt.NDArray[np.bool_] | None) -> Any:
        if by_task is not None:
            return by_task if rows is None else by_task[rows]
        if task_codes is None:
            return None
        return task_codes if rows is None else (task_codes[0], task_codes[1][rows])

    rates: dict[str, dict[str, Any]] = {}
    for name, rows, hit in (
        ("with_tool_error", None, err),
        ("recovered", err, rec),
        ("success_with_recovery", rec, ok),
        ("success_without_recovery", err & ~rec, ok),
    ):
        rate, why = _rate(ids if rows is None else ids[rows], hit if rows is None else hit[rows],
                          coded(rows))  # fmt: skip
        rates[name] = rate
        # A rate without an SE or interval (one task) says why, as the success rate does.
        reasons.update({f"{name}.{k}": v for k, v in why.items()})
    with_error, recovered_share = rates["with_tool_error"], rates["recovered"]
    with_rec, without = rates["success_with_recovery"], rates["success_without_recovery"]
    if not err.any():
        reasons["recovered"] = "no trial has a tool error"
    if not rec.any():
        reasons["success_with_recovery"] = (
            "no trial has a tool error" if not err.any() else "no trial recovered from its errors"
        )
    if not (err & ~rec).any():
        reasons["success_without_recovery"] = (
            "no trial has a tool error" if not err.any() else "every trial recovered"
        )
    ratio: float | None = None
    a, b = with_rec["value"], without["value"]
    if a is None or b is None:
        reasons["recovery_ratio"] = "needs trials with and without recovery"
    elif b == 0:
        reasons["recovery_ratio"] = "no trial without recovery succeeded (division by 0)"
    else:
        ratio = float(a / b)
    by_type: dict[str, dict[str, int]] = {}
    if error_types is not None:
        if len(error_types) != ids.size:
            raise ValueError(f"error_types has {len(error_types)} entries for {ids.size} trials")
        if isinstance(error_types, Coded):  # each distinct value once
            codes, values = error_types.codes, error_types.values
        else:
            # Trials may share their errors-by-type objects: each distinct one once.
            seen: dict[int, int] = {}
            values = []
            for t in error_types:
                if id(t) not in seen:
                    seen[id(t)] = len(values)
                    values.append(t)
            codes = np.array([seen[id(t)] for t in error_types], dtype=np.intp)
        in_ok = np.bincount(codes, ok, len(values)).astype(np.int64)
        in_bad = np.bincount(codes, ~ok, len(values)).astype(np.int64)
        for u, types in enumerate(values):
            for name, count in types.items():
                cell = by_type.setdefault(name, {"in_successful": 0, "in_failed": 0})
                cell["in_successful"] += int(count) * int(in_ok[u])
                cell["in_failed"] += int(count) * int(in_bad[u])
    return {
        "n_trials": int(ids.size),
        "with_tool_error": with_error,
        "recovered": recovered_share,
        "success_with_recovery": with_rec,
        "success_without_recovery": without,
        "recovery_ratio": ratio,
        "error_types": dict(sorted(by_type.items())),
        "null_reasons": reasons,
    }
