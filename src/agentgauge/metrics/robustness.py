"""Robustness to perturbations: reworded prompts, failing tools, reshaped responses.

Rabanser et al. 2026 define prompt and fault robustness as the ratio of accuracy
under perturbation to accuracy on the unperturbed task, capped at 1; the
environment form applies the same ratio to structural perturbations (renamed
keys, wrapped responses, reordered fields: the ``env:KIND`` variants).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt

from agentgauge.metrics.clusters import family_clusters, task_families
from agentgauge.metrics.outcome import task_rate_fraction, task_success_counts
from agentgauge.stats.bootstrap import cluster_bootstrap_means
from agentgauge.table import TrialTable, by_first_appearance

__all__ = ["ROBUSTNESS_KINDS", "Robustness", "robustness"]


#: Variant prefix of each robustness metric (docs/running-agents.md, "Variants").
ROBUSTNESS_KINDS = {"prompt": "paraphrase", "fault": "fault", "environment": "env"}


@dataclass(frozen=True)
class Robustness:
    """min(acc_perturbed / acc_base, 1) with a paired bootstrap SE."""

    value: float | None
    se: float | None
    acc_base: float | None
    acc_perturbed: float | None
    n_tasks: int
    """Tasks run both in ``base`` and in the perturbed variant."""
    variants: list[str]
    """The variant labels pooled, e.g. ``paraphrase:1``, ``paraphrase:2``."""
    per_variant: dict[str, float | None] = field(default_factory=dict)
    """The ratio for each variant label alone (no SE)."""
    reason: str | None = None
    """Why ``value`` is ``None``."""
    se_reason: str | None = None
    """Why ``se`` is ``None`` where ``value`` is not (one task: nothing to resample)."""
    per_variant_reasons: dict[str, str] = field(default_factory=dict)
    """Why a variant's ratio in ``per_variant`` is ``None`` (in the configuration's
    ``null_reasons`` as ``prompt_robustness.per_variant.paraphrase:1``)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "se": self.se,
            "acc_base": self.acc_base,
            "acc_perturbed": self.acc_perturbed,
            "n_tasks": self.n_tasks,
            "variants": self.variants,
            "per_variant": self.per_variant,
            "reason": self.reason,
        }


def _task_counts(table: TrialTable, rows: npt.NDArray[np.bool_]) -> dict[str, tuple[int, int]]:
    """task → (trials, successes) over ``rows``."""
    # Infra errors count as failures, as in the headline success rate.
    ok = table.success & ~table.infra_error
    uniques, codes = table.codes("task_id")
    ids, n, c = task_success_counts(table.task_id[rows], ok[rows], coded=(uniques, codes[rows]))
    return dict(zip(ids, zip(n.tolist(), c.tolist(), strict=True), strict=True))


def _accuracy(counts: dict[str, tuple[int, int]], tasks: list[str]) -> Fraction:
    """The success rate over ``tasks`` (at least one), the exact task average
    (`task_rate_fraction`): rounded once where it is shown, as the metrics' rate is."""
    n = [counts[t][0] for t in tasks]
    c = [counts[t][1] for t in tasks]
    exact = task_rate_fraction(n, c)
    assert exact is not None
    return exact


def _ratio(perturbed: Fraction, base: Fraction) -> float | None:
    """min(perturbed / base, 1) divided exactly and rounded once; ``None`` when base is 0."""
    return min(float(perturbed / base), 1.0) if base > 0 else None


