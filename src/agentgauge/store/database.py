"""`Store`: runs, tasks, trials, transcripts and grades in one SQLite file.

WAL journal, foreign keys on. The tables and how trials are kept are described
in `agentgauge.store.layout` and docs/store.md; opening, versions and upgrades
in `agentgauge.store.migrate`.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import os
import secrets
import sqlite3
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress, groupby, repeat
from operator import is_not
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from agentgauge._version import __version__
from agentgauge.defaults import DEFAULT_STORE
from agentgauge.errors import AgentgaugeError, InputError, Note, first_error, whole_number
from agentgauge.facts import (
    FACTS,
    Facts,
    event_facts,
    grade_facts,
    graded_judge_cost,
)
from agentgauge.model_calls import FIGURES, figures_after
from agentgauge.schema import (
    INT64_MAX,
    TRIAL_FIELDS,
    Event,
    Grade,
    Run,
    Task,
    Trial,
    family_reason,
    infra_error,
    trial_cell_words,
)
from agentgauge.spelling import lookalike_key, quoted, spelling_difference
from agentgauge.store.claims import CLAIM, refuse_others
from agentgauge.store.faults import first_note, note_opened, noted, storage_error, store_error
from agentgauge.store.layout import (
    DOCUMENT_REFERENCES,
    FACTS_SQL,
    SCHEMA_VERSION,
    TRIAL_COLUMNS,
    column_of,
    document_id,
    document_text,
)
from agentgauge.store.migrate import open_store, statements, stored_fields
from agentgauge.store.packed import LAYOUT, RECORD, pack, unpack, update
from agentgauge.store.rows import (
    DOCUMENT_POSITIONS,
    INSERT_TRIAL,
    INSERT_TRIAL_WITH_ID,
    UNREADABLE,
    DamagedValue,
    TrialRows,
    bad_flag,
    damaged_success,
    describe_row,
    dumps,
    event_of,
    event_row,
    grade_rows,
    loads,
    record_values,
    stored_flag,
    trial_of,
    trial_rows,
    unreadable,
    utc_now,
)
from agentgauge.table import COLUMNS, SOURCE_FIELDS, TrialTable

__all__ = [
    "DEFAULT_STORE",
    "GradeVersion",
    "MissingRun",
    "StaleRecords",
    "StaleRecordsWarning",
    "Store",
    "of_held_run",
    "store_errors",
    "write_follows",
    "write_may_follow",
]


#: Where a trial row (`trial_rows`: the run id, then `TRIAL_FIELDS`) holds these fields.
_AT = {f.name: 1 + i for i, f in enumerate(TRIAL_FIELDS)}


def _trial_words(row: Sequence[Any]) -> str:
    """``trial 2, agent 'a', model not recorded, variant 'base'``: a trial row, as a
    refusal of its family names it."""
    cell = trial_cell_words(row[_AT["agent"]], row[_AT["model"]], row[_AT["variant"]])
    return f"trial {row[_AT['trial']]}, {cell}"


def _insert_trials(conn: sqlite3.Connection, params: list[tuple[Any, ...]]) -> None:
    """Insert trial rows (`INSERT_TRIAL_WITH_ID`'s parameters) naming only the columns
    each row has a value for: the others are null all the same (no column of
    ``trials`` has a default), and a null parameter costs ``sqlite3`` a look-up for an
    adapter: a trial's two dozen empty columns made a fifth of its row's insert
    (measured on an OTLP import). Rows that leave the same columns empty, one after
    another, go in one statement; the rows go in in their order."""
    for present, group in groupby(params, key=_present):
        if all(present):
            conn.executemany(INSERT_TRIAL_WITH_ID, group)
        else:
            conn.executemany(
                _insert_trial_sql(present), [tuple(compress(r, present)) for r in group]
            )


def _present(row: tuple[Any, ...]) -> tuple[bool, ...]:
    return tuple(map(is_not, row, repeat(None)))


@lru_cache(maxsize=256)
def _insert_trial_sql(present: tuple[bool, ...]) -> str:
    """`INSERT_TRIAL_WITH_ID` with the columns ``present`` marks (`_insert_trials`)."""
    names = compress(("id", "run_id", *TRIAL_COLUMNS, "created_at"), present)
    return f"INSERT INTO trials({', '.join(names)}) VALUES ({', '.join('?' * sum(present))})"


_INSERT_GRADE = (
    "INSERT OR REPLACE INTO grades(trial_pk, version, grader, score, passed, status,"
    " evidence, judge_model) VALUES (?,?,?,?,?,?,?,?)"
)


def _grades_sql(where: str = "", *, regraded: bool = False) -> str:
    """`GRADES_AS_OF` (``regraded``: `REGRADED_AS_OF`) with ``where``, a condition on the
    trials ``t`` whose values follow the run id (`_keys_sql`), added."""
    return (
        "SELECT g.trial_pk, g.grader, g.score, g.passed, g.status, g.evidence, g.judge_model"
        " FROM grades g JOIN trials t ON t.id = g.trial_pk"
        f" WHERE t.run_id = ?{where}{' AND g.version > 1' if regraded else ''} AND g.version = ("
        "   SELECT MAX(version) FROM grades g2 WHERE g2.trial_pk = g.trial_pk"
        "   AND g2.version <= ?)"
        " ORDER BY g.trial_pk, g.grader"
    )


#: A run's grades as grade version ``?`` (the last parameter) sees them: each trial's grades
#: of the latest version up to it, as ``(trial_pk, grader, score, passed, status, evidence,
#: judge_model)`` by trial and grader.
GRADES_AS_OF = _grades_sql()


#: The grades as of a version (`GRADES_AS_OF`) of the trials a re-grade graded: those
#: whose latest grades up to it are not the ones they were recorded with (version 1).
REGRADED_AS_OF = _grades_sql(regraded=True)


#: Every run's header with its trial count, oldest first (`Store.list_runs`).
_RUN_ROWS = (
    "SELECT r.run_id, r.agent, r.model, r.suite, r.suite_version, r.created_at, r.source,"
    " r.source_sha256, r.agentgauge_version, r.config, COUNT(t.id)"
    " FROM runs r LEFT JOIN trials t ON t.run_id = r.run_id"
    " GROUP BY r.run_id ORDER BY r.created_at, r.rowid"
)


#: The ``meta`` key, followed by a run's id, of the mark of the last session that opened
#: the run (`Store.mark_opened`).
_OPENED = "opened:"

#: The trials ``t`` that have no record (`agentgauge.store.packed`) under any version.
_WITHOUT_RECORDS = (
    "FROM trials t WHERE NOT EXISTS (SELECT 1 FROM trial_facts f"
    " WHERE f.run_id = t.run_id AND f.trial_pk = t.id)"
)


class StaleRecordsWarning(Note):
    """A store whose trials' records are stale or missing (`Store.stale_records`):
    reads derive them again, every time, until they are stored anew. The command
    line prints it as one line on stderr."""


@dataclass(frozen=True)
class StaleRecords:
    """The trials of a store whose records (`agentgauge.store.packed`) are not this
    agentgauge's: reads derive them again from the trials, every time (the same
    numbers, about eight times slower), until `Store.refresh_records` stores them anew."""

    path: str
    trials: int
    """How many trials' records are stale or missing."""
    why: str
    """Why, as a clause: ``derived by another agentgauge's rules``, ``laid out by
    another agentgauge``, ``never derived``, ``never stored (store schema 4 ...)``."""

    @property
    def command(self) -> str:
        """The command that stores them anew."""
        from agentgauge.display import shell_command

        return shell_command(["agentgauge", "runs", "--refresh", "--store", self.path])

    def reading(self) -> str:
        """What a read of the store says of them."""
        return (
            f"{self.path}: the records of its {_trials(self.trials)} were {self.why}, so every "
            f"read derives them from the trials (slower); store them once with: {self.command}"
        )

    def storing(self) -> str:
        """What a writable open says as it stores them anew."""
        trials = _trials(self.trials)
        return f"{self.path}: storing the records of its {trials}, {self.why} (once)"


def _trials(n: int) -> str:
    return "1 trial" if n == 1 else f"{n} trials"


#: The notes of `_note_once` (`agentgauge.store.faults.first_note`), with the store's path.
_STALE_READ = ("stale records", "read")


def _note_once(stale: StaleRecords, message: str, *, kind: str) -> None:
    """Say ``message`` (a `StaleRecordsWarning`) unless this command said it of this
    store already: a command opens a store several times."""
    if first_note("stale records", kind, _same_file(stale.path)):
        warnings.warn(StaleRecordsWarning(message), stacklevel=4)


def _same_file(path: str) -> str:
    """What a note on a store is remembered by: its file, however the user spelt it
    (``s.db`` and ``/home/me/s.db`` are one store, and get one note)."""
    return os.path.realpath(path)


#: Set while the block of `write_follows` runs.
_WRITE_FOLLOWS: ContextVar[bool] = ContextVar("agentgauge_write_follows", default=False)
#: While the block of `write_may_follow` runs: the stale stores its reads said nothing of.
_HELD_BACK: ContextVar[dict[str, StaleRecords] | None] = ContextVar(
    "agentgauge_held_back", default=None
)


@contextmanager
def write_follows() -> Iterator[None]:
    """While inside, a read-only open says nothing of stale records: the block reads
    the store only to go on and write to it (``agentgauge run`` looks for the run it
    resumes, ``agentgauge grade`` for the run it re-grades), and the writable open
    stores them anew and says so, where the read's note would point at ``agentgauge
    runs --refresh``, which the command makes needless. One note a command."""
    token = _WRITE_FOLLOWS.set(True)
    try:
        yield
    finally:
        _WRITE_FOLLOWS.reset(token)


@contextmanager
def write_may_follow() -> Iterator[None]:
    """As `write_follows`, for a block that writes to a store only when its reads find
    cause to (``agentgauge compare --include-heldout`` logs a use of held-out tasks
    only when it read some): the read's note is held back, and said when the block
    ends of each store that no write inside stored anew. One note a command."""
    held: dict[str, StaleRecords] = {}
    token = _HELD_BACK.set(held)
    try:
        yield
    finally:
        _HELD_BACK.reset(token)
    for stale in held.values():  # not when the block failed: its error says what matters
        if not noted("stale records", "write", _same_file(stale.path)):
            _note_once(stale, stale.reading(), kind="read")


