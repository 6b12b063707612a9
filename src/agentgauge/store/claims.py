"""A run's claim: which ``agentgauge run`` session is writing the run now.

Two sessions that run the same run (a resume typed while the first session still
runs) would both run every missing cell, and the second to store one would stop
with "already stored", having paid for its trials. So a session that makes or
resumes a run claims it first, in the transaction that checks that nobody else
holds it (`claim`), keeps the claim fresh while its trials run (`Heartbeat`), and
gives it up when it ends, however it ends (`release`). A session that finds the
run claimed by a live session is refused at once (`RunClaimed`), before it runs
or writes anything.

The other commands that change a run respect the claim too: ``agentgauge grade``
claims the run while it re-grades (`holding`: a resume typed meanwhile is refused,
naming it), and the one-transaction changes (``grade --activate-version``, ``runs
--mark``) refuse a run a live session holds (`refuse_claimed`, in their write
transaction). So do `Store`'s methods that change a run, for a Python caller, unless
the caller is the session holding the claim (`refuse_others`). ``agentgauge runs``
shows the live claims (`writing`).

A claim is a ``meta`` row (``claim:`` and the run's id), like a session's mark
(`Store.mark_opened`): JSON with the session's command, process id, host, start
and last heartbeat. No table, so no new schema: an older agentgauge opens the store as
before (and ignores claims). A claim whose session died without giving it up
(``kill -9``, a power cut) is stale, and the next session takes it over with a
note: its process is gone from this host, or, for a session on another host (or
in another container, or a process id reused since), its heartbeat is older than
`STALE_AFTER` seconds.

``collect`` does not claim: collectors writing one run share it by design
(docs/formats/otel.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from agentgauge.errors import InputError
from agentgauge.store.rows import utc_now

if TYPE_CHECKING:
    from agentgauge.store.database import Store

__all__ = [
    "AGAIN",
    "CLAIM",
    "HEARTBEAT_EVERY",
    "RESUME",
    "STALE_AFTER",
    "Claim",
    "Heartbeat",
    "RunClaimed",
    "claim",
    "claim_of",
    "claims_in",
    "holding",
    "refuse_claimed",
    "refuse_others",
    "release",
    "writing",
    "writing_entry",
]

#: The ``meta`` key, followed by a run's id, of the run's claim.
CLAIM = "claim:"
#: Seconds between a session's heartbeats.
HEARTBEAT_EVERY = 10.0
#: Seconds without a heartbeat after which a claim is stale.
STALE_AFTER = 60.0
#: What a refused command is told to do once the session holding the run has ended.
AGAIN = "run this command again"
#: The same, for a run session (whose next run resumes the run).
RESUME = "run this command again to resume the run"

#: The claims this process holds, each with the connection its session writes the run
#: on (`refuse_others`): a claim of this process that is not among them was left by an
#: earlier session of it (a session that could not give it up).
_HELD: dict[str, sqlite3.Connection] = {}


class RunClaimed(InputError):
    """Another session, still running, is writing the run."""


@dataclass(frozen=True)
class Claim:
    """A session's claim on a run."""

    token: str
    pid: int
    host: str
    since: str
    """When the session claimed the run (UTC, ISO 8601)."""
    heartbeat: float
    """When the session last said it is alive (seconds since the epoch)."""
    pids: str = ""
    """The process-id namespace ``pid`` belongs to (Linux; empty elsewhere): two
    containers may share a host name, not their process ids."""
    command: str = ""
    """The command writing the run (``agentgauge run``, ``agentgauge grade``); empty
    for a claim an older agentgauge wrote."""

    def text(self) -> str:
        return json.dumps(
            {
                "token": self.token,
                "pid": self.pid,
                "host": self.host,
                "since": self.since,
                "heartbeat": self.heartbeat,
                "pids": self.pids,
                "command": self.command,
            }
        )

    def who(self) -> str:
        what = f"{self.command}, " if self.command else ""
        return f"{what}pid {self.pid} on host {self.host}, since {self.since}"

    def dead(self, now: float) -> str | None:
        """Why the claim's session is no longer running, or ``None`` when it may be."""
        if self.host == socket.gethostname() and self.pids == _pid_namespace():
            if self.pid == os.getpid():
                if self.token not in _HELD:
                    return "this process claimed it in a session that has ended"
            elif not _alive(self.pid):
                return f"no process {self.pid} runs on this host"
        silent = now - self.heartbeat
        if silent > STALE_AFTER:
            return f"its last heartbeat was {silent:.0f} s ago"
        return None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (a zombie, killed and not yet reaped
    by its parent, does not)."""
    if sys.platform == "win32":
        return True  # os.kill would end it: the heartbeat alone decides there
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    except OSError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rpartition(")")[2].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except (OSError, AttributeError):
        return ""


def _parsed(text: str) -> Claim:
    """A claim row's value; one this code did not write is taken over as a stale one
    would be."""
    try:
        data = json.loads(text)
        return Claim(
            token=str(data["token"]),
            pid=int(data["pid"]),
            host=str(data["host"]),
            since=str(data["since"]),
            heartbeat=float(data["heartbeat"]),
            pids=str(data.get("pids", "")),
            command=str(data.get("command", "")),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return Claim(token="", pid=0, host="", since="?", heartbeat=0.0)


def claim_of(conn: sqlite3.Connection, run_id: str) -> Claim | None:
    """The run's claim as stored, ``None`` when nobody claims it (or the row is not
    one this code wrote: it is then taken over as a stale one would be)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (CLAIM + run_id,)).fetchone()
    return None if row is None else _parsed(row[0])


