"""The store's tables, derived from `agentgauge.schema.TRIAL_FIELDS`, and its documents.

Schema 5. ``trials`` has one column per trial field, in the declaration's
order: text, integers, reals and booleans as themselves, ``json`` fields as
canonical JSON text, and ``document`` fields (the final state, the turn record)
as the id of a row of ``documents``, named ``FIELD_id``. Schema 4 added
``turns_id`` (the hand-backs of multi-turn conversations, `agentgauge.turns`).
Schema 5 added ``trial_facts`` and ``labels``: each trial's columns and facts
(`agentgauge.facts`) as one fixed-width record per grade version it was graded
under (`agentgauge.store.packed`), its text as ids into ``labels``, so that a
run's metrics read one value per trial instead of a few dozen, in one range of
the table's key (run, trial, version). A record is derived from its trial and
declares no foreign key (a cascade would want an index on ``trial_pk``, one more
page per written trial): `Store.delete_run` deletes a run's records with it.

``documents`` holds the JSON values that many rows share, each distinct one
once: a final state (every trial that leaves the world as another did points
at the same row), a turn record and a task as a run saw it (every run of a suite stores the
same tasks). A document is its canonical JSON text (`agentgauge.canonical`),
addressed by the text's SHA-256 and kept zlib-compressed.

The columns that refer to documents (``trials.final_state_id``,
``tasks.spec_id``) declare no foreign key: SQLite would then want an index on
each to delete a document, and that index costs the harness one more page per
committed trial (about a fifth of a write and commit, measured). The store's code
writes a reference only to a document it has just found or added in the same
transaction, deletes only documents nothing refers to (`Store.delete_run`), and
`Store.integrity_check` reports a reference to a missing document.

Grade versions (schema 3): a run's trials carry the outcome (``success``,
``score``) of the run's *active* grade version, ``runs.grade_version``, so that
everything that reads a run reads it from ``trials`` alone. A re-grade adds a
version: its grades in ``grades`` and each trial's outcome under it in
``grade_outcomes``, and changes nothing the run reports until it is activated.
Activating copies the outcome of the version being left into
``grade_outcomes`` first, so that every version stays readable.
``grade_versions.outcomes_kept`` is 0 for versions whose outcomes an earlier
agentgauge overwrote in place (re-grades before schema 3): their grades remain,
their outcomes do not.

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
    "DOCUMENT_REFERENCES",
    "FACTS_SQL",
    "GRADE_OUTCOMES_SQL",
    "SCHEMA_VERSION",
    "TRACE_INDEX_SQL",
    "TRIAL_COLUMNS",
    "column_of",
    "document_id",
    "document_text",
    "schema_sql",
]

SCHEMA_VERSION = 6

_SQL_TYPE = {
    "text": "TEXT",
    "int": "INTEGER",
    "real": "REAL",
    "bool": "INTEGER",
    "json": "TEXT",
    "document": "INTEGER",
}


def column_of(field: TrialField) -> str:
    """The ``trials`` column that holds ``field``."""
    return f"{field.name}_id" if field.type == "document" else field.name


#: The ``trials`` columns that hold the trial's fields, in the declaration's order.
TRIAL_COLUMNS = tuple(column_of(f) for f in TRIAL_FIELDS)
#: The (table, column) pairs that refer to ``documents``.
DOCUMENT_REFERENCES = (
    *(("trials", column_of(f)) for f in TRIAL_FIELDS if f.type == "document"),
    ("tasks", "spec_id"),
)


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


#: Trials by the trace id their metadata records (an ``http:`` agent's request, a
#: trace ``collect`` received): ``collect`` looks up every request's trace ids, which
#: without it scanned every trial's metadata. Partial: most trials record none.
TRACE_INDEX_SQL = """
CREATE INDEX IF NOT EXISTS trials_trace ON trials (json_extract(metadata, '$.trace_id'))
    WHERE json_extract(metadata, '$.trace_id') IS NOT NULL;
"""

_TRIAL_INDEXES = (
    """
CREATE UNIQUE INDEX trials_cell
    ON trials (run_id, task_id, trial, variant, IFNULL(agent, ''), IFNULL(model, ''));
"""
    + TRACE_INDEX_SQL
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
        "    spec_id       INTEGER,\n"
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
    config             TEXT NOT NULL DEFAULT '{}',
    grade_version      INTEGER NOT NULL DEFAULT 1
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
    outcomes_kept INTEGER NOT NULL DEFAULT 1,
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


FACTS_SQL = """
CREATE TABLE labels (
    id   INTEGER PRIMARY KEY,
    text TEXT NOT NULL UNIQUE
);
CREATE TABLE trial_facts (
    run_id   TEXT NOT NULL,
    trial_pk INTEGER NOT NULL,
    version  INTEGER NOT NULL,
    data     BLOB NOT NULL,
    PRIMARY KEY (run_id, trial_pk, version)
) WITHOUT ROWID;
"""

GRADE_OUTCOMES_SQL = """
CREATE TABLE grade_outcomes (
    trial_pk INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
    version  INTEGER NOT NULL,
    success  INTEGER NOT NULL,
    score    REAL,
    PRIMARY KEY (trial_pk, version)
) WITHOUT ROWID;
"""


def schema_sql() -> str:
    """The DDL of a new store of the current schema."""
    return (
        _OTHERS
        + GRADE_OUTCOMES_SQL
        + FACTS_SQL
        + DOCUMENTS_SQL
        + _tasks_sql("tasks")
        + _trials_sql("trials")
        + _TRIAL_INDEXES
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
