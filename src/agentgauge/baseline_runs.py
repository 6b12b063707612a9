"""Finding and marking the runs that serve as baselines (docs/compare-and-plan.md,
"Baselines"): the I/O half of `agentgauge.metrics.baselines`, used by
`agentgauge.api.compare_sources` and ``agentgauge runs --mark``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from agentgauge.api import system_info
from agentgauge.errors import InputError
from agentgauge.metrics.baselines import (
    BASELINE_ROLES,
    ROLE_KEY,
    Baseline,
    BaselineRole,
    check_role,
    summarize_baseline,
)
from agentgauge.metrics.compare import Comparison, select_rows
from agentgauge.metrics.validity import NullAgentCheck, null_agent_check
from agentgauge.report.record import SystemInfo
from agentgauge.schema import Run
from agentgauge.sources import is_store, parse_source
from agentgauge.store import Store, check_store_path
from agentgauge.store.claims import AGAIN, refuse_claimed
from agentgauge.table import TrialTable

__all__ = ["find_baselines", "mark_baseline"]


def _store_path(spec: str) -> Path | None:
    path, _ = parse_source(spec)
    return path if is_store(path) else None


def _null_from_store(spec: str, info: SystemInfo) -> tuple[str, TrialTable] | None:
    """A ``null`` agent's run on the same suite version in B's store, when there is one."""
    where = _store_path(spec)
    if where is None or info.run is None:
        return None
    with Store(where, readonly=True) as db:
        for run in reversed(db.list_runs()):
            if (
                run.agent in ("null", "builtin:null")
                and run.suite_version == info.run.suite_version
            ):
                return f"{where}:{run.run_id}", db.table(run.run_id)
    return None


def _given_baseline(spec: str) -> tuple[BaselineRole, str, SystemInfo]:
    """``ROLE=SOURCE``, or a SOURCE naming a stored run marked with a role."""
    role_text, sep, rest = spec.partition("=")
    # A word before "=" is a role (a misspelt one is named as such); a path or a
    # DB:RUN with "=" in it is a SOURCE.
    if sep and role_text.isidentifier():
        role = check_role(role_text, field="--baseline")
        return role, rest, system_info(rest, role, events=False, grades=True)
    info = system_info(spec, "baseline", events=False, grades=True)
    marked = info.run.config.get(ROLE_KEY) if info.run is not None else None
    if marked is None:
        raise InputError(
            f"{spec!r} has no baseline role: write ROLE=SOURCE "
            f"({', '.join(BASELINE_ROLES)}), or mark the run with agentgauge runs --mark",
            field="--baseline",
        )
    return check_role(str(marked), field="--baseline"), spec, info


@dataclass(frozen=True)
class _Found:
    """A baseline's trials as found: where from, the table, and its graders (for the
    human, whose error rate must be judged by B's graders)."""

    label: str
    table: TrialTable
    graders: set[str] | None = None


def _graders_of(info: SystemInfo) -> set[str] | None:
    """The graders of a side's grades, summed up in SQL for a stored run (its trials are
    not built for it), ``None`` when neither the summary nor the trials are at hand."""
    summary = info.grade_summary()
    return None if summary is None else set(summary.graders)


def _marked_in_store(spec: str, skip: set[str]) -> dict[str, _Found]:
    """The latest run of each role marked in SOURCE's store (not A or B themselves)."""
    where = _store_path(spec)
    if where is None:
        return {}
    found: dict[str, _Found] = {}
    with Store(where, readonly=True) as db:
        for run in reversed(db.list_runs()):
            role = run.config.get(ROLE_KEY)
            if role in BASELINE_ROLES and role not in found and run.run_id not in skip:
                graders = None
                if role == "human":
                    graders = db.grade_summary(run.run_id)[0]
                label = f"{where}:{run.run_id}"
                found[str(role)] = _Found(label, db.table(run.run_id), graders)
    return found


def _grading_note(human: set[str] | None, b: SystemInfo) -> str | None:
    """Why the human's error rate is not comparable with B's: other graders."""
    theirs = _graders_of(b)
    if human is None or theirs is None or human == theirs:
        return None

    def names(graders: set[str]) -> str:
        return ", ".join(sorted(graders)) or "none (outcomes as imported)"

    return (
        f"graded by {names(human)}, B by {names(theirs)}: grade the humans' trials with "
        "B's graders (agentgauge grade) for a comparable error rate"
    )


