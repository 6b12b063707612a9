"""`agentgauge.metrics(...)`: the Python twin of ``agentgauge metrics SOURCE``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from os import PathLike

from agentgauge.metrics.engine import MetricsReport, compute_metrics
from agentgauge.schema import Trial
from agentgauge.table import TrialTable

__all__ = ["metrics"]


def metrics(
    trials: Sequence[Trial] | TrialTable | str | PathLike[str],
    *,
    k: int | Iterable[int] = (1, 2, 4),
    by: Sequence[str] = ("agent", "model", "variant"),
    exclude_infra_errors: bool = False,
    seed: int = 0,
) -> MetricsReport:
    """Metrics of trials given as a list of `Trial`, a `TrialTable`, or a SOURCE.

    A SOURCE is a trials JSONL path or ``DB:RUN_ID`` (as on the command line).
    See `compute_metrics` for the figures and options; ``report.to_dict()`` is
    the ``agentgauge.metrics/1`` object.
    """
    if isinstance(trials, TrialTable):
        table = trials
    elif isinstance(trials, str | PathLike):
        # Imported here: sources pulls in the store, which pure metric users do not need.
        from agentgauge.sources import open_source

        table = open_source(str(trials), events=False).table
    else:
        table = TrialTable.from_trials(list(trials))
    return compute_metrics(table, k=k, by=by, exclude_infra_errors=exclude_infra_errors, seed=seed)
