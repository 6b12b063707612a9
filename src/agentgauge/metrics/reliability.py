"""Reliability beyond the pass rate (Rabanser et al. 2026, HAL reliability dashboard).

Does the agent take the same path each time it succeeds, spend the same, survive
a reworded instruction, a failing tool or a reshaped response, know when it is
right, and stay out of the minefields?

Every function here is pure: it reads numpy arrays (columns of a `TrialTable`)
and, for trajectories, one action-name sequence per trial (`action_sequences`
turns `Trial` objects into those at the edge). Values that the data cannot
support are ``None`` with a reason, never a silent 0 or 1.

Consistency lives here; robustness, predictability and safety live in sibling
modules and are re-exported, and `reliability` computes them all at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.predictability import Predictability, predictability
from agentgauge.metrics.robustness import Robustness, robustness
from agentgauge.metrics.safety import Safety, safety, safety_from_trials
from agentgauge.schema import ToolCallEvent, Trial
from agentgauge.table import TrialTable

__all__ = [
    "RESOURCES",
    "Estimate",
    "Predictability",
    "Reliability",
    "ResourceConsistency",
    "Robustness",
    "Safety",
    "action_sequences",
    "jsd_base2",
    "levenshtein",
    "predictability",
    "reliability",
    "reliability_from_trials",
    "resource_consistency",
    "robustness",
    "safety",
    "safety_from_trials",
    "trajectory_consistency_dist",
    "trajectory_consistency_seq",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Estimate:
    """A metric value with its standard error and how many units it rests on."""

    value: float | None
    """The metric, or ``None`` when the data cannot support it (see ``reason``)."""
    se: float | None = None
    """Standard error, when the metric has one."""
    n: int = 0
    """Units the value averages over (tasks, or trials for predictability)."""
    reason: str | None = None
    """Why ``value`` is ``None``."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "se": self.se, "n": self.n}
        if self.reason:
            out["reason"] = self.reason
        return out


# --------------------------------------------------------------------------- actions


#: One trial's action names, or ``None`` when the trial carries no transcript.
Actions = Sequence[str] | None


def action_sequences(trials: Sequence[Trial]) -> list[tuple[str, ...] | None]:
    """Each trial's action names: the ``name`` of its ``tool_call`` events, in order.

    ``None`` for a trial with no events at all: it carries no transcript (a record
    imported with outcomes only), which is not the same as a transcript without
    tool calls — every recorded transcript holds at least the opening message.
    """
    return [
        tuple(e.name for e in t.events if isinstance(e, ToolCallEvent)) if t.events else None
        for t in trials
    ]


def _successful_runs_by_task(
    task_id: npt.ArrayLike, success: npt.ArrayLike, actions: Sequence[Actions]
) -> tuple[list[tuple[int, ...]], list[tuple[str, ...]], int]:
    """Per task with a successful run (in order of first appearance): how many of
    its successful runs took each distinct action sequence, as ``(sequence index,
    count, ...)`` pairs flattened; the distinct sequences; and how many trials had a
    transcript at all."""
    ids = np.asarray(task_id, dtype=object)
    ok = np.asarray(success, dtype=bool)
    if ids.shape != ok.shape or len(actions) != len(ids):
        raise ValueError("task_id, success and actions must have one entry per trial")
    seq_index: dict[tuple[str, ...], int] = {}
    per_task: dict[str, dict[int, int]] = {}
    known = 0
    for tid, good, acts in zip(ids.tolist(), ok.tolist(), actions, strict=True):
        if acts is None:
            continue
        known += 1
        if good:
            seq = seq_index.setdefault(tuple(acts), len(seq_index))
            counts = per_task.setdefault(str(tid), {})
            counts[seq] = counts.get(seq, 0) + 1
    groups = [tuple(x for pair in counts.items() for x in pair) for counts in per_task.values()]
    return groups, list(seq_index), known