def find_baselines(
    b: str,
    sa: SystemInfo,
    sb: SystemInfo,
    comp: Comparison,
    given: Sequence[str],
    *,
    include_heldout: bool,
    human_rate: float | None,
) -> tuple[NullAgentCheck | None, dict[str, Baseline], dict[str, str]]:
    """Line 5's baselines: given with ``--baseline`` (or ``--null``), else marked in
    B's store (the null agent also found by its agent name, as before roles); each
    scored on the comparison's rows of the shared tasks (the base variant), as the
    headline is; the null agent's defects are every task it passes in any of its
    trials. A baseline sharing no task with A and B has its reason in the third item
    (the null agent's check then has no score, and keeps its defects)."""
    tables: dict[str, _Found] = {}
    for spec in given:
        given_role, label, info = _given_baseline(spec)
        tables[given_role] = _Found(label, info.table, _graders_of(info))
    skip = {s.run.run_id for s in (sa, sb) if s.run is not None}
    for marked_role, marked in _marked_in_store(b, skip).items():
        tables.setdefault(marked_role, marked)
    if "null" not in tables:
        by_name = _null_from_store(b, sb)
        if by_name is not None:
            tables["null"] = _Found(*by_name)
    null_check: NullAgentCheck | None = None
    found: dict[str, Baseline] = {}
    absent: dict[str, str] = {}
    for role, hit in tables.items():
        # Every baseline on the rows and tasks the headline reads (the base variant, the
        # shared tasks): the null agent's interval was Wilson on all its trials of every
        # variant, beside a headline of the base variant's.
        rows = select_rows(hit.table, include_heldout=include_heldout)
        rows = rows.take(np.isin(rows.task_id.astype(str), comp.tasks))
        if role == "null":
            # Every task it passes, in any variant, is a defect of the suite; its score
            # and interval are on the headline's rows, beside the headline.
            every = null_agent_check(hit.table)
            if len(rows):
                scored = null_agent_check(rows)
                null_check = dataclasses.replace(every, score=scored.score)
                found[role] = summarize_baseline("null", hit.label, rows)
            else:
                # Nothing to score beside the headline: the score is unknown, not its
                # score on all it ran (read as "on the shared tasks"); its passes stand.
                null_check = dataclasses.replace(every, score=None)
                absent[role] = f"{hit.label} shares no task with A and B"
            continue
        if len(rows) == 0:
            absent[role] = f"{hit.label} is marked {role} but shares no task with A and B"
            continue
        baseline = summarize_baseline(check_role(role), hit.label, rows, human_rate=human_rate)
        if role == "human":
            baseline = dataclasses.replace(baseline, note=_grading_note(hit.graders, sb))
        found[role] = baseline
    return null_check, found, absent


def mark_baseline(store: str | Path, run_id: str, role: str | None) -> Run:
    """Mark a stored run as a baseline role (``None`` clears it): only the run's config
    changes, never its trials, and the store's audit log records the mark. A run another
    session is writing is refused (`agentgauge.store.claims.RunClaimed`): that session
    rewrites the run's config as it ends, and would put the role back."""
    check_store_path(store)
    if role is not None:
        check_role(role, field="--mark")
    with Store(store, create=False) as db:
        run = db.require_run(run_id)
        # Read first, at once: a session holding the store's write lock (a re-grade
        # under way) would keep the transaction below waiting, then failing as "locked".
        refuse_claimed(db.conn, run_id, then=AGAIN)
        was = run.config.get(ROLE_KEY)
        config = {k: v for k, v in run.config.items() if k != ROLE_KEY}
        if role is not None:
            config[ROLE_KEY] = role
        with db.transaction():
            # In the write transaction: no session claims the run before the mark lands.
            refuse_claimed(db.conn, run_id, then=AGAIN)
            db.update_run_config(run_id, config)
            db.audit("baseline_marked", run_id=run_id, detail={"role": role, "was": was})
        return run.model_copy(update={"config": config})
