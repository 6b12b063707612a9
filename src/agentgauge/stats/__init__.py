"""Pure numerics for error bars: standard errors, intervals, the cluster bootstrap.

Functions take numpy arrays, validate once, never mutate their inputs, and cite
the formula they implement.
"""

from agentgauge.stats.bootstrap import cluster_bootstrap_ci, cluster_bootstrap_means
from agentgauge.stats.intervals import (
    kish_n,
    mover_difference_interval,
    normal_interval,
    wilson_design_effect_interval,
    wilson_interval,
    z_value,
)
from agentgauge.stats.se import cluster_codes, cluster_correlation, se_clustered, se_mean

__all__ = [
    "cluster_bootstrap_ci",
    "cluster_bootstrap_means",
    "cluster_codes",
    "cluster_correlation",
    "kish_n",
    "mover_difference_interval",
    "normal_interval",
    "se_clustered",
    "se_mean",
    "wilson_design_effect_interval",
    "wilson_interval",
    "z_value",
]