@dataclass(frozen=True)
class GradeVersion:
    """One grading of a run: as recorded (version 1) or a re-grade."""

    version: int
    created_at: str
    graders: list[str]
    """The graders a re-grade was asked for (empty: each task's default graders)."""
    note: str | None
    active: bool
    """Whether the run reports this version's outcomes."""
    outcomes_kept: bool
    """False when an agentgauge before schema 3 overwrote its outcomes in place."""


def check_store_path(store: Store | str | Path, *, option: str = "--store") -> None:
    """Refuse a store path that would not keep what a command writes: SQLite's
    ``:memory:`` and ``""`` (a temporary database) are private to one connection and
    gone when it closes, so a run's trial writer (`agentgauge.store.TrialWriter`, a
    connection of its own) would write elsewhere, an import or ``collect`` would
    report trials stored that no one can read, and ``""`` is no path to open twice.
    Every command that takes ``--store`` checks it first. From Python, a `Store`
    object opened on ``":memory:"`` is kept by the caller and is fine."""
    if isinstance(store, Store):
        return
    text = str(store) if isinstance(store, Path) else store
    if text in ("", ":memory:"):
        what = "an empty path (SQLite's temporary database)" if text == "" else "':memory:'"
        raise InputError(
            f"{what} is a private SQLite database, gone when the command ends (and that "
            "no other connection, the trial writer's included, can see): name a file, "
            "e.g. --store results.db (from Python, pass a Store(':memory:') you keep open)",
            field=option,
        )


def _configuration_sql(agent: str | None, model: str | None) -> tuple[str, tuple[str, ...]]:
    """The SQL condition on trials ``t`` (and its values) that keeps one configuration's
    trials (a SOURCE's ``#agent=``/``#model=``; the columns compared as text). An empty
    name keeps the trials that record none (`agentgauge.sources.picks`)."""
    chosen = [(name, v) for name, v in (("agent", agent), ("model", model)) if v is not None]
    where = "".join(f" AND t.{name} {'IS NULL' if not v else '= ?'}" for name, v in chosen)
    return where, tuple(v for _, v in chosen if v)


def _keys_sql(keys: Sequence[int] | None) -> tuple[str, tuple[str, ...]]:
    """The SQL condition on trials ``t`` (and its value) that keeps the trials of these
    keys (all of them for ``None``): one parameter, however many keys."""
    if keys is None:
        return "", ()
    return " AND t.id IN (SELECT value FROM json_each(?))", (json.dumps(list(keys)),)


def _escapes_hint(shown: str) -> str:
    """How to type a run id ``shown`` with escapes (``'nai\\u0308ve'``) in a shell."""
    return " (a shell like bash reads escapes in $'...')" if "\\" in shown else ""


class MissingRun(InputError):
    """A run this store does not hold, named by a method of `Store` (no such
    ``run_id``)."""


_P = ParamSpec("_P")
_R = TypeVar("_R")
_Y = TypeVar("_Y")
_S = TypeVar("_S")
_T = TypeVar("_T")


def store_errors(
    method: Callable[Concatenate[Store, _P], _R],
) -> Callable[Concatenate[Store, _P], _R]:
    """``method`` of `Store` (or a function whose first argument is one) with SQLite's
    refusals in the user's words, naming the store (`agentgauge.store.faults.store_error`):
    a damaged page met mid-read, a lock held, a full disk, a write to a store opened
    read-only; and, for a method whose first argument is a ``run_id``, a write into a
    run the store does not hold (SQLite's "FOREIGN KEY constraint failed") as
    `Store.require_run` says it. A generator it returns is wrapped too: what SQLite
    refuses while it is iterated (a damaged page read lazily, batch by batch) is
    translated as what it refuses during the call. The commands already word these in
    one line; this gives Python's callers the same error rather than a bare
    ``sqlite3`` one. Every public method of `Store` carries it (the context managers
    `Store.transaction` and `Store.snapshot` do not: what fails inside them is the
    caller's statement)."""
    parameters = list(inspect.signature(method).parameters)
    takes_run = len(parameters) > 1 and parameters[1] == "run_id"

    @functools.wraps(method)
    def translated(store: Store, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        run_id = (args[0] if args else kwargs.get("run_id")) if takes_run else None
        try:
            result = method(store, *args, **kwargs)
        except sqlite3.DatabaseError as exc:
            error = _user_error(store, exc, run_id)
            if error is None:
                raise
            raise error from None
        if isinstance(result, Generator):
            return cast(_R, _translating(store, result, run_id))
        return result

    translated.translates_store_errors = True  # type: ignore[attr-defined]
    return translated


def _translating(store: Store, items: Generator[_Y, _S, _T], run_id: Any) -> Generator[_Y, _S, _T]:
    """``items``, with what SQLite refuses while they are read translated (`store_errors`)."""
    try:
        return (yield from items)
    except sqlite3.DatabaseError as exc:
        error = _user_error(store, exc, run_id)
        if error is None:
            raise
        raise error from None


def _user_error(store: Store, exc: sqlite3.DatabaseError, run_id: Any) -> AgentgaugeError | None:
    """The user's error for SQLite's refusal ``exc`` met on ``store`` (`store_errors`);
    ``None`` for one the caller words itself, or a bug, which keeps its traceback. A
    foreign key that failed on ``run_id`` raises `MissingRun` when the store holds no
    such run."""
    foreign_key = isinstance(exc, sqlite3.IntegrityError) and "FOREIGN KEY" in str(exc)
    if foreign_key and isinstance(run_id, str):
        store.require_run(run_id)  # raises MissingRun when it is not there
    return store_error(exc, store.path, readonly=getattr(store, "readonly", False))


def of_held_run(
    method: Callable[Concatenate[Store, str, _P], _R],
) -> Callable[Concatenate[Store, str, _P], _R]:
    """``method``, whose first argument is a ``run_id``, refusing a run the store does not
    hold (`MissingRun`, worded by `Store.require_run`) before it reads or writes anything:
    never an empty answer (no tasks, no trials, grade version 1) standing in for "no
    such run". One look-up of the run's key."""

    @functools.wraps(method)
    def checked(store: Store, /, run_id: str, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        held = store.conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,))
        if held.fetchone() is None:
            store.require_run(run_id)
        return method(store, run_id, *args, **kwargs)

    # ``run_id`` may be given by name too, which `Concatenate` cannot say.
    return cast("Callable[Concatenate[Store, str, _P], _R]", checked)


