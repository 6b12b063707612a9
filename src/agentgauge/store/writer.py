"""`TrialWriter`: a run's trials written on a thread of their own, fed by a bounded
queue that the harness's event loop awaits."""

from __future__ import annotations

import asyncio
import sqlite3
from concurrent.futures import ThreadPoolExecutor

from agentgauge.errors import AgentgaugeError, InputError, StoreFull
from agentgauge.schema import Trial
from agentgauge.store.database import MissingRun, Store
from agentgauge.store.rows import TrialRows, describe_row, trial_rows

__all__ = ["TrialWriteError", "TrialWriter"]


class TrialWriteError(AgentgaugeError):
    """A trial could not be written; nothing after it was (resume with ``--run-id``)."""


class TrialWriter:
    """Writes one run's trials on one thread of its own, so that SQLite's work
    overlaps the event loop (the ``sqlite3`` module releases the GIL while SQLite
    runs). What is queued when the thread is free goes in one transaction; should
    that fail, trial by trial, so the trials before the one at fault are kept.

    `submit` puts a trial's rows in a queue of at most ``max_pending`` and,
    when it is full, waits (the disk is slower than the agents): back-pressure
    without polling. One coroutine takes everything queued at once and hands it
    to the thread, so trials that finish while a write is under way are written
    by the next hand-over, with no pause tuned to one machine.

    The thread has its own connection to the store's file (WAL lets the main
    connection read meanwhile). An in-memory store cannot be opened twice:
    there `submit` writes at once, on the loop. The first error (a duplicate
    cell, a full disk) stops all writing: every later `submit` raises it, and
    so does `close`, which waits until everything submitted before it is
    committed. A crash loses only trials not yet committed, which a resumed
    run (``--run-id``) runs again.
    """

    def __init__(self, store: Store, run_id: str, *, max_pending: int = 4096) -> None:
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        self.run_id = run_id
        self.max_pending = max_pending
        self._store = store
        self._threaded = store.path != ":memory:" and not store.conn.in_transaction
        self._queue: asyncio.Queue[TrialRows] | None = None
        self._drain: asyncio.Task[None] | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._own: Store | None = None  # the thread's connection, made on the thread
        self._in_flight = 0
        self._error: BaseException | None = None
        self._dropped = 0
        self._committed = 0
        self._closed = False

    def fresh(self) -> TrialWriter:
        """A new writer of the same store and run, with no error: for a caller that
        writes on after one trial failed (the receiver, whose traces are each their
        own client's), where this one writes nothing more."""
        return TrialWriter(self._store, self.run_id, max_pending=self.max_pending)

    @property
    def committed(self) -> int:
        """Trials this writer has committed so far."""
        return self._committed

    @property
    def pending(self) -> int:
        """Trials submitted and not yet committed (nor dropped after an error)."""
        queued = 0 if self._queue is None else self._queue.qsize()
        return queued + self._in_flight

    async def submit(self, trial: Trial) -> None:
        """Queue ``trial`` for writing, waiting while ``max_pending`` trials are
        queued (or write it now, for an in-memory store). Raises the first write
        error of this writer, whichever trial it was."""
        self._raise_if_failed()
        if self._closed:
            raise RuntimeError("this TrialWriter is closed")
        if not self._threaded:
            try:
                self._store.add_trial(self.run_id, trial)
            except BaseException as exc:
                self._error = _named(exc, trial_rows(self.run_id, trial))
                raise self._error from None
            self._committed += 1
            return
        # Rows are made here, so that the thread spends its time in SQLite.
        rows = trial_rows(self.run_id, trial)
        if self._queue is None:
            self._queue = asyncio.Queue(maxsize=self.max_pending)
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="agentgauge-trial-writer")
            self._drain = asyncio.get_running_loop().create_task(self._drain_queue())
        await self._queue.put(rows)
        # One turn of the loop: agents that never wait on anything (the built-in
        # ones) would otherwise keep the drain from handing trials to the thread
        # until the run ends, and a Ctrl-C would find nothing committed.
        await asyncio.sleep(0)
        self._raise_if_failed()  # the error may have come while we waited for room

    async def flush(self) -> None:
        """Wait until every trial submitted so far is committed; raise the first error."""
        if self._queue is not None:
            await self._queue.join()
        self._raise_if_failed()

    async def close(self) -> None:
        """Wait until every submitted trial is committed, let the thread go, and
        raise the first error."""
        self._closed = True
        if self._queue is not None and self._drain is not None:
            await self._queue.join()
            self._drain.cancel()
            await asyncio.gather(self._drain, return_exceptions=True)
            self._drain = None
        if self._executor is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._executor, self._close_connection)
            self._executor.shutdown(wait=True)
            self._executor = None
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        # Kept, never cleared: a writer that failed once writes nothing more.
        if self._error is not None:
            raise self._error

    async def _drain_queue(self) -> None:
        assert self._queue is not None
        loop = asyncio.get_running_loop()
        while True:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            if self._error is None:
                self._in_flight = len(batch)
                try:
                    await loop.run_in_executor(self._executor, self._write, batch)
                except asyncio.CancelledError:
                    raise  # the loop is shutting down; the thread finishes its write
                except BaseException as exc:  # raised to the loop: every submit, and close
                    self._error = exc
                finally:
                    self._in_flight = 0
            else:
                self._dropped += len(batch)
            for _ in batch:
                self._queue.task_done()

    def _write(self, batch: list[TrialRows]) -> None:
        """On the writer's thread: the batch in one transaction (one statement per
        table, `Store.add_trials`'s way); if that fails, each trial in its own, in
        order, so that those before the one at fault are committed, as a trial-by-trial
        write would have left them, and the error names that one."""
        if self._own is None:
            self._own = Store(self._store.path)
        if len(batch) > 1:
            try:
                with self._own.transaction():
                    self._own._write_many(batch)
            except Exception:  # rolled back whole; one at a time below says which
                pass
            else:
                self._committed += len(batch)
                return
        for rows in batch:
            try:
                with self._own.transaction():
                    self._own._write_rows(rows)
                self._committed += 1  # read on the loop after the hand-over returns
            except BaseException as exc:
                raise _named(exc, rows) from None

    def _close_connection(self) -> None:
        if self._own is not None:
            self._own.close()
            self._own = None


