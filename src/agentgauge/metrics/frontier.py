"""The cost frontier: which configurations buy the most success per dollar.

A point (cost per trial, success rate) is dominated when another point is at
least as cheap and at least as accurate, and strictly better in one of the two.
The frontier is the staircase of non-dominated points (Kapoor et al. 2024, "AI
Agents That Matter", who argue every agent leaderboard should show it). Each
dominated point names the points that dominate it, so a reader sees why it lost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.outcome import task_mean
from agentgauge.table import TrialTable

__all__ = ["Frontier", "FrontierPoint", "frontier_from_table", "group_labels", "pareto_frontier"]


@dataclass(frozen=True)
class FrontierPoint:
    """One agent/configuration."""

    label: str
    cost_per_trial: float | None
    """Mean agent cost per trial in USD; ``None`` when any trial's price is unknown."""
    success_rate: float
    missing: int = 0
    """Trials whose price is unknown (the point is unpriced when any is)."""
    n_trials: int | None = None
    """Trials behind the point, when known."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "cost_per_trial": self.cost_per_trial,
            "success_rate": self.success_rate,
            "missing": self.missing,
            "n_trials": self.n_trials,
        }


@dataclass(frozen=True)
class Frontier:
    """Non-dominated points by increasing cost, and the dominated ones with their dominators."""

    frontier: list[FrontierPoint]
    dominated: list[tuple[FrontierPoint, list[str]]]
    """Each dominated point with the labels of every point that dominates it."""
    unpriced: list[FrontierPoint] = field(default_factory=list)
    """Points left out because their cost is unknown (never priced at 0)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "frontier": [p.to_dict() for p in self.frontier],
            "dominated": [{**p.to_dict(), "dominated_by": by} for p, by in self.dominated],
            "unpriced": [p.to_dict() for p in self.unpriced],
        }


def pareto_frontier(
    labels: Sequence[str],
    cost: npt.ArrayLike,
    success_rate: npt.ArrayLike,
    *,
    missing: Sequence[int] | None = None,
    n_trials: Sequence[int] | None = None,
) -> Frontier:
    """Split points into the Pareto frontier and the dominated.

    q dominates p when cost_q ≤ cost_p and rate_q ≥ rate_p with at least one
    strict. Identical points do not dominate each other (both stay). Points with
    NaN cost go to ``unpriced`` (``missing`` and ``n_trials``, one per point, say
    how many of their trials are unpriced). The frontier is sorted by cost, then
    by rate.
    """
    labels = [str(x) for x in labels]
    c = np.asarray(cost, dtype=np.float64)
    r = np.asarray(success_rate, dtype=np.float64)
    if not (len(labels) == c.size == r.size) or c.ndim != 1:
        raise ValueError("labels, cost and success_rate must have one entry per point")
    if len(set(labels)) != len(labels):
        raise ValueError("point labels must be unique")
    if np.any(~np.isfinite(r)) or np.any((r < 0) | (r > 1)):
        raise ValueError("success rates must be finite and in [0, 1]")
    priced = np.isfinite(c)
    miss = [0] * len(labels) if missing is None else [int(m) for m in missing]
    sizes: list[int | None] = [None] * len(labels) if n_trials is None else list(n_trials)
    if len(miss) != len(labels) or len(sizes) != len(labels):
        raise ValueError("missing and n_trials must have one entry per point")
    points = [
        FrontierPoint(lab, float(x) if ok else None, float(y), m, size)
        for lab, x, y, ok, m, size in zip(labels, c, r, priced, miss, sizes, strict=True)
    ]
    idx = [int(i) for i in np.flatnonzero(priced)]
    cp, rp = c[idx], r[idx]
    n = len(idx)
    # dom[i, j]: point j dominates point i
    le = cp[None, :] <= cp[:, None]
    ge = rp[None, :] >= rp[:, None]
    strict = (cp[None, :] < cp[:, None]) | (rp[None, :] > rp[:, None])
    dom = le & ge & strict
    order = sorted(range(n), key=lambda i: (cp[i], -rp[i], labels[idx[i]]))
    front = [points[idx[i]] for i in order if not dom[i].any()]
    dominated = [
        (
            points[idx[i]],
            [
                labels[idx[j]]
                for j in sorted(map(int, np.flatnonzero(dom[i])), key=lambda j: (cp[j], -rp[j]))
            ],
        )
        for i in order
        if dom[i].any()
    ]
    return Frontier(front, dominated, [p for p, ok in zip(points, priced, strict=True) if not ok])


def _mean_cost(cost: npt.NDArray[np.float64]) -> float:
    """Mean cost per trial, NaN when any is unknown. Finite costs can add up past the
    largest float ($1e308 twice), and the point then went to "unpriced" with 0 trials
    unpriced: the mean is then taken as Σ(x/n), each term at most max(x)/n."""
    if not cost.size:
        return float("nan")
    with np.errstate(over="ignore"):
        mean = float(cost.mean())
    return float(np.sum(cost / cost.size)) if mean == float("inf") else mean


def group_labels(keys: Sequence[dict[str, Any]], sep: str = "/") -> list[str]:
    """One distinct label per group key (``{"agent": ..., "model": ...}``), in order.

    A label joins the key's values with ``sep`` ("all" for a group of no value, as the
    tables say). Groups whose labels would read alike (agent "a/b", and agent "a" with
    model "b"; agent "all", and no agent) name their fields instead ("agent a/b",
    "agent a, model b", "(no agent)"), and any still alike are numbered: the points
    stay distinct and each can be told from the others.
    """

    def short(key: dict[str, Any]) -> str:
        return sep.join(str(v) for v in key.values() if v not in (None, "")) or "all"

    def named(key: dict[str, Any]) -> str:
        parts = [f"{k} {v}" for k, v in key.items() if v not in (None, "")]
        return ", ".join(parts) or f"(no {' or '.join(key) or 'group'})"

    first = [short(k) for k in keys]
    seen = Counter(first)
    labels = [named(k) if seen[s] > 1 else s for k, s in zip(keys, first, strict=True)]
    used: set[str] = set()
    out = []
    for label in labels:
        n, unique = 1, label
        while unique in used:
            n += 1
            unique = f"{label} #{n}"
        used.add(unique)
        out.append(unique)
    return out


def frontier_from_table(table: TrialTable, by: Sequence[str] = ("agent", "model")) -> Frontier:
    """The frontier over the groups of a table (default: each agent and model).

    Success rate is the task-averaged mean of per-task rates, an infra error
    counting as a failure as in the success rate (docs/metrics.md, "Infrastructure
    errors"); cost per trial is the mean agent cost over all trials, ``None`` when
    any is unknown.
    """
    keys: list[dict[str, Any]] = []
    costs: list[float] = []
    rates: list[float] = []
    missing: list[int] = []
    sizes: list[int] = []
    for key, sub in table.groups(list(by)):
        keys.append(key)
        costs.append(_mean_cost(sub.cost_usd))
        missing.append(int(np.isnan(sub.cost_usd).sum()))
        sizes.append(len(sub))
        _, inv = sub.task_index()
        ok = (sub.success & ~sub.infra_error).astype(np.int64)
        # The exact task average, as the outcome table's (`task_mean`).
        rates.append(task_mean(np.bincount(inv), np.bincount(inv, weights=ok).astype(np.int64)))
    labels = group_labels(keys)  # distinct: user labels never clash into an error
    return pareto_frontier(labels, costs, rates, missing=missing, n_trials=sizes)
