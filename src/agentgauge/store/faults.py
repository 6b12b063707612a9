"""The disk under a store failing: one rule for every path that writes to it.

SQLite reports a full filesystem as SQLITE_FULL ("database or disk is full") when
a page cannot be written, and as SQLITE_IOERR ("disk I/O error") when the ``-shm``
index or the ``-wal`` file cannot grow; either way the statement's transaction is
rolled back by SQLite (SQLite, "Result and Error Codes"). The user gets one line
and exit code 4 (`agentgauge.errors.StoreFull`), never a traceback, and the store
is as it was before the step that failed.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from agentgauge.errors import AgentgaugeError, InputError, StoreFull

__all__ = [
    "damaged_store",
    "database_error",
    "first_note",
    "forget_opened",
    "note_opened",
    "noted",
    "read_only_cause",
    "read_only_filesystem",
    "storage_error",
    "store_error",
]

#: The stores this process has opened, newest last: a damaged page is found only when
#: a statement reads it, often far from where the store was named.
_OPENED: dict[str, None] = {}

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


#: The notes on stores this command has given (`first_note`).
_NOTED: set[tuple[str, ...]] = set()


def forget_opened() -> None:
    """Start a new command: no store opened yet, nothing said of one."""
    _OPENED.clear()
    _NOTED.clear()


def noted(*key: str) -> bool:
    """Whether this command said the note ``key`` names already (`first_note`)."""
    return key in _NOTED


def first_note(*key: str) -> bool:
    """Whether the note ``key`` names is this command's first (and now remembered): a
    command opens a store several times and says a thing of it once."""
    if key in _NOTED:
        return False
    _NOTED.add(key)
    return True


def note_opened(path: str) -> None:
    """Remember ``path`` as a store this process opened (`database_error` names it)."""
    _OPENED.pop(path, None)
    _OPENED[path] = None


def database_error(exc: BaseException) -> InputError | None:
    """The user's error for SQLite's refusal to read or write a store mid-command (a
    damaged file: "database disk image is malformed"; a store another process holds
    locked), naming the stores opened; ``None`` for anything else."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    stores = [p for p in _OPENED if p != ":memory:"]
    named = " or ".join(stores[-2:]) if stores else None
    reason = _unread(exc, stores[-1] if stores else None)
    return InputError(reason or f"SQLite refused the store: {exc}", file=named)


def store_error(exc: BaseException, path: str, *, readonly: bool) -> AgentgaugeError | None:
    """The user's error for SQLite's refusal met by a `Store` method on the store at
    ``path``, as the commands word it (`database_error`, `storage_error`), naming that
    store: a damaged page, a lock held, a full disk, a write to a store opened
    read-only. ``None`` for anything else (a constraint the caller words itself, or a
    bug, which keeps its traceback)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    full = storage_error(exc, path)
    if full is not None:
        return full
    code = getattr(exc, "sqlite_errorcode", None)
    if (code is not None and code & 0xFF == sqlite3.SQLITE_READONLY) or "readonly" in str(exc):
        if readonly:
            return InputError(
                "this store was opened read-only (Store(path, readonly=True)), which never "
                "writes: open it as Store(path) to write to it",
                file=path,
            )
        found = None if path == ":memory:" else read_only_cause(Path(path))
        # None: writable by now, the cause met mid-command is gone.
        why, fix = found or (
            "the file, its folder or its filesystem is read-only",
            "make it writable or work on a copy",
        )
        return InputError(f"cannot write to the store (SQLite: {exc}): {why}; {fix}", file=path)
    reason = _unread(exc, path)
    return None if reason is None else InputError(reason, file=path)


def read_only_filesystem(folder: Path) -> bool:
    """Whether ``folder`` is on a filesystem mounted read-only (where nobody may write,
    root included, whatever the files' modes)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # no statvfs (Windows): the modes say what they can
        return False


def read_only_cause(file: Path) -> tuple[str, str] | None:
    """Why this user cannot write the store ``file`` (an existing file) and what to do
    about it, or ``None`` when they can: SQLite writes the file itself and, beside it in
    its folder, its ``-wal`` and ``-shm`` files (SQLite, "Write-Ahead Logging"), so both
    must be writable. A read-only filesystem is named for what it is: the file's mode
    is not the cause there, and ``chmod`` cannot help."""
    folder = file.parent
    if read_only_filesystem(folder):
        return (
            "it is on a read-only filesystem (mounted read-only, which no file mode changes)",
            "copy the store to a writable disk and name the copy, or remount the filesystem "
            "read-write",
        )
    file_ok, folder_ok = os.access(file, os.W_OK), os.access(folder, os.W_OK)
    if file_ok and folder_ok:
        return None
    from agentgauge.display import shell_command  # only on this error's path

    if not file_ok and not folder_ok:
        return (
            f"the file and its folder {folder} are read-only (SQLite writes the store, "
            "and its -wal and -shm files beside it)",
            f"make both writable ({shell_command(['chmod', 'u+w', str(file), str(folder)])}) "
            "or work on a copy",
        )
    if not file_ok:
        return (
            "the file is read-only",
            f"make it writable ({shell_command(['chmod', 'u+w', str(file)])}) or work on a copy",
        )
    return (
        f"its folder {folder} is read-only (SQLite writes the store's -wal and -shm files "
        "beside it)",
        f"make the folder writable ({shell_command(['chmod', 'u+w', str(folder)])}) or work "
        "on a copy in a folder you can write",
    )


def _unread(exc: sqlite3.DatabaseError, path: str | None) -> str | None:
    """Why SQLite could not read or write the store, in the user's words: damaged, or
    locked by another process; ``None`` for another refusal."""
    text = str(exc)
    if "malformed" in text or "not a database" in text or type(exc) is sqlite3.DatabaseError:
        return _damaged(text, path)
    if "locked" in text or "busy" in text:
        return f"the store is locked by another process (SQLite: {text}); try again"
    return None


def damaged_store(exc: BaseException, path: str) -> InputError | None:
    """The user's error for a store SQLite finds damaged as it is opened (a file cut
    short, a page overwritten: SQLITE_CORRUPT, "database disk image is malformed"), as
    for one found damaged mid-command (`database_error`); ``None`` for anything else. A
    file that is no database at all (SQLITE_NOTADB) is not damaged but no store, which
    the opener says."""
    code = getattr(exc, "sqlite_errorcode", None)
    if not isinstance(exc, sqlite3.DatabaseError):
        return None
    if (code is None or code & 0xFF != sqlite3.SQLITE_CORRUPT) and "malformed" not in str(exc):
        return None
    return InputError(_damaged(str(exc), path), file=path)


def _damaged(text: str, path: str | None) -> str:
    return (
        f"the store is damaged (SQLite: {text}); nothing more was written to it. Check it "
        f"with: sqlite3 {path or 'FILE'} 'PRAGMA integrity_check', and restore it from a copy"
    )
