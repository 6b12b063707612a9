"""Pass rate per user turn: where in a conversation agents fail (BFCL V3
multi-turn, Mao et al. 2024; docs/metrics.md, "Pass rate per turn").

For each turn index i, over the trials whose ``checkpoints`` grade decided the
checkpoint of turn i (held or failed; unknown ones are counted apart):

    p_t(i) = held_t(i) / n_t(i)  for each task t with a checkpoint at turn i,
    pass_rate(i) = mean_t p_t(i),

every task weighing the same, as the success rate does, with its 95% interval
from the same rule (`agentgauge.metrics.outcome.success_interval`, tasks as
the clusters). A turn's checkpoint counts only for trials that reached the
turn or should have: a conversation that ended early fails the checkpoints of
the turns it never reached.

A trial that did not finish (an agent error, a timeout; an infra error unless the
user excludes those, as the success rate counts them) is graded on the turns it
completed, those it handed back, as any other; the turn it ended in and every later
one fail, as the success rate counts the trial a failure
(`agentgauge.graders.checkpoints.grade_unfinished`). One without that grade (no turn
record, or stored before such trials were graded) does not say how far it got. Of a
task whose other trials show its checkpoints (`checkpoint_turns_by_task`), such a
trial is counted at every one of those turns as unknown (``n_unknown``;
``n_ungraded`` counts the trials), never left out silently nor called a pass or a
fail from nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.outcome import success_interval, task_mean, task_success_counts
from agentgauge.schema import INT64_MAX, Trial

__all__ = [
    "NO_CHECKPOINTS",
    "checkpoint_rows",
    "checkpoint_turns_by_task",
    "pass_rate_by_turn",
    "turns_from_facts",
    "turns_from_trials",
]

#: Why the section is ``None``: no trial carries a checkpoints grade, which is all the
#: facts show; a task may declare checkpoints whose trials all ended in an error without
#: a turn record (those are not graded).
NO_CHECKPOINTS = (
    "no trial has a checkpoints grade: no task declares checkpoints, or none of its "
    "trials was graded (a trial that ended in an error or a timeout before recording "
    "its turns is not)"
)

_GRADER = "checkpoints"


def pass_rate_by_turn(
    task_id: npt.ArrayLike,
    turn: npt.ArrayLike,
    held: npt.ArrayLike,
    unknown_turn: npt.ArrayLike = (),
) -> list[dict[str, Any]]:
    """One row per turn index, in order: ``{turn, pass_rate, ci95, ci_method,
    n_trials, n_tasks, n_held, n_unknown, reason}``.

    ``task_id``, ``turn`` and ``held`` hold one entry per decided checkpoint of a
    trial; ``unknown_turn`` the turn index of each undecided one (counted, not
    rated). A turn with no decided checkpoint has ``pass_rate`` ``None`` and a
    reason.
    """
    ids = np.asarray(task_id, dtype=object).reshape(-1)
    turns = np.asarray(turn, dtype=np.int64).reshape(-1)
    ok = np.asarray(held, dtype=bool).reshape(-1)
    unk = np.asarray(unknown_turn, dtype=np.int64).reshape(-1)
    if not ids.size == turns.size == ok.size:
        raise ValueError("task_id, turn and held need one entry per checkpoint")
    rows: list[dict[str, Any]] = []
    for i in sorted({int(x) for x in turns} | {int(x) for x in unk}):
        at = turns == i
        n_unknown = int(np.count_nonzero(unk == i))
        row: dict[str, Any] = {
            "turn": i,
            "pass_rate": None,
            "ci95": None,
            "ci_method": None,
            "n_trials": int(np.count_nonzero(at)),
            "n_tasks": 0,
            "n_held": int(np.count_nonzero(ok & at)),
            "n_unknown": n_unknown,
            "reason": None,
        }
        if not at.any():
            row["reason"] = "every checkpoint of this turn is unknown"
            rows.append(row)
            continue
        _, n, c = task_success_counts(ids[at], ok[at])
        p = c / n
        ci, method, why = success_interval(p, n, c, None)
        row.update(
            pass_rate=task_mean(n, c),  # exact, as the success rate
            ci95=None if ci is None else [float(ci[0]), float(ci[1])],
            ci_method=method,
            n_tasks=int(n.size),
            reason=why,
        )
        rows.append(row)
    return rows


def checkpoint_rows(trials: Sequence[Trial]) -> tuple[list[Any], list[int], list[bool], list[int]]:
    """The checkpoint verdicts of the trials' ``checkpoints`` grades: (task ids,
    turns, held) of the decided ones and the turns of the unknown ones. A grade
    without per-turn evidence (unknown as a whole: the trial recorded no turns) adds
    nothing; `turns_from_trials` counts such trials."""
    from agentgauge.facts import Facts

    return _rows(np.array([t.task_id for t in trials], dtype=object), Facts.from_trials(trials))


def _rows(
    task_id: npt.NDArray[np.object_], facts: Any
) -> tuple[list[Any], list[int], list[bool], list[int]]:
    from agentgauge.facts import decoded

    ids: list[Any] = []
    turns: list[int] = []
    held: list[bool] = []
    unknown: list[int] = []
    for tid, results in zip(task_id.tolist(), decoded(facts["ckpt_turns"]), strict=True):
        for turn, verdict in results or ():
            if not 1 <= turn <= INT64_MAX:
                # No user turn (a stored grade from before its evidence was checked,
                # `agentgauge.evidence`): it names no row of the table.
                continue
            if verdict is None:
                unknown.append(turn)
            else:
                ids.append(tid)
                turns.append(turn)
                held.append(verdict == "pass")
    return ids, turns, held, unknown


def turns_from_trials(trials: Sequence[Trial]) -> dict[str, Any] | None:
    """``{"per_turn": [...], "n_trials": N, "n_without_turns": M}`` for the N trials
    with a checkpoints grade (M of them graded unknown for want of a turn record),
    or ``None`` when none has one (`NO_CHECKPOINTS`)."""
    from agentgauge.facts import Facts

    return turns_from_facts(
        np.array([t.task_id for t in trials], dtype=object), Facts.from_trials(trials)
    )


def checkpoint_turns_by_task(task_id: npt.ArrayLike, facts: Any) -> dict[Any, list[int]]:
    """The user turns each task has checkpoints at, as its trials' ``checkpoints``
    grades show them (the turns their evidence names); a task none of whose trials
    has one is absent."""
    from agentgauge.facts import ABSENT, decoded

    graded = np.flatnonzero(np.asarray(facts["ckpt_state"]) != ABSENT)
    ids = np.asarray(task_id, dtype=object)[graded].tolist()
    results = decoded(np.asarray(facts["ckpt_turns"], dtype=object)[graded])
    found: dict[Any, set[int]] = {}
    for tid, result in zip(ids, results, strict=True):
        turns = found.setdefault(tid, set())
        turns.update(t for t, _ in result or () if 1 <= t <= INT64_MAX)
    return {tid: sorted(turns) for tid, turns in found.items() if turns}


def turns_from_facts(
    task_id: npt.NDArray[np.object_],
    facts: Any,
    declared: dict[Any, list[int]] | None = None,
) -> dict[str, Any] | None:
    """`turns_from_trials` of rows given as their task ids and facts (`agentgauge.facts`).
    A checkpoint whose turn is no user turn (below 1: a stored grade from before its
    evidence was checked, `agentgauge.evidence`) is left out, and ``n_left_out``
    (present only then) counts them.

    A row without a checkpoints grade whose task has checkpoints (``declared``; by
    default `checkpoint_turns_by_task` of these rows: pass that of all rows when these
    are one group of them) was never graded (it ended in an error or a timeout with no
    turn record, or was stored before such trials were graded): it counts as unknown at
    each of its task's turns, and ``n_ungraded`` counts such rows."""
    from agentgauge.facts import ABSENT

    ids_all = np.asarray(task_id, dtype=object)
    absent = np.asarray(facts["ckpt_state"]) == ABSENT
    graded = np.flatnonzero(~absent)
    if declared is None:
        declared = checkpoint_turns_by_task(ids_all, facts)
    ungraded_turns = [declared[t] for t in ids_all[absent].tolist() if t in declared]
    if not graded.size and not ungraded_turns:
        return None
    results = np.asarray(facts["ckpt_turns"], dtype=object)[graded]
    ids, turns, held, unknown = _rows(ids_all[graded], {"ckpt_turns": results})
    unknown += [t for task_turns in ungraded_turns for t in task_turns]
    out: dict[str, Any] = {
        "per_turn": pass_rate_by_turn(ids, turns, held, unknown),
        "n_trials": int(graded.size) + len(ungraded_turns),
        "n_without_turns": int(sum(1 for r in results.tolist() if r is None)),
        "n_ungraded": len(ungraded_turns),
    }
    from agentgauge.facts import decoded

    bad = sum(1 for r in decoded(results) for turn, _ in r or () if not 1 <= turn <= INT64_MAX)
    if bad:  # `_rows` left them out; said in the group's null_reasons
        out["n_left_out"] = bad
    return out
