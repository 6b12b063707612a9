"""What becomes of a finished trial, whichever backend ran it: written once by the
run's one `TrialWriter`, counted by the progress bar, and seen by the circuit breaker."""

from __future__ import annotations

from collections.abc import Callable

from agentgauge.harness.breaker import CircuitBreaker
from agentgauge.harness.stopping import Stop
from agentgauge.schema import Trial
from agentgauge.store import TrialWriter

__all__ = ["keep_trial"]


async def keep_trial(
    trial: Trial,
    writer: TrialWriter,
    on_done: Callable[[Trial], None],
    breaker: CircuitBreaker,
    stop: Stop,
) -> None:
    """Submit ``trial`` for writing, report it, and halt the run if the breaker trips."""
    # Waits while the writer's queue is full. A Ctrl-C during the wait may leave the
    # trial queued, and then it is committed: the count of what was saved comes from
    # the writer, not from here.
    await writer.submit(trial)
    on_done(trial)
    tripped = breaker.record(trial.is_infra_error)
    if tripped is not None:
        stop.halt(tripped)
