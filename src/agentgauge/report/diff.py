"""Two runs side by side, task by task, knowing that each task was tried k times.

A diff of two runs that each tried a task once cannot tell a real change from a
coin flip; with k trials per side it can say how often each side passed, and
whether the whole difference between the runs is more than noise. `run_diff`
gives, for every task either run tried, k/n passes on each side, what changed
(a *flip* is a task whose majority of trials passed on one side and failed on
the other, as in `agentgauge.metrics.compare`), Fisher's exact test of the
task's two k/n counts, and, over the tasks both ran, the paired comparison with
its interval and verdict sentence (Miller 2024, "Adding error bars to evals",
arXiv:2411.00640) — the same numbers ``agentgauge compare`` prints.

The per-task p-values are shown so that a reader sees how little one task's
counts can show (with 4 trials a side even 0/4 against 4/4 gives p = 0.029, and
3/4 against 1/4 gives p = 0.49); they are not corrected for the many tasks
compared, and the run-level verdict is the paired test, not a count of small
p-values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, Literal

from agentgauge.components import diff_components, with_configuration
from agentgauge.metrics.compare import (
    BASE_SCOPE,
    compare,
    first_families,
    select_rows,
    variant_scope,
)
from agentgauge.metrics.outcome import task_success_counts
from agentgauge.stats.exact import fisher_exact_2x2
from agentgauge.table import TrialTable

__all__ = ["CHANGES", "Change", "run_diff"]

Change = Literal["gained", "lost", "better", "worse", "same", "only_a", "only_b"]
#: What a task's row can say, from B's side: ``gained`` / ``lost`` are flips (the
#: majority of trials failed in A and passed in B, or the reverse); ``better`` /
#: ``worse`` a change of rate that is not a flip; ``only_a`` / ``only_b`` a task
#: one run did not try.
CHANGES: tuple[Change, ...] = ("gained", "lost", "better", "worse", "same", "only_a", "only_b")

_NOTE = (
    "Per-task p-values are Fisher's exact test of the two k/n counts, not corrected for "
    "the number of tasks; the verdict is the paired comparison over the shared tasks "
    "(Miller 2024)."
)


@lru_cache(maxsize=4096)
def _fisher(ca: int, na: int, cb: int, nb: int) -> float:
    """Two-sided Fisher exact p of one task's counts (cached: with small k the same
    few count pairs recur across thousands of tasks)."""
    return fisher_exact_2x2(ca, na, cb, nb)


def _change(pa: float, pb: float) -> Change:
    if pa > 0.5 > pb:
        return "lost"
    if pb > 0.5 > pa:
        return "gained"
    if math.isclose(pa, pb):
        return "same"
    return "better" if pb > pa else "worse"


def _select(table: TrialTable, variant: str | None) -> tuple[TrialTable, str | None, str]:
    """The trials of a side that the diff reads, held-out tasks left out, with the
    variant they are of (``None``: several) and what that is in words.

    ``variant`` keeps the trials of that one variant. ``None`` reads the side as
    ``agentgauge compare`` does (`select_rows`): its base variant, or all its trials
    when it has no base trial (a run of paraphrases only)."""
    if variant is not None:
        keep = table.text_equals("variant", variant) & ~table.text_equals("split", "heldout")
        return table.take(keep), variant, f"variant {variant}"
    whole = variant_scope(table)
    return select_rows(table), None if whole else "base", whole or BASE_SCOPE


def _counts(table: TrialTable) -> dict[str, tuple[int, int]]:
    """task -> (passes, trials); an infra error is a failure, as in every metric."""
    ids, n, c = task_success_counts(
        table.task_id, table.success & ~table.infra_error, coded=table.codes("task_id")
    )
    return dict(zip(ids, zip(c.tolist(), n.tolist(), strict=True), strict=True))


def _families(*tables: TrialTable) -> dict[str, str]:
    return {task: str(f) for task, f in first_families(tables).items()}


def _side(
    label: str, counts: dict[str, tuple[int, int]], variant: str | None, scope: str
) -> dict[str, Any]:
    passed = sum(c for c, _ in counts.values())
    n = sum(n for _, n in counts.values())
    return {
        "label": label,
        "n_tasks": len(counts),
        "passed": passed,
        "n": n,
        "variant": variant,
        "scope": scope,
    }


def run_diff(
    a: TrialTable,
    b: TrialTable,
    *,
    label_a: str = "A",
    label_b: str = "B",
    variant: str | None = None,
    seed: int = 0,
    components: tuple[Mapping[str, Any], Mapping[str, Any]] | None = None,
    agents: tuple[str | None, str | None] | None = None,
) -> dict[str, Any]:
    """The ``agentgauge.diff/1`` object of run B against run A.

    ``variant`` keeps the trials of one variant (a paraphrase or a fault variant is
    compared on its own). Without it each side is read as ``agentgauge compare`` reads
    it: its base variant, or all its trials when it has no base trial, and the notes
    carry compare's warning for such a side. Held-out tasks are left out, as
    ``agentgauge compare`` leaves them out. Tasks are listed flips first (lost, then
    gained), then by the size of the change, then by id.

    ``variant`` in the result is the variant both sides were read on (``base`` by
    default), ``None`` when a side was read whole; each side's ``variant`` and
    ``scope`` say what was read of it.

    ``components``: A's and B's configurations (`agentgauge.components.side_components`).
    With them the verdict says, as ``agentgauge compare`` does, when the difference is
    not attributable, and ``components`` says what differs (`ComponentDiff.to_dict`).
    ``agents``: A's and B's agent names (`agentgauge.report.record.agent_name`), which
    its sentence names when they differ and no recorded component does, as compare's.
    """
    (ta, va, scope_a), (tb, vb, scope_b) = _select(a, variant), _select(b, variant)
    ca, cb = _counts(ta), _counts(tb)
    families = _families(ta, tb)
    rows: list[dict[str, Any]] = []
    for task in sorted(set(ca) | set(cb)):
        sa, sb = ca.get(task), cb.get(task)
        row: dict[str, Any] = {
            "task_id": task,
            "family": families.get(task),
            "a": None if sa is None else {"passed": sa[0], "n": sa[1]},
            "b": None if sb is None else {"passed": sb[0], "n": sb[1]},
            "difference": None,
            "p_value": None,
        }
        if sa is None:
            row["change"] = "only_b"
        elif sb is None:
            row["change"] = "only_a"
        else:
            pa, pb = sa[0] / sa[1], sb[0] / sb[1]
            row["difference"] = pb - pa
            row["change"] = _change(pa, pb)
            row["p_value"] = _fisher(sa[0], sa[1], sb[0], sb[1])
        rows.append(row)
    order = {c: i for i, c in enumerate(("lost", "gained", "worse", "better"))}
    rows.sort(
        key=lambda r: (
            order.get(r["change"], len(order)),
            -abs(r["difference"] or 0.0),
            r["task_id"],
        )
    )
    comparison: dict[str, Any] | None = None
    changes = None if components is None else diff_components(*components, agents=agents)
    reason: str | None = None
    warnings: list[str] = []
    if variant is not None and (not ca or not cb):
        empty = label_a if not ca else label_b
        reason = f"{empty} has no trial of variant {variant!r}"
    else:
        try:
            # Without a variant, the sides as given: compare chooses what to read of
            # each (the rows counted above) and says why it found no task to compare.
            result = (
                compare(ta, tb, label_a=label_a, label_b=label_b, seed=seed)
                if variant is not None
                else compare(a, b, label_a=label_a, label_b=label_b, seed=seed)
            )
        except ValueError as exc:  # no task in common
            reason = str(exc)
        else:
            if changes is not None:
                result = with_configuration(result, changes)
            comparison = result.to_dict()
            if variant is None:
                warnings = result.scope_warnings
    n_changed = sum(r["change"] != "same" for r in rows)
    counts = {c: sum(r["change"] == c for r in rows) for c in CHANGES}
    return {
        "schema": "agentgauge.diff/1",
        "variant": variant if variant is not None else (va if va == vb else None),
        "a": _side(label_a, ca, va, scope_a),
        "b": _side(label_b, cb, vb, scope_b),
        "comparison": comparison,
        "reason": reason,
        "verdict": None if comparison is None else comparison["verdict"],
        "components": None if changes is None else changes.to_dict(),
        "n_changed": n_changed,
        "changes": counts,
        "notes": [*warnings, _NOTE],
        "tasks": rows,
    }
