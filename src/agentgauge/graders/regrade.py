"""Re-grading stored transcripts without re-running the agent (``agentgauge grade``).

The run's tasks come from the store's ``tasks`` table (the expectations as the
run saw them). Every trial that completed is graded again from its stored
events, answer and final state; the grades and each trial's outcome under them
are written as a new grade version beside the old ones — all in one
transaction, once every trial is graded, so a failure leaves the store as it was
(and a slow judge does not hold the store's write lock). A trial that ended in an
error or a timeout is not graded, as the run grades none (an empty transcript
must not pass a "do nothing" check), but on the checkpoints of the user turns it
completed, as the run grades those (`agentgauge.graders.checkpoints.grade_unfinished`),
so re-grading with unchanged graders gives the grades and metrics the run gave. A
named code grader grades only the trials whose task enables it (declares what it
needs), as in the run. A trial left alone (unfinished and not checked on its
turns, its task not stored, or no named grader applies to it) keeps under the new
version the outcome, grades and facts it has under the version the
run reports (`Store.keep_outcome`). Naming only graders that apply to no task of
the run is refused rather than written as an empty version, and so is a re-grade
whose judge cannot be reached: the judges of the named graders are checked once
before any trial is graded, as a run checks them (`agentgauge.graders.rubric.check_judges`),
and a judge that goes down while grading (no call of it ever connected) stops it at the
first trial that shows it, with nothing written. A
model judge's spend goes with its grades: under the new version a re-graded
trial's ``judge_cost_usd`` is what its grades' judges recorded
(`agentgauge.facts.graded_judge_cost`), as a run judged live records it on the
trial (`agentgauge.graders.rubric.JudgeSpend`), so both report the same
``cost.judge_total``.

A new version changes nothing the run reports until it is activated
(``activate=True``, ``agentgauge grade --activate``): a comparison made before
a re-grade still reads the same afterwards, and an older version stays
readable (``--grade-version``, docs/store.md).

A run another session is writing (an ``agentgauge run`` still running it) is
refused, with nothing written: its trials stored after the re-grade would have no
outcome under the new version. The re-grade claims the run while it works
(`agentgauge.store.claims.holding`), so a resume typed meanwhile is refused too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentgauge.errors import InputError
from agentgauge.evidence import grades_problem
from agentgauge.graders.base import (
    Grader,
    TrialGrading,
    applies,
    available_graders,
    get_grader,
    grade_trial,
    part_grades,
    raising_grader,
)
from agentgauge.schema import Grade, Task, Trial
from agentgauge.store import Store
from agentgauge.store.claims import holding

__all__ = ["RegradeResult", "regrade", "resolve_graders"]


@dataclass
class RegradeResult:
    """What a re-grade did."""

    run_id: str
    version: int
    """The new grade version."""
    graders: list[str]
    """Graders named by the user (empty: each task's enabled code graders)."""
    n_trials: int
    """Trials re-graded."""
    n_changed: int
    """Trials whose success changed."""
    n_unknown: int
    """Trials with a required grade that is unknown."""
    n_unknown_partial: int = 0
    """Trials with no unknown required grade but an unknown partial-credit one (its
    score left out of the trial's mean)."""
    skipped: list[str] = field(default_factory=list)
    """Task ids of trials left alone because the store holds no task for them."""
    n_unfinished: int = 0
    """Trials left ungraded as the run left them: they ended in an error or a timeout
    (the run grades no such trial but on the checkpoints of the turns it completed,
    `n_unfinished_turns`); they keep their outcome. Not in `n_trials`."""
    n_unfinished_turns: int = 0
    """Of `n_unfinished`, the trials given the ``checkpoints`` grade of the turns they
    completed, as the run gives it (their task declares checkpoints and they recorded
    their turns)."""
    n_not_applicable: int = 0
    """Trials left alone because their task enables none of the named graders (a code
    grader grades only the tasks that declare what it needs); not in `n_trials`."""
    idle: list[str] = field(default_factory=list)
    """Named graders that graded no trial: no task of the run declares what they need."""
    success_before: float = 0.0
    """Share of trials passing under the version the run reported before (an infra
    error never passes: `Trial.passed`), of the trials re-graded and those left
    ungraded as the run left them (`n_unfinished`)."""
    success_after: float = 0.0
    """Share of trials passing under the new version."""
    active: int = 1
    """The version the run reports now (the new one only when activated)."""
    unknown_grades: dict[str, int] = field(default_factory=dict)
    """Grades that could not decide, required or not, by ``"grader status"``."""
    unknown_examples: dict[str, str] = field(default_factory=dict)
    """One reason per key of `unknown_grades` (the first met), for the user to read."""
    n_judge_truncated: int = 0
    """Judge answers cut off at the judge's token limit (``unknown:truncated``: a rubric's
    criteria, or a judge grader's grade): raising ``max_tokens`` decides them."""


#: A judge answer cut off at its token limit (`agentgauge.graders.judge_prompt`).
TRUNCATED = "unknown:truncated"


def _count_unknown(result: RegradeResult, grades: Sequence[Grade]) -> None:
    for g in grades:
        parts = part_grades(g)
        result.n_judge_truncated += sum(p.status == TRUNCATED for p in parts or [g])
        if g.passed is not None:
            continue
        key = f"{g.grader} {g.status}"
        result.unknown_grades[key] = result.unknown_grades.get(key, 0) + 1
        if key not in result.unknown_examples:
            result.unknown_examples[key] = _why(g.evidence)


def _why(evidence: object, depth: int = 0) -> str:
    """Why an unknown grade is unknown, as its evidence says (a judge's is in its
    samples): an error, a grader's own reason, or a rubric's undecided criteria. A
    judge reply's ``reason`` is the judge's rationale for its verdict ("The agent
    clearly stated the refund amount."), not why the grade is unknown: never that."""
    if isinstance(evidence, str):
        return evidence
    if depth > 3:
        return ""
    if isinstance(evidence, dict):
        undecided = _undecided(evidence.get("criteria"))
        if undecided:
            return undecided
        judged = "verdict" in evidence  # a judge's reply (`agentgauge.graders.rubric`)
        for key in ("error", "why") if judged else ("error", "why", "reason"):
            if isinstance(evidence.get(key), str) and evidence[key]:
                return str(evidence[key])
        evidence = list(evidence.values())
    if isinstance(evidence, list):
        for item in evidence:
            if isinstance(item, dict | list) and (found := _why(item, depth + 1)):
                return found
    return ""


def _undecided(criteria: object, shown: int = 3) -> str:
    """A rubric grade's criteria that decided nothing, each with its status (and its
    error, when the judge could not be asked): ``criteria undecided: polite
    unknown:invalid_verdict, ...``; ``""`` when there are none."""
    if not isinstance(criteria, list):
        return ""
    parts = []
    for c in criteria:
        if not isinstance(c, dict) or c.get("passed") is not None:
            continue
        name = str(c.get("grader", "?")).removeprefix("rubric:")
        part = f"{name} {c.get('status', 'unknown')}"
        error = c.get("evidence", {}).get("error") if isinstance(c.get("evidence"), dict) else None
        parts.append(f"{part} ({error})" if isinstance(error, str) and error else part)
    if not parts:
        return ""
    more = f", and {len(parts) - shown} more" if len(parts) > shown else ""
    return f"criteria undecided: {', '.join(parts[:shown])}{more}"


def resolve_graders(names: Sequence[str] | None) -> list[Grader] | None:
    """Grader instances for user-given names; ``None`` keeps the default."""
    if not names:
        return None
    known = available_graders()
    bad = [n for n in names if n not in known]
    if bad:
        raise InputError(
            f"unknown grader(s) {', '.join(bad)}; known: {', '.join(known)}", field="graders"
        )
    out: list[Grader] = []
    for n in names:
        try:
            out.append(get_grader(n))
        except TypeError as exc:  # a grader that needs what a name cannot carry
            # The human grader reads a labels file, a judge needs an endpoint: built from
            # a name alone they ended `grade` in a traceback.
            raise InputError(
                f"grader {n!r} cannot be built from its name alone ({exc}); "
                "build it in Python and grade with it there (docs/judge.md)",
                field="graders",
            ) from None
    return out


def _grade(store: Store, task: Task, trial: Trial, chosen: Sequence[Grader] | None) -> TrialGrading:
    """`grade_trial`, with a grader that raises reported in one line instead of a
    traceback; the re-grade's transaction is then rolled back, so nothing is written.
    (A stored task the graders could not handle, such as a negative answer tolerance
    from before it was refused, ended ``agentgauge grade`` in a traceback.)"""
    try:
        graded = grade_trial(task, trial, chosen)
    except Exception as exc:
        text = str(exc)
        why = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        name = raising_grader(exc)  # as the run's summary names it
        who = f"grader {name!r} " if name else ""
        raise InputError(
            f"grading trial {trial.trial} of task {task.id!r} (variant {trial.variant}): "
            f"{who}raised {why}; nothing was written (fix the task or the grader, then "
            "re-grade)",
            file=store.path,
        ) from None
    # Evidence the metrics cannot read (`agentgauge.evidence`) is refused as a raise is.
    problem = grades_problem(graded.grades)
    if problem is not None:
        raise InputError(
            f"grading trial {trial.trial} of task {task.id!r} (variant {trial.variant}) "
            f"recorded {problem[0]}: {problem[1]}; nothing was written (fix the grader, "
            "then re-grade)",
            file=store.path,
        )
    return graded


def _unfinished(
    store: Store, task: Task, trial: Trial, chosen: Sequence[Grader] | None
) -> Grade | None:
    """The grade a trial that ended in an error or a timeout gets, as the run gives it
    (`agentgauge.graders.checkpoints.grade_unfinished`), when the checkpoints grader is
    among those asked; a bug in it is refused as any grader's (`_grade`)."""
    from agentgauge.graders.checkpoints import grade_unfinished

    if chosen and not any(g.name == "checkpoints" for g in chosen):
        return None
    try:
        grade = grade_unfinished(task, trial)
    except Exception as exc:
        text = str(exc)
        why = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        raise InputError(
            f"grading trial {trial.trial} of task {task.id!r} (variant {trial.variant}): "
            f"grader 'checkpoints' raised {why}; nothing was written (fix the task or the "
            "grader, then re-grade)",
            file=store.path,
        ) from None
    return grade


def _judge_down(chosen: Sequence[Grader] | None) -> str | None:
    """Why the re-grade cannot go on when a named model grader's judge is unreachable
    (`JudgeClient.unreachable`: no call of it ever connected), else ``None``. Its every
    grade would be ``unknown:judge_unavailable``: a version of nothing but unknowns is
    not a re-grade, and each later trial would only add more."""
    from agentgauge.graders.rubric import RubricJudge

    for grader in chosen or []:
        judge = getattr(grader, "judge", None)
        if isinstance(judge, RubricJudge) and judge.client.unreachable is not None:
            return (
                f"the judge of grader {grader.name!r} at {judge.client.config.base_url} "
                f"cannot be reached ({judge.client.unreachable}); it answered no call, so "
                "nothing was written: start it, or point AGENTGAUGE_JUDGE_BASE_URL at it, "
                "then re-grade (docs/judge.md)"
            )
    return None


def _wait(check: Coroutine[Any, Any, None]) -> None:
    """Run ``check`` to its end from synchronous code, also where an event loop is
    running (a notebook's), on a thread of its own there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(check)
        return
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, check).result()


def regrade(
    store: Store | str | Path,
    run_id: str,
    graders: Sequence[str] | None = None,
    *,
    note: str = "",
    activate: bool = False,
) -> RegradeResult:
    """Grade a stored run again as a new grade version (one transaction).

    The run keeps reporting the version it reported before unless ``activate``.
    A run another session is writing is refused (`agentgauge.store.claims.RunClaimed`).
    """
    if not isinstance(store, Store):
        with Store(store, create=False) as db:
            return regrade(db, run_id, graders, note=note, activate=activate)
    chosen = resolve_graders(graders)
    store.require_run(run_id)
    with holding(store, run_id, "agentgauge grade"):
        return _regrade(store, run_id, chosen, note=note, activate=activate)


def _regrade(
    store: Store, run_id: str, chosen: Sequence[Grader] | None, *, note: str, activate: bool
) -> RegradeResult:
    tasks = {t.id: t for t in store.get_tasks(run_id)}
    if not tasks:
        raise InputError(
            f"run {run_id!r} has no stored tasks; re-grading needs the suite's expectations",
            file=store.path,
            field="tasks",
        )
    # One snapshot: a `collect` still writing the run (collectors claim nothing) commits
    # trials between the two reads, and the trials and their keys are paired one to one.
    with store.snapshot():
        trials = store.trials(run_id)
        keys = store.trial_keys(run_id)
    names = [g.name for g in chosen] if chosen else []
    graded_tasks = {t.task_id for t in trials if t.task_id in tasks}
    idle = [
        g.name
        for g in chosen or []
        if not any(applies(g, tasks[task_id]) for task_id in graded_tasks)
    ]
    if graded_tasks and len(idle) == len(names) > 0:
        # A version with no grade in it would only be a version to explain away.
        which = ", ".join(repr(n) for n in names)
        raise InputError(
            f"{'grader' if len(names) == 1 else 'graders'} {which} "
            f"{'applies' if len(names) == 1 else 'apply'} to no task of run {run_id!r}: "
            "a code grader grades only the tasks that declare what it needs "
            "(docs/graders.md); nothing was written",
            file=store.path,
            field="graders",
        )
    if chosen:
        # The judges the named graders will call are checked once first, as a run checks
        # them before its first trial: a judge with no chat route (HTTP 404, a dead port)
        # wrote a version of nothing but unknown:judge_unavailable, or was found out only
        # after the first trial's retries.
        from agentgauge.graders.rubric import check_judges

        judged = {t.task_id for t in trials if t.task_id in tasks and t.status == "completed"}
        _wait(check_judges(chosen, [tasks[t] for t in judged], nothing="nothing was written"))
    result = RegradeResult(
        run_id=run_id, version=0, graders=names, n_trials=0, n_changed=0, n_unknown=0, idle=idle
    )
    before = after = 0
    # Graded first, written after in one transaction: a judge's minutes do not hold the
    # store's write lock, so other runs in the store write on and the claim this
    # re-grade holds goes on beating (`agentgauge.store.claims.holding`). Per trial: its
    # key, and its grades and outcome under the new version, or ``None`` when it keeps
    # those it has under the active one.
    planned: list[tuple[int, Trial, tuple[list[Grade], bool, float | None] | None]] = []
    for pk, trial in zip(keys, trials, strict=True):
        task = tasks.get(trial.task_id)
        # A trial left alone keeps, under the new version too, the outcome, grades
        # and facts it has under the active one: activating the new version changes
        # nothing here, and reading it shows one version's outcome with its grades.
        if task is None:
            result.skipped.append(trial.task_id)
            planned.append((pk, trial, None))
            continue
        if trial.status != "completed":
            # The run grades no trial that ended in an error or a timeout (an empty
            # transcript must not pass a "do nothing" check) but on the checkpoints
            # of the turns it completed, and neither does a re-grade: with unchanged
            # graders it gives what the run gave.
            result.n_unfinished += 1
            partial = _unfinished(store, task, trial, chosen)
            if partial is None:
                planned.append((pk, trial, None))
            else:
                # Its other grades (an import's own) kept beside the new one.
                kept = [g for g in trial.grades if g.grader != partial.grader]
                planned.append((pk, trial, ([*kept, partial], bool(trial.success), trial.score)))
                result.n_unfinished_turns += 1
            # In the success shares still, as in the run's success rate: an
            # infra error never passes (`Trial.passed`), under either version.
            before += trial.passed
            after += trial.passed
            continue
        if chosen and not any(applies(g, task) for g in chosen):
            # No named grader grades this task: its outcome stands, with no new grade.
            result.n_not_applicable += 1
            planned.append((pk, trial, None))
            continue
        graded = _grade(store, task, trial, chosen)
        down = _judge_down(chosen)
        if down is not None:  # raised before anything is written
            raise InputError(down)
        _count_unknown(result, graded.grades)
        old = bool(trial.success)
        new = old if graded.success is None else graded.success
        if graded.success is not None:
            score = graded.score if graded.score is not None else float(graded.success)
            planned.append((pk, trial, (list(graded.grades), graded.success, score)))
        else:
            planned.append((pk, trial, (list(graded.grades), old, trial.score)))
        result.n_trials += 1
        result.n_changed += new != old
        result.n_unknown += bool(graded.unknown)
        result.n_unknown_partial += bool(graded.unknown_partial) and not graded.unknown
        # An infra error is a failure under either version, as in the metrics.
        before += old and not trial.is_infra_error
        after += new and not trial.is_infra_error
    with store.transaction():
        active = store.active_grade_version(run_id)
        result.version = store.new_grade_version(run_id, names, note or "agentgauge grade")
        for pk, trial, graded_as in planned:
            if graded_as is None:
                store.keep_outcome(pk, result.version, active, bool(trial.success), trial.score)
            else:
                grades, success, outcome_score = graded_as
                store.add_grades(pk, result.version, grades)
                store.add_outcome(pk, result.version, success, outcome_score)
        if activate:
            store.activate_grade_version(run_id, result.version)
        result.active = store.active_grade_version(run_id)
    if counted := result.n_trials + result.n_unfinished:
        result.success_before = before / counted
        result.success_after = after / counted
    result.skipped = sorted(set(result.skipped))
    return result