_STOPPED = (
    "writing stopped there: trials finished after it were not stored "
    "(resume the run with the same --run-id once the cause is fixed)"
)


def _named(exc: BaseException, rows: TrialRows) -> BaseException:
    """The error as the user should read it: which trial, and that writing stopped."""
    if isinstance(exc, MissingRun) or (
        isinstance(exc, sqlite3.IntegrityError) and "FOREIGN KEY" in str(exc)
    ):
        # A trial's only reference outside its own rows is its run (its events and
        # grades go in with it): the run's header is gone, deleted by another session.
        return TrialWriteError(
            f"run {rows[0][0]!r} was deleted from the store while this session wrote it: "
            f"{describe_row(rows[0])} and the trials after it were not stored (running "
            "the command again starts the run afresh)"
        )
    if isinstance(exc, InputError):  # already names the trial (a cell already stored)
        return InputError(f"{exc.reason}; {_STOPPED}", file=exc.file, field=exc.field)
    if isinstance(exc, StoreFull):
        return StoreFull(
            f"cannot write {describe_row(rows[0])} of run {rows[0][0]!r}: {exc.cause}; {_STOPPED}",
            file=exc.file,
            cause=exc.cause,
        )
    if isinstance(exc, sqlite3.Error | OSError):
        return TrialWriteError(
            f"cannot write {describe_row(rows[0])} of run {rows[0][0]!r} to the store "
            f"({exc}); {_STOPPED}"
        )
    return exc
