"""Simulation: the reported 95% interval covers a known rate 93–97% of the time (SPEC 9).

Synthetic clustered data with a known mean rate μ: family rates q_f ~ Beta(μa, (1−μ)a),
task rates p_t ~ Beta(q_f b, (1−q_f) b) (so E[p_t] = μ), trials Bernoulli(p_t).
Each replication goes through `compute_metrics`, so the interval tested is the one
users see, with the method SPEC 5.1 picks for that shape of data.
"""

from __future__ import annotations

import numpy as np
import pytest

from agentgauge import TrialTable
from agentgauge.metrics import compute_metrics

REPLICATIONS = 2000
MU = 0.7


def coverage(n_fam: int, tasks_per: int, trials: int, *, families: bool, seed: int) -> tuple:
    rng = np.random.default_rng(seed)
    n_tasks = n_fam * tasks_per
    fam_of_task = np.repeat(np.arange(n_fam), tasks_per)
    task_ids = np.array([f"t{i}" for i in range(n_tasks)], dtype=object)
    fam_labels = np.array([f"f{i}" for i in fam_of_task], dtype=object)
    row_task = np.repeat(np.arange(n_tasks), trials)
    covered, methods = 0, set()
    for r in range(REPLICATIONS):
        q = rng.beta(MU * 8, (1 - MU) * 8, n_fam)
        p = rng.beta(q[fam_of_task] * 8, (1 - q[fam_of_task]) * 8)
        success = rng.random(row_task.size) < p[row_task]
        cols = {"task_id": task_ids[row_task], "success": success}
        if families:
            cols["family"] = fam_labels[row_task]
        table = TrialTable.from_columns(row_task.size, **cols)
        g = compute_metrics(table, k=(1,), by=(), seed=r).to_dict()["groups"][0]
        lo, hi = g["success_rate"]["ci95"]
        covered += lo <= MU <= hi
        methods.add(g["success_rate"]["ci_method"])
    return covered / REPLICATIONS, methods


@pytest.mark.parametrize(
    ("n_fam", "tasks_per", "trials", "families", "method"),
    [
        # few clusters: the two-stage cluster bootstrap percentile interval
        (10, 3, 4, True, "cluster_bootstrap"),
        # 250 families: the normal interval on Miller's clustered SE
        (250, 2, 3, True, "normal"),
        # one trial per task, no families: Wilson
        (60, 1, 1, False, "wilson"),
    ],
)
def test_reported_interval_covers_known_rate(
    n_fam: int, tasks_per: int, trials: int, families: bool, method: str
) -> None:
    cov, methods = coverage(n_fam, tasks_per, trials, families=families, seed=2026)
    assert methods == {method}
    assert 0.93 <= cov <= 0.97, f"coverage {cov:.3f} with {method}"
