"""Opening a store: its schema version, creating a new one, upgrading an old one.

A store records its schema version in ``meta`` (``schema_version``). Opened for
writing, a store of an earlier schema is upgraded in one transaction, so a
failure leaves it as it was; opened read-only, it is read as it is when this
code can (schema 1 can be), and refused with what to do otherwise. A store of a
later schema is refused whichever way it is opened, and nothing is written to it.

Schema 1 (agentgauge 0.x until the compact store) kept each trial's final state
and each run's tasks as inline JSON text (``trials.final_state``,
``tasks.spec``) and each event's ``type`` and ``t`` in its ``data`` too. The
upgrade to 2 moves the final states and tasks into ``documents`` (each distinct
one once). Events are left as they are: an event is read as its ``data`` with
the ``type`` and ``t`` columns laid over it, which gives the same event for both
forms, so the upgrade need not rewrite every event of a large store.

Schema 2 re-graded a run in place: ``agentgauge grade`` overwrote each trial's
outcome with the new version's. The upgrade to 3 adds ``grade_outcomes`` (each
trial's outcome per grade version), ``runs.grade_version`` (the version the run
reports) and ``grade_versions.outcomes_kept``. What a run reports does not
change: its active version is its latest, whose outcomes the trials hold; the
versions before it are marked as having lost their outcomes (their grades are
still there).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from agentgauge.errors import InputError
from agentgauge.schema import TRIAL_FIELDS, TrialField
from agentgauge.store.faults import (
    damaged_store,
    read_only_cause,
    read_only_filesystem,
    storage_error,
)
from agentgauge.store.layout import (
    DOCUMENTS_SQL,
    FACTS_SQL,
    GRADE_OUTCOMES_SQL,
    SCHEMA_VERSION,
    TRACE_INDEX_SQL,
    column_of,
    document_id,
    schema_sql,
)
from agentgauge.textio import is_digits

__all__ = [
    "ADDED_IN",
    "open_store",
    "readable_columns",
    "statements",
    "stored_fields",
]

#: The oldest schema a read-only open reads without upgrading it.
_READABLE_FROM = 1


def statements(script: str) -> list[str]:
    """The statements of a script of ours (one per ``;`` at a line's end), to run one by
    one inside a transaction (``executescript`` would commit it first)."""
    return [s.strip() for s in script.split(";\n") if s.strip()]


#: Trial fields whose column a later schema added: a store older than that is read
#: without it, the field missing from every trial (unknown, as before the field).
ADDED_IN: dict[str, int] = {"turns": 4}


def stored_fields(version: int) -> tuple[TrialField, ...]:
    """The trial fields a store of this schema has a column for."""
    return tuple(f for f in TRIAL_FIELDS if ADDED_IN.get(f.name, 1) <= version)


def readable_columns(version: int) -> set[str]:
    """The ``trials`` columns a store of this schema must have for this code to read it:
    every field it stores (schema 1 kept documents inline, under the field's name)."""
    fields = stored_fields(version)
    names = [column_of(f) if version >= 2 else f.name for f in fields]
    return {"id", "run_id", "created_at", *names}


def open_store(path: str, *, readonly: bool) -> tuple[sqlite3.Connection, int]:
    """A connection to the store at ``path`` and its schema version, which is the
    current one unless the store is older and opened read-only."""
    if not readonly and path != ":memory:":
        _check_writable(path)
    try:
        if readonly:
            conn = _connect_readonly(path)
        else:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    except sqlite3.Error as exc:
        raise InputError(f"cannot open the store: {_why_not(path, exc)}", file=path) from None
    try:
        version = _prepare(conn, path, readonly=readonly)
    except BaseException as exc:
        conn.close()
        damaged = damaged_store(exc, path)
        if damaged is not None:
            raise damaged from None
        raise
    return conn, version


def _check_writable(path: str) -> None:
    """Refuse, in words, a store this command would write but cannot: SQLite opens it
    anyway and then fails with "unable to open database file" (it cannot make the
    ``-wal`` and ``-shm`` files beside it), which read as "not an agentgauge store"."""
    file = Path(path)
    folder = file.parent
    if not folder.is_dir():
        return  # `_why_not` says so when the open fails
    if file.exists():
        found = read_only_cause(file)
        if found is None:
            return
        why, fix = found
        raise InputError(
            f"cannot write to the store: {why}; this command adds to the store. "
            f"{fix[0].upper()}{fix[1:]} (metrics, compare, show, report, export and gate "
            "only read a store, and work on it as it is)",
            file=path,
        )
    if read_only_filesystem(folder):
        raise InputError(
            f"cannot create the store: the folder {folder} is on a read-only filesystem "
            "(mounted read-only, which no file mode changes); name a store on a writable "
            "disk",
            file=path,
        )
    if not os.access(folder, os.W_OK):
        raise InputError(f"cannot create the store: the folder {folder} is read-only", file=path)


def _why_not(path: str, exc: sqlite3.Error) -> str:
    """SQLite's reason, with what it does not say ("unable to open database file" is
    all it gives for a folder that is not there, or a path that is a folder)."""
    where = Path(path)
    if where.is_dir():
        if (where / "_agentgauge.json").is_file():
            return (
                "it is a Parquet export, not a store; name the store it was exported from "
                "(metrics, compare, show, report and horizon read the export itself)"
            )
        return "it is a directory; name the store file in it (agentgauge.db, say)"
    if not where.parent.is_dir():
        return f"the folder {where.parent} does not exist ({exc})"
    return str(exc)


def _connect_readonly(path: str) -> sqlite3.Connection:
    """A connection that reads and never writes, whoever may write the file and its folder.

    A reader of a WAL-mode store needs the ``-wal`` and ``-shm`` files beside it.
    Where this user may write (the usual case), the connection is an ordinary one
    refusing writes (``query_only``), so that closing it removes those files as a
    writer's close does; a ``mode=ro`` connection cannot, and left them behind.
    Elsewhere it is ``mode=ro``; where SQLite cannot create the ``-shm`` file either
    (a read-only filesystem, a folder this user may not write), that open fails with
    "unable to open database file", and the store is read ``immutable`` (SQLite,
    "URI filenames"): nobody can write to that folder, so no writer changes the file
    while it is read. An immutable read ignores the ``-wal`` file, so a store whose
    ``-wal`` holds anything (a writer that ended without checkpointing, a copy taken
    with its ``-wal`` but not its ``-shm``) is refused then (`_refuse_unread_wal`): read
    without it, it would show an older state as the whole store.
    """
    file = Path(path).resolve()
    if os.access(file, os.W_OK) and os.access(file.parent, os.W_OK):
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("PRAGMA query_only=ON")
        return conn
    uri = file.as_uri()
    conn = sqlite3.connect(uri + "?mode=ro", uri=True, isolation_level=None, timeout=30)
    try:
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        if not os.access(file.parent, os.W_OK):
            conn.close()
            _refuse_unread_wal(path)
            return sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None, timeout=30)
    except sqlite3.DatabaseError:
        pass  # not a database: reading its version says so, as for any other store
    return conn


def _refuse_unread_wal(path: str) -> None:
    """Refuse to read the store immutable while its ``-wal`` holds writes: SQLite would
    read the main file alone, without the runs and trials committed since the last
    checkpoint, and nothing would say so."""
    wal = Path(f"{path}-wal")
    try:
        held = wal.stat().st_size > 0
    except OSError:
        return  # no -wal: the main file is the whole store
    if held:
        raise InputError(
            f"cannot read the store here: its latest writes are in {wal}, which SQLite "
            "reads only where it may write beside the store (this folder is read-only); "
            "copy the store with its -wal file to a folder you can write and read the copy, "
            "or run an agentgauge command on it once as a user who may write the folder "
            "(which moves those writes into the store)",
            file=path,
        )


def _prepare(conn: sqlite3.Connection, path: str, *, readonly: bool) -> int:
    version = _version(conn, path)
    if version is not None and version > SCHEMA_VERSION:
        raise _newer(path, version)  # before any pragma or statement that could write
    if readonly:
        if version is None:
            raise InputError("not an agentgauge store (it holds no tables)", file=path)
        _check_layout(conn, path, version)
        return version
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        if version is None or version < SCHEMA_VERSION:
            _create_or_upgrade(conn, path)
    except sqlite3.OperationalError as exc:
        full = storage_error(exc, path)
        if full is not None:
            raise full from None
        if "readonly" not in str(exc):
            raise
        raise _needs_write_access(path, version) from None
    _check_layout(conn, path, SCHEMA_VERSION)
    return SCHEMA_VERSION


def _newer(path: str, version: int) -> InputError:
    return InputError(
        f"store schema {version} is newer than this agentgauge's ({SCHEMA_VERSION}); "
        "upgrade agentgauge to use it",
        file=path,
    )


def _needs_write_access(path: str, version: int | None) -> InputError:
    what = (
        "creating the store"
        if version is None
        else f"upgrading the store from schema {version} to {SCHEMA_VERSION}"
    )
    return InputError(
        f"{what} needs write access: make the file and its folder writable "
        "(or work on a copy) and run the command again",
        file=path,
    )


def _version(conn: sqlite3.Connection, path: str) -> int | None:
    """The store's schema version; ``None`` for an empty database."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as exc:
        # A store cut short or overwritten is damaged, and said so as any damaged page
        # is; a file SQLite cannot read as a database at all is no store.
        damaged = damaged_store(exc, path)
        if damaged is not None:
            raise damaged from None
        if not isinstance(exc, sqlite3.OperationalError) or "no such table" not in str(exc):
            raise InputError(f"not an agentgauge store: {exc}", file=path) from None
        if conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0:
            return None
        raise InputError("not an agentgauge store (it has no meta table)", file=path) from None
    if row is None or not is_digits(str(row[0])):
        raise InputError("not an agentgauge store (no schema version recorded)", file=path)
    return int(row[0])


def _create_or_upgrade(conn: sqlite3.Connection, path: str) -> None:
    """Create the tables of a new store, or upgrade an old one, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    version: int | None = None
    try:
        version = _version(conn, path)  # again: another process may have done it meanwhile
        if version is None:
            for sql in statements(schema_sql()):
                conn.execute(sql)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif version < SCHEMA_VERSION:
            _upgrade(conn, path, version)
        elif version > SCHEMA_VERSION:
            raise _newer(path, version)
        conn.execute("COMMIT")
    except BaseException as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        if not isinstance(exc, sqlite3.Error):
            raise
        full = storage_error(exc, path)
        if full is not None:
            raise full from None
        if "readonly" in str(exc):
            raise _needs_write_access(path, version) from None
        raise InputError(
            f"cannot upgrade the store: {exc} (nothing was changed)", file=path
        ) from None


def _upgrade(conn: sqlite3.Connection, path: str, version: int) -> None:
    for step in range(version, SCHEMA_VERSION):
        _UPGRADES[step](conn)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    broken = conn.execute("PRAGMA foreign_key_check").fetchone()
    if broken is not None:
        raise InputError(
            f"cannot upgrade the store: table {broken[0]} refers to a missing row of "
            f"{broken[2]} (nothing was changed)",
            file=path,
        )


def _upgrade_1_to_2(conn: sqlite3.Connection) -> None:
    """Final states and tasks into ``documents``, each distinct one once. (A step
    is history: it names the columns of its time, whatever the fields are now.)"""
    conn.execute(DOCUMENTS_SQL)
    _move_to_documents(conn, "trials", "id", "final_state", "final_state_id")
    _move_to_documents(conn, "tasks", "rowid", "spec", "spec_id")


def _move_to_documents(
    conn: sqlite3.Connection, table: str, key: str, inline: str, ref: str
) -> None:
    # Rows are read in one pass and each distinct text is compressed once; the
    # column is then swapped for the reference (ALTER TABLE keeps the rest as is).
    conn.execute(f"ALTER TABLE {table} ADD COLUMN {ref} INTEGER")
    rows = conn.execute(f"SELECT {key}, {inline} FROM {table} WHERE {inline} IS NOT NULL")
    refs = [(document_id(conn, text), pk) for pk, text in rows]
    conn.executemany(f"UPDATE {table} SET {ref} = ? WHERE {key} = ?", refs)
    conn.execute(f"ALTER TABLE {table} DROP COLUMN {inline}")


def _upgrade_2_to_3(conn: sqlite3.Connection) -> None:
    """Grade versions that a re-grade adds without changing what the run reports."""
    conn.execute(GRADE_OUTCOMES_SQL)
    conn.execute("ALTER TABLE runs ADD COLUMN grade_version INTEGER NOT NULL DEFAULT 1")
    conn.execute("ALTER TABLE grade_versions ADD COLUMN outcomes_kept INTEGER NOT NULL DEFAULT 1")
    # Schema 2 overwrote the outcomes in place: the latest version is what each run
    # reports, and the outcomes of the versions before it are gone.
    conn.execute(
        "UPDATE runs SET grade_version = (SELECT MAX(g.version) FROM grade_versions g"
        " WHERE g.run_id = runs.run_id)"
        " WHERE EXISTS (SELECT 1 FROM grade_versions g WHERE g.run_id = runs.run_id)"
    )
    conn.execute(
        "UPDATE grade_versions SET outcomes_kept = 0 WHERE version <"
        " (SELECT r.grade_version FROM runs r WHERE r.run_id = grade_versions.run_id)"
    )


def _upgrade_3_to_4(conn: sqlite3.Connection) -> None:
    """The turn record of multi-turn trials, a document like the final state; the
    trials stored before it have none (unknown turns, as they had)."""
    conn.execute("ALTER TABLE trials ADD COLUMN turns_id INTEGER")


def _upgrade_4_to_5(conn: sqlite3.Connection) -> None:
    """Each trial's columns and facts as one record (`agentgauge.store.packed`). The
    records of the trials stored before are derived when the store is next opened
    for writing (`Store`), which needs the trials read as models; until then a run
    without them is read the slower way, with the same result."""
    for sql in statements(FACTS_SQL):
        conn.execute(sql)
    conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('facts_pending', '1')")


def _upgrade_5_to_6(conn: sqlite3.Connection) -> None:
    """An index of trials by the trace id their metadata records, which ``collect``
    looks up for every request it receives (a scan of every trial's metadata before)."""
    for sql in statements(TRACE_INDEX_SQL):
        conn.execute(sql)


_UPGRADES: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _upgrade_1_to_2,
    2: _upgrade_2_to_3,
    3: _upgrade_3_to_4,
    4: _upgrade_4_to_5,
    5: _upgrade_5_to_6,
}


def _check_layout(conn: sqlite3.Connection, path: str, version: int) -> None:
    """Refuse a store whose ``trials`` table lacks a column this code reads, or has one
    it does not know (a misaligned store must not be read as if it were fine)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    want = readable_columns(version)
    if have == want:
        return
    if version < SCHEMA_VERSION and version >= _READABLE_FROM:
        raise InputError(
            f"store schema {version} cannot be read without upgrading it to {SCHEMA_VERSION}: "
            "run an agentgauge command that writes to it (grade, import or run), "
            "which upgrades it",
            file=path,
        )
    missing, unknown = sorted(want - have), sorted(have - want)
    raise InputError(
        f"the store's trials table does not match schema {version} "
        f"(missing columns: {missing or 'none'}; unknown columns: {unknown or 'none'})",
        file=path,
    )
