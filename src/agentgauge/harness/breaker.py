"""The circuit breaker: stop launching trials when infrastructure errors dominate.

An endpoint that is down turns every trial into an infra error (connection
refused, retries exhausted); running the rest of the suite only burns time and
rate limit. The breaker watches the trials as they finish and trips when

- the first ``first`` trials of this session are all infra errors, or
- more than ``share`` of the last ``window`` trials are infra errors.

Either rule is off when its size is 0. When the breaker trips the harness
launches nothing more, lets the trials in flight finish, commits them and
raises `agentgauge.errors.RunStopped` (exit code 3); the run resumes with the
same ``--run-id`` once the cause is fixed (docs/running-agents.md, "When a run
stops early").

A run may end before either rule can be decided while it goes: fewer trials than
``first`` or ``window``, or a trip after the last trial was launched. `at_end`
decides them on what finished, so that such a run, which measured nothing but its
infrastructure, is stopped (exit 3) and not passed as a run that completed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from agentgauge.errors import InputError

__all__ = ["CircuitBreaker"]


@dataclass
class CircuitBreaker:
    """Watches finished trials; `record` returns the reason once it trips."""

    first: int = 10
    """Trip when this many first trials are all infra errors (0: rule off)."""
    window: int = 50
    """Size of the sliding window of recent trials (0: rule off)."""
    share: float = 0.5
    """Trip when more than this share of the window are infra errors."""
    _seen: int = field(default=0, init=False, repr=False)
    _infra_first: int = field(default=0, init=False, repr=False)
    _recent: deque[bool] = field(default_factory=deque, init=False, repr=False)
    _tripped: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("first", "window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(
                    f"must be a whole number, 0 to turn the rule off; got {value!r}",
                    field=f"--breaker-{name}",  # as the CLI spells it; breaker_{name}= in Python
                )
        if not 0.0 <= self.share < 1.0:
            raise InputError(f"must be in [0, 1), got {self.share!r}", field="breaker.share")

    def record(self, infra_error: bool) -> str | None:
        """Count one finished trial; the reason to stop, or ``None`` to go on."""
        reason = self._rule(infra_error)
        if reason is not None and self._tripped is None:
            self._tripped = reason
        return reason

    def trip(self, reason: str) -> None:
        """Stop the run for a reason outside its trials (its Ray connection was lost):
        `at_end` reports it, and the run is stopped as when a rule trips."""
        if self._tripped is None:
            self._tripped = reason

    def _rule(self, infra_error: bool) -> str | None:
        self._seen += 1
        if self._seen <= self.first:
            self._infra_first += infra_error
            if self._seen == self.first and self._infra_first == self.first:
                if self.first == 1:
                    return "the first trial was an infra error"
                return f"the first {self.first} trials were all infra errors"
        if self.window:
            self._recent.append(infra_error)
            if len(self._recent) > self.window:
                self._recent.popleft()
            bad = sum(self._recent)
            if len(self._recent) == self.window and bad > self.share * self.window:
                if self.window == 1:
                    return "the last trial was an infra error"
                return f"{bad} of the last {self.window} trials were infra errors"
        return None

    def at_end(self) -> str | None:
        """The reason the run is stopped once every trial has finished, or ``None``.

        The reason it tripped with, if it did (the last trials may have been launched
        before it tripped, so nothing was left to stop). Otherwise each rule is
        decided on the trials there were when fewer than its size: all of them infra
        errors (``first``), or more than ``share`` of them (``window``). Waiting for
        more trials is what keeps a rule from tripping on the first few; at the end
        no more will come. A session that ran no trial is not judged."""
        if self._tripped is not None:
            return self._tripped
        n = self._seen
        every = f"all {n} trials were infra errors"
        if n == 1:
            every = "the only trial it ran was an infra error"  # a resume may hold more
        if self.first and 0 < n < self.first and self._infra_first == n:
            return every
        if self.window and 0 < n < self.window:
            bad = sum(self._recent)
            if bad > self.share * n:
                return every if bad == n else f"{bad} of the {n} trials were infra errors"
        return None
