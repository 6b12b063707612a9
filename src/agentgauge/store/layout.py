"""The store's tables, derived from `agentgauge.schema.TRIAL_FIELDS`, and its documents.

Schema 2. ``trials`` has one column per trial field, in the declaration's
order: text, integers, reals and booleans as themselves, ``json`` fields as
canonical JSON text, and ``document`` fields (the final state) as the id of a
row of ``documents``, named ``FIELD_id``.

``documents`` holds the JSON values that many rows share, each distinct one
once: a final state (every trial that leaves the world as another did points
at the same row) and a task as a run saw it (every run of a suite stores the
same tasks). A document is its canonical JSON text (`agentgauge.canonical`),
addressed by the text's SHA-256 and kept zlib-compressed.

Why content addressing, not diffs from the task's initial state: a state then
needs nothing but its own row to be read back exactly (no base to find, no
chain of patches, no environment code), it works the same for imported trials
and custom environments that have no initial state to diff against, and the
states that repeat most (the world untouched, or left exactly as the task
expects) are stored once whatever their size. The states that differ still
share most of their text with one another, which zlib (ratio about 6 on
retail states) takes care of.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib

from agentgauge.schema import TRIAL_FIELDS, TrialField

__all__ = [
    "DOCUMENTS_SQL",
    "DOCUMENT_FIELDS",
    "SCHEMA_VERSION",
    "TRIAL_COLUMNS",
    "column_of",
    "document_id",
    "document_text",
    "reference_index_sql",
    "schema_sql",
]

SCHEMA_VERSION = 2

_SQL_TYPE = {
    "text": "TEXT",
    "int": "INTEGER",
    "real": "REAL",
    "bool": "INTEGER",
    "json": "TEXT",
    "document": "INTEGER REFERENCES documents(id)",
}


def column_of(field: TrialField) -> str:
    """The ``trials`` column that holds ``field``."""
    return f"{field.name}_id" if field.type == "document" else field.name


#: The ``trials`` columns that hold the trial's fields, in the declaration's order.
TRIAL_COLUMNS = tuple(column_of(f) for f in TRIAL_FIELDS)
#: The fields kept in ``documents``.
DOCUMENT_FIELDS = tuple(f for f in TRIAL_FIELDS if f.type == "document")


def _trials_sql(table: str) -> str:
    fields = ",\n".join(
        f"    {column_of(f)} {_SQL_TYPE[f.type]}{' NOT NULL' if f.required else ''}"
        for f in TRIAL_FIELDS
    )
    return (
        f"CREATE TABLE {table} (\n"
        "    id INTEGER PRIMARY KEY,\n"
        "    run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
        f"{fields},\n"
        "    created_at TEXT NOT NULL\n"
        ");\n"
    )


def reference_index_sql(column: str) -> str:
    """The index on a ``trials`` column that refers to ``documents``."""
    # A document's referrers are found by index: deleting an unused document
    # (after a run is deleted) checks its foreign keys without scanning trials.
    return f"CREATE INDEX trials_{column} ON trials ({column});\n"


def _trial_indexes_sql() -> str:
    return (
        "CREATE UNIQUE INDEX trials_cell\n"
        "    ON trials (run_id, task_id, trial, variant, IFNULL(agent, ''), IFNULL(model, ''));\n"
        + "".join(reference_index_sql(column_of(f)) for f in DOCUMENT_FIELDS)
    )


def _tasks_sql(table: str) -> str:
    return (
        f"CREATE TABLE {table} (\n"
        "    run_id        TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
        "    task_id       TEXT NOT NULL,\n"
        "    family        TEXT,\n"
        "    split         TEXT,\n"
        "    capability    TEXT,\n"
        "    human_minutes REAL,\n"
        "    spec_id       INTEGER REFERENCES documents(id),\n"
        "    PRIMARY KEY (run_id, task_id)\n"
        ");\n"
    )


DOCUMENTS_SQL = """
CREATE TABLE documents (
    id     INTEGER PRIMARY KEY,
    sha256 BLOB NOT NULL UNIQUE,
    data   BLOB NOT NULL
);
"""

_OTHERS = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE runs (
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
CREATE TABLE events (
    trial_pk INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL,
    type     TEXT NOT NULL,
    t        REAL,
    data     TEXT NOT NULL,
    PRIMARY KEY (trial_pk, seq)
) WITHOUT ROWID;
CREATE TABLE grades (
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
CREATE TABLE grade_versions (
    run_id     TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    graders    TEXT NOT NULL DEFAULT '[]',
    note       TEXT,
    PRIMARY KEY (run_id, version)
);
CREATE TABLE audit (
    id     INTEGER PRIMARY KEY,
    at     TEXT NOT NULL,
    run_id TEXT,
    action TEXT NOT NULL,
    detail TEXT
);
"""


def schema_sql() -> str:
    """The DDL of a new store of the current schema."""
    return (
        _OTHERS + DOCUMENTS_SQL + _tasks_sql("tasks") + _trials_sql("trials") + _trial_indexes_sql()
    )


def document_id(conn: sqlite3.Connection, text: str) -> int:
    """The id of the document holding ``text`` (canonical JSON), added when new.

    Called in the writer's transaction; hashing and compressing release the GIL,
    so the harness's event loop runs meanwhile.
    """
    data = text.encode("utf-8")
    key = hashlib.sha256(data).digest()
    row = conn.execute("SELECT id FROM documents WHERE sha256 = ?", (key,)).fetchone()
    if row is not None:
        return int(row[0])
    cur = conn.execute(
        "INSERT INTO documents(sha256, data) VALUES (?, ?)", (key, zlib.compress(data))
    )
    assert cur.lastrowid is not None
    return cur.lastrowid


def document_text(data: bytes) -> str:
    """A document's text from its stored form."""
    return zlib.decompress(data).decode("utf-8")
