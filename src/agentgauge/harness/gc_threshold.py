"""Fewer young-generation collections while a run's trials are in flight.

Python's cyclic garbage collector collects its youngest generation once 700 more
container objects (dicts, lists, models...) are alive than at its last collection.
Every trial in flight holds a few hundred (its session, its request and reply, its
events and grades), so with dozens in flight the threshold was crossed every few
trials: each collection walked the trials in flight, moved them to older
generations, and every few hundred trials a full collection walked the whole heap.
Next to none of it was garbage (a finished trial is freed by its reference counts),
and it cost the harness about a tenth of its CPU per trial against a loopback agent
(benchmarks/RESULTS.md, "Per-trial CPU of http: and openai: trials").

While a run's trials go, the young generation's threshold is `YOUNG_THRESHOLD`
(unless the process has set a higher one), and it is set back when the last run of
the process that raised it ends. Nothing else changes: the collector stays on (or
off, if the process turned it off), and cycles are collected once that many more
objects are alive, a few megabytes at most.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "fewer_young_collections"]

#: The young generation's threshold while trials run (Python's default is 700).
YOUNG_THRESHOLD = 20_000

_LOCK = threading.Lock()
_ACTIVE = 0
_SAVED: tuple[int, ...] | None = None


@contextmanager
def fewer_young_collections() -> Iterator[None]:
    """Raise the young generation's threshold to `YOUNG_THRESHOLD` for the block (runs
    in several threads at once share one raise: the last to end sets it back)."""
    global _ACTIVE, _SAVED
    with _LOCK:
        if _ACTIVE == 0:
            first, *older = gc.get_threshold()
            if first != 0 and first < YOUNG_THRESHOLD:  # 0: the process turned it off
                _SAVED = (first, *older)
                gc.set_threshold(YOUNG_THRESHOLD, *older)
        _ACTIVE += 1
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0 and _SAVED is not None:
                if gc.get_threshold()[0] == YOUNG_THRESHOLD:  # not changed meanwhile
                    gc.set_threshold(*_SAVED)
                _SAVED = None
