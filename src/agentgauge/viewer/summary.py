"""A run's summary: its metrics from the store's columnar table, computed once.

The outcome table is per agent and model on the **base variant**, and outcome
per variant is a separate table with one row per variant, as in ``agentgauge
report`` and the terminal (docs/metrics.md), so the same scope gives the same
numbers on every face. The figures come from `agentgauge.store.Store.table`,
which reads columns without building a trial object per row.

The viewer keeps each summary in memory (`agentgauge.viewer.cache`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.engine import compute_metrics
from agentgauge.report.scope import system_base_rows
from agentgauge.table import TrialTable
from agentgauge.viewer.plots import run_figures

__all__ = ["KS", "summarise"]

#: The k of pass@k and pass^k a run's page shows.
KS = (1, 2, 4)


def summarise(table: TrialTable, judged: npt.NDArray[np.bool_] | None = None) -> dict[str, Any]:
    """A run's summary from its `Store.table`: ``base`` (``agentgauge.metrics/1`` per
    agent and model on the base variant), ``variants`` (the same per variant),
    ``scope`` (which trials ``base`` covers) and ``figures``.

    A system (agent and model) with no base-variant trial has its row over all its
    trials, and ``scope`` says so, as ``agentgauge report`` and the terminal tables do
    (`agentgauge.report.scope`).
    ``judged`` (per row, the ``judged`` fact) as `compute_metrics` takes it.
    """
    keep, scope = system_base_rows(table.variant, table.agent, table.model)
    base_rows = np.flatnonzero(keep)
    base = (
        compute_metrics(
            table.take(base_rows),
            k=KS,
            by=("agent", "model"),
            judged=None if judged is None else judged[base_rows],
        ).to_dict()
        if len(table)
        else None
    )
    per_variant = (
        compute_metrics(table, k=KS, by=("variant",), judged=judged).to_dict()
        if len(table)
        else None
    )
    return {
        "scope": scope,
        "base": base,
        "variants": per_variant,
        "figures": run_figures(base, per_variant, scope),
    }
