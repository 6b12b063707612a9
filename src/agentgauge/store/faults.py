"""The disk under a store failing: one rule for every path that writes to it.

SQLite reports a full filesystem as SQLITE_FULL ("database or disk is full") when
a page cannot be written, and as SQLITE_IOERR ("disk I/O error") when the ``-shm``
index or the ``-wal`` file cannot grow; either way the statement's transaction is
rolled back by SQLite (SQLite, "Result and Error Codes"). The user gets one line
and exit code 4 (`agentgauge.errors.StoreFull`), never a traceback, and the store
is as it was before the step that failed.
"""

from __future__ import annotations

import sqlite3

from agentgauge.errors import StoreFull

__all__ = ["storage_error"]

_AGAIN = "nothing of this step was stored, what was stored before is intact"


def storage_error(exc: BaseException, path: str) -> StoreFull | None:
    """The user's error for a write that the disk refused, or ``None`` for any other."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.Error) or code is None:
        return None
    primary = code & 0xFF  # extended codes keep the primary one in the low byte
    if primary == sqlite3.SQLITE_FULL:
        reason = "database or disk is full"
    elif primary == sqlite3.SQLITE_IOERR:
        reason = "disk I/O error writing the store (is the disk full?)"
    else:
        return None
    return StoreFull(
        f"{reason}: {_AGAIN}; free some space and run the command again", file=path, cause=reason
    )
