"""The viewer's read queries: pages of runs, tasks and trials straight from SQL.

Every list the viewer shows is one page of rows (``LIMIT``/``OFFSET``) with its
counts from an SQL aggregate, so a run of 100,000 trials opens without a Python
object per trial. Every value from the address bar (run ids, task ids, trial
keys, variants) reaches SQLite as a bound parameter, never as SQL text. The
store is opened read-only (`Store(path, readonly=True)`); nothing here writes.

Outcomes are those of each run's active grade version, which the ``trials`` rows
hold (docs/store.md, "Grade versions").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agentgauge.schema import TRIAL_FIELDS, Grade, Trial
from agentgauge.store import Store
from agentgauge.store.layout import column_of, document_text
from agentgauge.store.rows import trial_of

__all__ = [
    "PAGE_SIZE",
    "Page",
    "load_trial",
    "run_header",
    "run_ids",
    "runs_page",
    "task_page",
    "variants",
]

#: Rows on one page of the runs list and of a run's tasks.
PAGE_SIZE = 50

#: A trial that counts as passed: a success that is not an infrastructure error.
#: The metrics count an infra error as a failure (`agentgauge.schema.infra_error`:
#: not completed, and the agent not to blame); this is that rule in SQL.
_PASSED = "(success = 1 AND NOT (status != 'completed' AND IFNULL(error_kind, '') != 'agent'))"
#: A trial that did not finish (error or timeout, whoever is to blame).
_ERRORED = "(status != 'completed')"


@dataclass(frozen=True)
class Page:
    """One page of rows and where it sits among them."""

    rows: list[dict[str, Any]]
    page: int
    """1-based page number."""
    pages: int
    total: int

    def to_dict(self) -> dict[str, Any]:
        return {"page": self.page, "pages": self.pages, "total": self.total}


def _pages(total: int, size: int) -> int:
    return max(1, -(-total // size))


def _page(page: int, total: int, size: int) -> tuple[int, int]:
    """The page actually shown (clamped into range) and its row offset."""
    shown = min(max(1, page), _pages(total, size))
    return shown, (shown - 1) * size


def runs_page(store: Store, page: int = 1, size: int = PAGE_SIZE) -> Page:
    """One page of runs, oldest first: id, suite, agent/model, trials, created, and the
    base variant's passed/total counts (one aggregate over the page's runs)."""
    (total,) = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
    shown, offset = _page(page, total, size)
    rows = store.conn.execute(
        "SELECT r.run_id, r.agent, r.model, r.suite, r.suite_version, r.created_at,"
        " COUNT(t.id),"
        " SUM(CASE WHEN t.variant = 'base' THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN t.variant = 'base' AND {_PASSED} THEN 1 ELSE 0 END),"
        f" SUM(CASE WHEN {_ERRORED} THEN 1 ELSE 0 END)"
        " FROM (SELECT rowid AS at, * FROM runs ORDER BY created_at, rowid LIMIT ? OFFSET ?) r"
        " LEFT JOIN trials t ON t.run_id = r.run_id"
        " GROUP BY r.run_id ORDER BY r.created_at, r.at",
        (size, offset),
    ).fetchall()
    out = []
    for run_id, agent, model, suite, version, created, n, n_base, passed_base, errors in rows:
        out.append(
            {
                "run_id": run_id,
                "agent": agent,
                "model": model,
                "suite": suite,
                "suite_version": version,
                "created_at": created,
                "n_trials": n,
                "errors": errors or 0,
                "base": {
                    "n": n_base or 0,
                    "passed": passed_base or 0,
                    # Unknown, not 0%, when the run has no base-variant trial.
                    "success_rate": passed_base / n_base if n_base else None,
                },
            }
        )
    return Page(out, shown, _pages(total, size), total)


def run_header(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's header (``agentgauge.runs/1`` fields) with its active grade version."""
    run = store.get_run(run_id)
    if run is None:
        return None
    return {
        "run_id": run.run_id,
        "agent": run.agent,
        "model": run.model,
        "suite": run.suite,
        "suite_version": run.suite_version,
        "n_trials": run.n_trials,
        "created_at": run.created_at,
        "grade_version": store.active_grade_version(run_id),
    }


def run_ids(store: Store, limit: int = 1_000) -> list[str]:
    """Run ids, newest first (the diff page's choices)."""
    rows = store.conn.execute(
        "SELECT run_id FROM runs ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
    )
    return [r[0] for r in rows]


def variants(store: Store, run_id: str) -> list[str]:
    """The run's variants, ``base`` first."""
    rows = store.conn.execute(
        "SELECT DISTINCT variant FROM trials WHERE run_id = ?", (run_id,)
    ).fetchall()
    return sorted((r[0] for r in rows), key=lambda v: (v != "base", v))


def _mark(success: int, status: str, error_kind: str | None) -> str:
    if status != "completed":
        return "error"
    return "pass" if success else "fail"


