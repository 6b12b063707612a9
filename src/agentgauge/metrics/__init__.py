"""Pure metrics over columnar trials (SPEC 5.1, 5.3).

`compute_metrics` turns a `TrialTable` into the ``agentgauge.metrics/1`` report;
the per-task estimators (`pass_at_k`, `pass_hat_k`), the outcome aggregates and
the cost figures are usable on their own.
"""

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