def claims_in(conn: sqlite3.Connection) -> dict[str, Claim]:
    """Every run's claim as stored, by run id, the stale ones with the live (one read:
    `Claim.dead` tells them apart)."""
    rows = conn.execute(
        "SELECT substr(key, ?), value FROM meta WHERE substr(key, 1, ?) = ?",
        (len(CLAIM) + 1, len(CLAIM), CLAIM),
    )
    return {run_id: _parsed(value) for run_id, value in rows}


def writing(conn: sqlite3.Connection) -> dict[str, Claim]:
    """The live claims, by run: the sessions writing a run now. A claim left by a
    session that died (killed outright) is none: nobody writes that run, and the next
    session takes the claim over."""
    now = time.time()
    return {run_id: c for run_id, c in claims_in(conn).items() if c.dead(now) is None}


def writing_entry(held: Claim | None) -> dict[str, object] | None:
    """A live claim as ``agentgauge runs --json`` gives it (``writing``), ``None`` for
    none; ``command`` is ``None`` for a claim an older agentgauge wrote."""
    if held is None:
        return None
    return {
        "command": held.command or None,
        "pid": held.pid,
        "host": held.host,
        "since": held.since,
        "heartbeat": datetime.fromtimestamp(held.heartbeat, UTC).isoformat(timespec="seconds"),
        "heartbeat_age_s": max(0, round(time.time() - held.heartbeat)),
    }


def _refusal(run_id: str, held: Claim, now: float, then: str) -> RunClaimed:
    """``then``: what to do once the holder has ended (`RESUME` for a run session,
    which is told the option naming the run, `AGAIN` for the other commands)."""
    seen = max(0, round(now - held.heartbeat))
    return RunClaimed(
        f"run {run_id!r} is being written by another session ({held.who()}; last "
        f"heartbeat {seen} s ago): wait for it to end, or stop it (Ctrl-C in its terminal, "
        f"or kill {held.pid} on {held.host}), then {then}",
        field="--run-id" if then == RESUME else None,
    )


def refuse_claimed(conn: sqlite3.Connection, run_id: str, *, then: str = RESUME) -> None:
    """Raise `RunClaimed` when a live session holds the run (a read: nothing written).
    In a write transaction (``BEGIN IMMEDIATE``) no session can claim the run before
    it ends, so a change made in it never lands under a live session's feet. ``then``
    ends the refusal: what to do once that session has ended."""
    held = claim_of(conn, run_id)
    now = time.time()
    if held is not None and held.dead(now) is None:
        raise _refusal(run_id, held, now, then)


def refuse_others(conn: sqlite3.Connection, run_id: str, *, then: str = AGAIN) -> None:
    """`refuse_claimed`, but for the session holding the claim, which writes the run on
    ``conn`` (the connection it claimed the run on): the check of `Store`'s methods that
    change a run (its config, its active grade version), so that a Python caller is
    refused as the commands are, while ``agentgauge run`` or ``grade`` changes the run
    it holds as before."""
    held = claim_of(conn, run_id)
    if held is None or _HELD.get(held.token) is conn:
        return
    now = time.time()
    if held.dead(now) is None:
        raise _refusal(run_id, held, now, then)