def task_page(
    store: Store,
    run_id: str,
    *,
    variant: str | None = None,
    task_id: str | None = None,
    failed_only: bool = False,
    flaky_only: bool = False,
    page: int = 1,
    size: int = PAGE_SIZE,
) -> Page:
    """One page of the run's tasks, by task id, each with one mark per trial
    (``pass``, ``fail`` or ``error``) per variant, agent and model.

    ``failed_only`` keeps tasks with a trial that did not pass; ``flaky_only``
    tasks with a cell (variant, agent, model) that both passed and failed.
    ``variant`` narrows everything, counts included, to that variant; ``task_id``
    to that one task.
    """
    where, params = "run_id = ?", [run_id]
    for column, value in (("variant", variant), ("task_id", task_id)):
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    having = []
    if failed_only:
        having.append("SUM(passed) < SUM(n)")
    if flaky_only:
        having.append("SUM(CASE WHEN passed > 0 AND passed < n THEN 1 ELSE 0 END) > 0")
    cells = (
        f"SELECT task_id, MAX(family) AS family, COUNT(*) AS n, SUM({_PASSED}) AS passed,"
        f" SUM({_ERRORED}) AS errors FROM trials WHERE {where}"
        " GROUP BY task_id, variant, IFNULL(agent, ''), IFNULL(model, '')"
    )
    tasks = (
        "SELECT task_id, MAX(family), SUM(n), SUM(passed), SUM(errors)"
        f" FROM ({cells}) GROUP BY task_id" + (f" HAVING {' AND '.join(having)}" if having else "")
    )
    (total,) = store.conn.execute(f"SELECT COUNT(*) FROM ({tasks})", params).fetchone()
    shown, offset = _page(page, total, size)
    found = store.conn.execute(
        f"{tasks} ORDER BY task_id LIMIT ? OFFSET ?", (*params, size, offset)
    ).fetchall()
    rows: dict[str, dict[str, Any]] = {}
    for task_id, family, n, passed, errors in found:
        rows[task_id] = {
            "task_id": task_id,
            "family": family,
            "n": n,
            "passed": passed,
            "errors": errors,
            "cells": {},
        }
    if rows:
        marks = ",".join("?" * len(rows))
        trials = store.conn.execute(
            "SELECT id, task_id, variant, agent, model, trial, success, status, error_kind"
            f" FROM trials WHERE {where} AND task_id IN ({marks})"
            " ORDER BY task_id, variant, agent, model, trial",
            (*params, *rows),
        )
        for pk, task_id, var, agent, model, trial, success, status, kind in trials:
            key = (var, agent, model)
            cells_of = rows[task_id]["cells"]
            cell = cells_of.setdefault(
                key, {"variant": var, "agent": agent, "model": model, "trials": []}
            )
            cell["trials"].append({"pk": pk, "trial": trial, "mark": _mark(success, status, kind)})
        for row in rows.values():
            row["cells"] = sorted(
                row["cells"].values(),
                key=lambda c: (
                    c["variant"] != "base",
                    c["variant"],
                    str(c["agent"]),
                    str(c["model"]),
                ),
            )
    return Page(list(rows.values()), shown, _pages(total, size), total)


_TRIAL_SELECT = ", ".join(column_of(f) for f in TRIAL_FIELDS)


def load_trial(store: Store, run_id: str, pk: int) -> Trial | None:
    """The run's trial with primary key ``pk``, with its transcript and its grades of
    the run's active grade version (``None`` when the run has no such trial)."""
    if store.schema_version < 2:  # documents kept inline: the store's own reader knows how
        return next(
            (
                t
                for t, k in zip(store.trials(run_id), store.trial_keys(run_id), strict=True)
                if k == pk
            ),
            None,
        )
    row = store.conn.execute(
        f"SELECT {_TRIAL_SELECT} FROM trials WHERE id = ? AND run_id = ?", (pk, run_id)
    ).fetchone()
    if row is None:
        return None

    def document(value: int) -> str:
        (data,) = store.conn.execute("SELECT data FROM documents WHERE id = ?", (value,)).fetchone()
        return document_text(data)

    trial = trial_of(row, document)
    trial.events, _ = store.trial_events(pk)
    version = store.active_grade_version(run_id)
    grades = store.conn.execute(
        "SELECT grader, score, passed, status, evidence, judge_model FROM grades g"
        " WHERE trial_pk = ? AND version = (SELECT MAX(version) FROM grades"
        " WHERE trial_pk = ? AND version <= ?) ORDER BY grader",
        (pk, pk, version),
    )
    trial.grades = [
        Grade(
            grader=grader,
            score=score,
            passed=None if passed is None else bool(passed),
            status=status,
            evidence=None if evidence is None else json.loads(evidence),
            judge_model=judge,
        )
        for grader, score, passed, status, evidence, judge in grades
    ]
    return trial
