"""Which tasks an interval resamples together: a task's cluster is its family, or the
task alone when none of its trials names one.

Tasks of one family share their source, so their outcomes are correlated, and the
family is the unit that a clustered SE (Miller 2024, "Adding Error Bars to Evals",
§2.2) and a cluster bootstrap (Field & Welsh 2007) resample. A task without a family
is taken as independent of every other task: a cluster of one. Cluster-robust
variance estimators need independence between clusters only and allow clusters of
any size, one observation included (Cameron & Miller 2015, "A Practitioner's Guide
to Cluster-Robust Inference", J. Human Resources 50(2), §II.C); with every task its
own cluster the clustered SE is the plain SE over tasks. Dropping every family as soon
as one task lacks one (as the comparison once did) throws away the correlation the
families declare, and its interval is too narrow.

Every figure that clusters tasks reads its clusters here: the metrics' success-rate
interval, the comparison's paired SE, the time horizon's weights and bootstrap.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentgauge.table import factorize, label_ranks

__all__ = ["family_clusters", "is_none", "task_families"]

IntpArray = npt.NDArray[np.intp]
ObjArray = npt.NDArray[np.object_]
BoolArray = npt.NDArray[np.bool_]

_NONE = np.array(None, dtype=object)


def is_none(values: ObjArray) -> BoolArray:
    """Which of ``values`` are ``None`` (no family), compared in one numpy pass."""
    return np.asarray(np.equal(values, _NONE), dtype=bool)


def task_families(
    family: ObjArray,
    task: IntpArray,
    first: IntpArray,
    coded: tuple[ObjArray, IntpArray] | None = None,
) -> ObjArray:
    """Each task's family, ``None`` for none: the family its trials name. A trial that
    names none says nothing of its task's (a retried trial that lost the label), and
    every reader refuses a task whose trials name two (`agentgauge.sources.two_families`);
    of a table built otherwise, the first row that names one wins.

    ``family``: the rows' families; ``task``: each row's task code; ``first``: each
    task's first row (tasks are coded by it, ``first[code]``); ``coded``: the column's
    distinct families and each row's index into them, when known (a table's `codes`),
    which spares looking at every row of the tasks whose first row names none."""
    out: ObjArray = family[first].copy()
    lacking = is_none(out)
    if not lacking.any():
        return out
    if coded is not None:
        uniques, codes = coded
        if is_none(uniques).all():  # no row names a family
            return out
    if coded is None:  # every row looked at when no task's first row names one
        rows = None if lacking.all() else np.flatnonzero(lacking[task])
        hit = ~is_none(family if rows is None else family[rows])
        named = np.flatnonzero(hit) if rows is None else rows[hit]
    else:
        rows = np.flatnonzero(lacking[task])
        named = rows[~is_none(uniques)[codes[rows]]]
    if named.size:
        tasks, at = np.unique(task[named], return_index=True)  # rows are in order
        out[tasks] = family[named[at]]
    return out


def family_clusters(families: ObjArray) -> tuple[IntpArray | None, int]:
    """One cluster code per task from its family (`task_families`), and F, how many of
    the clusters are families: the families are coded 0..F−1 in label order (so that
    clustered sums add up in one order), each task without a family its own cluster
    from F up, in the tasks' order. ``(None, 0)`` when no task names a family: the
    tasks are then the clusters."""
    uniques, codes = factorize(np.asarray(families, dtype=object))
    none = is_none(uniques)
    if none.all():
        return None, 0
    named = np.flatnonzero(~none)
    rank = np.full(uniques.size, -1, dtype=np.intp)
    rank[named] = label_ranks("family", uniques[named])
    clusters = rank[codes]
    alone = clusters < 0
    n_families = int(named.size)
    clusters[alone] = n_families + np.arange(int(np.count_nonzero(alone)), dtype=np.intp)
    return clusters, n_families
