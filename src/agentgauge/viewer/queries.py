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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentgauge.model_calls import FIGURES
from agentgauge.schema import Run, Trial, runs_entry
from agentgauge.store import Store
from agentgauge.store.claims import writing, writing_entry
from agentgauge.store.rows import UNREADABLE, damaged_success, loads, unreadable

__all__ = [
    "PAGE_SIZE",
    "RUN_CHOICES",
    "Cell",
    "Page",
    "load_trial",
    "run_header",
    "run_ids",
    "run_stamp",
    "runs_page",
    "task_cells",
    "task_page",
]

#: Rows on one page of the runs list and of a run's tasks.
PAGE_SIZE = 50

#: A trial that counts as passed: a success that is not an infrastructure error.
#: The metrics count an infra error as a failure (`agentgauge.schema.infra_error`:
#: not completed, and the agent not to blame); this is that rule in SQL.
_PASSED = "(success = 1 AND NOT (status != 'completed' AND IFNULL(error_kind, '') != 'agent'))"
#: A trial that did not finish (error or timeout, whoever is to blame).
_ERRORED = "(status != 'completed')"
#: A trial whose stored success is neither 1, 0 nor NULL: a damaged row, neither a pass
#: nor a failure (`agentgauge.store.rows.stored_flag`).
_DAMAGED = "(success NOT IN (0, 1))"


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


def _span(store: Store, run_id: str) -> tuple[int, int] | None:
    """The lowest and highest trial key of the run (from the index alone)."""
    lo, hi = store.conn.execute(
        "SELECT MIN(id), MAX(id) FROM trials WHERE run_id = ?", (run_id,)
    ).fetchone()
    return None if lo is None else (int(lo), int(hi))


#: The trials of one run, for an aggregate over all of them: the run's span of keys,
#: scanned in key order (``+run_id`` keeps SQLite off the index). A run's trials are
#: written together, so the span is mostly theirs, and a sequential scan beats one
#: index descent per trial (0.11 s against 0.59 s for 200,000 trials, measured).
_IN_SPAN = "id BETWEEN ? AND ? AND +run_id = ?"


def runs_page(store: Store, page: int = 1, size: int = PAGE_SIZE) -> Page:
    """One page of runs, oldest first: id, suite, agent/model, trials, created, and the
    base variant's passed/total counts (an SQL aggregate per run on the page)."""
    (total,) = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
    shown, offset = _page(page, total, size)
    runs = store.conn.execute(
        "SELECT run_id, agent, model, suite, suite_version, created_at, config FROM runs"
        " ORDER BY created_at, rowid LIMIT ? OFFSET ?",
        (size, offset),
    ).fetchall()
    out = []
    live = writing(store.conn)
    for run_id, agent, model, suite, version, created, config in runs:
        span = _span(store, run_id)
        n = n_base = errors = 0
        passed: int | None = 0
        bad_pk = None
        if span is not None:
            n, n_base, passed, errors, bad_pk = store.conn.execute(
                "SELECT COUNT(*), SUM(variant = 'base'),"
                f" SUM(variant = 'base' AND {_PASSED}), SUM({_ERRORED}),"
                f" MIN(CASE WHEN {_DAMAGED} THEN id END)"
                f" FROM trials WHERE {_IN_SPAN}",
                (*span, run_id),
            ).fetchone()
        fields = {
            "run_id": run_id,
            "agent": agent,
            "model": model,
            "suite": suite,
            "suite_version": version,
            "created_at": created,
            "n_trials": n,
        }
        damaged = []
        try:
            header = Run(**fields, config=loads(config or "{}"))
        except UNREADABLE as exc:
            # One run's damaged settings must not take the list of every run with it:
            # the run is listed, with what is damaged, and its counts (plain columns).
            header = Run(**fields)
            damaged.append(": ".join(p for p in unreadable(exc, "config") if p))
        if bad_pk is not None:
            # A trial whose success is neither pass nor fail: the run is listed, said so,
            # and its passed count is unknown (its page refuses the trial by name).
            (value,) = store.conn.execute(
                "SELECT success FROM trials WHERE id = ?", (bad_pk,)
            ).fetchone()
            damaged.append(damaged_success(bad_pk, value))
            passed = None
        out.append(
            {
                # The fields `agentgauge runs --json` prints, by the same function.
                **runs_entry(header),
                "damaged": "; ".join(damaged) or None,
                "writing": writing_entry(live.get(run_id)),
                "errors": errors,
                "base": {
                    "n": n_base,
                    "passed": passed,
                    # Unknown, not 0%, when the run has no base-variant trial or a
                    # trial whose success is damaged.
                    "success_rate": passed / n_base if n_base and passed is not None else None,
                },
            }
        )
    return Page(out, shown, _pages(total, size), total)


def run_header(store: Store, run_id: str) -> dict[str, Any] | None:
    """The run's header (the fields ``agentgauge runs --json`` prints: `runs_entry`,
    and ``damaged``, null here since a damaged header raises) with its active grade
    version."""
    run = store.get_run(run_id)
    if run is None:
        return None
    return {
        **runs_entry(run),
        "damaged": None,
        "writing": writing_entry(writing(store.conn).get(run_id)),
        "grade_version": store.active_grade_version(run_id),
    }


#: What of a run's trials changes in place: the figures of their transcripts, which
#: ``agentgauge collect`` brings up to date when it joins spans to a stored trial
#: (`Store.append_events`), with no trial added.
_STAMP = ", ".join(f"COUNT({c}), TOTAL({c})" for c in FIGURES)


