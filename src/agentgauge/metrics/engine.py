"""From a `TrialTable` to the ``agentgauge.metrics/1`` object (docs/metrics.md).

The table is coded once into integers (groups, tasks, families); every per-task
and per-group count is then an ``np.bincount``, so a million trials take a
fraction of a second. The per-task and per-group formulas live in `outcome`,
`passk` and `cost`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.clusters import family_clusters, task_families
from agentgauge.metrics.cost import CostMetrics, cost_metrics
from agentgauge.metrics.outcome import OutcomeMetrics, PassK, outcome_metrics
from agentgauge.table import (
    TrialTable,
    group_codes,
    group_keys,
)

__all__ = ["SCHEMA", "GroupMetrics", "MetricsReport", "compute_metrics"]

SCHEMA = "agentgauge.metrics/1"
#: Labels every group reports, grouped by or not.
_LABELS = ("agent", "model", "variant")
#: Largest groups × tasks grid counted densely with one bincount.
_DENSE_LIMIT = 50_000_000

IntpArray = npt.NDArray[np.intp]
ObjArray = npt.NDArray[np.object_]


def _num(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _passk_dict(values: dict[int, PassK], attr: str) -> dict[str, float | None]:
    return {str(k): _num(getattr(v, attr)) for k, v in values.items()}


@dataclass(frozen=True)
class GroupMetrics:
    """Metrics of one (agent, model, variant) group."""

    labels: dict[str, Any]
    outcome: OutcomeMetrics
    cost: CostMetrics
    infra_errors: int
    """Trials that ended in an infrastructure error or timeout (counted, excluded or not)."""

    def to_dict(self) -> dict[str, Any]:
        """The group object of ``agentgauge.metrics/1``, plus pass@k/pass^k SEs and null reasons."""
        o, c = self.outcome, self.cost
        reasons = {
            **o.reasons,
            **{(k if k.startswith("tokens.") else f"cost.{k}"): v for k, v in c.reasons.items()},
        }
        if o.n_trials:  # a figure no trial records is shown as missing, and why
            for key, value, what in (
                ("cost.judge_total", c.judge_total, "a judge cost"),
                ("latency_s", c.latency_mean, "a latency"),
                ("tokens", c.input_tokens if c.output_tokens is None else 0, "token counts"),
                ("calls.tool", c.tool_calls, "a tool-call count"),
                ("calls.model", c.model_calls, "a model-call count"),
            ):
                if value is None:
                    reasons.setdefault(key, f"no trial records {what}")
        else:  # every figure is null, and each says why (only the SE-bound ones did)
            why = "no trials"
            if self.infra_errors:  # gone only when excluded: they count as failures else
                s = "s" if self.infra_errors != 1 else ""
                why = f"no trials left after excluding {self.infra_errors} infra-error trial{s}"
            for key in (
                "success_rate", "n_clusters", "n_families", "cost.per_trial", "cost.total",
                "cost.cost_of_pass", "latency_s", "tokens", "calls.tool", "calls.model",
            ):  # fmt: skip
                reasons.setdefault(key, why)
            if self.infra_errors:
                # What emptied the group is every figure's reason: "no tasks" (the
                # interval, pass@k) and "no successes" (spend per success) hid it.
                reasons.update(dict.fromkeys(reasons, why))
        return {
            **self.labels,
            "n_tasks": o.n_tasks,
            "n_trials": o.n_trials,
            "n_clusters": o.n_clusters if o.n_tasks else None,
            "cluster_unit": o.cluster_unit,
            "n_families": o.n_families if o.n_tasks else None,
            "n_successes": o.n_successes,
            "success_rate": {
                "value": _num(o.success_rate),
                "se": _num(o.se),
                "se_clustered": _num(o.se_clustered),
                "ci95": None if o.ci95 is None else [float(o.ci95[0]), float(o.ci95[1])],
                "ci_method": o.ci_method,
            },
            "pass_at_k": _passk_dict(o.pass_at_k, "value"),
            "pass_hat_k": _passk_dict(o.pass_hat_k, "value"),
            "pass_at_k_se": _passk_dict(o.pass_at_k, "se"),
            "pass_hat_k_se": _passk_dict(o.pass_hat_k, "se"),
            "outcome_consistency": _num(o.outcome_consistency),
            "flaky_tasks": list(o.flaky_tasks),
            "infra_errors": self.infra_errors,
            "cost": {
                "per_trial": _num(c.per_trial),
                "total": _num(c.total),
                "cost_of_pass": _num(c.cost_of_pass),
                "spend_per_success": _num(c.spend_per_success),
                "judge_total": _num(c.judge_total),
                "missing": c.missing,
                "n_judged": c.judge_n,
                "judge_missing": c.judge_missing,
            },
            "latency_s": {
                "p50": _num(c.latency_p50),
                "p95": _num(c.latency_p95),
                "mean": _num(c.latency_mean),
                "n": c.latency_n,
            },
            "tokens": {
                "input": _num(c.input_tokens),
                "output": _num(c.output_tokens),
                "input_total": _num(c.input_tokens_total),
                "output_total": _num(c.output_tokens_total),
                "n_input": c.input_tokens_n,
                "n_output": c.output_tokens_n,
            },
            "calls": {"tool": _num(c.tool_calls), "model": _num(c.model_calls)},
            "null_reasons": reasons,
        }


@dataclass(frozen=True)
class MetricsReport:
    """All groups' metrics, with the settings that produced them and any warnings."""

    groups: list[GroupMetrics]
    k: tuple[int, ...]
    by: tuple[str, ...]
    exclude_infra_errors: bool
    infra_excluded: int
    seed: int
    warnings: list[str] = field(default_factory=list)
    behaviour: dict[tuple[Any, ...], dict[str, Any]] = field(default_factory=dict)
    """Per group (keyed by its labels in ``by`` order): ``tool_use`` and ``control``
    sections, when the trials' transcripts and grades were available."""
    reliability: list[dict[str, Any]] | None = None
    """Reliability per (agent, model) configuration, when transcripts were available."""

    def to_dict(self) -> dict[str, Any]:
        """The ``agentgauge.metrics/1`` object (JSON-ready: no NaN, no inf)."""
        groups = []
        for g in self.groups:
            d = g.to_dict()
            extra = self.behaviour.get(tuple(g.labels.get(key) for key in self.by))
            if extra is not None:
                reasons = {**d["null_reasons"], **extra.get("null_reasons", {})}
                d.update(extra)
                d["null_reasons"] = reasons
            groups.append(d)
        out: dict[str, Any] = {
            "schema": SCHEMA,
            "groups": groups,
            "k": list(self.k),
            "by": list(self.by),
            "exclude_infra_errors": self.exclude_infra_errors,
            "infra_excluded": self.infra_excluded,
            "seed": self.seed,
            "warnings": list(self.warnings),
        }
        if self.reliability is not None:
            out["reliability"] = self.reliability
        return out