class Store:
    """A SQLite store of runs, trials, transcripts and grades.

    Use as a context manager or call `close`. ``path`` may be ``":memory:"``.
    ``create=False`` refuses a path that does not exist. ``readonly=True`` opens
    without writing anything (a store of an earlier schema is read as it is,
    not upgraded); otherwise a store of an earlier schema is upgraded in one
    transaction. A store of a later schema is refused (`InputError`).
    ``schema_version`` is the layout as opened (the current one unless read-only).
    """

    @store_errors
    def __init__(
        self, path: str | Path = DEFAULT_STORE, *, create: bool = True, readonly: bool = False
    ) -> None:
        self.path = str(path)
        memory = self.path == ":memory:"
        self.readonly = readonly and not memory
        if (readonly or not create) and not memory and not Path(self.path).exists():
            raise InputError("no such store (run or import something first)", file=self.path)
        self.conn, self.schema_version = open_store(self.path, readonly=readonly and not memory)
        note_opened(self.path)
        # Schema 1 kept documents inline; a read-only open reads them there. A field
        # an older schema has no column for reads as missing.
        inline = self.schema_version < 2
        stored = set(stored_fields(self.schema_version))
        self._trial_select = ", ".join(
            "NULL"
            if f not in stored
            else f.name
            if inline and f.type == "document"
            else column_of(f)
            for f in TRIAL_FIELDS
        )
        self._spec_select = (
            "SELECT spec FROM tasks WHERE run_id = ? AND spec IS NOT NULL ORDER BY task_id"
            if inline
            else "SELECT d.data FROM tasks t JOIN documents d ON d.id = t.spec_id"
            " WHERE t.run_id = ? ORDER BY t.task_id"
        )
        self._labels: dict[str, int] | None = None
        #: The records this open stored anew (a writable open of a stale store), or None.
        self.refreshed: StaleRecords | None = None
        if readonly and not memory:
            # Said once a command: the count is not taken again at each of its opens.
            held = _HELD_BACK.get()
            key = _same_file(self.path)
            said = noted(*_STALE_READ, key) or _WRITE_FOLLOWS.get()
            stale = None if said or (held and key in held) else self.stale_records()
            if stale is not None and held is not None:
                held[key] = stale  # said when the block ends, unless a write follows
            elif stale is not None:
                _note_once(stale, stale.reading(), kind="read")
        elif self.schema_version >= 5:
            stale = self.stale_records()
            if stale is not None:
                # A write needs the records laid out as this agentgauge lays them out:
                # a writable open stores them anew, and says so (it takes a while).
                _note_once(stale, stale.storing(), kind="write")
                self.refresh_records()
            elif self._layout() is None:  # a new store: stamped before its first trial
                self.conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('facts_layout', ?)",
                    (LAYOUT,),
                )

    @store_errors
    def stale_records(self) -> StaleRecords | None:
        """What `refresh_records` would store anew: the store's trials whose records
        (`agentgauge.store.packed`) were derived by another agentgauge's rules or laid
        out otherwise, or are missing (a store of schema 4 or earlier, an upgrade whose
        records were never derived); ``None`` when every trial's are current. Reads
        of a stale store derive the records again from the trials, every time: the
        same numbers, slower. Two look-ups in ``meta``; a count when stale."""
        if self.schema_version < 5:
            why = (
                f"never stored (store schema {self.schema_version} has none; storing them "
                f"upgrades it to schema {SCHEMA_VERSION}, which older agentgauge releases "
                "cannot open)"
            )
            return self._stale(self._count("SELECT COUNT(*) FROM trials"), why)
        layout = self._layout()
        if layout not in (None, LAYOUT):
            # The stamp is the rules' version and the record's shape (`packed.LAYOUT`).
            same_shape = layout.partition(":")[2] == LAYOUT.partition(":")[2]
            why = (
                "derived by another agentgauge's rules"
                if same_shape
                else "laid out by another agentgauge"
            )
            return self._stale(self._count("SELECT COUNT(*) FROM trials"), why)
        pending = self.conn.execute("SELECT 1 FROM meta WHERE key = 'facts_pending'").fetchone()
        if layout is None or pending is not None:
            return self._stale(self._count(f"SELECT COUNT(*) {_WITHOUT_RECORDS}"), "never derived")
        return None

    def _stale(self, trials: int, why: str) -> StaleRecords | None:
        return None if not trials else StaleRecords(self.path, trials, why)

    def _count(self, sql: str) -> int:
        (n,) = self.conn.execute(sql).fetchone()
        return int(n)

    @store_errors
    def refresh_records(self) -> StaleRecords | None:
        """Derive again from its trials and store every record `stale_records` names,
        and any trial's that is missing, in one transaction: interrupted or failed, the
        store is as it was (and reads as before). What it stored anew, or ``None``
        when every record was current. Records are derived data: no trial, grade or
        metric changes. A writable open does this itself; ``agentgauge runs
        --refresh`` does it on purpose."""
        if self.readonly:
            raise InputError(
                "storing records anew writes to the store: open it as Store(path)",
                file=self.path,
            )
        stale = self.stale_records()
        layout = self._layout()
        try:
            with self.transaction():
                if layout not in (None, LAYOUT):
                    # Laid out by another agentgauge: the derived tables are made again,
                    # as this one lays them out (they hold nothing a trial does not).
                    self.conn.execute("DROP TABLE IF EXISTS trial_facts")
                    self.conn.execute("DROP TABLE IF EXISTS labels")
                    for sql in statements(FACTS_SQL):
                        self.conn.execute(sql)
                    self._labels = None
                added = self._derive_missing_records()
        except BaseException:
            self._labels = None  # ids of a rolled-back ``labels`` table
            raise
        if stale is None and added:  # records missing though nothing said so
            stale = StaleRecords(self.path, added, "missing")
        self.refreshed = stale
        return stale

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic transaction: everything inside commits together or not at all.

        A full disk raises `StoreFull` (one line for the user, not a traceback), with
        the transaction rolled back: the store stays as it was before it.
        """
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            # After some errors (SQLITE_FULL among them) SQLite has already rolled back.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            full = storage_error(exc, self.path)
            if full is not None:
                raise full from None
            raise

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees the store as of one moment: one read transaction
        (a WAL snapshot), so that the trials, events and grades read by separate
        queries are of the same trials while a run commits more of them. Inside a
        transaction already open (a write's, an outer snapshot's) it adds nothing.
        For reads: a write inside may find the snapshot stale (``database is locked``).
        """
        if self.conn.in_transaction:
            yield
            return
        self.conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise
        if self.conn.in_transaction:
            self.conn.execute("COMMIT")

    # ------------------------------------------------------------------ runs

    @store_errors
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
        self.refuse_lookalike_run(run.run_id)
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
                dumps(run.config),
            ),
        )
        self.conn.execute(
            "INSERT OR IGNORE INTO grade_versions(run_id, version, created_at, note)"
            " VALUES (?, 1, ?, 'as recorded')",
            (run.run_id, run.created_at),
        )

    @store_errors
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

    @store_errors
    def run_of_source(self, sha256: str) -> tuple[str, str] | None:
        """The id and creation time of the first run imported from a file with this
        SHA-256, or ``None``: one pass over the runs table, no trial read."""
        row = self.conn.execute(
            "SELECT run_id, created_at FROM runs WHERE source_sha256 = ?"
            " ORDER BY created_at, rowid LIMIT 1",
            (sha256,),
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    @store_errors
    def list_runs(self) -> list[Run]:
        """All runs, oldest first."""
        return [self._run(row) for row in self.conn.execute(_RUN_ROWS)]

    @store_errors
    def list_runs_marked(self) -> list[tuple[Run, str | None]]:
        """All runs, oldest first, each with why it is damaged (``None`` when it is
        not): a run whose settings cannot be read back is listed with its columns and
        no config, so one damaged row does not hide the others (`agentgauge runs`, as
        the viewer's list of runs)."""
        # A trial whose success is neither a pass nor a failure (as a hand edit leaves
        # it) damages its run too: every reader of the run refuses it.
        bad_success = {
            run_id: damaged_success(pk, value)
            for run_id, pk, value in self.conn.execute(
                "SELECT run_id, id, success FROM trials WHERE id IN"
                " (SELECT MIN(id) FROM trials WHERE success NOT IN (0, 1) GROUP BY run_id)"
            )
        }
        out: list[tuple[Run, str | None]] = []
        for row in self.conn.execute(_RUN_ROWS).fetchall():
            why = []
            try:
                run = self._run_fields(row, loads(row[9] or "{}"))
            except UNREADABLE as exc:
                try:
                    run = self._run_fields(row, {})
                except UNREADABLE:  # a column, not the config: nothing to list it by
                    raise self.damaged(f"run {row[0]!r}", exc) from None
                why.append(": ".join(p for p in unreadable(exc, "config") if p))
            if row[0] in bad_success:
                why.append(bad_success[row[0]])
            out.append((run, "; ".join(why) or None))
        return out

    def _run(self, row: Sequence[Any]) -> Run:
        try:
            return self._run_fields(row, loads(row[9] or "{}"))
        except UNREADABLE as exc:
            raise self.damaged(f"run {row[0]!r}", exc, field="config") from None

    @staticmethod
    def _run_fields(row: Sequence[Any], config: Any) -> Run:
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
            config=config,
            n_trials=row[10],
        )

    @store_errors
    def damaged(self, what: str, exc: BaseException, *, field: str | None = None) -> InputError:
        """The user's error for a stored row that cannot be read back (JSON a hand edit
        or a failing disk broke, a value an older agentgauge let through): one line
        naming the store, the row and the field, as for a damaged page
        (`agentgauge.store.faults.database_error`); the other rows stay readable."""
        field, why = unreadable(exc, field)
        return InputError(f"{what} is damaged in the store: {why}", file=self.path, field=field)

    @store_errors
    def lookalike_runs(self, run_id: str) -> list[str]:
        """The ids of the runs other than ``run_id`` that print the same (they differ
        from it in Unicode normalization, invisible characters or whitespace at the
        ends: `agentgauge.spelling`), oldest first."""
        key = lookalike_key(run_id)
        return [
            str(other)
            for (other,) in self.conn.execute("SELECT run_id FROM runs ORDER BY rowid")
            if other != run_id and lookalike_key(other) == key
        ]

    @store_errors
    def refuse_lookalike_run(self, run_id: str) -> None:
        """Refuse a new run ``run_id`` when a stored run prints the same
        (`lookalike_runs`): the two would be two runs no list tells apart, and a run
        resumed under the other spelling (NFC typed for an NFD name) a new one."""
        same = self.lookalike_runs(run_id)
        if same:
            stored, given = quoted((same[0], run_id))
            raise InputError(
                f"run {stored} already exists in this store, and {given} differs from it only "
                f"in {spelling_difference(same[0], run_id)}: the two would print the same; "
                f"name that run as stored{_escapes_hint(stored)} or choose another --run-id",
                file=self.path,
                field="run_id",
            )

    @store_errors
    def require_run(self, run_id: str) -> Run:
        """The run's header; `MissingRun` naming the store, the run and the runs it
        holds (or the one that prints the same) when it holds no such run."""
        run = self.get_run(run_id)
        if run is None:
            same = self.lookalike_runs(run_id)
            if same:
                given, *stored = quoted((run_id, *same))
                each = " and ".join(
                    f"run {q} (differs in {spelling_difference(other, run_id)})"
                    for q, other in zip(stored, same, strict=True)
                )
                raise MissingRun(
                    f"no run {given} in this store, but {each} "
                    f"{'prints' if len(same) == 1 else 'print'} the same: name the one you "
                    f"mean as stored{_escapes_hint(' '.join(stored))}",
                    file=self.path,
                    field="run_id",
                )
            known = ", ".join(quoted(r.run_id for r in self.list_runs()[-5:])) or "none"
            raise MissingRun(
                f"no run {run_id!r} in this store (recent runs: {known})",
                file=self.path,
                field="run_id",
            )
        return run

    @store_errors
    @of_held_run
    def update_run_config(self, run_id: str, config: dict[str, Any]) -> None:
        """Replace a run's recorded settings (a resumed run that was extended), in the
        caller's transaction or its own (so that a full disk says so in one line). A run
        another live session is writing is refused (`_changing`)."""
        with self._changing(run_id):
            self.conn.execute(
                "UPDATE runs SET config = ? WHERE run_id = ?", (dumps(config), run_id)
            )

    @contextmanager
    def _changing(self, run_id: str) -> Iterator[None]:
        """A change of the run, in the caller's transaction or its own, refused
        (`agentgauge.store.claims.RunClaimed`, as the commands word it) while a live
        session other than this one's holds the run's claim: checked at once (a holder
        is named before this waits for the write lock) and again in the write
        transaction, where no session can claim the run before the change lands."""
        refuse_others(self.conn, run_id)
        if self.conn.in_transaction:
            yield
            return
        with self.transaction():
            refuse_others(self.conn, run_id)
            yield

    @store_errors
    @of_held_run
    def delete_run(self, run_id: str) -> None:
        """Delete a run with its tasks, trials, events and grades, and the documents
        no other run refers to. A run another live session is writing is refused."""
        with self._changing(run_id):
            self._delete_run(run_id)

    @store_errors
    @of_held_run
    def mark_opened(self, run_id: str) -> str:
        """Record that a session opens the run (makes or resumes it), in the caller's
        transaction (the one that opens it); returns the session's mark, which the next
        session to open the run replaces (`delete_run_if_empty`)."""
        mark = secrets.token_hex(8)
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (_OPENED + run_id, mark)
        )
        return mark

    @store_errors
    def delete_run_if_empty(self, run_id: str, *, opened: str | None = None) -> bool:
        """Delete a run that holds no trial (with its tasks), in one transaction with the
        check: a run a harness session made and that ended before its first trial was
        committed (`agentgauge.harness.runner`). With ``opened`` (the session's
        `mark_opened`), only while no other session has opened the run since: one that
        resumed it meanwhile is writing to it. Whether it was deleted."""
        with self.transaction():
            held = self.conn.execute(
                "SELECT EXISTS (SELECT 1 FROM trials WHERE run_id = ?)", (run_id,)
            ).fetchone()[0]
            if held or self.get_run(run_id) is None:
                return False
            if opened is not None:
                row = self.conn.execute(
                    "SELECT value FROM meta WHERE key = ?", (_OPENED + run_id,)
                ).fetchone()
                if row is None or row[0] != opened:
                    return False
            self._delete_run(run_id)
            return True

    def _delete_run(self, run_id: str) -> None:
        self.conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        self.conn.execute(
            "DELETE FROM meta WHERE key IN (?, ?)", (_OPENED + run_id, CLAIM + run_id)
        )
        if self.schema_version >= 5:
            self.conn.execute("DELETE FROM trial_facts WHERE run_id = ?", (run_id,))
        used = " UNION ".join(
            f"SELECT {col} FROM {table} WHERE {col} IS NOT NULL"
            for table, col in DOCUMENT_REFERENCES
        )
        self.conn.execute(f"DELETE FROM documents WHERE id NOT IN ({used})")

    # ------------------------------------------------------------------ tasks

    @store_errors
    @of_held_run
    def add_tasks(self, run_id: str, tasks: Iterable[Task]) -> None:
        """Record the tasks a run uses (idempotent). Each task's specification is a
        document: runs of the same suite share them."""
        self.conn.executemany(
            "INSERT OR REPLACE INTO tasks(run_id, task_id, family, split, capability,"
            " human_minutes, spec_id) VALUES (?,?,?,?,?,?,?)",
            [
                (
                    run_id,
                    t.id,
                    t.family,
                    t.split,
                    t.capability,
                    t.human_minutes,
                    document_id(self.conn, t.model_dump_json(exclude_defaults=True)),
                )
                for t in tasks
            ],
        )

    @store_errors
    @of_held_run
    def has_tasks(self, run_id: str) -> bool:
        """Whether ``run_id`` holds its suite's tasks (what a re-grade reads)."""
        row = self.conn.execute("SELECT 1 FROM tasks WHERE run_id = ? LIMIT 1", (run_id,))
        return row.fetchone() is not None

    @store_errors
    @of_held_run
    def get_tasks(self, run_id: str) -> list[Task]:
        rows = self.conn.execute(self._spec_select, (run_id,)).fetchall()
        tasks = []
        for (spec,) in rows:
            try:
                tasks.append(Task.model_validate_json(_text(spec)))
            except ValidationError as exc:
                # A task stored before a check was added (a negative answer tolerance,
                # refused since): one line to act on, not a traceback.
                field, reason = first_error(exc)
                raw = json.loads(_text(spec))
                task_id = raw.get("id") if isinstance(raw, dict) else None
                raise InputError(
                    f"run {run_id!r} holds task {task_id!r}, which is no longer valid "
                    f"({reason}); run the corrected suite again",
                    file=self.path,
                    field=f"tasks.{field}" if field else "tasks",
                ) from None
        return tasks

    # ------------------------------------------------------------------ trials

    @store_errors
    @of_held_run
    def add_trial(self, run_id: str, trial: Trial) -> int:
        """Write one trial with its events and grades (in the caller's transaction,
        or in its own when none is open). Returns the trial's primary key."""
        if self.conn.in_transaction:
            return self._insert_trial(run_id, trial)
        with self.transaction():
            return self._insert_trial(run_id, trial)

    @store_errors
    @of_held_run
    def add_trials(self, run_id: str, trials: Iterable[Trial], *, batch: int = 4096) -> int:
        """Write many trials (in the caller's transaction, or in one of their own when
        none is open), their events, grades and records ``batch`` trials to a statement.
        Returns how many were written."""
        if not self.conn.in_transaction:
            with self.transaction():
                return self.add_trials(run_id, trials, batch=batch)
        n = 0
        chunk: list[TrialRows] = []
        for trial in trials:
            chunk.append(trial_rows(run_id, trial))
            if len(chunk) >= batch:
                n += self._write_many(chunk)
                chunk = []
        return n + (self._write_many(chunk) if chunk else 0)

    def _insert_trial(self, run_id: str, t: Trial) -> int:
        return self._write_rows(trial_rows(run_id, t))

    def _write_rows(self, rows: TrialRows) -> int:
        """Insert one trial's prepared rows (`trial_rows`); returns its primary key."""
        self._refuse_second_family([rows])
        pk = self._insert_trial_row(rows[0])
        self._insert_rest([(pk, rows)])
        return pk

    def _write_many(self, many: list[TrialRows]) -> int:
        """Insert many trials' prepared rows: one statement for the trial rows, one for
        all their events, grades and records. Returns how many."""
        self._refuse_second_family(many)
        self._insert_rest(self._insert_trial_rows(many))
        return len(many)

    def _refuse_second_family(self, many: Sequence[TrialRows]) -> None:
        """Refuse, before any row is written, a trial whose task the run (or a trial
        before it in ``many``) holds under another family: every reader of a stored run
        refuses such a task (`agentgauge.sources.two_families`), so it is kept out here,
        where every write of trials passes (`add_trial`, `add_trials`, the run's
        `TrialWriter`, ``collect``). A trial that names no family says nothing of its
        task's. One look-up per task and family named: the first stored trial of the
        task that names a family (`trials_cell` leads with run and task)."""
        known: dict[tuple[str, str], tuple[Any, str]] = {}
        for rows in many:
            row = rows[0]
            family = row[_AT["family"]]
            if family is None:
                continue
            key = (row[0], row[_AT["task_id"]])
            first = known.get(key)
            if first is None:
                stored = self.conn.execute(
                    "SELECT family, trial, agent, model, variant FROM trials"
                    " WHERE run_id = ? AND task_id = ? AND family IS NOT NULL LIMIT 1",
                    key,
                ).fetchone()
                if stored is not None:
                    words = trial_cell_words(stored[2], stored[3], stored[4])
                    first = (stored[0], f"stored: trial {stored[1]}, {words}")
                else:
                    first = (family, f"{_trial_words(row)}, in the same write")
                known[key] = first
            if first[0] != family:
                raise InputError(
                    f"run {row[0]!r}: "
                    + family_reason(
                        key[1], first[0], first[1], family, f" here ({_trial_words(row)})"
                    ),
                    file=self.path,
                    field="family",
                )

    def _insert_trial_rows(self, many: list[TrialRows]) -> list[tuple[int, TrialRows]]:
        """The trial rows in one statement, keyed by the primary keys they get: the next
        ones, as SQLite would number them, given outright (the write lock is held since
        ``BEGIN IMMEDIATE``, so nobody else can take them). On a row that is already
        stored, they go in one at a time instead, which names it."""
        (first,) = self.conn.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM trials").fetchone()
        params = [(first + i, *self._with_documents(rows[0])) for i, rows in enumerate(many)]
        self.conn.execute("SAVEPOINT trial_rows")
        try:
            _insert_trials(self.conn, params)
        except sqlite3.IntegrityError:
            self.conn.execute("ROLLBACK TO trial_rows")
            self.conn.execute("RELEASE trial_rows")
            return [(self._insert_trial_row(rows[0]), rows) for rows in many]
        self.conn.execute("RELEASE trial_rows")
        return [(first + i, rows) for i, rows in enumerate(many)]

    def _with_documents(self, trial_row: tuple[Any, ...]) -> list[Any]:
        """A trial row with each document's text swapped for its id (added when new)."""
        params = list(trial_row)
        for i in DOCUMENT_POSITIONS:
            if params[i] is not None:
                params[i] = document_id(self.conn, params[i])
        return params

    def _insert_trial_row(self, trial_row: tuple[Any, ...]) -> int:
        params = self._with_documents(trial_row)
        try:
            cur = self.conn.execute(INSERT_TRIAL, params)
        except sqlite3.IntegrityError as exc:
            if "UNIQUE" in str(exc):
                raise InputError(
                    f"{describe_row(trial_row)} is already stored in run {trial_row[0]!r}",
                    file=self.path,
                    field="trial",
                ) from None
            raise
        pk = cur.lastrowid
        assert pk is not None
        return pk

    def _insert_rest(self, keyed: list[tuple[int, TrialRows]]) -> None:
        """The events, grades and records of trials whose rows are in, by primary key."""
        events = [(pk, *row) for pk, rows in keyed for row in rows[1]]
        if events:
            self.conn.executemany(
                "INSERT INTO events(trial_pk, seq, type, t, data) VALUES (?,?,?,?,?)", events
            )
        grades = [(pk, 1, *row) for pk, rows in keyed for row in rows[2]]
        if grades:
            self.conn.executemany(_INSERT_GRADE, grades)
        self.conn.executemany(
            "INSERT INTO trial_facts(run_id, trial_pk, version, data) VALUES (?, ?, 1, ?)",
            [(rows[0][0], pk, pack(rows[3], self._label_id)) for pk, rows in keyed],
        )

    # ------------------------------------------------------------------ records

    def _label_id(self, text: str) -> int:
        """The id of ``text`` in ``labels``, added when new (in the caller's transaction)."""
        if self._labels is None:
            self._labels = dict((t, i) for i, t in self.conn.execute("SELECT id, text FROM labels"))
        found = self._labels.get(text)
        if found is not None:
            return found
        self.conn.execute("INSERT INTO labels(text) VALUES (?) ON CONFLICT DO NOTHING", (text,))
        (found,) = self.conn.execute("SELECT id FROM labels WHERE text = ?", (text,)).fetchone()
        self._labels[text] = found
        return int(found)

    def _record_for(self, trial_pk: int, version: int) -> tuple[str, Any] | None:
        """A trial's run and its record under ``version``: the one written for it, else
        a copy of its latest one before it; ``None`` for a trial without records."""
        row = self.conn.execute(
            "SELECT f.run_id, f.data FROM trials t JOIN trial_facts f"
            " ON f.run_id = t.run_id AND f.trial_pk = t.id"
            " WHERE t.id = ? AND f.version <= ? ORDER BY f.version DESC",
            (trial_pk, version),
        ).fetchone()
        if row is None:
            return None
        return str(row[0]), np.frombuffer(row[1], dtype=RECORD)[0].copy()

    def _put_record(self, run_id: str, trial_pk: int, version: int, record: Any) -> None:
        self.conn.execute(
            "INSERT OR REPLACE INTO trial_facts(run_id, trial_pk, version, data) VALUES (?,?,?,?)",
            (run_id, trial_pk, version, record.tobytes()),
        )

    def _write_grade_facts(self, trial_pk: int, version: int) -> None:
        """The record of a trial under ``version``: its facts from its grades as of
        ``version`` (those of the latest version up to it that graded the trial, as
        `trials` reads them)."""
        found = self._record_for(trial_pk, version)
        if found is None:  # a trial of a store not yet given its records
            return
        run_id, record = found
        rows = self.conn.execute(
            "SELECT g.version, g.grader, g.score, g.passed, g.status, g.evidence, g.judge_model"
            " FROM grades g WHERE g.trial_pk = ? AND g.version = (SELECT MAX(version)"
            " FROM grades g2 WHERE g2.trial_pk = g.trial_pk AND g2.version <= ?)",
            (trial_pk, version),
        ).fetchall()
        grades = [_grade(*row[1:]) for row in rows]
        values = grade_facts(grades)
        # The judge spend goes with the grades, as `trials` reads it: a re-graded
        # trial's from its grades (`_regraded_judge_costs`), else as recorded.
        if rows and rows[0][0] > 1:
            values["judge_cost_usd"] = graded_judge_cost(grades)
        else:
            (values["judge_cost_usd"],) = self.conn.execute(
                "SELECT judge_cost_usd FROM trials WHERE id = ?", (trial_pk,)
            ).fetchone()
        update(record, values, self._label_id)
        self._put_record(run_id, trial_pk, version, record)

    def _write_outcome(
        self, trial_pk: int, version: int, success: bool, score: float | None
    ) -> None:
        found = self._record_for(trial_pk, version)
        if found is None:
            return
        run_id, record = found
        update(record, {"success": success, "score": score}, self._label_id)
        self._put_record(run_id, trial_pk, version, record)

    def _write_event_facts(self, trial_pk: int, figures: Mapping[str, Any]) -> None:
        """Every record of a trial with the facts of its transcript as it now is, and
        ``figures``, the columns that changed with it."""
        events, _ = self.trial_events(trial_pk)
        facts = event_facts(events)
        rows = self.conn.execute(
            "SELECT f.run_id, f.version, f.data FROM trials t JOIN trial_facts f"
            " ON f.run_id = t.run_id AND f.trial_pk = t.id WHERE t.id = ?",
            (trial_pk,),
        ).fetchall()
        for run_id, version, data in rows:
            record = np.frombuffer(data, dtype=RECORD)[0].copy()
            update(
                record,
                {**facts, **figures},
                self._label_id,
            )
            self._put_record(run_id, trial_pk, version, record)

    def _derive_missing_records(self) -> int:
        """Derive the records of the trials that have none (stored before records
        existed, or their tables just made again), in the caller's transaction: each
        trial as a model, once. The number of trials given records."""
        runs = self.conn.execute(
            f"SELECT t.run_id, COUNT(*) {_WITHOUT_RECORDS} GROUP BY t.run_id"
        ).fetchall()
        for run_id, _ in runs:
            # Versions whose outcomes an old agentgauge overwrote cannot be read at all.
            versions = [v.version for v in self.grade_versions(run_id) if v.outcomes_kept]
            versions = versions or [self.active_grade_version(run_id)]
            keys = self.trial_keys(run_id)
            for version in sorted(set(versions)):
                trials = self.trials(run_id, grade_version=version)
                for pk, trial in zip(keys, trials, strict=True):
                    self.conn.execute(
                        "INSERT OR IGNORE INTO trial_facts(run_id, trial_pk, version, data)"
                        " VALUES (?,?,?,?)",
                        (run_id, pk, version, pack(record_values(trial), self._label_id)),
                    )
        self.conn.execute("DELETE FROM meta WHERE key = 'facts_pending'")
        self.conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES ('facts_layout', ?)", (LAYOUT,)
        )
        return sum(n for _, n in runs)

    def _insert_grades(self, trial_pk: int, version: int, grades: Sequence[Grade]) -> None:
        self.conn.executemany(
            _INSERT_GRADE, [(trial_pk, version, *row) for row in grade_rows(grades)]
        )

    @store_errors
    def existing_cells(self, run_id: str) -> set[tuple[str, int, str, str | None, str | None]]:
        """(task, trial, variant, agent, model) cells already stored, for resume; none for
        a run the store does not hold yet (``collect`` reads them before it makes its run,
        once its port is bound), where the other methods of a run refuse it."""
        rows = self.conn.execute(
            "SELECT task_id, trial, variant, agent, model FROM trials WHERE run_id = ?", (run_id,)
        )
        return {(r[0], r[1], r[2], r[3], r[4]) for r in rows}

    @store_errors
    @of_held_run
    def next_trial_index(
        self, run_id: str, task_id: str, variant: str, agent: str | None, model: str | None
    ) -> int:
        """The index after the largest stored for this cell of ``run_id`` (0 when it
        has none), as committed now: what a writer that numbers its own trials takes
        when another session has written the cell since (``collect`` on the run)."""
        (top,) = self.conn.execute(
            "SELECT MAX(trial) FROM trials WHERE run_id = ? AND task_id = ? AND variant = ?"
            " AND IFNULL(agent, '') = ? AND IFNULL(model, '') = ?",
            (run_id, task_id, variant, agent or "", model or ""),
        ).fetchone()
        return 0 if top is None else int(top) + 1

    @store_errors
    @of_held_run
    def trials(
        self,
        run_id: str,
        *,
        events: bool = True,
        grades: bool | None = None,
        grade_version: int | None = None,
        agent: str | None = None,
        model: str | None = None,
        keys: Sequence[int] | None = None,
    ) -> list[Trial]:
        """The run's trials as models, in insertion order, with events and grades
        (``events=False``: without their transcripts; ``grades``, default as
        ``events``: with their grades). ``agent``/``model``: only the trials of that
        agent/model (a SOURCE's ``#agent=``/``#model=``), chosen in SQL, so that the
        other configurations' trials are never built; ``keys``: only the trials of
        these keys (`trial_keys`), each once (the few a report shows).

        Outcomes and grades are those of ``grade_version`` (default: the run's
        active one, what the run reports); a trial graded in no later version
        than it keeps its latest grades before it. Each trial gets its own copy
        of its final state, even where trials share one.

        The trials, their events and their grades are read in one `snapshot`: a run
        committing trials meanwhile adds none of them halfway. A run the store does not
        hold is refused (`MissingRun`), never read as a run without trials.
        """
        with self.snapshot():
            return self._trials(
                run_id,
                events=events,
                grades=grades,
                grade_version=grade_version,
                agent=agent,
                model=model,
                keys=keys,
            )

    def _trials(
        self,
        run_id: str,
        *,
        events: bool,
        grades: bool | None,
        grade_version: int | None,
        agent: str | None = None,
        model: str | None = None,
        keys: Sequence[int] | None = None,
    ) -> list[Trial]:
        grades = events if grades is None else grades
        version = self.resolve_grade_version(run_id, grade_version)
        overlay = self._outcomes(run_id, version)
        where, picked = _configuration_sql(agent, model)
        if keys is not None:
            chosen, named = _keys_sql(keys)
            where, picked = where + chosen, (*picked, *named)
        cur = self.conn.execute(
            f"SELECT t.id, {self._trial_select} FROM trials t WHERE t.run_id = ?{where}"
            " ORDER BY t.id",
            (run_id, *picked),
        )
        texts: dict[int, str] = {}  # a shared document is read and decompressed once

        def document(value: int | str) -> str:
            if isinstance(value, str):  # schema 1: the text itself
                return value
            if value not in texts:
                row = self.conn.execute(
                    "SELECT data FROM documents WHERE id = ?", (value,)
                ).fetchone()
                texts[value] = document_text(row[0])
            return texts[value]

        out: list[Trial] = []
        pks: list[int] = []
        for row in cur.fetchall():
            try:
                trial = trial_of(row[1:], document)
            except UNREADABLE as exc:
                raise self.damaged(f"trial {row[0]} of run {run_id!r}", exc) from None
            if overlay is not None and row[0] in overlay:
                trial.success, trial.score = overlay[row[0]]
            out.append(trial)
            pks.append(row[0])
        by_pk = {pk: t for pk, t in zip(pks, out, strict=True)}
        if events and out:
            for pk, type_, t, data in self.conn.execute(
                "SELECT e.trial_pk, e.type, e.t, e.data FROM events e"
                " JOIN trials t ON t.id = e.trial_pk"
                f" WHERE t.run_id = ?{where} ORDER BY e.trial_pk, e.seq",
                (run_id, *picked),
            ):
                try:
                    by_pk[pk].events.append(event_of(type_, t, data))
                except UNREADABLE as exc:
                    raise self.damaged(f"an event of trial {pk} of run {run_id!r}", exc) from None
        if grades and out:
            try:
                for pk, grade in self._grades_as_of(run_id, version, where, picked):
                    if pk in by_pk:  # not another configuration's
                        by_pk[pk].grades.append(grade)
            except UNREADABLE as exc:
                raise self.damaged(f"a grade of run {run_id!r}", exc) from None
        try:
            regraded = self._regraded_judge_costs(run_id, version, where, picked)
        except UNREADABLE as exc:
            raise self.damaged(f"a grade of run {run_id!r}", exc) from None
        for pk, cost in regraded.items():
            if pk in by_pk:
                by_pk[pk].judge_cost_usd = cost
        return out

    @store_errors
    @of_held_run
    def grade_summary(
        self,
        run_id: str,
        *,
        grade_version: int | None = None,
        agent: str | None = None,
        model: str | None = None,
    ) -> tuple[set[str], set[str], set[str], bool]:
        """What a comparison's record says of a run's grading, without building its
        trials: the graders of its grades as of ``grade_version`` (default: the run's
        active one; each trial's latest grades up to it, as `trials` reads them), the
        graders of its finished (``completed``) trials' grades, the judge models named
        by them all, and whether any trial finished.
        ``agent``/``model``: only that configuration's trials (as `trials`). One
        `snapshot`."""
        where, picked = _configuration_sql(agent, model)
        with self.snapshot():
            version = self.resolve_grade_version(run_id, grade_version)
            rows = self.conn.execute(
                "SELECT DISTINCT g.grader, g.judge_model, t.status = 'completed' FROM grades g"
                f" JOIN trials t ON t.id = g.trial_pk WHERE t.run_id = ?{where} AND g.version = ("
                "   SELECT MAX(version) FROM grades g2 WHERE g2.trial_pk = g.trial_pk"
                "   AND g2.version <= ?)",
                (run_id, *picked, version),
            ).fetchall()
            (finished,) = self.conn.execute(
                f"SELECT EXISTS(SELECT 1 FROM trials t WHERE t.run_id = ?{where}"
                " AND t.status = 'completed')",
                (run_id, *picked),
            ).fetchone()
        graders = {grader for grader, _, _ in rows}
        of_finished = {grader for grader, _, done in rows if done}
        judges = {judge for _, judge, _ in rows if judge}
        return graders, of_finished, judges, bool(finished)

    @store_errors
    @of_held_run
    def outcome_rows(
        self,
        run_id: str,
        *,
        grade_version: int | None = None,
        agent: str | None = None,
        model: str | None = None,
    ) -> tuple[list[tuple[Any, ...]], dict[int, list[Grade]]]:
        """What a trial's outcome is told by, without building the trials: one row a
        trial in insertion order, ``(key, task_id, trial, variant, agent, model,
        success, status, error_kind)`` with the outcome of ``grade_version`` (default:
        the run's active one) and the values as stored (``None`` where unset), and each
        trial's failed grades as of that version, by grader (what ``show``'s failures
        view classifies a failure by). ``agent``/``model``: only that configuration's
        trials (as `trials`). One `snapshot`."""
        where, picked = _configuration_sql(agent, model)
        with self.snapshot():
            version = self.resolve_grade_version(run_id, grade_version)
            overlay = self._outcomes(run_id, version)
            rows = self.conn.execute(
                "SELECT t.id, t.task_id, t.trial, t.variant, t.agent, t.model, t.success,"
                f" t.status, t.error_kind FROM trials t WHERE t.run_id = ?{where} ORDER BY t.id",
                (run_id, *picked),
            ).fetchall()
            failed: dict[int, list[Grade]] = {}
            try:
                for pk, *grade in self.conn.execute(
                    "SELECT g.trial_pk, g.grader, g.score, g.passed, g.status, g.evidence,"
                    " g.judge_model FROM grades g JOIN trials t ON t.id = g.trial_pk"
                    f" WHERE t.run_id = ?{where} AND g.passed = 0 AND g.version = ("
                    "   SELECT MAX(version) FROM grades g2 WHERE g2.trial_pk = g.trial_pk"
                    "   AND g2.version <= ?)"
                    " ORDER BY g.trial_pk, g.grader",
                    (run_id, *picked, version),
                ):
                    failed.setdefault(pk, []).append(_grade(*grade))
            except UNREADABLE as exc:
                raise self.damaged(f"a grade of run {run_id!r}", exc) from None
        out = []
        for pk, *row in rows:
            try:
                row[5] = None if row[5] is None else stored_flag("success", row[5])
            except UNREADABLE as exc:
                raise self.damaged(f"trial {pk} of run {run_id!r}", exc) from None
            if overlay is not None and pk in overlay:
                row[5] = overlay[pk][0]
            out.append((pk, *row))
        return out, failed

    @store_errors
    @of_held_run
    def model_call_rows(
        self, run_id: str
    ) -> list[tuple[str | None, str | None, str | None, str | None, bool, int]]:
        """The run's model calls counted without reading its transcripts into models:
        ``(trial's agent, trial's model, served model, price source, has a cost,
        calls)`` (`agentgauge.model_calls.ModelCalls` sums them up)."""
        rows = self.conn.execute(
            "SELECT t.agent, t.model, json_extract(e.data, '$.model'),"
            " json_extract(e.data, '$.price_source'),"
            " json_extract(e.data, '$.cost_usd') IS NOT NULL, COUNT(*)"
            " FROM events e JOIN trials t ON t.id = e.trial_pk"
            " WHERE t.run_id = ? AND e.type = 'model_call' GROUP BY 1, 2, 3, 4, 5",
            (run_id,),
        ).fetchall()
        return [(a, m, served, src, bool(cost), int(n)) for a, m, served, src, cost, n in rows]

    @store_errors
    def trials_by_trace(self, trace_ids: Iterable[str]) -> dict[str, tuple[int, str]]:
        """The primary key and run of the trial whose metadata records each trace id (the
        trace an ``http:`` agent's request started, or one ``collect`` stored), for those
        some trial records; one look-up in the trace index."""
        wanted = sorted(set(trace_ids))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        # With MIN(), SQLite takes the bare run_id from the row holding the minimum.
        rows = self.conn.execute(
            "SELECT json_extract(metadata, '$.trace_id') AS trace, MIN(id), run_id FROM trials"
            f" WHERE trace IN ({marks}) GROUP BY trace",
            wanted,
        )
        return {trace: (pk, run_id) for trace, pk, run_id in rows}

    @store_errors
    def append_events(
        self, trial_pk: int, events: Sequence[Event], metadata: dict[str, Any]
    ) -> None:
        """Add ``events`` to a stored trial's transcript in time order, replace its
        metadata, and bring the figures its transcript decides up to date (in the
        caller's transaction): the counts of calls and the tokens and cost of its model
        calls, as `agentgauge.model_calls.figures_after` reckons them. A figure the
        events do not bear on is left as it is (an unknown ``model_calls`` stays unknown
        when no model call is added); with no events only the metadata is written.

        Each added event goes before the first event of the transcript that happened
        later (`merged_places`; at the end when it has no time), so that the spans an
        ``http:`` agent's service exported read where they happened, before the answer
        it replied with. The events after it move up, and the grades stored with the
        trial keep pointing at the events they cite: their evidence's ``event_index``
        values (milestones reached, minefield hits) are moved with them."""
        if not events:
            self.conn.execute(
                "UPDATE trials SET metadata = ? WHERE id = ?", (dumps(metadata), trial_pk)
            )
            return
        known, before_meta = self.trial_events(trial_pk)
        columns = ", ".join(FIGURES)
        row = self.conn.execute(
            f"SELECT {columns} FROM trials WHERE id = ?", (trial_pk,)
        ).fetchone()
        before = dict(zip(FIGURES, row, strict=True))
        # A trial made from spans says so (``dialect``, `agentgauge.importers.spans`).
        figures = figures_after(before, known, events, from_spans="dialect" in before_meta)
        for name, value in figures.items():
            # Refused before anything is written: two calls of 2^62 tokens add up past
            # the store's integers (sqlite3 raised OverflowError), two of $1e308 to inf.
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError("the model calls' costs add up past the largest float", field=name)
            if isinstance(value, int) and value > INT64_MAX:
                raise InputError(
                    f"the model calls' {name.replace('_', ' ')} add up past {INT64_MAX} "
                    "(2^63 - 1, the largest integer the store holds)",
                    field=name,
                )
        seqs = [
            row[0]
            for row in self.conn.execute(
                "SELECT seq FROM events WHERE trial_pk = ? ORDER BY seq", (trial_pk,)
            )
        ]
        kept, added = merged_places(known, events)
        moved = {old: new for old, new in enumerate(kept) if new != old}
        if moved or seqs != list(range(len(seqs))):
            # Two steps: a row's new seq may be another's old one (the primary key).
            self.conn.executemany(
                "UPDATE events SET seq = ? WHERE trial_pk = ? AND seq = ?",
                [(-1 - new, trial_pk, seq) for seq, new in zip(seqs, kept, strict=True)],
            )
            self.conn.execute(
                "UPDATE events SET seq = -1 - seq WHERE trial_pk = ? AND seq < 0", (trial_pk,)
            )
            if moved:
                self._move_cited_events(trial_pk, moved)
        self.conn.executemany(
            "INSERT INTO events(trial_pk, seq, type, t, data) VALUES (?,?,?,?,?)",
            [(trial_pk, *event_row(seq, e)) for seq, e in zip(added, events, strict=True)],
        )
        sets = "".join(f"{name} = ?, " for name in figures)
        self.conn.execute(
            f"UPDATE trials SET {sets}metadata = ? WHERE id = ?",
            (*figures.values(), dumps(metadata), trial_pk),
        )
        if self.schema_version >= 5:
            self._write_event_facts(trial_pk, figures)

    def _move_cited_events(self, trial_pk: int, moved: Mapping[int, int]) -> None:
        """Point the ``event_index`` values of a trial's stored grades (every version)
        at the events' new places (``moved``: old index to new)."""
        rows = self.conn.execute(
            "SELECT version, grader, evidence FROM grades WHERE trial_pk = ?"
            " AND evidence LIKE '%event_index%'",
            (trial_pk,),
        ).fetchall()
        for version, grader, text in rows:
            evidence = loads(text)
            if _move_indices(evidence, moved):
                self.conn.execute(
                    "UPDATE grades SET evidence = ? WHERE trial_pk = ? AND version = ?"
                    " AND grader = ?",
                    (dumps(evidence), trial_pk, version, grader),
                )

    @store_errors
    def trial_events(self, trial_pk: int) -> tuple[list[Event], dict[str, Any]]:
        """A stored trial's transcript and metadata."""
        (meta,) = self.conn.execute(
            "SELECT metadata FROM trials WHERE id = ?", (trial_pk,)
        ).fetchone()
        rows = self.conn.execute(
            "SELECT type, t, data FROM events WHERE trial_pk = ? ORDER BY seq", (trial_pk,)
        )
        return [event_of(*row) for row in rows], loads(meta) if meta else {}

    @store_errors
    @of_held_run
    def trial_keys(
        self, run_id: str, *, agent: str | None = None, model: str | None = None
    ) -> list[int]:
        """Primary keys of the run's trials, in insertion order (``agent``/``model``: of
        that configuration's trials only, as `trials` chooses them)."""
        where, picked = _configuration_sql(agent, model)
        rows = self.conn.execute(
            f"SELECT t.id FROM trials t WHERE t.run_id = ?{where} ORDER BY t.id", (run_id, *picked)
        )
        return [r[0] for r in rows]

    @store_errors
    @of_held_run
    def table(self, run_id: str, *, grade_version: int | None = None) -> TrialTable:
        """The run's trials as a columnar table, straight from SQL (no models), with
        the outcomes of ``grade_version`` (default: the run's active one): from the
        trials' records (`columns`) where they have them, else from their columns."""
        with self.snapshot():
            version = self.resolve_grade_version(run_id, grade_version)
            fast = self._records(run_id, version)
            if fast is not None:
                return fast[0]
            return self._table_from_rows(run_id, version)

    def _table_from_rows(self, run_id: str, version: int) -> TrialTable:
        overlay = self._outcomes(run_id, version)
        rows = self.conn.execute(
            f"SELECT id, {', '.join(SOURCE_FIELDS)} FROM trials WHERE run_id = ? ORDER BY id",
            (run_id,),
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * (1 + len(SOURCE_FIELDS))
        fields = dict(zip(SOURCE_FIELDS, columns[1:], strict=True))
        if overlay is not None:
            at = {pk: i for i, pk in enumerate(columns[0])}
            success, score = list(fields["success"]), list(fields["score"])
            for pk, (ok, value) in overlay.items():
                if pk in at:
                    success[at[pk]], score[at[pk]] = ok, value
            fields["success"], fields["score"] = tuple(success), tuple(score)
        regraded = self._regraded_judge_costs(run_id, version)
        if regraded:
            at = {pk: i for i, pk in enumerate(columns[0])}
            judge = list(fields["judge_cost_usd"])
            for pk, cost in regraded.items():
                judge[at[pk]] = cost
            fields["judge_cost_usd"] = tuple(judge)
        return TrialTable.from_fields(fields)

    @store_errors
    @of_held_run
    def columns(self, run_id: str, *, grade_version: int | None = None) -> tuple[TrialTable, Facts]:
        """The run's trials as a table and their facts (`agentgauge.facts`), row for row,
        under ``grade_version`` (default: the run's active one): one record a trial
        (`agentgauge.store.packed`), no models. A run some of whose trials have no
        record (a store of an older schema, read-only) is read as models, with the
        same result. One `snapshot`: the table and the facts are of the same trials."""
        with self.snapshot():
            version = self.resolve_grade_version(run_id, grade_version)
            self.refuse_damaged_success(run_id)
            fast = self._records(run_id, version)
            if fast is not None:
                return fast
            return self._table_from_rows(run_id, version), Facts.from_trials(
                self.trials(run_id, grade_version=version)
            )

    @store_errors
    @of_held_run
    def refuse_damaged_success(self, run_id: str) -> None:
        """A damaged row's error for a trial whose stored ``success`` is not 0, 1 or
        NULL (a hand edit: ``UPDATE trials SET success = 7``). Read as a number it was
        a pass here and a failure where SQL counts ``success = 1`` (the viewer's list
        of runs); it is neither, to every reader (`agentgauge.store.rows.stored_flag`).
        One scan of the run's span of keys, without an index descent per trial (a few
        hundredths of a second for 100,000 trials)."""
        bad = self.damaged_success(run_id)
        if bad is not None:
            pk, value = bad
            raise self.damaged(
                f"trial {pk} of run {run_id!r}", DamagedValue("success", bad_flag("success", value))
            )

    @store_errors
    @of_held_run
    def damaged_success(self, run_id: str) -> tuple[int, Any] | None:
        """The first trial of the run whose stored ``success`` is not 0, 1 or NULL, as
        ``(key, value)``, or ``None`` (`refuse_damaged_success`)."""
        lo, hi = self.conn.execute(
            "SELECT MIN(id), MAX(id) FROM trials WHERE run_id = ?", (run_id,)
        ).fetchone()
        if lo is None:
            return None
        bad = self.conn.execute(
            "SELECT id, success FROM trials WHERE id BETWEEN ? AND ? AND +run_id = ?"
            " AND success NOT IN (0, 1) LIMIT 1",
            (lo, hi, run_id),
        ).fetchone()
        return None if bad is None else (bad[0], bad[1])

    def _records(self, run_id: str, version: int) -> tuple[TrialTable, Facts] | None:
        if self.schema_version < 5 or self._layout() != LAYOUT:
            return None
        (n_trials,) = self.conn.execute(
            "SELECT COUNT(*) FROM trials WHERE run_id = ?", (run_id,)
        ).fetchone()
        (latest,) = self.conn.execute(
            "SELECT MAX(version) FROM grade_versions WHERE run_id = ?", (run_id,)
        ).fetchone()
        if latest is None or latest <= 1:
            # One grade version (the usual case): one record a trial, in key order.
            blobs = [
                b
                for (b,) in self.conn.execute(
                    "SELECT data FROM trial_facts WHERE run_id = ? AND version = 1", (run_id,)
                )
            ]
        else:
            rows = self.conn.execute(
                "SELECT trial_pk, data FROM trial_facts WHERE run_id = ? AND version <= ?"
                " ORDER BY trial_pk, version",
                (run_id, version),
            ).fetchall()
            # Each trial's record under the version: its latest up to it.
            last = {pk: data for pk, data in rows}
            blobs = list(last.values())
        if len(blobs) != n_trials:  # trials without records: read them as models
            return None
        if not blobs:
            return TrialTable.from_trials([]), Facts.from_trials([])
        labels = self._label_texts()
        values, ids = unpack(blobs)
        columns = {name: values[name] for name in COLUMNS if name in values}
        columns.update({name: labels[ids[name]] for name in COLUMNS if name in ids})
        table = TrialTable.from_columns(
            len(blobs), infra_error=_infra(ids["status"], ids["error_kind"], labels), **columns
        )
        uniques, codes = _first_appearance(ids["task_id"], labels)
        table.seed_codes("task_id", uniques, codes)
        facts = Facts.from_columns(
            values, {name: (ids[name], labels) for name in FACTS if name in ids}
        )
        return table, facts

    def _layout(self) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'facts_layout'").fetchone()
        return None if row is None else str(row[0])

    def _label_texts(self) -> npt.NDArray[np.object_]:
        """Label id -> text, with ``None`` last (what id -1 reads)."""
        rows = self.conn.execute("SELECT id, text FROM labels").fetchall()
        size = max((i for i, _ in rows), default=-1) + 2
        out = np.empty(size, dtype=object)
        if rows:
            ids, texts = zip(*rows, strict=True)
            values = np.empty(len(texts), dtype=object)
            values[:] = texts
            out[np.array(ids, dtype=np.intp)] = values
        return out

    # ------------------------------------------------------------------ grades

    def _grades_as_of(
        self, run_id: str, version: int, where: str = "", picked: tuple[str, ...] = ()
    ) -> Iterator[tuple[int, Grade]]:
        """`GRADES_AS_OF`; ``where`` and ``picked``: of some trials only (`_keys_sql`)."""
        rows = self.conn.execute(_grades_sql(where), (run_id, *picked, version))
        for pk, *grade in rows:
            yield pk, _grade(*grade)

    def _regraded_judge_costs(
        self, run_id: str, version: int, where: str = "", picked: tuple[str, ...] = ()
    ) -> dict[int, float | None]:
        """Trial key -> its ``judge_cost_usd`` under ``version``, for the trials whose
        grades as of it come from a re-grade (a version after the first).

        A version keeps its own outcomes but no trial columns: ``trials.judge_cost_usd``
        is what the run recorded (version 1). A re-graded trial's judge spend is what the
        judges of its grades recorded (`agentgauge.facts.graded_judge_cost`); ``None``
        when no judge graded it then. Before, a re-grade with a judge left every trial's
        judge cost as recorded: unknown for trials just judged at a known price.
        ``where`` and ``picked``: of some trials only (`_keys_sql`).
        """
        if version <= 1:
            return {}
        by_pk: dict[int, list[Grade]] = {}
        sql = _grades_sql(where, regraded=True)
        for pk, *grade in self.conn.execute(sql, (run_id, *picked, version)):
            by_pk.setdefault(pk, []).append(_grade(*grade))
        return {pk: graded_judge_cost(grades) for pk, grades in by_pk.items()}

    @store_errors
    @of_held_run
    def trial(self, run_id: str, pk: int) -> Trial | None:
        """One trial of the run by primary key, with its transcript and the grades of
        the run's active version (what ``show`` and the viewer read a trial by);
        ``None`` when the run has no such trial."""
        if self.schema_version < 2:  # documents kept inline: the whole-run reader knows how
            with self.snapshot():
                keyed = list(zip(self.trials(run_id), self.trial_keys(run_id), strict=True))
            return next((t for t, k in keyed if k == pk), None)
        row = self.conn.execute(
            f"SELECT {self._trial_select} FROM trials WHERE id = ? AND run_id = ?", (pk, run_id)
        ).fetchone()
        if row is None:
            return None

        def document(value: int | str) -> str:
            (data,) = self.conn.execute(
                "SELECT data FROM documents WHERE id = ?", (value,)
            ).fetchone()
            return document_text(data)

        try:
            trial = trial_of(row, document)
            trial.events, _ = self.trial_events(pk)
            rows = self.conn.execute(
                "SELECT version, grader, score, passed, status, evidence, judge_model FROM grades"
                " WHERE trial_pk = ? AND version = (SELECT MAX(version) FROM grades"
                " WHERE trial_pk = ? AND version <= ?) ORDER BY grader",
                (pk, pk, self.active_grade_version(run_id)),
            ).fetchall()
            trial.grades = [_grade(*r[1:]) for r in rows]
            if rows and rows[0][0] > 1:  # re-graded: the spend of the judges of its grades
                trial.judge_cost_usd = graded_judge_cost(trial.grades)
        except UNREADABLE as exc:
            raise self.damaged(f"trial {pk} of run {run_id!r}", exc) from None
        return trial

    @store_errors
    @of_held_run
    def grade_versions(self, run_id: str) -> list[GradeVersion]:
        """The run's grade versions, oldest first, the active one marked."""
        active = self.active_grade_version(run_id)
        kept = "outcomes_kept" if self.schema_version >= 3 else "1"
        rows = self.conn.execute(
            f"SELECT version, created_at, graders, note, {kept} FROM grade_versions"
            " WHERE run_id = ? ORDER BY version",
            (run_id,),
        ).fetchall()
        return [
            GradeVersion(
                version=v,
                created_at=at,
                graders=json.loads(graders or "[]"),
                note=note,
                active=v == active,
                # Before schema 3 a re-grade overwrote the outcomes of the versions before it.
                outcomes_kept=bool(k) and (self.schema_version >= 3 or v >= active),
            )
            for v, at, graders, note, k in rows
        ]

    @store_errors
    @of_held_run
    def active_grade_version(self, run_id: str) -> int:
        """The grade version whose outcomes the run reports (and its trials hold)."""
        if self.schema_version >= 3:
            row = self.conn.execute(
                "SELECT grade_version FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        else:  # a read-only old store: re-grades were applied in place, the latest wins
            row = self.conn.execute(
                "SELECT MAX(version) FROM grade_versions WHERE run_id = ?", (run_id,)
            ).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 1

    @store_errors
    @of_held_run
    def resolve_grade_version(self, run_id: str, version: int | None) -> int:
        """``version``, checked against the run's versions (``None``: the active one).
        Raises `InputError` for a version the run does not have or whose outcomes
        were overwritten by an agentgauge before grade versions were kept."""
        if version is not None:
            # A "1" from Python was looked up as text: "has no grade version 1 (it has 1)",
            # and -1 "has no grade version -1". The commands' options are checked here too
            # (their names put in by `cli.common.options_typed`): one rule, one line.
            version = whole_number(version, "grade_version", least=1, file=self.path)
        active = self.active_grade_version(run_id)
        if version is None or version == active:
            return active
        found = {v.version: v for v in self.grade_versions(run_id)}
        if version not in found:
            known = ", ".join(str(v) for v in sorted(found)) or "none"
            raise InputError(
                f"run {run_id!r} has no grade version {version} (it has {known})",
                file=self.path,
                field="grade_version",
            )
        if not found[version].outcomes_kept:
            raise InputError(
                f"the outcomes of grade version {version} of run {run_id!r} were overwritten "
                "by a re-grade before agentgauge kept every version; only its grades remain",
                file=self.path,
                field="grade_version",
            )
        return version

    def _outcomes(self, run_id: str, version: int) -> dict[int, tuple[bool, float | None]] | None:
        """Trial key -> (success, score) under ``version``; ``None`` for the active
        version, whose outcomes the trials themselves hold."""
        if version == self.active_grade_version(run_id):
            return None
        rows = self.conn.execute(
            "SELECT o.trial_pk, o.success, o.score FROM grade_outcomes o"
            " JOIN trials t ON t.id = o.trial_pk WHERE t.run_id = ? AND o.version = ?",
            (run_id, version),
        )
        return {pk: (bool(ok), score) for pk, ok, score in rows}

    @store_errors
    @of_held_run
    def new_grade_version(self, run_id: str, graders: Sequence[str], note: str = "") -> int:
        """Open a new grade version for a run (re-grading keeps the old beside it)."""
        row = self.conn.execute(
            "SELECT COALESCE(MAX(version), 0) FROM grade_versions WHERE run_id = ?", (run_id,)
        ).fetchone()
        version = int(row[0]) + 1
        self.conn.execute(
            "INSERT INTO grade_versions(run_id, version, created_at, graders, note)"
            " VALUES (?,?,?,?,?)",
            (run_id, version, utc_now(), dumps(list(graders)), note),
        )
        return version

    @store_errors
    def grader_names(self, trial_pk: int, *, version: int) -> set[str]:
        """The graders that graded a trial under ``version`` itself."""
        rows = self.conn.execute(
            "SELECT grader FROM grades WHERE trial_pk = ? AND version = ?", (trial_pk, version)
        )
        return {name for (name,) in rows}

    @store_errors
    def add_grades(self, trial_pk: int, version: int, grades: Sequence[Grade]) -> None:
        """Store grades for one trial under a grade version (and its record under it)."""
        self._insert_grades(trial_pk, version, grades)
        if self.schema_version >= 5:
            self._write_grade_facts(trial_pk, version)

    @store_errors
    def add_outcome(self, trial_pk: int, version: int, success: bool, score: float | None) -> None:
        """Store one trial's outcome under a grade version (what the run reports
        once that version is activated)."""
        self.conn.execute(
            "INSERT OR REPLACE INTO grade_outcomes(trial_pk, version, success, score)"
            " VALUES (?,?,?,?)",
            (trial_pk, version, int(success), score),
        )
        if self.schema_version >= 5:
            self._write_outcome(trial_pk, version, success, score)

    @store_errors
    def keep_outcome(
        self, trial_pk: int, version: int, active: int, success: bool, score: float | None
    ) -> None:
        """A trial a re-grade leaves alone (not graded under ``version``): its outcome,
        grades and record under ``version`` are those it has under ``active``, the
        version whose outcome (``success``, ``score``) it keeps.

        Its grades as of ``active`` are copied into ``version`` when a version between
        the two graded it: else the grades as of ``version`` (`GRADES_AS_OF`, the latest
        up to it) would be that version's, beside the outcome of another.
        """
        self.conn.execute(
            "INSERT OR REPLACE INTO grade_outcomes(trial_pk, version, success, score)"
            " VALUES (?,?,?,?)",
            (trial_pk, version, int(success), score),
        )
        latest = "SELECT MAX(version) FROM grades WHERE trial_pk = ? AND version <= ?"
        (kept,) = self.conn.execute(latest, (trial_pk, active)).fetchone()
        (newest,) = self.conn.execute(latest, (trial_pk, version)).fetchone()
        if kept is not None and newest != kept:
            self.conn.execute(
                "INSERT OR REPLACE INTO grades(trial_pk, version, grader, score, passed,"
                " status, evidence, judge_model) SELECT trial_pk, ?, grader, score, passed,"
                " status, evidence, judge_model FROM grades WHERE trial_pk = ? AND version = ?",
                (version, trial_pk, kept),
            )
        if self.schema_version < 5:
            return
        found = self._record_for(trial_pk, active)
        if found is not None:
            run_id, record = found
            update(record, {"success": success, "score": score}, self._label_id)
            self._put_record(run_id, trial_pk, version, record)

    @store_errors
    @of_held_run
    def activate_grade_version(self, run_id: str, version: int) -> None:
        """Make ``version`` what the run reports: its outcomes into the trials, after
        the outcomes of the version left are kept in ``grade_outcomes`` (so it can be
        read, or activated again). In the caller's transaction, or its own. A run
        another live session is writing is refused (`_changing`)."""
        version = self.resolve_grade_version(run_id, version)
        active = self.active_grade_version(run_id)
        if version == active:
            return
        with self._changing(run_id):
            self._activate(run_id, active, version)

    def _activate(self, run_id: str, active: int, version: int) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO grade_outcomes(trial_pk, version, success, score)"
            " SELECT id, ?, success, score FROM trials WHERE run_id = ?",
            (active, run_id),
        )
        self.conn.execute(
            "UPDATE trials SET (success, score) = (SELECT o.success, o.score"
            " FROM grade_outcomes o WHERE o.trial_pk = trials.id AND o.version = ?)"
            " WHERE run_id = ? AND id IN (SELECT trial_pk FROM grade_outcomes WHERE version = ?)",
            (version, run_id, version),
        )
        self.conn.execute("UPDATE runs SET grade_version = ? WHERE run_id = ?", (version, run_id))

    # ------------------------------------------------------------------ audit

    @store_errors
    def audit(self, action: str, *, run_id: str | None = None, detail: Any = None) -> None:
        """Log a use that reports must disclose (e.g. held-out tasks included)."""
        self.conn.execute(
            "INSERT INTO audit(at, run_id, action, detail) VALUES (?,?,?,?)",
            (utc_now(), run_id, action, None if detail is None else dumps(detail)),
        )

    @store_errors
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

    @store_errors
    def integrity_check(self) -> str:
        """``ok``, or what is wrong: SQLite's own check, then references to documents."""
        found = str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])
        if found != "ok" or self.schema_version < 2:
            return found
        for table, column in DOCUMENT_REFERENCES:
            (missing,) = self.conn.execute(
                f"SELECT COUNT(*) FROM {table} WHERE {column} IS NOT NULL"
                f" AND {column} NOT IN (SELECT id FROM documents)"
            ).fetchone()
            if missing:
                return f"{missing} rows of {table} refer to a missing document ({column})"
        return "ok"


