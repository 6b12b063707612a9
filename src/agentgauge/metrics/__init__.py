"""Pure metrics over columnar trials (docs/metrics.md).

`compute_metrics` turns a `TrialTable` into the ``agentgauge.metrics/1`` report;
the per-task estimators (`pass_at_k`, `pass_hat_k`), the outcome aggregates and
the cost figures are usable on their own.

The public API names a function ``agentgauge.metrics(trials, ...)``, and this subpackage
has the same dotted name. Python binds a package's name to the subpackage as
soon as any submodule is imported, so rather than race it, the subpackage is
made callable: ``agentgauge.metrics(...)`` calls `agentgauge.api.metrics`
whatever was imported first.
"""

import sys
import types
from typing import Any

from agentgauge.metrics.cost import CostMetrics, cost_metrics, cost_of_pass
from agentgauge.metrics.engine import SCHEMA, GroupMetrics, MetricsReport, compute_metrics
from agentgauge.metrics.outcome import OutcomeMetrics, PassK, outcome_metrics, success_interval
from agentgauge.metrics.passk import pass_at_k, pass_hat_k

__all__ = [
    "SCHEMA",
    "CostMetrics",
    "GroupMetrics",
    "MetricsReport",
    "OutcomeMetrics",
    "PassK",
    "compute_metrics",
    "cost_metrics",
    "cost_of_pass",
    "outcome_metrics",
    "pass_at_k",
    "pass_hat_k",
    "success_interval",
]


class _CallableModule(types.ModuleType):
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from agentgauge.api import metrics

        return metrics(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
