"""Taking back a store file a command made and then left empty (a run that saved no
trial, a receiver that could not listen), without ever removing one that another
session is using or that holds a run."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path


def remove_if_empty(path: Path) -> None:
    """Remove the store file at ``path`` (made by this session: `run`, `collect`) if it
    holds no run and no other connection has it open: another session that opened it
    meanwhile (to resume a run, start one, or collect into it) would go on writing to a
    file no one can find, and a run it stored would be lost.

    Leaving WAL mode needs the file to itself (SQLite refuses it, ``database is
    locked``, while any other connection is open, idle or not), so that is the test;
    the file is then checked and removed under an exclusive lock, and put back in WAL
    mode if it is kept."""
    try:  # never made again if it is gone
        uri = path.resolve().as_uri() + "?mode=rw"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=0)
    except (sqlite3.Error, OSError):
        return
    removed = False
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("BEGIN EXCLUSIVE")
        if conn.execute("SELECT EXISTS (SELECT 1 FROM runs)").fetchone()[0]:
            return
        for suffix in ("-wal", "-shm", "-journal", ""):
            with contextlib.suppress(FileNotFoundError):
                Path(f"{path}{suffix}").unlink()
        removed = True
    except sqlite3.Error:
        return  # another connection has it open, or it is no store: left as it is
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if not removed:
                conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