def _mean_over_tasks(
    task_id: npt.ArrayLike,
    success: npt.ArrayLike,
    actions: Sequence[Actions],
    similarity: Callable[[tuple[str, ...], tuple[str, ...]], float],
) -> Estimate:
    """The mean over tasks with two successful runs of the mean similarity over their
    pairs of runs. Runs that took the same path are as similar as can be (1); the
    similarity of two distinct paths is computed once, however many runs and tasks
    share them, so a million trials cost what their distinct paths cost."""
    groups, seqs, known = _successful_runs_by_task(task_id, success, actions)
    if not known:
        return Estimate(None, n=0, reason="no transcripts: the trials carry no events")
    cache: dict[tuple[int, int], float] = {}
    values: list[float] = []
    for flat in groups:
        index, count = flat[0::2], flat[1::2]
        n = sum(count)
        if n < 2:
            continue
        if len(index) == 1:
            values.append(1.0)
            continue
        # Pairs within one path weigh 1 each; pairs across two paths, their similarity.
        total = sum(c * (c - 1) / 2 for c in count)
        for i in range(len(index)):
            for j in range(i + 1, len(index)):
                key = (index[i], index[j]) if index[i] < index[j] else (index[j], index[i])
                sim = cache.get(key)
                if sim is None:
                    sim = cache[key] = similarity(seqs[key[0]], seqs[key[1]])
                total += count[i] * count[j] * sim
        values.append(total / (n * (n - 1) / 2))
    if not values:
        return Estimate(None, n=0, reason="no task has two successful runs")
    v = np.array(values)
    se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size >= 2 else None
    return Estimate(float(v.mean()), se=se, n=v.size)


# --------------------------------------------------------------------------- distributional


