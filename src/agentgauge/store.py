"""The SQLite store: the only module that speaks SQL (SPEC 2).

One file, WAL journal, foreign keys on. Tables: ``runs`` (with provenance),
``tasks`` (the suite's tasks as a run saw them), ``trials`` (one row per
attempt, unique per (run, task, trial, variant, agent, model)), ``events``
(each trial's transcript), ``grades`` (versioned: re-grading adds a version
beside the old) and ``audit`` (every use of held-out tasks).

Durability: ``synchronous=NORMAL`` in WAL mode survives a killed process (only
an OS crash or power loss can lose the last commits), which is what resume
needs; each harness trial is committed in its own transaction.
"""

from __future__ import annotations

import json
import queue
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from agentgauge._version import __version__
from agentgauge.canonical import canonical_json
from agentgauge.errors import InputError
from agentgauge.schema import Grade, Run, Task, Trial
from agentgauge.table import TrialTable

__all__ = ["DEFAULT_STORE", "SCHEMA_VERSION", "Store", "utc_now"]

DEFAULT_STORE = "agentgauge.db"
SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    run_id             TEXT PRIMARY KEY,
    agent              TEXT,
    model              TEXT,
    suite              TEXT,
    suite_version      TEXT,
    created_at         TEXT NOT NULL,
    source             TEXT,
    source_sha256      TEXT,
    agentgauge_version TEXT,
    config             TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS tasks (
    run_id        TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL,
    family        TEXT,
    split         TEXT,
    capability    TEXT,
    human_minutes REAL,
    spec          TEXT,
    PRIMARY KEY (run_id, task_id)
);
CREATE TABLE IF NOT EXISTS trials (
    id               INTEGER PRIMARY KEY,
    run_id           TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    task_id          TEXT NOT NULL,
    trial            INTEGER NOT NULL,
    variant          TEXT NOT NULL,
    agent            TEXT,
    model            TEXT,
    success          INTEGER NOT NULL,
    score            REAL NOT NULL,
    status           TEXT NOT NULL,
    error            TEXT,
    error_kind       TEXT,
    family           TEXT,
    split            TEXT,
    capability       TEXT,
    human_minutes    REAL,
    cost_usd         REAL,
    judge_cost_usd   REAL,
    input_tokens     INTEGER,
    output_tokens    INTEGER,
    latency_s        REAL,
    tool_calls       INTEGER,
    model_calls      INTEGER,
    confidence       REAL,
    expected_control TEXT,
    control          TEXT,
    seed             INTEGER,
    answer           TEXT,
    final_state      TEXT,
    metadata         TEXT NOT NULL DEFAULT '{}',
    created_at       TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS trials_cell
    ON trials (run_id, task_id, trial, variant, IFNULL(agent, ''), IFNULL(model, ''));
CREATE TABLE IF NOT EXISTS events (
    trial_pk INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    type     TEXT NOT NULL,
    t        REAL,
    data     TEXT NOT NULL,
    PRIMARY KEY (trial_pk, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grades (
    trial_pk    INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    grader      TEXT NOT NULL,
    score       REAL,
    passed      INTEGER,
    status      TEXT,
    evidence    TEXT,
    judge_model TEXT,
    PRIMARY KEY (trial_pk, version, grader)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS grade_versions (
    run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    graders    TEXT NOT NULL DEFAULT '[]',
    note       TEXT,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE IF NOT EXISTS audit (
    id     INTEGER PRIMARY KEY,
    at     TEXT NOT NULL,
    run_id TEXT,
    action TEXT NOT NULL,
    detail TEXT
);
"""

_TRIAL_COLUMNS = (
    "task_id",
    "trial",
    "variant",
    "agent",
    "model",
    "success",
    "score",
    "status",
    "error",
    "error_kind",
    "family",
    "split",
    "capability",
    "human_minutes",
    "cost_usd",
    "judge_cost_usd",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "tool_calls",
    "model_calls",
    "confidence",
    "expected_control",
    "control",
    "seed",
)


_LAST_NOW: tuple[int, str] = (-1, "")


def utc_now() -> str:
    """The current UTC time, ISO-8601 with seconds."""
    global _LAST_NOW
    second = int(time.time())
    if _LAST_NOW[0] != second:  # formatted once per second: the harness asks per trial
        _LAST_NOW = (second, datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds"))
    return _LAST_NOW[1]


def _dumps(value: Any) -> str:
    return "{}" if type(value) is dict and not value else canonical_json(value, ascii=True)


_INSERT_TRIAL = (
    f"INSERT INTO trials(run_id, {', '.join(_TRIAL_COLUMNS)}, answer, final_state, metadata,"
    f" created_at) VALUES (?, {', '.join('?' * len(_TRIAL_COLUMNS))}, ?, ?, ?, ?)"
)
_INSERT_GRADE = (
    "INSERT OR REPLACE INTO grades(trial_pk, version, grader, score, passed, status,"
    " evidence, judge_model) VALUES (?,?,?,?,?,?,?,?)"
)

TrialRows = tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]
"""One trial as SQL parameters: its ``trials`` row, its events (without the
trial's key) and its grades (without key and version)."""


def trial_rows(run_id: str, t: Trial) -> TrialRows:
    """``t`` as the parameters of its SQL rows (all the Python work of writing it)."""
    state = None if t.final_state is None else _dumps(t.final_state)
    trial_row = (
        run_id,
        *[getattr(t, c) for c in _TRIAL_COLUMNS],
        t.answer,
        state,
        _dumps(t.metadata),
        utc_now(),
    )
    events = [
        (i, e.type, e.t, e.model_dump_json(exclude_none=True)) for i, e in enumerate(t.events)
    ]
    return trial_row, events, _grade_rows(t.grades)


def _grade_rows(grades: Sequence[Grade]) -> list[tuple[Any, ...]]:
    return [
        (
            g.grader,
            g.score,
            None if g.passed is None else int(g.passed),
            g.status,
            None if g.evidence is None else _dumps(g.evidence),
            g.judge_model,
        )
        for g in grades
    ]


class Store:
    """A SQLite store of runs, trials, transcripts and grades.

    Use as a context manager or call `close`. ``path`` may be ``":memory:"``.
    """

    def __init__(self, path: str | Path = DEFAULT_STORE, *, create: bool = True) -> None:
        self.path = str(path)
        if not create and self.path != ":memory:" and not Path(self.path).exists():
            raise InputError("no such store (run or import something first)", file=self.path)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=30)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"not an agentgauge store: {exc}", file=self.path) from None
        found = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if found is None:
            self.conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(found[0]) > SCHEMA_VERSION:
            raise InputError(
                f"store schema {found[0]} is newer than this agentgauge ({SCHEMA_VERSION}); "
                "upgrade agentgauge",
                file=self.path,
            )

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic transaction: everything inside commits together or not at all."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        else:
            self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ runs

    def create_run(self, run: Run, *, exist_ok: bool = False) -> None:
        """Record a run's header (in the caller's transaction when one is open)."""
        if self.get_run(run.run_id) is not None:
            if exist_ok:
                return
            raise InputError(
                f"run {run.run_id!r} already exists in this store; choose another --run-id",
                file=self.path,
                field="run_id",
            )
        self.conn.execute(
            "INSERT INTO runs(run_id, agent, model, suite, suite_version, created_at, source,"
            " source_sha256, agentgauge_version, config) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                run.run_id,
                run.agent,
                run.model,
                run.suite,
                run.suite_version,
                run.created_at,
                run.source,
                run.source_sha256,
                run.agentgauge_version or __version__,
                _dumps(run.config),
            ),
        )
        self.conn.execute(
            "INSERT OR IGNORE INTO grade_versions(run_id, version, created_at, note)"
            " VALUES (?, 1, ?, 'as recorded')",
            (run.run_id, run.created_at),
        )

    def get_run(self, run_id: str) -> Run | None:
        """The run's header with its trial count, or ``None``."""
        row = self.conn.execute(
            "SELECT r.run_id, r.agent, r.model, r.suite, r.suite_version, r.created_at, r.source,"
            " r.source_sha256, r.agentgauge_version, r.config,"
            " (SELECT COUNT(*) FROM trials t WHERE t.run_id = r.run_id)"
            " FROM runs r WHERE r.run_id = ?",
            (run_id,),
        ).fetchone()
        return None if row is None else self._run(row)

    def list_runs(self) -> list[Run]:
        """All runs, oldest first."""
        rows = self.conn.execute(
            "SELECT r.run_id, r.agent, r.model, r.suite, r.suite_version, r.created_at, r.source,"
            " r.source_sha256, r.agentgauge_version, r.config, COUNT(t.id)"
            " FROM runs r LEFT JOIN trials t ON t.run_id = r.run_id"
            " GROUP BY r.run_id ORDER BY r.created_at, r.rowid"
        ).fetchall()
        return [self._run(row) for row in rows]

    @staticmethod
    def _run(row: Sequence[Any]) -> Run:
        return Run(
            run_id=row[0],
            agent=row[1],
            model=row[2],
            suite=row[3],
            suite_version=row[4],
            created_at=row[5],
            source=row[6],
            source_sha256=row[7],
            agentgauge_version=row[8],
            config=json.loads(row[9] or "{}"),
            n_trials=row[10],
        )

    def require_run(self, run_id: str) -> Run:
        run = self.get_run(run_id)
        if run is None:
            known = ", ".join(r.run_id for r in self.list_runs()[-5:]) or "none"
            raise InputError(
                f"no run {run_id!r} in this store (recent runs: {known})",
                file=self.path,
                field="run_id",
            )
        return run

    def update_run_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Replace a run's recorded settings (a resumed run that was extended)."""
        self.conn.execute("UPDATE runs SET config = ? WHERE run_id = ?", (_dumps(config), run_id))

    def delete_run(self, run_id: str) -> None:
        with self.transaction():
            self.conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))

    # ------------------------------------------------------------------ tasks

    def add_tasks(self, run_id: str, tasks: Iterable[Task]) -> None:
        """Record the tasks a run uses (idempotent)."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO tasks(run_id, task_id, family, split, capability,"
            " human_minutes, spec) VALUES (?,?,?,?,?,?,?)",
            [
                (
                    run_id,
                    t.id,
                    t.family,
                    t.split,
                    t.capability,
                    t.human_minutes,
                    t.model_dump_json(exclude_defaults=True),
                )
                for t in tasks
            ],
        )

    def get_tasks(self, run_id: str) -> list[Task]:
        rows = self.conn.execute(
            "SELECT spec FROM tasks WHERE run_id = ? AND spec IS NOT NULL ORDER BY task_id",
            (run_id,),
        ).fetchall()
        return [Task.model_validate_json(r[0]) for r in rows]

    # ------------------------------------------------------------------ trials

    def add_trial(self, run_id: str, trial: Trial) -> int:
        """Write one trial with its events and grades (in the caller's transaction,
        or in its own when none is open). Returns the trial's primary key."""
        if self.conn.in_transaction:
            return self._insert_trial(run_id, trial)
        with self.transaction():
            return self._insert_trial(run_id, trial)

    def add_trials(self, run_id: str, trials: Iterable[Trial]) -> int:
        """Write many trials in one transaction. Returns how many were written."""
        n = 0
        with self.transaction():
            for trial in trials:
                self._insert_trial(run_id, trial)
                n += 1
        return n

    def _insert_trial(self, run_id: str, t: Trial) -> int:
        return self._write_rows(trial_rows(run_id, t))

    def _write_rows(self, rows: TrialRows) -> int:
        """Insert one trial's prepared rows (`trial_rows`); returns its primary key."""
        trial_row, event_rows, grade_rows = rows
        try:
            cur = self.conn.execute(_INSERT_TRIAL, trial_row)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise InputError(
                    f"trial {trial_row[2]} of task {trial_row[1]!r} (variant {trial_row[3]!r}) "
                    f"is already stored in run {trial_row[0]!r}",
                    file=self.path,
                    field="trial",
                ) from None
            raise
        pk = cur.lastrowid
        assert pk is not None
        if event_rows:
            self.conn.executemany(
                "INSERT INTO events(trial_pk, seq, type, t, data) VALUES (?,?,?,?,?)",
                [(pk, *row) for row in event_rows],
            )
        if grade_rows:
            self.conn.executemany(_INSERT_GRADE, [(pk, 1, *row) for row in grade_rows])
        return pk

    def _insert_grades(self, trial_pk: int, version: int, grades: Sequence[Grade]) -> None:
        self.conn.executemany(
            _INSERT_GRADE, [(trial_pk, version, *row) for row in _grade_rows(grades)]
        )

    def existing_cells(self, run_id: str) -> set[tuple[str, int, str, str | None, str | None]]:
        """(task, trial, variant, agent, model) cells already stored, for resume."""
        rows = self.conn.execute(
            "SELECT task_id, trial, variant, agent, model FROM trials WHERE run_id = ?", (run_id,)
        )
        return {(r[0], r[1], r[2], r[3], r[4]) for r in rows}

    def trials(self, run_id: str, *, events: bool = True) -> list[Trial]:
        """The run's trials as models, in insertion order, with events and latest grades."""
        cur = self.conn.execute(
            f"SELECT id, {', '.join(_TRIAL_COLUMNS)}, answer, final_state, metadata"
            " FROM trials WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        out: list[Trial] = []
        pks: list[int] = []
        for row in cur.fetchall():
            data = dict(zip(_TRIAL_COLUMNS, row[1:-3], strict=True))
            data["success"] = bool(data["success"])
            data["answer"] = row[-3]
            data["final_state"] = None if row[-2] is None else json.loads(row[-2])
            data["metadata"] = json.loads(row[-1])
            clean = {k: v for k, v in data.items() if v is not None}
            out.append(Trial.model_validate(clean))
            pks.append(row[0])
        if events and out:
            by_pk = {pk: t for pk, t in zip(pks, out, strict=True)}
            for pk, data in self.conn.execute(
                "SELECT e.trial_pk, e.data FROM events e JOIN trials t ON t.id = e.trial_pk"
                " WHERE t.run_id = ? ORDER BY e.trial_pk, e.seq",
                (run_id,),
            ):
                by_pk[pk].events.append(_event_adapter().validate_json(data))
            for pk, grade in self._latest_grades(run_id):
                by_pk[pk].grades.append(grade)
        return out

    def trial_keys(self, run_id: str) -> list[int]:
        """Primary keys of the run's trials, in insertion order."""
        rows = self.conn.execute("SELECT id FROM trials WHERE run_id = ? ORDER BY id", (run_id,))
        return [r[0] for r in rows]

    def table(self, run_id: str) -> TrialTable:
        """The run's trials as a columnar table, straight from SQL (no models)."""
        cols = (
            "task_id, trial, success, score, agent, model, variant, family, split, capability,"
            " human_minutes, cost_usd, judge_cost_usd, input_tokens, output_tokens, latency_s,"
            " tool_calls, model_calls, confidence, status, error_kind, expected_control, control"
        )
        rows = self.conn.execute(
            f"SELECT {cols} FROM trials WHERE run_id = ? ORDER BY id", (run_id,)
        ).fetchall()
        n = len(rows)
        cols_t = list(zip(*rows, strict=True)) if rows else [()] * 23

        def obj(i: int) -> np.ndarray[Any, np.dtype[np.object_]]:
            a = np.empty(n, dtype=object)
            a[:] = list(cols_t[i])
            return a

        def num(i: int) -> np.ndarray[Any, np.dtype[np.float64]]:
            return np.array([np.nan if v is None else v for v in cols_t[i]], dtype=np.float64)

        status = obj(19)
        kind = obj(20)
        infra = np.array(
            [s != "completed" and k != "agent" for s, k in zip(status, kind, strict=True)],
            dtype=bool,
        )
        return TrialTable(
            task_id=obj(0),
            trial=np.array(cols_t[1], dtype=np.int64),
            success=np.array(cols_t[2], dtype=bool),
            score=np.array(cols_t[3], dtype=np.float64),
            agent=obj(4),
            model=obj(5),
            variant=obj(6),
            family=obj(7),
            split=obj(8),
            capability=obj(9),
            human_minutes=num(10),
            cost_usd=num(11),
            judge_cost_usd=num(12),
            input_tokens=num(13),
            output_tokens=num(14),
            latency_s=num(15),
            tool_calls=num(16),
            model_calls=num(17),
            confidence=num(18),
            infra_error=infra,
            expected_control=obj(21),
            control=obj(22),
        )

    # ------------------------------------------------------------------ grades

    def _latest_grades(self, run_id: str) -> Iterator[tuple[int, Grade]]:
        rows = self.conn.execute(
            "SELECT g.trial_pk, g.grader, g.score, g.passed, g.status, g.evidence, g.judge_model"
            " FROM grades g JOIN trials t ON t.id = g.trial_pk"
            " WHERE t.run_id = ? AND g.version = ("
            "   SELECT MAX(version) FROM grades g2 WHERE g2.trial_pk = g.trial_pk)"
            " ORDER BY g.trial_pk, g.grader",
            (run_id,),
        )
        for pk, grader, score, passed, status, evidence, judge in rows:
            yield (
                pk,
                Grade(
                    grader=grader,
                    score=score,
                    passed=None if passed is None else bool(passed),
                    status=status,
                    evidence=None if evidence is None else json.loads(evidence),
                    judge_model=judge,
                ),
            )

    def new_grade_version(self, run_id: str, graders: Sequence[str], note: str = "") -> int:
        """Open a new grade version for a run (re-grading keeps the old beside it)."""
        row = self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM grade_versions WHERE run_id = ?", (run_id,)
        ).fetchone()
        version = int(row[0]) + 1
        self.conn.execute(
            "INSERT INTO grade_versions(run_id, version, created_at, graders, note)"
            " VALUES (?,?,?,?,?)",
            (run_id, version, utc_now(), _dumps(list(graders)), note),
        )
        return version

    def add_grades(self, trial_pk: int, version: int, grades: Sequence[Grade]) -> None:
        """Store grades for one trial under a grade version."""
        self._insert_grades(trial_pk, version, grades)

    def set_outcome(self, trial_pk: int, success: bool, score: float) -> None:
        """Update a trial's outcome after re-grading (the grades keep the history)."""
        self.conn.execute(
            "UPDATE trials SET success = ?, score = ? WHERE id = ?", (int(success), score, trial_pk)
        )

    # ------------------------------------------------------------------ audit

    def audit(self, action: str, *, run_id: str | None = None, detail: Any = None) -> None:
        """Log a use that reports must disclose (e.g. held-out tasks included)."""
        self.conn.execute(
            "INSERT INTO audit(at, run_id, action, detail) VALUES (?,?,?,?)",
            (utc_now(), run_id, action, None if detail is None else _dumps(detail)),
        )

    def audit_log(self, action: str | None = None) -> list[dict[str, Any]]:
        sql = "SELECT at, run_id, action, detail FROM audit"
        args: tuple[Any, ...] = ()
        if action is not None:
            sql += " WHERE action = ?"
            args = (action,)
        return [
            {"at": a, "run_id": r, "action": act, "detail": None if d is None else json.loads(d)}
            for a, r, act, d in self.conn.execute(sql + " ORDER BY id", args)
        ]

    def integrity_check(self) -> str:
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])


