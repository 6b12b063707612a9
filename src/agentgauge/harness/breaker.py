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

    def __post_init__(self) -> None:
        for name in ("first", "window"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InputError(
                    f"must be a whole number, 0 to turn the rule off; got {value!r}",
                    field=f"breaker.{name}",
                )
        if not 0.0 <= self.share < 1.0:
            raise InputError(f"must be in [0, 1), got {self.share!r}", field="breaker.share")

    def record(self, infra_error: bool) -> str | None:
        """Count one finished trial; the reason to stop, or ``None`` to go on."""
        self._seen += 1
        if self._seen <= self.first:
            self._infra_first += infra_error
            if self._seen == self.first and self._infra_first == self.first:
                return f"the first {self.first} trials were all infra errors"
        if self.window:
            self._recent.append(infra_error)
            if len(self._recent) > self.window:
                self._recent.popleft()
            bad = sum(self._recent)
            if len(self._recent) == self.window and bad > self.share * self.window:
                return f"{bad} of the last {self.window} trials were infra errors"
        return None