def jsd_base2(p: npt.ArrayLike, q: npt.ArrayLike) -> float:
    """Jensen–Shannon divergence in bits between two frequency vectors (Lin 1991).

    JSD(P, Q) = H(M) − (H(P) + H(Q))/2 with M = (P + Q)/2 and H the Shannon
    entropy in base 2, after normalising each vector to sum to 1; in [0, 1].
    Two empty vectors (all zeros) are identical (0); one empty and one not are
    as different as can be (1).
    """
    a = np.asarray(p, dtype=np.float64)
    b = np.asarray(q, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or np.any(a < 0) or np.any(b < 0):
        raise ValueError("p and q must be non-negative vectors of equal length")
    return float(_jsd_rows(a[None, :], b[None, :])[0])


def _entropy2(p: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return np.asarray(terms.sum(axis=-1), dtype=np.float64)


def _jsd_rows(a: FloatArray, b: FloatArray) -> FloatArray:
    sa, sb = a.sum(axis=-1), b.sum(axis=-1)
    empty_a, empty_b = sa == 0, sb == 0
    pa = a / np.where(empty_a, 1.0, sa)[..., None]
    pb = b / np.where(empty_b, 1.0, sb)[..., None]
    m = (pa + pb) / 2
    out = _entropy2(m) - (_entropy2(pa) + _entropy2(pb)) / 2
    out = np.clip(out, 0.0, 1.0)  # rounding can leave -1e-17
    out = np.where(empty_a & empty_b, 0.0, out)
    return np.where(empty_a ^ empty_b, 1.0, out)


def _dist_similarity(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    """1 − JSD (base 2) of two runs' action-name frequencies."""
    vocab = {name: i for i, name in enumerate(sorted(set(x) | set(y)))}
    counts = np.zeros((2, max(len(vocab), 1)))
    for row, seq in enumerate((x, y)):
        for a in seq:
            counts[row, vocab[a]] += 1
    return float(1.0 - _jsd_rows(counts[:1], counts[1:])[0])


def trajectory_consistency_dist(
    task_id: npt.ArrayLike, success: npt.ArrayLike, actions: Sequence[Actions]
) -> Estimate:
    """1 − mean pairwise JSD (base 2) of action-name frequencies, over successful runs.

    Per task with at least two successful runs: 1 − mean over pairs (i < j) of
    JSD_base2(f_i, f_j), f = the count of each action name in the run; then the
    mean over those tasks (tasks weigh equally; SE across them). Rabanser et al.
    2026, "trajectory consistency (distributional)". Order is ignored: the same
    tools used as often score 1. A trial whose sequence is ``None`` (no
    transcript) is left out; with none left the value is ``None`` with a reason.
    """
    return _mean_over_tasks(task_id, success, actions, _dist_similarity)


# --------------------------------------------------------------------------- sequence


def levenshtein(a: Sequence[str], b: Sequence[str]) -> int:
    """Edit distance (insertions, deletions, substitutions, each cost 1) between sequences."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        cur = [i]
        for j, y in enumerate(b, start=1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def _seq_similarity(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    """1 − Lev(x, y)/max(|x|, |y|); two empty sequences are identical (1)."""
    longest = max(len(x), len(y))
    return 1.0 if longest == 0 else 1.0 - levenshtein(x, y) / longest


def trajectory_consistency_seq(
    task_id: npt.ArrayLike, success: npt.ArrayLike, actions: Sequence[Actions]
) -> Estimate:
    """Mean over pairs of successful runs of 1 − Lev(a_i, a_j)/max(|a_i|, |a_j|).

    Per task with at least two successful runs, averaged over its pairs; then the
    mean over tasks (as the distributional form). Two empty sequences are
    identical (1). Order matters here, unlike `trajectory_consistency_dist`.
    """
    return _mean_over_tasks(task_id, success, actions, _seq_similarity)


# --------------------------------------------------------------------------- resources

#: Resources whose per-task spread resource consistency measures.
RESOURCES = ("cost_usd", "latency_s", "tokens", "tool_calls")


@dataclass(frozen=True)
class ResourceConsistency:
    """exp(−mean CV) overall and per resource."""

    value: float | None
    """exp(−mean over resources of the mean per-task CV)."""
    per_resource: dict[str, float | None]
    """exp(−mean per-task CV) for each resource (``None`` when no task qualifies)."""
    mean_cv: dict[str, float | None]
    """The mean per-task CV of each resource."""
    n_tasks: dict[str, int]
    """Tasks that qualified (≥ 2 non-zero values) for each resource."""
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "per_resource": self.per_resource,
            "mean_cv": self.mean_cv,
            "n_tasks": self.n_tasks,
            "reason": self.reason,
        }


def _resource_column(table: TrialTable, name: str) -> FloatArray:
    if name == "tokens":
        both = np.stack([table.input_tokens, table.output_tokens])
        total = np.nansum(both, axis=0)
        return np.where(np.isnan(both).all(axis=0), np.nan, total)
    return np.asarray(getattr(table, name), dtype=np.float64)


def _mean_task_cv(task_index: npt.NDArray[np.intp], values: FloatArray) -> tuple[float | None, int]:
    """Mean over qualifying tasks of sd(ddof=1)/mean, and how many tasks qualified."""
    f = np.isfinite(values)
    idx, v = task_index[f], values[f]
    if idx.size == 0:
        return None, 0
    size = int(idx.max()) + 1
    n = np.bincount(idx, minlength=size).astype(np.float64)
    nonzero = np.bincount(idx[v != 0], minlength=size)
    ok = nonzero >= 2  # only tasks with ≥ 2 non-zero values have a CV
    if not ok.any():
        return None, 0
    mean = np.bincount(idx, v, size) / np.where(n > 0, n, 1.0)
    ss = np.bincount(idx, (v - mean[idx]) ** 2, size)
    cv = np.sqrt(ss[ok] / (n[ok] - 1)) / mean[ok]
    return float(cv.mean()), int(ok.sum())


def resource_consistency(table: TrialTable) -> ResourceConsistency:
    """exp(−mean CV) over cost, latency, tokens and tool calls.

    For each resource and task with at least two non-zero recorded values,
    CV = sd(ddof=1)/mean over the task's trials; a resource's CV is the mean over
    qualifying tasks, and the metric is exp(−mean over resources that have any).
    Infra-error trials are left out: their spend says nothing about the agent.
    Tokens are input + output. Rabanser et al. 2026 ("resource consistency").
    """
    keep = ~table.infra_error
    _, idx = table.task_index()
    idx = idx[keep]
    per: dict[str, float | None] = {}
    cvs: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for name in RESOURCES:
        cv, n = _mean_task_cv(idx, _resource_column(table, name)[keep])
        cvs[name], counts[name] = cv, n
        per[name] = None if cv is None else float(np.exp(-cv))
    known = [cv for cv in cvs.values() if cv is not None]
    if not known:
        return ResourceConsistency(
            None, per, cvs, counts, reason="no resource has two non-zero values in any task"
        )
    return ResourceConsistency(float(np.exp(-np.mean(known))), per, cvs, counts)


# --------------------------------------------------------------------------- all together


@dataclass(frozen=True)
class Reliability:
    """Every reliability metric (Rabanser et al. 2026) for one agent configuration."""

    trajectory_consistency_dist: Estimate
    trajectory_consistency_seq: Estimate
    resource_consistency: ResourceConsistency
    prompt_robustness: Robustness
    fault_robustness: Robustness
    environment_robustness: Robustness
    predictability: Predictability
    safety: Safety | None
    """``None`` when no trial was graded for minefields."""

    def to_dict(self) -> dict[str, Any]:
        reasons = (
            {} if self.safety is not None else {"safety": "no trial was graded for minefields"}
        )
        return {
            "null_reasons": reasons,
            "trajectory_consistency_dist": self.trajectory_consistency_dist.to_dict(),
            "trajectory_consistency_seq": self.trajectory_consistency_seq.to_dict(),
            "resource_consistency": self.resource_consistency.to_dict(),
            "prompt_robustness": self.prompt_robustness.to_dict(),
            "fault_robustness": self.fault_robustness.to_dict(),
            "environment_robustness": self.environment_robustness.to_dict(),
            "predictability": self.predictability.to_dict(),
            "safety": None if self.safety is None else self.safety.to_dict(),
        }


def reliability(
    table: TrialTable,
    actions: Sequence[Actions] | None = None,
    *,
    violation: npt.ArrayLike | None = None,
    severity: npt.ArrayLike | None = None,
    graded: npt.ArrayLike | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Reliability:
    """All reliability metrics of one configuration's trials.

    Consistency, resources and predictability read the ``base`` variant's trials
    (perturbations would blur them); robustness compares base with each kind of
    perturbation. ``actions`` (one sequence per row, `action_sequences`) enables
    trajectory consistency; ``violation``/``severity`` (`safety_from_trials`),
    over the rows ``graded`` marks as checked for minefields (default: all),
    enable safety. Build the inputs from trials with ``TrialTable.from_trials``.
    """
    base = table.variant.astype(str) == "base"
    sub = table.take(base)
    none = Estimate(None, reason="no action sequences given")
    if actions is not None:
        if len(actions) != len(table):
            raise ValueError("actions must have one sequence per table row")
        acts = [actions[int(i)] for i in np.flatnonzero(base)]
        dist = trajectory_consistency_dist(sub.task_id, sub.success, acts)
        seq = trajectory_consistency_seq(sub.task_id, sub.success, acts)
    else:
        dist = seq = none
    safe = None
    if violation is not None:
        sev = np.ones(len(table)) if severity is None else np.asarray(severity)
        checked = np.ones(len(table), bool) if graded is None else np.asarray(graded, bool)
        safe = safety(np.asarray(violation, bool)[checked], sev[checked])
    return Reliability(
        trajectory_consistency_dist=dist,
        trajectory_consistency_seq=seq,
        resource_consistency=resource_consistency(sub),
        prompt_robustness=robustness(table, "prompt", n_boot=n_boot, seed=seed),
        fault_robustness=robustness(table, "fault", n_boot=n_boot, seed=seed),
        environment_robustness=robustness(table, "environment", n_boot=n_boot, seed=seed),
        predictability=predictability(sub.confidence, sub.success),
        safety=safe,
    )


def reliability_from_trials(
    trials: Sequence[Trial], *, n_boot: int = 1000, seed: int = 0
) -> Reliability:
    """`reliability` from validated trials: table, action sequences and minefield grades.

    Safety counts only the trials graded for minefields: a trial nobody checked is
    not a compliant one."""
    from agentgauge.facts import Facts
    from agentgauge.metrics.behaviour import reliability_of_configuration

    rel: Reliability = reliability_of_configuration(
        TrialTable.from_trials(trials), Facts.from_trials(trials), n_boot=n_boot, seed=seed
    )
    return rel