def _validate_k(k: int | Iterable[int]) -> tuple[int, ...]:
    ks = (k,) if isinstance(k, int) else tuple(k)
    for v in ks:
        if isinstance(v, bool) or not isinstance(v, int | np.integer) or v < 1:
            raise ValueError(f"k must be positive integers, got {v!r}")
    return tuple(sorted({int(v) for v in ks}))


def _first_rows(codes: IntpArray, size: int) -> IntpArray:
    """The first row holding each code."""
    if codes.size:
        # Each code's rows side by side (a run stores a task's trials so): where the code
        # changes, when that is once per code and in code order.
        steps = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        if steps.size == size and bool(np.all(codes[steps] == np.arange(size))):
            return steps.astype(np.intp)
        # Codes numbered in order of first appearance (as `factorize` gives them): the
        # first rows are where the running maximum steps up.
        running = np.maximum.accumulate(codes)
        steps = np.flatnonzero(np.r_[True, running[1:] > running[:-1]])
        if steps.size == size and bool(np.all(codes[steps] == np.arange(size))):
            return steps.astype(np.intp)
    first = np.full(size, codes.size, dtype=np.intp)
    np.minimum.at(first, codes, np.arange(codes.size, dtype=np.intp))
    return first


def _tasks(table: TrialTable) -> tuple[ObjArray, IntpArray, IntpArray]:
    """The task ids in label order (as text), each row's index into them, and each
    task's first row. Per-task figures are taken in this order (the flaky tasks listed,
    the SEs summed), so that the same trials stored in another order give the same."""
    uniques, codes = table.codes("task_id")
    first = _first_rows(codes, len(uniques))
    rank = table.ranks("task_id")
    order = np.argsort(rank)
    if bool(np.all(order == np.arange(order.size))):
        return uniques, codes, first
    return uniques[order], rank[codes], first[order]