def robustness(table: TrialTable, kind: str, *, n_boot: int = 1000, seed: int = 0) -> Robustness:
    """Prompt, fault or environment robustness: min(acc_perturbed / acc_base, 1).

    ``kind`` is ``prompt`` (variants ``paraphrase:N``), ``fault`` (``fault:KIND``)
    or ``environment`` (``env:KIND``). Accuracies are task-averaged success rates
    over the tasks run in both ``base`` and the perturbed variants (all perturbed
    variants of the kind pooled per task). The SE is the sd of the ratio over
    ``n_boot`` paired bootstrap replicates that resample tasks — families, then
    tasks within them, each task without a family its own cluster — applying the same draw to
    both accuracies (seeded). Replicates whose base accuracy is 0 are dropped.
    With one task there is nothing to resample (every replicate is the task itself,
    an SD of 0 that is no certainty): the SE is ``None`` and ``se_reason`` says why.
    Rabanser et al. 2026 ("prompt / fault robustness").
    """
    if kind not in ROBUSTNESS_KINDS:
        raise ValueError(f"kind must be one of {', '.join(ROBUSTNESS_KINDS)}, got {kind!r}")
    prefix = ROBUSTNESS_KINDS[kind] + ":"
    # Each distinct variant read once, as text (None reads "None"), not each trial's.
    uniques, codes = table.codes("variant")
    names = np.array([str(v) for v in uniques.tolist()], dtype=object)
    perturbed = np.array([n.startswith(prefix) for n in names.tolist()], dtype=bool)
    labels = sorted(set(names[perturbed].tolist()))
    if not labels:
        return Robustness(None, None, None, None, 0, [], reason=f"no {prefix}* variant trials")
    variant = names[codes]
    is_base = (names == "base")[codes]
    is_pert = perturbed[codes]
    if not is_base.any():
        return Robustness(None, None, None, None, 0, labels, reason="no base-variant trial")
    base = _task_counts(table, is_base)
    pert = _task_counts(table, is_pert)
    shared = sorted(set(base) & set(pert))
    if not shared:
        return Robustness(
            None, None, None, None, 0, labels, reason="no task was run in both base and variant"
        )
    pb = np.array([c / n for n, c in (base[t] for t in shared)])
    pp = np.array([c / n for n, c in (pert[t] for t in shared)])
    exact_b, exact_p = _accuracy(base, shared), _accuracy(pert, shared)
    acc_b, acc_p = float(exact_b), float(exact_p)
    per_variant: dict[str, float | None] = {}
    why: dict[str, str] = {}  # a variant's ratio that is None says why
    for label in labels:
        one = _task_counts(table, variant == label)
        common = [t for t in shared if t in one]
        per_variant[label] = (
            _ratio(_accuracy(one, common), _accuracy(base, common)) if common else None
        )
        if not common:
            why[label] = "no task shared with base"
        elif per_variant[label] is None:
            why[label] = f"base accuracy is 0 on its {_tasks(len(common))}"
    value = _ratio(exact_p, exact_b)
    if value is None:
        return Robustness(
            None, None, acc_b, acc_p, len(shared), labels, per_variant,
            f"base accuracy is 0 on the {_tasks(len(shared))}", per_variant_reasons=why,
        )  # fmt: skip
    if len(shared) < 2:
        return Robustness(
            value, None, acc_b, acc_p, 1, labels, per_variant,
            se_reason="one task: no spread to estimate", per_variant_reasons=why,
        )  # fmt: skip
    # Same seed and same clusters give the same resampling draws for both columns
    # (the draws depend only on the cluster structure), which makes it paired.
    clusters = _clusters(table, shared)
    mb = cluster_bootstrap_means(pb, clusters, n_boot=n_boot, seed=seed)
    mp = cluster_bootstrap_means(pp, clusters, n_boot=n_boot, seed=seed)
    ok = mb > 0
    ratios = np.minimum(mp[ok] / mb[ok], 1.0)
    if ratios.size < 2:
        return Robustness(
            value, None, acc_b, acc_p, len(shared), labels, per_variant,
            se_reason="fewer than 2 bootstrap replicates with a base accuracy above 0",
            per_variant_reasons=why,
        )  # fmt: skip
    se = float(ratios.std(ddof=1))
    return Robustness(
        value, se, acc_b, acc_p, len(shared), labels, per_variant, per_variant_reasons=why
    )


def _tasks(n: int) -> str:
    """``1 shared task``, ``3 shared tasks``."""
    return f"{n} shared task" + ("" if n == 1 else "s")


def _clusters(table: TrialTable, tasks: list[str]) -> npt.NDArray[np.intp]:
    """Each of ``tasks``' cluster by the one rule every clustered figure follows
    (`agentgauge.metrics.clusters`): its family, or the task alone when none of its
    trials names one. Read once per distinct id, not per row."""
    uniques, codes = table.codes("task_id")
    order, renumbered, first = by_first_appearance(codes, len(uniques))
    families = task_families(table.family, renumbered, first)
    fam: dict[str, Any] = {}
    for u, f in zip(uniques[order].tolist(), families.tolist(), strict=True):
        fam.setdefault(str(u), f)  # 1 and "1": the earlier one's
    clusters, _ = family_clusters(np.array([fam.get(t) for t in tasks], dtype=object))
    return np.arange(len(tasks), dtype=np.intp) if clusters is None else clusters
