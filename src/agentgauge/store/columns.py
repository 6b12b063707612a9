"""A run read column-wise, in batches, for exporters that write columns (Parquet).

No `Trial` or `Event` model is built: each batch is the stored values as SQLite
returns them (booleans as 0/1, JSON as canonical text), with each document's
text in place of its id, and the outcomes and grades of one grade version (the
rules of `Store.trials`: a trial graded in no later version than the one asked
keeps its latest grades before it).

Each reader is a `Store` method in all but name: a run the store does not hold is
refused when it is called, and what SQLite refuses while a batch is read (a damaged
page) is the store's error in the user's words (`agentgauge.store.database.store_errors`),
never a bare ``sqlite3`` one.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from agentgauge.schema import TRIAL_FIELDS
from agentgauge.store.database import GRADES_AS_OF, Store, of_held_run, store_errors
from agentgauge.store.layout import document_text

__all__ = ["TrialBatch", "event_batches", "grade_batches", "trial_batches"]


@dataclass(frozen=True)
class TrialBatch:
    """Consecutive trials of a run, in insertion order."""

    keys: list[int]
    """Each trial's primary key in the store (what its events and grades refer to)."""
    fields: dict[str, list[Any]]
    """`TRIAL_FIELDS` name -> one stored value per trial (``None`` where missing); for a
    document field, the document's key (`document` gives its text)."""
    document: Callable[[Hashable], str]
    """A document's JSON text from its key: trials that share a document share its key,
    so a writer can keep each distinct one once."""


@store_errors
@of_held_run
def trial_batches(store: Store, run_id: str, version: int, size: int) -> Iterator[TrialBatch]:
    """The run's trials, ``size`` at a time, with the outcomes of grade ``version``."""
    overlay = store._outcomes(run_id, version)
    regraded = store._regraded_judge_costs(run_id, version)
    texts: dict[Hashable, str] = {}  # a document many trials share is decompressed once

    def document(key: Hashable) -> str:
        if isinstance(key, str):  # schema 1 kept the text inline
            return key
        if key not in texts:
            (data,) = store.conn.execute(
                "SELECT data FROM documents WHERE id = ?", (key,)
            ).fetchone()
            texts[key] = document_text(data)
        return texts[key]

    cur = store.conn.execute(
        f"SELECT id, {store._trial_select} FROM trials WHERE run_id = ? ORDER BY id", (run_id,)
    )
    while rows := cur.fetchmany(size):
        columns = [list(c) for c in zip(*rows, strict=True)]
        keys = columns[0]
        fields = {f.name: columns[1 + i] for i, f in enumerate(TRIAL_FIELDS)}
        if overlay is not None:
            success, score = fields["success"], fields["score"]
            for row, pk in enumerate(keys):
                if pk in overlay:
                    success[row], score[row] = overlay[pk]
        if regraded:
            judge = fields["judge_cost_usd"]
            for row, pk in enumerate(keys):
                if pk in regraded:
                    judge[row] = regraded[pk]
        yield TrialBatch(keys=keys, fields=fields, document=document)


@store_errors
@of_held_run
def event_batches(
    store: Store, run_id: str, size: int
) -> Iterator[list[tuple[int, int, str, float | None, str]]]:
    """The run's events as ``(trial key, seq, type, t, data)`` rows, by trial then seq."""
    cur = store.conn.execute(
        "SELECT e.trial_pk, e.seq, e.type, e.t, e.data FROM events e"
        " JOIN trials t ON t.id = e.trial_pk WHERE t.run_id = ? ORDER BY e.trial_pk, e.seq",
        (run_id,),
    )
    while rows := cur.fetchmany(size):
        yield rows


@store_errors
@of_held_run
def grade_batches(
    store: Store, run_id: str, version: int, size: int
) -> Iterator[list[tuple[Any, ...]]]:
    """The grades of ``version`` as ``(trial key, grader, score, passed, status, evidence,
    judge_model)`` rows (``passed`` 0/1, ``evidence`` JSON text), by trial then grader."""
    cur = store.conn.execute(GRADES_AS_OF, (run_id, version))
    while rows := cur.fetchmany(size):
        yield rows
