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

import functools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.facts import Coded
from agentgauge.metrics.compare import BASE_SCOPE, variant_scope
from agentgauge.metrics.predictability import Predictability, predictability
from agentgauge.metrics.robustness import Robustness, robustness
from agentgauge.metrics.safety import Safety, safety, safety_from_trials
from agentgauge.schema import ToolCallEvent, Trial
from agentgauge.table import TrialTable, compact, factorize

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
    se_reason: str | None = None
    """Why ``se`` is ``None`` where ``value`` is not (one unit: no spread to estimate)."""

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


@dataclass(frozen=True)
class _Paths:
    """The successful runs of each task, by the distinct path (action sequence) taken:
    one row per (task, path) pair, sorted by task (tasks in order of first appearance)."""

    task: npt.NDArray[np.int64]
    seq: npt.NDArray[np.int64]
    """Index of the path in `seqs`."""
    count: npt.NDArray[np.int64]
    """Successful runs of the task that took the path."""
    seqs: list[tuple[str, ...]]
    """The distinct paths."""
    known: int
    """Trials with a transcript at all."""


def _successful_runs_by_task(
    task_id: npt.ArrayLike,
    success: npt.ArrayLike,
    actions: Sequence[Actions] | Coded,
    *,
    coded: tuple[npt.NDArray[np.object_], npt.NDArray[np.intp]] | None = None,
) -> _Paths:
    """`_Paths` of the trials: each path coded once, the runs counted with numpy.
    ``coded``: the task ids' `factorize`, when the table has it."""
    ids = np.asarray(task_id, dtype=object)
    ok = np.asarray(success, dtype=bool)
    if ids.shape != ok.shape or len(actions) != len(ids):
        raise ValueError("task_id, success and actions must have one entry per trial")
    seq_index: dict[tuple[str, ...], int] = {}
    if isinstance(actions, Coded):  # each distinct sequence once
        remap = np.array(
            [
                -1 if a is None else seq_index.setdefault(tuple(a), len(seq_index))
                for a in actions.values
            ],
            dtype=np.int64,
        )
        codes = remap[actions.codes] if len(actions) else np.empty(0, dtype=np.int64)
    else:
        codes = np.array(
            [-1 if a is None else seq_index.setdefault(tuple(a), len(seq_index)) for a in actions],
            dtype=np.int64,
        )
    known = int(np.count_nonzero(codes >= 0))
    rows = np.flatnonzero(ok & (codes >= 0))
    empty = np.empty(0, dtype=np.int64)
    if not rows.size:
        return _Paths(empty, empty, empty, list(seq_index), known)
    # Task ids as text, as a task id is a label: 1 and "1" are one task.
    if coded is not None:  # the table's coding, restricted to these rows, in its order
        held, task_codes = compact(coded[1][rows], len(coded[0]))
        uniques = coded[0]
        if not all(type(u) is str for u in uniques.tolist()):
            uniques = uniques[held]
    else:
        uniques, task_codes = factorize(ids[rows])
    if not all(type(u) is str for u in uniques.tolist()):
        _, merged = factorize(np.array([str(u) for u in uniques.tolist()], dtype=object))
        task_codes = merged[task_codes]
    n_seq = max(len(seq_index), 1)
    key = task_codes.astype(np.int64) * n_seq + codes[rows]
    size = (int(task_codes.max()) + 1) * n_seq
    if size <= 4 * key.size + (1 << 20):  # (task, path) cells counted densely
        cells = np.bincount(key, minlength=size)
        pairs = np.flatnonzero(cells)
        counts = cells[pairs]
    else:
        pairs, counts = np.unique(key, return_counts=True)
    return _Paths(pairs // n_seq, pairs % n_seq, counts.astype(np.int64), list(seq_index), known)


def _mean_over_tasks(
    paths: _Paths, similarity: Callable[[tuple[str, ...], tuple[str, ...]], float]
) -> Estimate:
    """The mean over tasks with two successful runs of the mean similarity over their
    pairs of runs. Runs that took the same path are as similar as can be (1); the
    similarity of two distinct paths is computed once, however many runs and tasks
    share them, so a million trials cost what their distinct paths cost."""
    if not paths.known:
        return Estimate(None, n=0, reason="no transcripts: the trials carry no events")
    task, seq, count = paths.task, paths.seq, paths.count.astype(np.float64)
    n_tasks = int(task[-1]) + 1 if task.size else 0
    n = np.bincount(task, count, n_tasks)
    # Pairs within one path weigh 1 each...
    total = np.bincount(task, count * (count - 1) / 2, n_tasks)
    # ...pairs across two paths of a task, their similarity: row i with row i + d of
    # the same task, for every offset d up to the most paths a task has.
    left: list[npt.NDArray[np.intp]] = []
    right: list[npt.NDArray[np.intp]] = []
    for d in range(1, int(np.bincount(task).max(initial=1))):
        same = np.flatnonzero(task[:-d] == task[d:])
        if not same.size:
            break
        left.append(same)
        right.append(same + d)
    if left:
        i, j = np.concatenate(left), np.concatenate(right)
        a, b = np.minimum(seq[i], seq[j]), np.maximum(seq[i], seq[j])
        keys, inverse = np.unique(a * len(paths.seqs) + b, return_inverse=True)
        sims = np.array(
            [
                similarity(
                    paths.seqs[int(k // len(paths.seqs))], paths.seqs[int(k % len(paths.seqs))]
                )
                for k in keys
            ],
            dtype=np.float64,
        )
        total += np.bincount(task[i], count[i] * count[j] * sims[inverse.reshape(-1)], n_tasks)
    ok = n >= 2
    if not ok.any():
        return Estimate(None, n=0, reason="no task has two successful runs")
    v = total[ok] / (n[ok] * (n[ok] - 1) / 2)
    if v.size < 2:
        return Estimate(float(v[0]), n=1, se_reason="one task: no spread to estimate")
    return Estimate(float(v.mean()), se=float(v.std(ddof=1) / np.sqrt(v.size)), n=int(v.size))


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


#: Distinct pairs of paths whose similarities are remembered. The similarities are pure
#: functions of two paths, and the configurations of one evaluation (ten agents on one
#: suite, say) take mostly the same paths: each pair is then computed once, not once per
#: configuration.
_SIMILARITIES_KEPT = 1 << 16


@functools.lru_cache(maxsize=_SIMILARITIES_KEPT)
def _dist_similarity(x: tuple[str, ...], y: tuple[str, ...]) -> float:
    """1 − JSD (base 2) of two runs' action-name frequencies (as `jsd_base2`, in plain
    Python: for the handful of names of two runs numpy's overhead is all the cost)."""
    if not x or not y:
        return 1.0 if not x and not y else 0.0
    p, q = Counter(x), Counter(y)
    np_, nq = len(x), len(y)

    def h(probs: Iterable[float]) -> float:
        return -sum(v * math.log2(v) for v in probs if v > 0)

    names = sorted(p.keys() | q.keys())  # a fixed order: a set's follows the hash seed
    m = [(p[k] / np_ + q[k] / nq) / 2 for k in names]
    jsd = h(m) - (h(v / np_ for v in p.values()) + h(v / nq for v in q.values())) / 2
    return 1.0 - min(max(jsd, 0.0), 1.0)


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
    return _mean_over_tasks(_successful_runs_by_task(task_id, success, actions), _dist_similarity)


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


@functools.lru_cache(maxsize=_SIMILARITIES_KEPT)
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
    return _mean_over_tasks(_successful_runs_by_task(task_id, success, actions), _seq_similarity)


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
    cv = _task_cv(idx, v, n, size)[ok]
    if not np.isfinite(cv).all():
        # Finite but huge values ($1e308 twice) add up past the largest float and the
        # CV came out NaN. The CV does not depend on the unit: divide each task's
        # values by its largest, and every sum stays at most n.
        top = np.zeros(size)
        np.maximum.at(top, idx, np.abs(v))
        cv = _task_cv(idx, v / np.where(top > 0, top, 1.0)[idx], n, size)[ok]
    return float(cv.mean()), int(ok.sum())


def _task_cv(idx: npt.NDArray[np.intp], v: FloatArray, n: FloatArray, size: int) -> FloatArray:
    """sd(ddof=1)/mean of each task's values (NaN or inf where a task has < 2 values
    or a zero mean; the caller keeps the tasks that qualify)."""
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mean = np.bincount(idx, v, size) / np.where(n > 0, n, 1.0)
        ss = np.bincount(idx, (v - mean[idx]) ** 2, size)
        return np.asarray(np.sqrt(ss / np.maximum(n - 1, 1.0)) / mean, dtype=np.float64)


def resource_consistency(table: TrialTable) -> ResourceConsistency:
    """exp(−mean CV) over cost, latency, tokens and tool calls.

    For each resource and task with at least two non-zero recorded values,
    CV = sd(ddof=1)/mean over the task's trials; a resource's CV is the mean over
    qualifying tasks, and the metric is exp(−mean over resources that have any).
    Infra-error trials are left out: their spend says nothing about the agent.
    Tokens are input + output. Rabanser et al. 2026 ("resource consistency").
    """
    keep = ~table.infra_error
    idx = table.task_codes()[keep]
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


#: The reliability figures with a standard error.
_WITH_SE = (
    "trajectory_consistency_dist",
    "trajectory_consistency_seq",
    "prompt_robustness",
    "fault_robustness",
    "environment_robustness",
)


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
    """``None`` when no trial's minefields grade was decided (see ``safety_reason``)."""
    safety_reason: str = "no trial was graded for minefields"
    """Why ``safety`` is ``None``."""
    base_scope: str = BASE_SCOPE
    """The trials consistency, resources and predictability read: ``"base variant"``,
    or ``"all its variants (paraphrase:1)"`` for a configuration with no base trial
    (as the base-variant tables read such a system)."""

    def to_dict(self) -> dict[str, Any]:
        reasons = {} if self.safety is not None else {"safety": self.safety_reason}
        if self.safety is not None and self.safety.n_left_out and self.safety.reason:
            reasons["safety.harmlessness"] = self.safety.reason
        for name in _WITH_SE:  # an SE the data cannot give, with its reason
            figure = getattr(self, name)
            if figure.value is not None and figure.se is None and figure.se_reason:
                reasons[f"{name}.se"] = figure.se_reason
        for name in ("prompt_robustness", "fault_robustness", "environment_robustness"):
            for label, why in getattr(self, name).per_variant_reasons.items():
                reasons[f"{name}.per_variant.{label}"] = why
        return {
            "base_scope": self.base_scope,
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
    actions: Sequence[Actions] | Coded | None = None,
    *,
    violation: npt.ArrayLike | None = None,
    severity: npt.ArrayLike | None = None,
    graded: npt.ArrayLike | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Reliability:
    """All reliability metrics of one configuration's trials.

    Consistency, resources and predictability read the ``base`` variant's trials
    (perturbations would blur them), or all the trials of a configuration with no base
    trial (``base_scope`` says so), as the base-variant tables do; robustness compares
    base with each kind of perturbation; safety reads every variant. An infra-error
    trial is a failure in every one of them, whatever its record says (resource
    consistency leaves it out: its spend says nothing about the agent). ``actions``
    (one sequence per row, `action_sequences`) enables trajectory consistency;
    ``violation``/``severity`` (`safety_from_trials`), over the rows ``graded`` marks
    as checked for minefields (default: all), enable safety. Build the inputs from
    trials with ``TrialTable.from_trials``.
    """
    variants, codes = table.codes("variant")
    is_base = np.array([str(v) == "base" for v in variants.tolist()], dtype=bool)
    base = is_base[codes] if len(codes) else np.zeros(0, dtype=bool)
    # No base trial (a run of paraphrases only): all of them, as the base-variant tables
    # read such a system, and `base_scope` says so (not "no transcripts", which blamed
    # the data for the scope).
    scope = variant_scope(table) or BASE_SCOPE
    if not base.any():
        base = np.ones(len(table), dtype=bool)
    sub = table if base.all() else table.take(base)  # all kept: the table's codes kept
    # An infra error counts as a failure, whatever its record says, as in every metric
    # (docs/metrics.md, "Infrastructure errors"): not a successful run to compare paths
    # with, nor a success the agent's confidence foresaw.
    ok = sub.success & ~sub.infra_error
    none = Estimate(None, reason="no action sequences given")
    if actions is not None:
        if len(actions) != len(table):
            raise ValueError("actions must have one sequence per table row")
        rows = np.flatnonzero(base)
        acts = actions.take(rows) if isinstance(actions, Coded) else [actions[int(i)] for i in rows]
        paths = _successful_runs_by_task(  # once for both forms
            sub.task_id, ok, acts, coded=sub.codes("task_id")
        )
        dist = _mean_over_tasks(paths, _dist_similarity)
        seq = _mean_over_tasks(paths, _seq_similarity)
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
        predictability=predictability(sub.confidence, ok),
        safety=safe,
        base_scope=scope,
    )


def reliability_from_trials(
    trials: Sequence[Trial], *, n_boot: int = 1000, seed: int = 0
) -> Reliability:
    """`reliability` from validated trials: table, action sequences and minefield grades.

    Safety counts only the trials whose minefields grade was decided: a trial nobody
    checked, or whose grade is unknown, is not a compliant one."""
    from agentgauge.facts import Facts
    from agentgauge.metrics.behaviour import reliability_of_configuration

    rel: Reliability = reliability_of_configuration(
        TrialTable.from_trials(trials), Facts.from_trials(trials), n_boot=n_boot, seed=seed
    )
    return rel