def _infra(
    status: npt.NDArray[np.int32], kind: npt.NDArray[np.int32], labels: npt.NDArray[np.object_]
) -> npt.NDArray[np.bool_]:
    """The infra-error rule (`agentgauge.schema.infra_error`) once per distinct pair."""
    size = len(labels) + 1  # ids run from -1 (none) to len(labels) - 2
    pairs = (status.astype(np.int64) + 1) * size + (kind.astype(np.int64) + 1)
    uniq, inverse = np.unique(pairs, return_inverse=True)
    verdict = np.array(
        [infra_error(labels[int(p // size) - 1], labels[int(p % size) - 1]) for p in uniq],
        dtype=bool,
    )
    out: npt.NDArray[np.bool_] = verdict[inverse.reshape(-1)]
    return out


def _first_appearance(
    ids: npt.NDArray[np.int32], labels: npt.NDArray[np.object_]
) -> tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]]:
    """A label column's coding as `agentgauge.table.factorize` gives it (distinct values
    in order of first appearance), from its label ids, without hashing a string."""
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return labels[uniq[order]], rank[inverse.reshape(-1)]


def _grade(
    grader: str,
    score: float | None,
    passed: int | None,
    status: str | None,
    evidence: str | None,
    judge_model: str | None,
) -> Grade:
    """A ``grades`` row as a `Grade`."""
    return Grade(
        grader=grader,
        score=score,
        passed=None if passed is None else bool(passed),
        status=status,
        evidence=None if evidence is None else loads(evidence),
        judge_model=judge_model,
    )


def _text(value: bytes | str) -> str:
    """A document column's JSON text: a document (compressed) or, in schema 1, the text."""
    return value if isinstance(value, str) else document_text(value)


def merged_places(known: Sequence[Event], added: Sequence[Event]) -> tuple[list[int], list[int]]:
    """Where each event of a transcript ``known`` and each of ``added`` go once merged
    in time order: an added event goes before the first known event that happened
    after it (one of the same time goes after it: ties keep the transcript's order),
    at the end when it has no time. Known events keep their order; added ones are put
    in time order (a stable sort). Returns the new index of each known event, then of
    each added one."""
    order = sorted(
        range(len(added)),
        key=lambda i: (added[i].t is None, added[i].t or 0.0),
    )
    kept: list[int] = []
    places = [0] * len(added)
    position = j = 0
    for event in known:
        while j < len(order) and _before(added[order[j]], event):
            places[order[j]] = position
            position += 1
            j += 1
        kept.append(position)
        position += 1
    for i in order[j:]:
        places[i] = position
        position += 1
    return kept, places


def _before(new: Event, old: Event) -> bool:
    """Whether ``new`` happened before ``old`` (never when either has no time)."""
    return new.t is not None and old.t is not None and new.t < old.t


def _move_indices(node: Any, moved: Mapping[int, int]) -> bool:
    """Replace, in place, every integer ``event_index`` in ``node`` (a grade's evidence)
    by its new value in ``moved``; whether any changed."""
    changed = False
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "event_index" and type(value) is int and value in moved:
                node[key] = moved[value]
                changed = True
            elif isinstance(value, dict | list):
                changed = _move_indices(value, moved) or changed
    elif isinstance(node, list):
        for item in node:
            changed = _move_indices(item, moved) or changed
    return changed
