"""Computed pages kept in memory while the viewer runs.

The store is opened read-only, so a run's summary or a diff of two runs only
changes when the run does. Callers key what they keep by each run's (run id,
grade version, trial count, transcript figures) (`Viewer.version`): activating a
re-grade, trials added by a run resuming next to the viewer, or the costs ``collect``
fills in on stored trials make a new key and the old entry ages out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Memo"]


class Memo:
    """Values by key, computed once; the least recently used dropped beyond ``keep``."""

    def __init__(self, keep: int = 32) -> None:
        self._keep = keep
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0
        """How many values were computed (the rest came from memory)."""

    def peek(self, key: Hashable) -> Any:
        """The value kept for ``key`` (marked as just used), or ``None``."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = compute()
        with self._lock:
            self.computed += 1
            self._items[key] = value
            while len(self._items) > self._keep:
                self._items.popitem(last=False)
        return value