def _task_clusters(
    table: TrialTable, task: IntpArray, first: IntpArray
) -> tuple[IntpArray | None, int]:
    """One cluster code per task (``task``: each row's task code, ``first``: each task's
    first row), by the one rule every clustered figure follows
    (`agentgauge.metrics.clusters`): its family, or its own cluster when none of its
    trials names one. Also how many of the codes are families (the rest, from there
    up, are tasks alone); ``None`` when no trial names a family."""
    # Coded already when read from a store or Parquet (coding it here would cost more
    # than looking at the rows of the tasks whose first trial names no family).
    coded = table.cached_codes("family")
    return family_clusters(task_families(table.family, task, first, coded))


def _label_value(table: TrialTable, key: str, rows: IntpArray | None) -> Any:
    """The group's value of a label it was not grouped by: shown if constant, else None."""
    uniques, codes = table.codes(key)
    sel = codes if rows is None else codes[rows]
    if sel.size and sel.min() == sel.max():
        return uniques[sel[0]]
    return None


_Cells = tuple[IntpArray, npt.NDArray[np.int64], npt.NDArray[np.int64]]


def _cell_counts(
    group: IntpArray,
    task: IntpArray,
    success: npt.NDArray[np.bool_],
    keep: IntpArray | None,
    n_groups: int,
    n_tasks: int,
) -> list[_Cells]:
    """Per group: the task codes it holds, and trials and successes per task code."""
    if keep is not None:
        group, task, success = group[keep], task[keep], success[keep]
    if n_groups * n_tasks <= _DENSE_LIMIT:
        # Cell (group, task) as one integer; with one group it is the task code itself.
        pair = task if n_groups == 1 else group.astype(np.int64) * n_tasks + task
        size = n_groups * n_tasks
        n_pair = np.bincount(pair, minlength=size).reshape(n_groups, n_tasks)
        # Successes as 0/1 weights (a uint8 view: no copy); float sums of 0/1 are exact.
        c_pair = (
            np.bincount(pair, weights=success.view(np.uint8), minlength=size)
            .astype(np.int64)
            .reshape(n_groups, n_tasks)
        )
        return [(np.flatnonzero(n_pair[g]), n_pair[g], c_pair[g]) for g in range(n_groups)]
    # Many groups × many tasks: count only the cells that occur.
    pair = group.astype(np.int64) * n_tasks + task
    cells, inverse = np.unique(pair, return_inverse=True)
    n_cell = np.bincount(inverse.reshape(-1))
    c_cell = np.bincount(inverse.reshape(-1)[success], minlength=cells.size)
    out: list[_Cells] = []
    for g in range(n_groups):
        lo, hi = np.searchsorted(cells, [g * n_tasks, (g + 1) * n_tasks])
        tasks = (cells[lo:hi] - g * n_tasks).astype(np.intp)
        n_full = np.zeros(n_tasks, dtype=np.int64)
        c_full = np.zeros(n_tasks, dtype=np.int64)
        n_full[tasks], c_full[tasks] = n_cell[lo:hi], c_cell[lo:hi]
        out.append((tasks, n_full, c_full))
    return out