def claim(
    conn: sqlite3.Connection,
    run_id: str,
    *,
    command: str = "agentgauge run",
    then: str = RESUME,
) -> tuple[str, str | None]:
    """Claim the run for this session, in the caller's write transaction (the one that
    makes or resumes the run, which began with ``BEGIN IMMEDIATE``, so no other session
    claims it between the check and the write). Returns the claim's token and, when a
    stale claim was taken over, a note saying so; raises `RunClaimed` when a live
    session holds it. ``command`` is what others are told is writing the run."""
    now = time.time()
    held = claim_of(conn, run_id)
    note = None
    if held is not None:
        why = held.dead(now)
        if why is None:
            raise _refusal(run_id, held, now, then)
        note = (
            f"run {run_id!r} was claimed by a session that is no longer running "
            f"({held.who()}; {why}); this session takes it over"
        )
    mine = Claim(
        token=secrets.token_hex(8),
        pid=os.getpid(),
        host=socket.gethostname(),
        since=utc_now(),
        heartbeat=now,
        pids=_pid_namespace(),
        command=command,
    )
    conn.execute(
        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (CLAIM + run_id, mine.text())
    )
    _HELD[mine.token] = conn
    return mine.token, note


def release(conn: sqlite3.Connection, run_id: str, token: str) -> None:
    """Give the claim up (when it is still this session's), in a transaction of its own.
    Never raises: a session ends as it would have (a full disk, a store deleted
    meanwhile), and a claim left behind is taken over as a stale one."""
    _HELD.pop(token, None)
    with contextlib.suppress(sqlite3.Error):
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "DELETE FROM meta WHERE key = ? AND json_extract(value, '$.token') = ?",
                (CLAIM + run_id, token),
            )
            conn.execute("COMMIT")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")


@contextlib.contextmanager
def holding(store: Store, run_id: str, command: str) -> Iterator[str | None]:
    """Hold the run's claim while the block runs, for a command other than ``run``
    that changes the run over more than one moment (``agentgauge grade``): claimed in
    a transaction of its own (so others see it at once), kept fresh by a `Heartbeat`,
    given up however the block ends. A live session's claim is refused (`RunClaimed`,
    nothing written); a stale one is taken over: the block gets the note saying so."""
    # Read first: a live holder is named at once, not after waiting for the store's
    # write lock (held all along by a re-grade under way).
    refuse_claimed(store.conn, run_id, then=AGAIN)
    with store.transaction():
        token, note = claim(store.conn, run_id, command=command, then=AGAIN)
    beat = Heartbeat(store.path, run_id, token)
    try:
        yield note
    finally:
        beat.stop()
        release(store.conn, run_id, token)


class Heartbeat:
    """Refreshes a claim every `HEARTBEAT_EVERY` seconds, on a thread with its own
    connection (so that an event loop busy with trials does not hold it back), until
    `stop`. A store in memory needs none: no other process can open it.

    A claim found no longer this session's (another session took it over, thinking
    this one dead: paused past `STALE_AFTER` on another host) is lost: ``on_lost`` is
    called once, from the heartbeat's thread, with why, and the beats stop. The run
    then launches nothing more (`agentgauge.harness.stopping.Stop.halt`)."""

    def __init__(
        self,
        path: str,
        run_id: str,
        token: str,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self._path, self._key, self._token = path, CLAIM + run_id, token
        self._run_id, self._on_lost = run_id, on_lost
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if path != ":memory:":
            self._thread = threading.Thread(
                target=self._beat, name=f"agentgauge claim {run_id}", daemon=True
            )
            self._thread.start()

    def _beat(self) -> None:
        try:  # mode=rw: a store deleted meanwhile is not made again, empty
            uri = Path(self._path).resolve().as_uri() + "?mode=rw"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30)
        except (sqlite3.Error, ValueError):
            return
        try:
            while not self._stop.wait(HEARTBEAT_EVERY):
                try:
                    beat = conn.execute(
                        "UPDATE meta SET value = json_set(value, '$.heartbeat', ?)"
                        " WHERE key = ? AND json_extract(value, '$.token') = ?",
                        (time.time(), self._key, self._token),
                    )
                    if beat.rowcount == 0 and not self._stop.is_set():
                        self._lost(conn)
                        return
                except sqlite3.Error:  # a busy store: the next beat tries again
                    continue
        finally:
            conn.close()

    def _lost(self, conn: sqlite3.Connection) -> None:
        held = claim_of(conn, self._run_id)
        by = f"by {held.who()}" if held is not None and held.pid else "by another session"
        if self._on_lost is not None:
            self._on_lost(
                f"run {self._run_id!r} was taken over {by}, which found this session's "
                f"heartbeat older than {STALE_AFTER:.0f} s; this session launches no more "
                "trials and leaves the run to it"
            )

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
