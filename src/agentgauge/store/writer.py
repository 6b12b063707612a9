"""`TrialWriter`: a run's trials written from a background thread."""

from __future__ import annotations

import queue
import threading
import time

from agentgauge.schema import Trial
from agentgauge.store.database import Store
from agentgauge.store.rows import TrialRows, trial_rows

__all__ = ["TrialWriter"]


class TrialWriter:
    """Writes one run's trials from a background thread, each trial in its own
    transaction, so that SQLite's work overlaps the harness's event loop (the
    ``sqlite3`` module releases the GIL while SQLite runs).

    The thread has its own connection to the store's file (WAL lets the main
    connection read meanwhile). An in-memory store cannot be opened twice:
    there `submit` writes at once, in the caller's thread. The first error
    (a duplicate cell, a full disk) stops the writing and is raised by the
    next `submit` or by `close`, which waits until everything submitted is
    committed. A crash loses only trials not yet committed, which a resumed
    run (``--run-id``) runs again.
    """

    def __init__(
        self, store: Store, run_id: str, *, max_pending: int = 4096, pause_s: float = 0.005
    ) -> None:
        self.run_id = run_id
        self.max_pending = max_pending
        self.pause_s = pause_s
        self._store = store
        self._queue: queue.SimpleQueue[TrialRows | None] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if store.path != ":memory:" and not store.conn.in_transaction:
            self._thread = threading.Thread(
                target=self._loop, name="agentgauge-trial-writer", daemon=True
            )
            self._thread.start()

    @property
    def pending(self) -> int:
        """Trials submitted and not yet committed (an estimate, for back-pressure)."""
        return self._queue.qsize()

    def submit(self, trial: Trial) -> None:
        """Queue ``trial`` for writing (or write it now, for an in-memory store).
        Its rows are made here, so the writer's thread spends its time in SQLite
        (with the GIL released), not in Python."""
        self._raise_if_failed()
        if self._thread is None:
            self._store.add_trial(self.run_id, trial)
        else:
            self._queue.put(trial_rows(self.run_id, trial))

    def close(self) -> None:
        """Wait until every submitted trial is committed; raise the first error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        self._raise_if_failed()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        try:
            own = Store(self._store.path)
        except BaseException as exc:
            self._error = exc
            return
        try:
            while (rows := self._queue.get()) is not None:
                if self._error is None:
                    try:
                        with own.transaction():
                            own._write_rows(rows)
                    except BaseException as exc:  # raised in the caller's thread
                        self._error = exc
                if self._queue.empty():
                    # Let trials gather before blocking again: a put to a queue
                    # nobody waits on wakes no thread, and waking one costs far
                    # more than this pause in a virtual machine.
                    time.sleep(self.pause_s)
        finally:
            own.close()