def _table_counts(
    table: TrialTable,
    coding: tuple[ObjArray, IntpArray],
    group: IntpArray,
    task: IntpArray,
    success: npt.NDArray[np.bool_],
    n_tasks: int,
) -> _Cells:
    """`_cell_counts` of all rows as one ``group``, kept on the table (``coding``: its
    task coding, which ``task`` was derived from; ``success``: infra errors as failures)."""

    def count() -> _Cells:
        cells = _cell_counts(group, task, success, None, 1, n_tasks)[0]
        for a in cells:
            a.flags.writeable = False  # shared by every query of the table
        return cells

    return table.memo("metrics.task_counts", (coding,), count)


def _group_rows(group: IntpArray, keep: IntpArray | None, n_groups: int) -> list[IntpArray | None]:
    """Row indices of each group (``None`` = all rows: no copy for the usual single group)."""
    if n_groups == 1:
        return [keep]
    base = group if keep is None else group[keep]
    order = np.argsort(base, kind="stable")
    parts = np.split(order, np.cumsum(np.bincount(base, minlength=n_groups))[:-1])
    return [p.astype(np.intp) if keep is None else keep[p] for p in parts]


def compute_metrics(
    table: TrialTable,
    *,
    k: int | Iterable[int] = (1, 2, 4),
    by: str | Sequence[str] = _LABELS,
    exclude_infra_errors: bool = False,
    seed: int = 0,
    judged: npt.NDArray[np.bool_] | None = None,
) -> MetricsReport:
    """Outcome, pass@k/pass^k, cost and latency per group (docs/metrics.md).

    Infrastructure errors (status ``error``/``timeout`` not caused by the agent)
    count as failures unless ``exclude_infra_errors`` drops them, which adds a
    warning with their count (silently dropping them inflates scores:
    tau2-bench issue #493). ``seed`` seeds the bootstrap intervals. ``judged``
    (per row: a model judge graded the trial, the ``judged`` fact of
    `agentgauge.facts`) lets the judge's total tell a run no judge graded from one
    whose judge's price is unknown (`cost_metrics`); without it, it cannot.

    ``by``: the labels to split the trials by (`agentgauge.table.GROUP_KEYS`), a
    sequence or a text split at its commas as the CLI's ``--by`` is (``"agent,model"``;
    ``""`` or ``()`` for one group of all trials); `ValueError` names a label there is
    none of.

    An empty table gives a report with no group and the warning ``no trials:
    nothing was measured`` (the CLI refuses an empty SOURCE before it gets here).
    """
    ks = _validate_k(k)
    # A text is split at its commas (``by="agent,model"``), as `agentgauge.metrics` and
    # the CLI's --by read it: it was one label ("cannot group by 'agent,model'").
    by = group_keys(by)
    warnings: list[str] = []
    n_rows = len(table)
    if not n_rows:
        # No group, and a reason: a report over zero trials claims nothing.
        warnings.append("no trials: nothing was measured")
    if judged is not None and len(judged) != n_rows:
        raise ValueError(f"judged has {len(judged)} rows, the table {n_rows}")
    infra = table.infra_error
    n_infra = int(np.count_nonzero(infra))
    # An infra error is a failure unless excluded: a crashed trial is not a success.
    success = table.success & ~infra if n_infra else table.success

    group, group_first = group_codes(table, by)
    n_groups = int(group_first.size)
    infra_by_group = np.bincount(group[infra], minlength=n_groups) if n_infra else None

    keep: IntpArray | None = None
    if exclude_infra_errors and n_infra:
        keep = np.flatnonzero(~infra).astype(np.intp)
        warnings.append(
            f"excluded {n_infra} infra-error trial{'s' if n_infra != 1 else ''} "
            f"(of {n_rows}); scores without them can look better than the system is"
        )
    elif n_infra:
        warnings.append(
            f"{n_infra} infra-error trial{'s' if n_infra != 1 else ''} counted as failures "
            "(--exclude-infra-errors drops them)"
        )

    # What depends on the table alone is derived once per table (and its task coding).
    coding = table.codes("task_id")
    task_uniques, task_codes, task_first = table.memo(
        "metrics.tasks", (coding,), lambda: _tasks(table)
    )
    n_tasks_all = len(task_uniques)
    clusters, n_families = table.memo(
        "metrics.task_clusters",
        (coding, table.cached_codes("family")),
        lambda: _task_clusters(table, task_codes, task_first),
    )

    if n_groups == 1:  # the usual one group: the whole table's counts, less what is dropped
        per_group = [_table_counts(table, coding, group, task_codes, success, n_tasks_all)]
        if keep is not None:
            tasks, n_full, c_full = per_group[0]
            n_full = n_full - np.bincount(task_codes[infra], minlength=n_tasks_all)
            per_group = [(np.flatnonzero(n_full), n_full, c_full)]  # infra: no successes
    else:
        per_group = _cell_counts(group, task_codes, success, keep, n_groups, n_tasks_all)
    group_rows = _group_rows(group, keep, n_groups)

    groups: list[GroupMetrics] = []
    for g in range(n_groups):
        tasks, n_full, c_full = per_group[g]
        every = tasks.size == n_tasks_all  # every task (ascending): the arrays as they are
        task_cl = None
        families = None
        if clusters is not None:
            task_cl = clusters if every else clusters[tasks]
            in_family = task_cl < n_families
            if not bool(np.any(in_family)):
                task_cl = None  # this group's tasks name no family: tasks are the clusters
            else:  # "5 families" said of 3 families and 2 tasks without one misleads
                held = np.bincount(task_cl[in_family], minlength=n_families)
                families = int(np.count_nonzero(held))
        outcome = outcome_metrics(
            n_full if every else n_full[tasks],
            c_full if every else c_full[tasks],
            task_ids=task_uniques if every else task_uniques[tasks],
            clusters=task_cl,
            families=families,
            ks=ks,
        )
        rows = group_rows[g]

        def col(name: str, rows: IntpArray | None = rows) -> npt.NDArray[np.float64]:
            values: npt.NDArray[np.float64] = getattr(table, name)
            return values if rows is None else values[rows]

        cost = cost_metrics(
            success_rate=outcome.success_rate,
            cost_usd=col("cost_usd"),
            judge_cost_usd=col("judge_cost_usd"),
            latency_s=col("latency_s"),
            input_tokens=col("input_tokens"),
            output_tokens=col("output_tokens"),
            tool_calls=col("tool_calls"),
            model_calls=col("model_calls"),
            task=task_codes if rows is None else task_codes[rows],
            task_trials=n_full,
            successes=outcome.n_successes,
            judged=None if judged is None else judged if rows is None else judged[rows],
        )
        first = int(group_first[g])
        labels: dict[str, Any] = {}
        for key in (*_LABELS, *(b for b in by if b not in _LABELS)):
            if key in by:
                labels[key] = getattr(table, key)[first]
            else:
                labels[key] = _label_value(table, key, rows)
        if outcome.n_tasks == 0:
            # As the tables name a group ("agent=y, variant=base"), not a Python dict.
            named = ", ".join(f"{k}={v}" for k, v in labels.items() if v is not None)
            warnings.append(
                f"group {named or 'of all trials'} has no trials left after excluding infra errors"
            )
        groups.append(
            GroupMetrics(
                labels=labels,
                outcome=outcome,
                cost=cost,
                infra_errors=int(infra_by_group[g]) if infra_by_group is not None else 0,
            )
        )
    return MetricsReport(
        groups=groups,
        k=ks,
        by=by,
        exclude_infra_errors=exclude_infra_errors,
        infra_excluded=n_infra if keep is not None else 0,
        seed=seed,
        warnings=warnings,
    )