def run_stamp(store: Store, run_id: str) -> tuple[Any, ...]:
    """What tells this run's figures from their last reading when no trial was added
    nor grade activated: the count and sum of each transcript figure over its trials
    (one scan of the run's span of keys, a few hundredths of a second for 100,000 trials)."""
    span = _span(store, run_id)
    if span is None:
        return ()
    return tuple(
        store.conn.execute(
            f"SELECT {_STAMP} FROM trials WHERE {_IN_SPAN}", (*span, run_id)
        ).fetchone()
    )


#: How many runs the diff form offers (the newest), besides the runs compared.
RUN_CHOICES = 1_000


def run_ids(
    store: Store, keep: Sequence[str] = (), limit: int = RUN_CHOICES
) -> tuple[list[str], int]:
    """The diff form's choices, newest first: the newest ``limit`` runs and the runs in
    ``keep`` (the runs compared) that the store has, wherever they fall; and how many
    runs the store holds, so the form can say when it offers fewer. Without ``keep``
    a diff of an older run showed the newest run selected, and resubmitting the form
    compared another run."""
    order = " ORDER BY created_at DESC, rowid DESC"
    ids = [r[0] for r in store.conn.execute(f"SELECT run_id FROM runs{order} LIMIT ?", (limit,))]
    missing = sorted(set(keep) - set(ids))
    if missing:
        marks = ",".join("?" * len(missing))
        older = store.conn.execute(
            f"SELECT run_id FROM runs WHERE run_id IN ({marks}){order}", missing
        )
        ids += [r[0] for r in older]
    (total,) = store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()
    return ids, total


#: A trial's mark on the tasks page, by the same rules as the counts beside it.
_MARK = f"CASE WHEN {_PASSED} THEN 'pass' WHEN {_ERRORED} THEN 'error' ELSE 'fail' END"


@dataclass(frozen=True)
class Cell:
    """One (task, variant, agent, model) cell of a run: its trials, passes and errors."""

    task_id: str
    variant: str
    agent: str | None
    model: str | None
    family: str | None
    n: int
    passed: int
    errors: int


def task_cells(store: Store, run_id: str) -> list[Cell]:
    """Every cell of the run, by task id (one SQL aggregate; the tasks page filters
    and pages these, so the viewer keeps them per run)."""
    span = _span(store, run_id)
    if span is None:
        return []
    rows = store.conn.execute(
        f"SELECT task_id, variant, agent, model, MAX(family), COUNT(*), SUM({_PASSED}),"
        f" SUM({_ERRORED}), MAX({_DAMAGED}) FROM trials WHERE {_IN_SPAN}"
        # SQLite groups NULLs together; sorting here beats an ORDER BY (0.2 s against
        # 0.5 s for 100,000 trials, measured).
        " GROUP BY task_id, variant, agent, model",
        (*span, run_id),
    ).fetchall()
    if any(row[-1] for row in rows):
        # A trial whose success is neither pass nor fail: named, as the run page does.
        store.refuse_damaged_success(run_id)
    return sorted((Cell(*row[:-1]) for row in rows), key=lambda c: c.task_id)


def task_page(
    store: Store,
    run_id: str,
    cells: list[Cell] | None = None,
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

    ``cells`` are the run's `task_cells` (read here when not given). ``variant``
    narrows everything, counts included, to that variant, and ``task_id`` to that
    one task; ``failed_only`` keeps tasks with a trial that did not pass and
    ``flaky_only`` tasks with a cell that both passed and failed (`explain.flips`).
    """
    tasks: dict[str, dict[str, Any]] = {}
    for c in task_cells(store, run_id) if cells is None else cells:
        if (variant is not None and c.variant != variant) or (
            task_id is not None and c.task_id != task_id
        ):
            continue
        row = tasks.setdefault(
            c.task_id,
            {"task_id": c.task_id, "family": c.family, "n": 0, "passed": 0, "errors": 0},
        )
        row["n"] += c.n
        row["passed"] += c.passed
        row["errors"] += c.errors
        row["flaky"] = row.get("flaky", False) or 0 < c.passed < c.n
    kept = [
        t
        for t in tasks.values()
        if (not failed_only or t["passed"] < t["n"]) and (not flaky_only or t["flaky"])
    ]
    shown, offset = _page(page, len(kept), size)
    rows = {t["task_id"]: {**t, "cells": {}} for t in kept[offset : offset + size]}
    if rows:
        where, params = "run_id = ?", [run_id]
        if variant is not None:
            where += " AND variant = ?"
            params.append(variant)
        marks = ",".join("?" * len(rows))
        trials = store.conn.execute(
            f"SELECT id, task_id, variant, agent, model, trial, {_MARK}"
            f" FROM trials WHERE {where} AND task_id IN ({marks})"
            " ORDER BY task_id, variant, agent, model, trial",
            (*params, *rows),
        )
        for pk, task, var, agent, model, trial, mark in trials:
            cell = rows[task]["cells"].setdefault(
                (var, agent, model),
                {"variant": var, "agent": agent, "model": model, "trials": []},
            )
            cell["trials"].append({"pk": pk, "trial": trial, "mark": mark})
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
    return Page(list(rows.values()), shown, _pages(len(kept), size), len(kept))


def load_trial(store: Store, run_id: str, pk: int) -> Trial | None:
    """The run's trial with primary key ``pk``, with its transcript and its grades of
    the run's active grade version (``None`` when the run has no such trial)."""
    return store.trial(run_id, pk)
