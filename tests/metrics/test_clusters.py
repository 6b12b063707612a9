"""One rule for clusters (`agentgauge.metrics.clusters`): a task's cluster is its
family, or the task alone when none of its trials names one; the metrics, the paired
comparison, the time horizon and robustness all read it. Hand-computed vectors with
families and family-less tasks side by side."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from agentgauge.metrics.clusters import family_clusters, task_families
from agentgauge.metrics.compare import compare
from agentgauge.metrics.engine import compute_metrics
from agentgauge.metrics.horizon import horizon
from agentgauge.metrics.robustness import robustness
from agentgauge.stats.se import se_clustered
from agentgauge.table import TrialTable

#: Two named families and two tasks without one, 4 trials a task: successes of A and B.
FAMILY = {"a": "F1", "b": "F1", "c": "F2", "d": "F2", "e": None, "f": None}
MINUTES = {"a": 1.0, "b": 4.0, "c": 15.0, "d": 60.0, "e": 2.0, "f": 30.0}
WINS_A = {"a": 4, "b": 3, "c": 2, "d": 0, "e": 4, "f": 1}
WINS_B = {"a": 4, "b": 4, "c": 3, "d": 1, "e": 2, "f": 2}


def _table(
    wins: dict[str, int], family: dict[str, str | None] = FAMILY, agent: str = "x"
) -> TrialTable:
    rows = [(t, i < w) for t, w in wins.items() for i in range(4)]
    return TrialTable.from_columns(
        len(rows),
        task_id=[t for t, _ in rows],
        family=[family[t] for t, _ in rows],
        human_minutes=np.array([MINUTES[t] for t, _ in rows]),
        success=np.array([s for _, s in rows]),
        score=np.array([float(s) for _, s in rows]),
        agent=[agent] * len(rows),
    )


def test_family_clusters_codes_families_in_label_order_then_each_task_alone() -> None:
    codes, n_families = family_clusters(np.array(["F2", None, "F1", None, "F2"], dtype=object))
    assert codes is not None and codes.tolist() == [1, 2, 0, 3, 1] and n_families == 2
    assert family_clusters(np.array([None, None], dtype=object)) == (None, 0)


def test_a_tasks_family_is_the_one_its_trials_name_whichever_row_names_it() -> None:
    # Task 0: its first trial names none, its second 'F'; task 1 names none.
    family = np.array([None, "F", None, None], dtype=object)
    task = np.array([0, 0, 1, 1], dtype=np.intp)
    first = np.array([0, 2], dtype=np.intp)
    assert task_families(family, task, first).tolist() == ["F", None]
    # The same read from the column's coding (a table read from a store or Parquet).
    coded = (np.array([None, "F"], dtype=object), np.array([0, 1, 0, 0], dtype=np.intp))
    assert task_families(family, task, first, coded).tolist() == ["F", None]
    none = np.array([None] * 4, dtype=object)
    uncoded = (np.array([None], dtype=object), np.zeros(4, dtype=np.intp))
    assert task_families(none, task, first, uncoded).tolist() == [None, None]


def test_compare_clusters_family_less_tasks_alone_beside_the_families() -> None:
    """[metric change] The comparison dropped every family once one shared task lacked
    one (SE over 6 tasks, df 5); it now clusters as the metrics do: 4 clusters, df 3.

    d = p_B − p_A per task: a 0, b 1/4, c 1/4, d 1/4, e −1/2, f 1/4; mean 1/12.
    e_t = d − mean: a −1/12, b 2/12, c 2/12, d 2/12, e −7/12, f 2/12.
    Cluster sums: F1 (a, b) 1/12, F2 (c, d) 4/12, e −7/12, f 2/12;
    Σ sums² = (1 + 16 + 49 + 4)/144 = 70/144.
    SE = √(4/3 · 70/144) / 6 = √(70/108) / 6 = 0.134179...
    """
    c = compare(_table(WINS_A), _table(WINS_B, agent="y"))
    assert c.se_method == "clustered"
    assert c.n_clusters == 4 and c.n_families == 2 and c.df == 3
    assert c.se_paired == pytest.approx(math.sqrt(70 / 108) / 6, rel=1e-12)
    assert c.mean_diff == pytest.approx(1 / 12, rel=1e-12)
    assert c.unit == "clusters" and c.n_units == 4
    d = c.to_dict()
    assert (d["n_clusters"], d["n_families"], d["unit"], d["df"]) == (4, 2, "clusters", 3)
    assert d["test"] == "paired t on clusters, df = 3"
    # 4 clusters cannot reach α = 0.05 by any test over them: no verdict claims a side.
    assert c.too_few_units and "too few clusters" in c.verdict


def test_compare_with_every_task_in_a_family_or_none_is_as_before() -> None:
    named = {t: (f or "F3") for t, f in FAMILY.items()}
    c = compare(_table(WINS_A, named), _table(WINS_B, named, agent="y"))
    assert (c.n_clusters, c.n_families, c.unit) == (3, 3, "families")
    alone = dict.fromkeys(FAMILY)
    c = compare(_table(WINS_A, alone), _table(WINS_B, alone, agent="y"))
    assert (c.se_method, c.n_clusters, c.df, c.unit) == ("task", None, 5, "tasks")


def test_the_metrics_take_a_tasks_family_from_any_of_its_trials() -> None:
    """[metric change] A task whose first trial named no family was clustered alone,
    however many of its later trials named one.

    Task a: trials (no family, success), (F, failure): p = 1/2, in F; b (F) 1;
    c (none) 0; d (none) 1. Mean 5/8; e_t: a −1/8, b 3/8, c −5/8, d 3/8.
    Clusters F (a, b) 2/8, c −5/8, d 3/8: Σ² = (4 + 25 + 9)/64 = 38/64.
    SE = √(3/2 · 38/64) / 4 = √(57/64) / 4 = 0.235932...
    (Before, a alone: 4 clusters, √(4/3 · 44/64) / 4 = 0.239357.)
    """
    table = TrialTable.from_columns(
        5,
        task_id=["a", "a", "b", "c", "d"],
        family=[None, "F", "F", None, None],
        success=np.array([True, False, True, False, True]),
    )
    o = compute_metrics(table, by=()).groups[0].outcome
    assert (o.n_clusters, o.n_families) == (3, 1)
    assert o.se_clustered == pytest.approx(math.sqrt(57 / 64) / 4, rel=1e-12)
    assert o.se_clustered == pytest.approx(se_clustered([0.5, 1, 0, 1], [0, 0, 1, 2]))


def test_the_metrics_count_families_and_family_less_tasks_as_clusters() -> None:
    """Task rates (A): a 1, b 3/4, c 1/2, d 0, e 1, f 1/4; mean 7/12.
    e_t: a 5/12, b 2/12, c −1/12, d −7/12, e 5/12, f −4/12. Sums: F1 7/12, F2 −8/12,
    e 5/12, f −4/12: Σ² = (49 + 64 + 25 + 16)/144 = 154/144.
    SE = √(4/3 · 154/144) / 6 = √(154/108) / 6 = 0.199020..."""
    o = compute_metrics(_table(WINS_A), by=()).groups[0].outcome
    assert (o.n_clusters, o.n_families) == (4, 2)
    assert o.se_clustered == pytest.approx(math.sqrt(154 / 108) / 6, rel=1e-12)


def test_horizon_counts_families_apart_from_the_tasks_alone() -> None:
    """The fit's clusters are the metrics': 2 families and 2 tasks alone. JSON said
    ``n_families: 4``; it now says 2, with ``n_clusters`` 4 beside it."""
    g = horizon(_table(WINS_A), bootstrap=0).groups[0]
    assert (g.n_families, g.n_clusters, g.n_tasks) == (2, 4, 6)
    d = g.to_dict()
    assert (d["n_families"], d["n_clusters"]) == (2, 4)


def test_horizon_takes_a_tasks_family_from_any_of_its_trials() -> None:
    """A task some of whose runs name its family and others none was refused by the
    fit ("appears under more than one family ('F1', no family)"); it is in its family,
    as every reader and the metrics take it: the same weights, the same fit, the same
    seeded bootstrap as when every run names it."""
    whole = _table(WINS_A)
    family = whole.family.copy()
    family[0] = None  # task a's first run names no family
    partial = TrialTable.from_columns(
        len(whole),
        task_id=whole.task_id,
        family=family,
        human_minutes=whole.human_minutes,
        success=whole.success,
        score=whole.score,
        agent=whole.agent,
    )
    a, b = (horizon(t, bootstrap=200, seed=3).groups[0] for t in (whole, partial))
    assert (b.n_families, b.n_clusters) == (2, 4)
    assert b.horizons == a.horizons
    assert b.ci95 == a.ci95


def test_horizon_still_refuses_a_task_under_two_named_families() -> None:
    from agentgauge.errors import InputError

    t = TrialTable.from_columns(
        3,
        task_id=["s", "s", "l"],
        family=["A", "B", "A"],
        human_minutes=np.array([1.0, 1.0, 4.0]),
        success=np.array([True, False, False]),
    )
    with pytest.raises(
        InputError, match=r"task 's' appears under more than one family \('A', 'B'\)"
    ):
        horizon(t, bootstrap=0)


def test_robustness_resamples_families_and_tasks_alone_together() -> None:
    """[metric change] Robustness resampled tasks alone once a task lacked a family;
    now families and family-less tasks are its clusters. Its SE equals a bootstrap
    over the clusters the metrics use (the same seeded draws)."""
    from agentgauge.stats.bootstrap import cluster_bootstrap_means

    rows = []
    for t, w in WINS_A.items():
        rows += [(t, "base", i < w) for i in range(4)]
        rows += [(t, "paraphrase:1", i < max(w - 1, 0)) for i in range(4)]
    table = TrialTable.from_columns(
        len(rows),
        task_id=[r[0] for r in rows],
        variant=[r[1] for r in rows],
        family=[FAMILY[r[0]] for r in rows],
        success=np.array([r[2] for r in rows]),
    )
    r = robustness(table, "prompt", n_boot=500, seed=1)
    tasks = sorted(WINS_A)
    pb = np.array([WINS_A[t] / 4 for t in tasks])
    pp = np.array([max(WINS_A[t] - 1, 0) / 4 for t in tasks])
    clusters = [0, 0, 1, 1, 2, 3]  # F1, F1, F2, F2, e alone, f alone
    mb = cluster_bootstrap_means(pb, clusters, n_boot=500, seed=1)
    mp = cluster_bootstrap_means(pp, clusters, n_boot=500, seed=1)
    ok = mb > 0
    expected = float(np.std(np.minimum(mp[ok] / mb[ok], 1.0), ddof=1))
    assert r.se == pytest.approx(expected, rel=1e-12)


def test_a_stored_run_is_clustered_by_the_same_rule(tmp_path: Path) -> None:
    """Read from a store, the family column comes coded (the path that skips the rows):
    the figures of the hand-computed table above, 3 clusters, SE √(57/64) / 4."""
    from agentgauge.api import metrics
    from agentgauge.schema import Run, Trial
    from agentgauge.store import Store, utc_now

    db = tmp_path / "s.db"
    with Store(db) as store:
        store.create_run(Run(run_id="r", created_at=utc_now()))
        for i, (task, family, success) in enumerate(
            [
                ("a", None, True),
                ("a", "F", False),
                ("b", "F", True),
                ("c", None, False),
                ("d", None, True),
            ]
        ):
            store.add_trial("r", Trial(task_id=task, trial=i, family=family, success=success))
    o = metrics(f"{db}:r", by=(), behaviour=False).groups[0].outcome
    assert (o.n_clusters, o.n_families) == (3, 1)
    assert o.se_clustered == pytest.approx(math.sqrt(57 / 64) / 4, rel=1e-12)
