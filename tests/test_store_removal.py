"""A store file a command made and left empty (`run` saving no trial, `collect` that
could not listen) is taken back, but never one that holds a run or that another
session has open: that session would go on writing to a file no one can find."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from agentgauge.schema import Run
from agentgauge.store import Store, utc_now
from agentgauge.store.removal import remove_if_empty


def test_an_empty_store_is_removed_with_its_side_files(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db):
        pass
    remove_if_empty(db)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_a_store_holding_a_run_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="theirs", created_at=utc_now()))
    remove_if_empty(db)
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["theirs"]


def test_a_store_another_session_has_open_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with Store(db), Store(db) as other:  # the other session has no run yet
        remove_if_empty(db)
        assert db.exists()
        other.create_run(Run(run_id="late", created_at=utc_now()))
    with Store(db) as store:
        assert [r.run_id for r in store.list_runs()] == ["late"]
    with sqlite3.connect(db) as conn:  # left as a store: WAL mode, as it was
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_file_that_is_no_store_or_is_gone_is_left_alone(tmp_path: Path) -> None:
    other = tmp_path / "notes.db"
    other.write_text("not a database\n" * 100)
    remove_if_empty(other)
    assert other.read_text().startswith("not a database")
    remove_if_empty(tmp_path / "gone.db")
    assert not (tmp_path / "gone.db").exists()
