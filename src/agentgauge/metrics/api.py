"""`agentgauge.metrics(...)`: the Python twin of ``agentgauge metrics SOURCE``."""

from __future__ import annotations

import dataclasses
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
    behaviour: bool = True,
) -> MetricsReport:
    """Metrics of trials given as a list of `Trial`, a `TrialTable`, or a SOURCE.

    A SOURCE is a trials JSONL path or ``DB:RUN_ID`` (as on the command line).
    See `compute_metrics` for the figures and options; ``report.to_dict()`` is
    the ``agentgauge.metrics/1`` object.

    With ``behaviour`` (the default) and trials that carry transcripts and
    grades (a list of `Trial` or a SOURCE), the report adds per-group
    ``tool_use`` and ``control`` sections and per-configuration
    ``reliability`` (`agentgauge.metrics.behaviour`). A bare `TrialTable` has
    only outcomes, so those sections are absent.
    """
    records: list[Trial] | None = None
    if isinstance(trials, TrialTable):
        table = trials
    elif isinstance(trials, str | PathLike):
        # Imported here: sources pulls in the store, which pure metric users do not need.
        from agentgauge.sources import open_source

        source = open_source(str(trials), events=behaviour)
        table = source.table
        records = source.trials
    else:
        records = list(trials)
        table = TrialTable.from_trials(records)
    report = compute_metrics(
        table, k=k, by=by, exclude_infra_errors=exclude_infra_errors, seed=seed
    )
    if not behaviour or records is None:
        return report
    from agentgauge.metrics.behaviour import behaviour_by_group, reliability_by_configuration

    return dataclasses.replace(
        report,
        behaviour=behaviour_by_group(records, by, exclude_infra_errors=exclude_infra_errors),
        reliability=reliability_by_configuration(
            records, exclude_infra_errors=exclude_infra_errors, seed=seed
        ),
    )