class TrialWriter:
    """Writes one run's trials from a background thread, each trial in its own
    transaction, so that SQLite's work overlaps the harness's event loop (the
    ``sqlite3`` module releases the GIL while SQLite runs).

    The thread has its own connection to the store's file (WAL lets the main
    connection read meanwhile). An in-memory store cannot be opened twice:
    there `submit` writes at once, in the caller's thread. The first error
    (a duplicate cell, a full disk) stops the writing and is raised by the
    next `submit` or by `close`, which waits until everything submitted is
    committed. A crash loses only trials not yet committed, which a resumed
    run (``--run-id``) runs again.
    """

    def __init__(
        self, store: Store, run_id: str, *, max_pending: int = 4096, pause_s: float = 0.005
    ) -> None:
        self.run_id = run_id
        self.max_pending = max_pending
        self.pause_s = pause_s
        self._store = store
        self._queue: queue.SimpleQueue[TrialRows | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if store.path != ":memory:" and not store.conn.in_transaction:
            self._thread = threading.Thread(
                target=self._loop, name="agentgauge-trial-writer", daemon=True
            )
            self._thread.start()

    @property
    def pending(self) -> int:
        """Trials submitted and not yet committed (an estimate, for back-pressure)."""
        return self._queue.qsize()

    def submit(self, trial: Trial) -> None:
        """Queue ``trial`` for writing (or write it now, for an in-memory store).
        Its rows are made here, so the writer's thread spends its time in SQLite
        (with the GIL released), not in Python."""
        self._raise_if_failed()
        if self._thread is None:
            self._store.add_trial(self.run_id, trial)
        else:
            self._queue.put(trial_rows(self.run_id, trial))

    def close(self) -> None:
        """Wait until every submitted trial is committed; raise the first error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        try:
            own = Store(self._store.path)
        except BaseException as exc:
            self._error = exc
            return
        try:
            while (rows := self._queue.get()) is not None:
                if self._error is None:
                    try:
                        with own.transaction():
                            own._write_rows(rows)
                    except BaseException as exc:  # raised in the caller's thread
                        self._error = exc
                if self._queue.empty():
                    # Let trials gather before blocking again: a put to a queue
                    # nobody waits on wakes no thread, and waking one costs far
                    # more than this pause in a virtual machine.
                    time.sleep(self.pause_s)
        finally:
            own.close()


_EVENT_ADAPTER: Any = None


def _event_adapter() -> Any:
    global _EVENT_ADAPTER
    if _EVENT_ADAPTER is None:
        from pydantic import TypeAdapter

        from agentgauge.schema import Event

        _EVENT_ADAPTER = TypeAdapter(Event)
    return _EVENT_ADAPTER
