"""Several sessions on one store file: a reader while a run commits trials, a session
that ends while another resumes its run, a store removed while a run writes to it.
Each interleaving is forced, not waited for: another connection commits at the moment
the reader runs a given statement (SQLite's trace hook of the reader's connection)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from agentgauge.parquet.write import write_parquet
from agentgauge.schema import Grade, MessageEvent, Run, Trial
from agentgauge.store import Store, utc_now


def _trial(i: int) -> Trial:
    return Trial(
        task_id=f"t{i}",
        trial=0,
        success=True,
        events=[MessageEvent(role="assistant", content=f"done {i}")],
        grades=[Grade(grader="state", passed=True, score=1.0)],
    )


def _store_with_run(path: Path, n: int) -> None:
    with Store(path) as db:
        db.create_run(Run(run_id="r", created_at=utc_now()))
        for i in range(n):
            db.add_trial("r", _trial(i))


def _commit_when(reader: Store, starts: str, commit: Callable[[], None]) -> None:
    """Run ``commit`` (another connection's write) once, as ``reader`` starts the first
    statement beginning with ``starts``: between two of its reads."""
    done = False

    def hook(sql: str) -> None:
        nonlocal done
        if not done and sql.lstrip().startswith(starts):
            done = True
            commit()

    reader.conn.set_trace_callback(hook)


def test_trials_read_while_a_run_commits_more_are_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    with Store(path, readonly=True) as reader:
        # The run commits trial 2 after the trials were read and before their events:
        # its events had no trial to go to (KeyError, a traceback in export and grade).
        _commit_when(reader, "SELECT e.trial_pk", lambda: writer.add_trial("r", _trial(2)))
        trials = reader.trials("r")
        assert [t.task_id for t in trials] == ["t0", "t1"]
        assert all(len(t.events) == 1 and len(t.grades) == 1 for t in trials)
        # The next read sees the trial committed meanwhile.
        reader.conn.set_trace_callback(None)
        assert len(reader.trials("r")) == 3
    writer.close()


def test_columns_read_while_a_run_commits_more_are_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    with Store(path, readonly=True) as reader:
        _commit_when(
            reader, "SELECT data FROM trial_facts", lambda: writer.add_trial("r", _trial(2))
        )
        table, _ = reader.columns("r")
        assert len(table) == 2
    writer.close()


def test_a_parquet_export_while_a_run_commits_more_is_of_one_moment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    _store_with_run(path, 2)
    writer = Store(path)
    original = sqlite3.connect

    # The export opens its own connection: the hook goes on it as it is opened.
    def connect(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = original(*args, **kwargs)  # type: ignore[arg-type]
        if conn is not writer.conn:
            fired = False

            def hook(sql: str) -> None:
                nonlocal fired
                if not fired and "FROM events" in sql:
                    fired = True
                    writer.add_trial("r", _trial(2))

            conn.set_trace_callback(hook)
        return conn

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sqlite3, "connect", connect)
        counts = write_parquet(path, "r", tmp_path / "out")
    writer.close()
    assert (counts.trials, counts.events, counts.grades) == (2, 2, 2)
