"""Is B better than A? The paired comparison of two runs over tasks (Miller 2024).

Both runs are reduced to one success rate per task, p_t = c_t/n_t, and compared
on the tasks they share: d_t = p_B,t − p_A,t. Pairing removes the task-to-task
spread in difficulty that both runs see, which is usually most of the variance;
the unpaired SE is reported beside the paired one to show what pairing bought.

Choices this module makes, and why:

- **Test**: Student's t on the paired differences with T − 1 degrees of freedom
  (C − 1 with C clusters when the SE is clustered: each family, and each task
  without one, `agentgauge.metrics.clusters`). For large T it equals the
  normal test; for the 20–50 tasks of a typical agent suite the normal test's
  intervals are too narrow (t_{0.975, 19} = 2.09 vs z = 1.96). Without
  clustering it is exactly ``scipy.stats.ttest_rel`` on the task rates.
- **Verdict**: from the (1 − α) interval (equivalently the two-sided p-value):
  "B is better" when it lies above 0, "B is worse" below, otherwise "not
  distinguishable from noise with T tasks × K trials". With a margin δ the
  non-inferiority rule is lower bound > −δ; see `verdict_sentence`. Tasks (or
  families, when clustered) are the units the comparison generalises over, and
  with fewer of them than the exact sign test needs to reach α (6 at α = 0.05:
  2 · 0.5^5 = 0.0625; `agentgauge.stats.exact.sign_test_min_n`) no test over them
  can tell a difference: the verdict is then the noise sentence with that reason,
  whatever the interval, whose width also counts the trials (for 2 tasks × 1
  trial, all failing then all passing, the score interval excluded 0 at p = 0.028
  beside McNemar's 0.5).
- **Flips**: a task "passed" in a run when its majority of trials succeeded
  (p_t > 0.5) and "failed" when p_t < 0.5; p_t = 0.5 is neither, so it never
  counts as a flip. With one trial per task this is plain pass/fail.
- **McNemar**: the exact (binomial) test on discordant tasks, only when both
  runs have exactly one trial on every shared task (McNemar 1947).
- **Which trials**: ``base`` variant rows when a run has any (perturbed trials
  measure robustness, not the agent), and held-out tasks only when asked for.
  Infra errors count as failures, as everywhere (docs/metrics.md,
  "Infrastructure errors").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
from scipy import optimize, special

from agentgauge.metrics.clusters import family_clusters
from agentgauge.metrics.cost import checked_cost_of_pass, overflow_reason
from agentgauge.metrics.outcome import (
    success_interval,
    task_rate_fraction,
    task_success_counts,
)
from agentgauge.report.formats import counted
from agentgauge.spelling import quoted
from agentgauge.stats.exact import binomial_half_two_sided, sign_test_min_n
from agentgauge.stats.intervals import mover_difference_interval
from agentgauge.stats.se import cluster_correlation, se_clustered, se_mean
from agentgauge.table import TrialTable

__all__ = [
    "Comparison",
    "FamilyClash",
    "McNemar",
    "NoSharedTask",
    "compare",
    "design_phrase",
    "first_families",
    "mcnemar_exact",
    "select_rows",
    "too_few_units",
    "variant_scope",
    "verdict_sentence",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
Superiority = Literal["better", "worse", "noise"]


# --------------------------------------------------------------------------- pieces


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on tasks where the two runs disagree."""

    a_only: int
    """Tasks passed by A and failed by B."""
    b_only: int
    """Tasks failed by A and passed by B."""
    p_value: float
    """Two-sided exact p: min(1, 2·P[Bin(a_only + b_only, ½) ≤ min(a_only, b_only)])."""

    def to_dict(self) -> dict[str, Any]:
        return {"a_only": self.a_only, "b_only": self.b_only, "p_value": self.p_value}


def mcnemar_exact(a_only: int, b_only: int) -> McNemar:
    """McNemar's exact test: under H0 a discordant task is equally likely either way.

    The count b_only ~ Bin(a_only + b_only, ½); the two-sided p-value is the
    binomial test's (symmetric at ½, so twice the smaller tail, capped at 1), in
    exact integers (`agentgauge.stats.exact.binomial_half_two_sided`). No discordant
    tasks gives p = 1. Same as statsmodels'
    ``mcnemar([[·, a_only], [b_only, ·]], exact=True)``.
    """
    if a_only < 0 or b_only < 0:
        raise ValueError("discordant counts must be non-negative")
    return McNemar(a_only, b_only, binomial_half_two_sided(b_only, a_only + b_only))


def design_phrase(n_tasks: int, trials_a: npt.ArrayLike, trials_b: npt.ArrayLike) -> str:
    """``"50 tasks × 4 trials"``; uneven counts show as ``4 (A) / 1 (B)`` or ``1–4``."""
    ka, kb = np.asarray(trials_a, dtype=np.int64), np.asarray(trials_b, dtype=np.int64)
    tasks = f"{n_tasks} task{'s' if n_tasks != 1 else ''}"
    if ka.size == 0 or kb.size == 0:
        return f"{tasks} × 0 trials"
    lo, hi = int(min(ka.min(), kb.min())), int(max(ka.max(), kb.max()))
    if lo == hi:
        k = f"{lo} trial{'s' if lo != 1 else ''}"
    elif ka.min() == ka.max() and kb.min() == kb.max():
        k = f"{int(ka[0])} (A) / {int(kb[0])} (B) trials"
    else:
        k = f"{lo}–{hi} trials"
    return f"{tasks} × {k}"


def _fmt(x: float) -> str:
    return f"{x:g}"


_SINGULAR = {"tasks": "task", "families": "family", "clusters": "cluster"}


def too_few_units(n_units: int, unit: str, alpha: float) -> str | None:
    """Why ``n_units`` tasks (or families: ``unit``) cannot tell a difference at
    ``alpha``, or ``None`` when they can.

    They cannot when there are fewer than `sign_test_min_n` (α) of them: the exact
    sign test over them, every one moving the same way, gives p = 2 · 0.5^n, and no
    exact test over the units gets below it (Conover 1999, §3.4), whatever an
    interval built on the trials says. ``"too few tasks to tell at α = 0.05, which
    needs at least 6 (the exact sign test over 2 tasks cannot go below p = 2 × 0.5^2
    = 0.5)"``.
    """
    need = sign_test_min_n(alpha)
    if n_units >= need:
        return None
    name = unit if n_units != 1 else _SINGULAR.get(unit, unit)
    smallest = min(1.0, 2.0 * 0.5**n_units)
    return (
        f"too few {unit} to tell at α = {alpha:g}, which needs at least {need} (the exact "
        f"sign test over {n_units} {name} cannot go below p = 2 × 0.5^{n_units} = {smallest:.4g})"
    )


def verdict_sentence(
    ci: tuple[float, float] | None,
    design: str,
    margin: float | None = None,
    *,
    too_few: str | None = None,
) -> tuple[str, Superiority]:
    """The verdict sentence from the interval of d = B − A.

    Without a margin: "B is better" (lower bound > 0), "B is worse" (upper < 0),
    else "not distinguishable from noise with {design}". With a margin δ, in
    order: lower > 0 → "B is better"; lower > −δ → "B is not worse than A by more
    than δ" (non-inferior); upper < −δ → "B is worse than A by more than δ";
    upper < 0 → "B is worse"; otherwise "B may be worse than A by more than δ:
    not distinguishable from noise with {design}" (non-inferiority not shown).
    With ``too_few`` (`too_few_units`' reason) the verdict is "not distinguishable
    from noise with {design}: {too_few}", margin or not, whatever the interval.
    """
    noise = f"not distinguishable from noise with {design}"
    if too_few is not None:
        return f"{noise}: {too_few}", "noise"
    if ci is None:
        return noise, "noise"
    lo, hi = ci
    sup: Superiority = "better" if lo > 0 else "worse" if hi < 0 else "noise"
    if margin is None:
        return {"better": "B is better", "worse": "B is worse", "noise": noise}[sup], sup
    d = _fmt(margin)
    if lo > 0:
        return "B is better", sup
    if lo > -margin:
        return f"B is not worse than A by more than {d}", sup
    if hi < -margin:
        return f"B is worse than A by more than {d}", sup
    if hi < 0:
        return "B is worse", sup
    return f"B may be worse than A by more than {d}: {noise}", sup


def select_rows(
    table: TrialTable, *, include_heldout: bool = False, base_only: bool = True
) -> TrialTable:
    """The rows a comparison reads: ``base`` variant (when present), held-out only on
    request. Each side by itself: a side with no base trial is read whole, and
    `variant_scope` says so. ``base_only=False`` reads every variant of the table (a
    caller that chose the variants itself: the gates' ``variants``)."""
    keep = np.ones(len(table), dtype=bool)
    base = table.text_equals("variant", "base")
    if base_only and base.any():
        keep &= base
    if not include_heldout:
        keep &= ~table.text_equals("split", "heldout")
    return table.take(keep)


class NoSharedTask(ValueError):
    """The sides share no task that `compare` reads. ``heldout`` when task ids they share
    are held out (``split: heldout``) and reading held-out tasks would give shared ones:
    the caller may name its option that does."""

    def __init__(self, message: str, *, heldout: bool = False) -> None:
        super().__init__(message)
        self.heldout = heldout


def _no_shared_task(
    a: TrialTable,
    b: TrialTable,
    label_a: str,
    label_b: str,
    *,
    include_heldout: bool,
    base_only: bool,
) -> NoSharedTask:
    """Why the sides have no task to compare: none in common, or the ones they share are
    held out or only in variants not read (said apart from "no task in common")."""
    shared = set(_per_task(a)) & set(_per_task(b))
    if not shared:
        return NoSharedTask(f"{label_a} and {label_b} have no task in common")
    n = len(shared)
    head = f"{label_a} and {label_b} share {n} task{'s' if n != 1 else ''}, but"
    if not include_heldout:
        with_heldout = set(
            _per_task(select_rows(a, include_heldout=True, base_only=base_only))
        ) & set(_per_task(select_rows(b, include_heldout=True, base_only=base_only)))
        if with_heldout:
            return NoSharedTask(
                f"{head} {'it is' if n == 1 else 'they are'} held out (split: heldout), "
                "left out unless included",
                heldout=True,
            )
    return NoSharedTask(
        f"{head} only in variants not compared (a side with base-variant trials is "
        "compared on those)"
    )


#: What a comparison reads of a side that has base trials.
BASE_SCOPE = "base variant"


def variant_scope(table: TrialTable, *, base_only: bool = True) -> str | None:
    """What `select_rows` reads of a side when it is not its base variant: ``"all its
    variants (paraphrase:1)"`` for a side with no base trial, ``None`` otherwise; with
    ``base_only=False``, ``"variants base, paraphrase:1"`` unless it holds base alone."""
    if not len(table) or (base_only and table.text_equals("variant", "base").any()):
        return None
    uniques, codes = table.codes("variant")
    present = sorted({str(v) for v in uniques[np.unique(codes)].tolist()})
    if not base_only:
        return None if present == ["base"] else f"variants {', '.join(present)}"
    return f"all its variants ({', '.join(present)})"


def _per_task(table: TrialTable) -> dict[str, tuple[int, int]]:
    """task → (trials, successes)."""
    # An infra error is a failure, as in every metric, whatever its success flag says.
    success = table.success & ~table.infra_error
    ids, n, c = task_success_counts(table.task_id, success, coded=table.codes("task_id"))
    return dict(zip(ids, zip(n.tolist(), c.tolist(), strict=True), strict=True))


def first_families(tables: tuple[TrialTable, ...]) -> dict[str, Any]:
    """Each task id, as text (``astype(str)``), with the first family that is not
    ``None`` among its rows: the rows of the first table in order, then the next.

    From the tables' `codes` of ``task_id`` and ``family``: one step per task, not
    per trial.
    """
    out: dict[str, Any] = {}
    for table in tables:
        if not len(table):
            continue
        fam_uniques, fam_codes = table.codes("family")
        known_family = np.array([f is not None for f in fam_uniques.tolist()], dtype=bool)
        rows = np.flatnonzero(known_family[fam_codes])
        task_uniques, task_codes = table.codes("task_id")
        present, first = np.unique(task_codes[rows], return_index=True)
        first_rows = rows[first]
        order = np.argsort(first_rows, kind="stable")  # a text's earliest row wins
        texts = task_uniques[present[order]].astype(str).tolist()
        for text, family in zip(texts, table.family[first_rows[order]].tolist(), strict=True):
            out.setdefault(text, family)
    return out


class FamilyClash(ValueError):
    """A shared task that the two runs place in two families."""


def _refuse_family_clash(
    ta: TrialTable, tb: TrialTable, tasks: list[str], label_a: str, label_b: str
) -> None:
    """Raise `FamilyClash` when a shared task names one family in A and another in B.

    A task's family is its cluster (`agentgauge.metrics.clusters`), and the paired SE
    clusters each d_t = p_B,t − p_A,t by it: two runs that disagree on it leave no
    one clustering, and taking either run's (as the first family seen did, A's) made
    the interval depend on which run was called A. The runs are either two suites whose
    task ids collide (pairing them is wrong) or one suite relabelled between them; a
    task that names no family in one run takes the other run's.
    """
    fam_a, fam_b = first_families((ta,)), first_families((tb,))
    clashes = [
        t
        for t in tasks
        if fam_a.get(t) is not None and fam_b.get(t) is not None and fam_a[t] != fam_b[t]
    ]
    if not clashes:
        return
    t = clashes[0]
    # Quoted together: two families that print alike are told apart by their escapes.
    first, second = quoted((str(fam_a[t]), str(fam_b[t])))
    raise FamilyClash(
        f"task {t!r} is in family {first} in {label_a} and in family {second} in "
        f"{label_b} (the runs differ so on {len(clashes)} of "
        f"{counted(len(tasks), 'shared task')}): the paired SE clusters each task by its "
        "family, so both runs must give it the same one (or one of them none)"
    )


def _clusters(tables: tuple[TrialTable, ...], tasks: list[str]) -> tuple[IntArray | None, int]:
    """Each shared task's cluster (`agentgauge.metrics.clusters`: its family, first
    named in A, then B; or the task alone when neither names one) and how many of the
    clusters are families; ``(None, 0)`` when no shared task has a family."""
    fam = first_families(tables)
    return family_clusters(np.array([fam.get(t) for t in tasks], dtype=object))


def _cost_of_pass(table: TrialTable, rate: float) -> tuple[float | None, str | None]:
    """Cost of pass on the shared tasks, both averages over tasks
    (`metrics.cost.task_weighted_cost_of_pass`)."""
    cost = table.cost_usd
    missing = int(np.isnan(cost).sum())
    if len(cost) == 0:
        return None, "no trials"
    if missing:
        return None, f"price unknown for {missing} of {counted(len(cost), 'trial')}"
    return checked_cost_of_pass(cost, table.codes("task_id")[1], rate)


def _none_if_nan(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


# --------------------------------------------------------------------------- result


@dataclass(frozen=True)
class Comparison:
    """The paired comparison of run B against run A (Miller 2024)."""

    label_a: str
    label_b: str
    tasks: list[str]
    """Tasks present in both runs, sorted."""
    p_a: FloatArray
    """A's success rate on each shared task."""
    p_b: FloatArray
    trials_a: npt.NDArray[np.int64]
    """A's trials on each shared task."""
    trials_b: npt.NDArray[np.int64]
    rate_a: float
    """A's success rate over the shared tasks (tasks weigh equally), the exact task
    average rounded once, as the metrics' success rate."""
    rate_b: float
    mean_diff: float
    """mean_t (p_B,t − p_A,t) = rate_b − rate_a, exact and rounded once."""
    se_paired: float | None
    se_unpaired: float | None
    se_method: str
    """``task`` or ``clustered``."""
    n_clusters: int | None
    """The clusters when clustered: families, and shared tasks without one, each its
    own (`agentgauge.metrics.clusters`)."""
    df: int | None
    """Degrees of freedom of the t reference (T − 1 or C − 1)."""
    alpha: float
    ci: tuple[float, float] | None
    """(1 − α) interval of the mean difference: the verdict's."""
    ci95: tuple[float, float] | None
    ci95_score: tuple[float, float] | None
    """95% interval of the mean difference from each run's own success-rate interval
    (MOVER, Newcombe 1998), for contrast: it keeps its width near 0% and 100%."""
    p_value: float | None
    """Two-sided p-value of no difference, by ``p_method``."""
    correlation: float | None
    """Pearson correlation of the per-task rates of A and B."""
    mcnemar: McNemar | None
    a_only: list[str]
    """Flips: passed in A, failed in B (majority of trials)."""
    b_only: list[str]
    cost_of_pass_a: float | None
    cost_of_pass_b: float | None
    cost_reason_a: str | None
    cost_reason_b: str | None
    margin: float | None
    verdict: str
    superiority: Superiority
    design: str
    """``T tasks × K trials``."""
    tasks_only_a: list[str] = field(default_factory=list)
    tasks_only_b: list[str] = field(default_factory=list)
    seed: int = 0
    p_method: str = "t"
    """``t`` (Student's t on the paired differences), ``sign`` (the exact sign test
    over the units, where the differences have no spread) or ``score`` (the test the
    score interval inverts, wherever that interval is the verdict's)."""
    interval: str = "paired_t"
    """How ``ci`` and ``ci95`` were made: ``paired_t``, or ``score`` (the MOVER
    interval, ``ci`` at 1 − α and ``ci95`` at 95%) when either run's rate is below 10%
    or above 90%, or every task moved by the same amount so that the paired SE is 0."""
    scope_a: str | None = None
    """What was read of A when not its base variant (`variant_scope`): A has no base
    trial and all its trials were compared."""
    scope_b: str | None = None
    n_families: int = 0
    """Of the ``n_clusters``, how many are families; the rest are shared tasks without
    one. 0 when not clustered."""

    @property
    def scope(self) -> str:
        """The variants compared: ``base variant``, else each side's
        (``A base variant; B all its variants (paraphrase:1)``)."""
        if self.scope_a is None and self.scope_b is None:
            return BASE_SCOPE
        return f"A {self.scope_a or BASE_SCOPE}; B {self.scope_b or BASE_SCOPE}"

    @property
    def scope_warnings(self) -> list[str]:
        """A sentence for each side compared on other variants than its base one."""
        out = []
        for tag, label, scope, other in (
            ("A", self.label_a, self.scope_a, ("B", self.scope_b)),
            ("B", self.label_b, self.scope_b, ("A", self.scope_a)),
        ):
            if scope is not None:
                against = f", against {other[0]}'s base variant" if other[1] is None else ""
                out.append(
                    f"{tag} ({label}) has no base-variant trial: the comparison reads "
                    f"{scope}{against}; run the base variant on both sides to compare "
                    "like with like"
                )
        return out

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    @property
    def unit(self) -> str:
        """What the comparison generalises over: ``families`` when clustered, ``clusters``
        when some of them are tasks without a family, else ``tasks``."""
        return _unit(self.se_method, self.n_clusters, self.n_families)

    @property
    def n_units(self) -> int:
        """How many of them: the families when clustered, else the shared tasks."""
        return self.n_clusters if self.n_clusters is not None else self.n_tasks

    @property
    def min_units(self) -> int:
        """The fewest units that can tell a difference at ``alpha``: `sign_test_min_n`."""
        return sign_test_min_n(self.alpha)

    @property
    def too_few_units(self) -> bool:
        """Whether there are fewer units than `min_units`: the verdict then claims no
        difference and no non-inferiority, whatever the interval (`too_few_units`)."""
        return self.n_units < self.min_units

    @property
    def test(self) -> str:
        if self.df is None:
            return "none (fewer than two units)"
        unit = self.unit
        if self.interval == "score":
            return (
                "MOVER score interval from each run's success-rate interval (a rate "
                "outside 10-90% or a paired SE of 0, where the paired t interval on "
                f"{unit} under-covers)"
            )
        return f"paired t on {unit}, df = {self.df}"

    @property
    def p_test(self) -> str:
        """The test behind ``p_value``, for display."""
        if self.df is None:
            return "none (fewer than two units)"
        unit = self.unit
        if self.p_method == "sign":
            return f"exact sign test over {self.df + 1} {unit}, each moved by the same amount"
        if self.p_method == "score":
            return "the test the MOVER score interval inverts"
        return f"Student's t on {unit}, df = {self.df}"

    @property
    def cost_ratio(self) -> float | None:
        """Cost of pass of B over A's; ``None`` when either is unknown, A's is $0, or
        the quotient passes the largest float (`cost_ratio_reason` says which)."""
        a, b = self.cost_of_pass_a, self.cost_of_pass_b
        if a is None or b is None or a == 0:
            return None
        ratio = b / a
        return ratio if math.isfinite(ratio) else None

    @property
    def cost_ratio_reason(self) -> str | None:
        """Why `cost_ratio` is ``None`` (``None`` when it is a number)."""
        a, b = self.cost_of_pass_a, self.cost_of_pass_b
        if a is None or b is None:
            return f"{'A' if a is None else 'B'}'s cost per success is unknown"
        if a == 0:
            return "A's cost per success is $0"
        return None if self.cost_ratio is not None else overflow_reason("B / A")

    @property
    def null_reasons(self) -> dict[str, str]:
        """Why each of the comparison's figures that is ``None`` has no value, keyed as
        in `to_dict` (``se_paired``, ``ci95``, ``correlation``, ...); figures that are
        ``None`` because they do not apply (``mcnemar``, ``n_clusters``, ``margin``, and
        ``non_inferior`` without a margin) and
        the cost of pass (whose reasons are its own) are not listed."""
        why: dict[str, str] = {}
        if self.n_tasks < 2:
            # Clustering needs two families, so one task is the only way to no SE: the
            # paired and unpaired SE, the t reference, its interval and test all need two.
            spread = (
                "one shared task: no spread between tasks to measure, and a standard error, "
                "an interval and a test need at least two"
            )
            for key in ("se_paired", "se_unpaired", "df", "ci", "ci95", "p_value"):
                if getattr(self, key) is None:
                    why[key] = spread
            if self.ci95_score is None:
                why["ci95_score"] = (
                    "one shared task: each run's success-rate interval needs at least two "
                    "tasks (the trials of one task share its difficulty)"
                )
            if self.correlation is None:
                why["correlation"] = "one shared task: a correlation needs at least two"
        elif self.correlation is None:
            constant = [
                (side, f"{100 * float(p[0]):.1f}%")
                for side, p in (("A", self.p_a), ("B", self.p_b))
                if not float(p.std()) > 0
            ]
            which = (
                f"{constant[0][0]}'s rate is {constant[0][1]} on every shared task"
                if len(constant) == 1
                else "both runs' rates are the same on every shared task "
                f"(A {constant[0][1]}, B {constant[1][1]})"
            )
            why["correlation"] = f"{which}: a correlation with a constant is undefined"
        if self.margin is not None and self.non_inferior is None:
            # Asked for, and unknown: the margin is judged against the interval's bound.
            why["non_inferior"] = (
                "one shared task: non-inferiority is read from the lower bound of the "
                "B − A interval, and there is none"
            )
        return why

    def non_inferior_at(self, margin: float) -> bool | None:
        """Whether B is not worse than A by more than ``margin`` (lower bound > −margin).

        For gates: ``None`` when no interval exists (fewer than two tasks), and
        ``False`` (not shown) with too few units to tell (`too_few_units`): 2 tasks
        cannot show B within δ of A, however narrow the interval of their trials.
        """
        if self.ci is None:
            return None
        return not self.too_few_units and self.ci[0] > -margin

    @property
    def non_inferior(self) -> bool | None:
        """`non_inferior_at` the comparison's margin (``None`` without one)."""
        return None if self.margin is None else self.non_inferior_at(self.margin)

    def to_dict(self) -> dict[str, Any]:
        """The ``agentgauge.compare/1`` object, with extra fields after the fixed ones."""

        def pair(x: tuple[float, float] | None) -> list[float] | None:
            return None if x is None else [x[0], x[1]]

        return {
            "schema": "agentgauge.compare/1",
            "n_tasks": self.n_tasks,
            "mean_diff": self.mean_diff,
            "se_paired": self.se_paired,
            "se_unpaired": self.se_unpaired,
            "ci95": pair(self.ci95),
            "p_value": self.p_value,
            "p_method": self.p_method,
            "correlation": self.correlation,
            "verdict": self.verdict,
            "flips": {"a_only": self.a_only, "b_only": self.b_only},
            "cost_of_pass": {
                "a": self.cost_of_pass_a,
                "b": self.cost_of_pass_b,
                "ratio": self.cost_ratio,
                "a_reason": self.cost_reason_a,
                "b_reason": self.cost_reason_b,
                "ratio_reason": self.cost_ratio_reason,
            },
            "a": {
                "label": self.label_a,
                "success_rate": self.rate_a,
                "n_trials": int(self.trials_a.sum()),
            },
            "b": {
                "label": self.label_b,
                "success_rate": self.rate_b,
                "n_trials": int(self.trials_b.sum()),
            },
            "design": self.design,
            "superiority": self.superiority,
            "margin": self.margin,
            "non_inferior": self.non_inferior,
            "alpha": self.alpha,
            "unit": self.unit,
            "n_units": self.n_units,
            "min_units": self.min_units,
            "too_few_units": self.too_few_units,
            "ci": pair(self.ci),
            "ci95_score": pair(self.ci95_score),
            "test": self.test,
            "interval": self.interval,
            "df": self.df,
            "se_method": self.se_method,
            "n_clusters": self.n_clusters,
            "n_families": self.n_families if self.n_clusters is not None else None,
            "mcnemar": None if self.mcnemar is None else self.mcnemar.to_dict(),
            "tasks_only_a": self.tasks_only_a,
            "tasks_only_b": self.tasks_only_b,
            "seed": self.seed,
            "scope": self.scope,
            "scope_a": self.scope_a or BASE_SCOPE,
            "scope_b": self.scope_b or BASE_SCOPE,
            "null_reasons": self.null_reasons,
            "per_task": [
                {"task_id": t, "p_a": float(a), "p_b": float(b)}
                for t, a, b in zip(self.tasks, self.p_a, self.p_b, strict=True)
            ],
        }


# --------------------------------------------------------------------------- the comparison


#: Outside [EDGE, 1 − EDGE] for either run's rate the verdict uses the score interval.
EDGE = 0.1


def _interval(
    mean: float, se: float | None, df: int | None, level: float
) -> tuple[float, float] | None:
    if se is None or df is None:
        return None
    q = float(special.stdtrit(df, 0.5 + level / 2))  # Student's t quantile
    # A difference of two rates lies in [−1, 1]; an interval reaching past it
    # only advertises that the approximation is poor there (STYLE: no such bars).
    return max(mean - q * se, -1.0), min(mean + q * se, 1.0)


def _p_value(mean: float, se: float | None, df: int | None) -> tuple[float | None, str]:
    """The two-sided p-value of no difference, and the test that gave it.

    Student's t on the paired differences; where they have no spread (SE 0) there
    is no t statistic, and the p-value is the exact sign test's over the df + 1
    units (tasks, or families), every one of which moved by the same amount:
    2 · (1/2)^(df + 1), or 1 when that amount is 0. A t test would say 0 there,
    a certainty five tasks cannot give."""
    if se is None or df is None:
        return None, "t"
    if se == 0:
        return (1.0 if mean == 0 else min(1.0, 2.0 * 0.5 ** (df + 1))), "sign"
    return float(2 * special.stdtr(df, -abs(mean / se))), "t"  # two-sided t tail


def _exact_rates(
    counts_a: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    counts_b: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
) -> tuple[float, float, float]:
    """A's and B's success rates over the shared tasks and their difference, each the
    exact task average rounded once (`task_rate_fraction`), as the metrics' rate is."""
    exact_a, exact_b = task_rate_fraction(*counts_a), task_rate_fraction(*counts_b)
    if exact_a is None or exact_b is None:
        raise ValueError("a comparison needs at least one shared task")
    return float(exact_a), float(exact_b), float(exact_b - exact_a)


def _score_interval(
    counts_a: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    counts_b: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    clusters: IntArray | None,
    level: float = 0.95,
) -> tuple[float, float] | None:
    """MOVER interval of d from the two runs' success-rate intervals on the shared tasks.

    Each rate gets the interval `success_interval` gives it at ``level`` (Wilson on
    the design-effect-adjusted n for few clusters), and r is `estimate_correlation`;
    see `mover_difference_interval`. ``None`` when either run has no interval.
    """
    return _ScoreInterval(counts_a, counts_b, clusters).at(level)


class _ScoreInterval:
    """The MOVER interval of one comparison at any level, and the p-value it implies."""

    def __init__(
        self,
        counts_a: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
        counts_b: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
        clusters: IntArray | None,
    ) -> None:
        self.codes = clusters
        (self.na, self.ca), (self.nb, self.cb) = counts_a, counts_b
        self.pa: FloatArray = self.ca / self.na
        self.pb: FloatArray = self.cb / self.nb
        self.r = estimate_correlation(counts_a, counts_b, self.codes)
        self.rate_a, self.rate_b, self.diff = _exact_rates(counts_a, counts_b)

    def at(self, level: float) -> tuple[float, float] | None:
        ci_a, _, _ = success_interval(self.pa, self.na, self.ca, self.codes, level=level)
        ci_b, _, _ = success_interval(self.pb, self.nb, self.cb, self.codes, level=level)
        if ci_a is None or ci_b is None:
            return None
        return mover_difference_interval(self.rate_a, ci_a, self.rate_b, ci_b, self.r)

    def p_value(self) -> float:
        """The two-sided p-value of d = 0 by the test this interval inverts: the α at
        which the (1 − α) interval's bound nearest 0 reaches it. The interval
        excludes 0 exactly when α exceeds it, so the p-value, the interval and the
        verdict agree (a t or sign test beside a score interval could say p = 0.008
        while the interval held 0). 1 when d = 0; at most `_P_FLOOR`."""
        d = self.diff
        if d == 0:
            return 1.0

        def gap(log_alpha: float) -> float:
            ci = self.at(1.0 - math.exp(log_alpha))
            assert ci is not None
            return ci[0] if d > 0 else -ci[1]  # > 0: the interval excludes 0

        lo, hi = math.log(_P_FLOOR), math.log1p(-1e-9)
        if gap(lo) > 0:
            return _P_FLOOR
        if gap(hi) <= 0:
            return 1.0
        return math.exp(optimize.brentq(gap, lo, hi, xtol=1e-9, rtol=1e-10))


#: The smallest p-value the score interval's test reports (it is never 0).
_P_FLOOR = 1e-15


def estimate_correlation(
    counts_a: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    counts_b: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]],
    clusters: npt.NDArray[np.intp] | None,
) -> float:
    """The correlation of the two runs' success rates that the MOVER interval uses.

    The clustered correlation of the task rates (`cluster_correlation`): tasks
    share their difficulty across runs. Estimated from a few tasks it can reach 1
    by chance, which gives an interval of zero width, although the two runs'
    trials are independent draws. Two limits keep it below what the data support:

    - where every task's rate is 0 or 1 in both runs (one trial per task, or
      tasks that always or never pass), the task-level table is a paired 2×2 one,
      and r is Newcombe's (1998) corrected φ (method 10, "Improved confidence
      intervals for the difference between binomial proportions based on paired
      data"): `cluster_correlation(..., corrected=True)`;
    - otherwise, where every task moved by the same amount (the paired differences
      have no spread, and r is 1 whenever the rates vary), r is at most √(ρ_A ρ_B),
      ρ the share of the variance of each run's task rates that is not the
      trials' own binomial noise, since that noise is independent between the
      runs (Spearman's 1904 bound for correlations attenuated by measurement
      error): ρ = 1 − mean_t v_t / var_t(p_t), v_t = p_t(1 − p_t)/(n_t − 1) the
      unbiased estimate of a task's binomial variance (0 for tasks with one
      trial, whose noise cannot be told from their difficulty).
    """
    (na, ca), (nb, cb) = counts_a, counts_b
    pa: FloatArray = ca / na
    pb: FloatArray = cb / nb
    units = np.arange(pa.size) if clusters is None else clusters
    binary = bool(np.all((ca == 0) | (ca == na)) and np.all((cb == 0) | (cb == nb)))
    if binary:
        return cluster_correlation(pa, pb, units, corrected=True)
    r = cluster_correlation(pa, pb, units)
    d = pb - pa
    if r <= 0 or not np.allclose(d, d[0], rtol=0.0, atol=1e-12):
        # The differences vary: r is estimated from them, and capping it with the bound
        # (itself estimated) only biases it low (docs/compare-and-plan.md).
        return r
    reliability = [_beyond_noise(p, n) for p, n in ((pa, na), (pb, nb))]
    return min(r, math.sqrt(reliability[0] * reliability[1]))


def _beyond_noise(p: FloatArray, n: npt.NDArray[np.int64]) -> float:
    """The share of the variance of the task rates that is not within-task binomial noise."""
    if p.size < 2:
        return 0.0
    total = float(np.var(p, ddof=1))
    if not total > 0:
        return 0.0
    several = n >= 2
    noise = float(np.sum(p[several] * (1 - p[several]) / (n[several] - 1))) / p.size
    return max(0.0, 1.0 - noise / total)


def compare(
    a: TrialTable,
    b: TrialTable,
    *,
    margin: float | None = None,
    alpha: float = 0.05,
    seed: int = 0,
    label_a: str = "A",
    label_b: str = "B",
    include_heldout: bool = False,
    base_only: bool = True,
) -> Comparison:
    """Compare run B with run A over the tasks both ran (Miller 2024; see the module docstring).

    d_t = p_B,t − p_A,t; mean d; SE = sd(d, ddof=1)/√T, or Miller's clustered SE
    (C/(C−1) correction) over the clusters of `agentgauge.metrics.clusters` (each
    family, and each shared task without one) when some shared task has a family and
    there are at least two clusters; (1 − α) interval and two-sided p from Student's t with
    T − 1 (or C − 1) df, clipped to [−1, 1]; unpaired SE √(SE_A² + SE_B²) of the two rates on the
    same tasks and by the same method; ``ci95_score`` by `_score_interval`.
    ``seed`` is recorded with the result (no step of the comparison is random).
    ``base_only=False``: every variant of ``a`` and ``b`` is read (`select_rows`).
    Raises `NoSharedTask` (a ``ValueError``) when the runs share no task it reads.
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    if margin is not None and not (math.isfinite(margin) and 0 <= margin <= 1):
        # A difference of two rates lies in [-1, 1]: a margin past 1 holds for any data.
        raise ValueError(f"margin must be a number from 0 to 1 (a share: 0.05), got {margin}")
    ta, tb = (
        select_rows(a, include_heldout=include_heldout, base_only=base_only),
        select_rows(b, include_heldout=include_heldout, base_only=base_only),
    )
    per_a, per_b = _per_task(ta), _per_task(tb)
    tasks = sorted(set(per_a) & set(per_b))
    if not tasks:
        raise _no_shared_task(
            a, b, label_a, label_b, include_heldout=include_heldout, base_only=base_only
        )
    na = np.array([per_a[t][0] for t in tasks], dtype=np.int64)
    nb = np.array([per_b[t][0] for t in tasks], dtype=np.int64)
    ca = np.array([per_a[t][1] for t in tasks], dtype=np.int64)
    cb = np.array([per_b[t][1] for t in tasks], dtype=np.int64)
    pa, pb = ca / na, cb / nb
    d = pb - pa
    T = len(tasks)
    # The rates and their mean difference are exact task averages rounded once, as the
    # metrics' success rate is (`task_mean`): 9 successes of 18 trials over 6 tasks is 0.5
    # on both, not 0.49999999999999994. The SEs are computed from the float rates.
    rate_a, rate_b, mean = _exact_rates((na, ca), (nb, cb))

    _refuse_family_clash(ta, tb, tasks, label_a, label_b)
    clusters, n_families = _clusters((ta, tb), tasks)
    n_clusters = None if clusters is None else int(np.unique(clusters).size)
    if clusters is not None and n_clusters is not None and n_clusters >= 2:
        method = "clustered"
        se = _none_if_nan(se_clustered(d, clusters))
        se_a, se_b = se_clustered(pa, clusters), se_clustered(pb, clusters)
        df: int | None = n_clusters - 1
    else:
        method, n_clusters, n_families, clusters = "task", None, 0, None
        se = _none_if_nan(se_mean(d))
        se_a, se_b = se_mean(pa), se_mean(pb)
        df = T - 1 if T >= 2 else None
    se_unpaired = _none_if_nan(math.sqrt(se_a**2 + se_b**2)) if T >= 2 else None
    ci = _interval(mean, se, df, 1 - alpha)
    ci95 = _interval(mean, se, df, 0.95)
    mover = _ScoreInterval((na, ca), (nb, cb), clusters)
    score = mover.at(0.95)
    interval = "paired_t"
    near_edge = not all(EDGE <= r <= 1 - EDGE for r in (rate_a, rate_b))
    paired_ok = se is not None and df is not None
    if paired_ok and (se == 0 or near_edge) and score is not None:
        # Near 0% and 100% the paired t interval under-covers (79% at 97% -> 99% with 5
        # families) and, when every task moved by the same amount (two all-passing runs),
        # has zero width, which finite data never justifies. The MOVER interval from each
        # run's own success-rate interval keeps its coverage there (docs/compare-and-plan.md),
        # at the verdict's level as at 95%.
        ci95 = score
        ci = score if math.isclose(alpha, 0.05) else mover.at(1 - alpha)
        interval = "score"

    corr = None
    if T >= 2 and pa.std() > 0 and pb.std() > 0:
        corr = float(np.corrcoef(pa, pb)[0, 1])

    a_only = [t for t, x, y in zip(tasks, pa, pb, strict=True) if x > 0.5 and y < 0.5]
    b_only = [t for t, x, y in zip(tasks, pa, pb, strict=True) if x < 0.5 and y > 0.5]
    mc = None
    if (na == 1).all() and (nb == 1).all():
        mc = mcnemar_exact(len(a_only), len(b_only))

    shared = set(tasks)
    sub_a = ta.take(ta.text_in("task_id", shared))
    sub_b = tb.take(tb.text_in("task_id", shared))
    cop_a, why_a = _cost_of_pass(sub_a, rate_a)
    cop_b, why_b = _cost_of_pass(sub_b, rate_b)

    p_value, p_method = _p_value(mean, se, df)
    if interval == "score":
        p_value, p_method = mover.p_value(), "score"
    design = design_phrase(T, na, nb)
    # Tasks (families when clustered) are the units: with too few of them no test over
    # them can reach α, so the verdict claims nothing, whatever the interval of the
    # trials says (2 tasks × 3 trials, all failing then all passing, gave p = 0.00014).
    units = n_clusters if method == "clustered" and n_clusters is not None else T
    few = too_few_units(units, _unit(method, n_clusters, n_families), alpha)
    verdict, sup = verdict_sentence(ci, design, margin, too_few=few)
    return Comparison(
        label_a=label_a,
        label_b=label_b,
        tasks=tasks,
        p_a=pa,
        p_b=pb,
        trials_a=na,
        trials_b=nb,
        rate_a=rate_a,
        rate_b=rate_b,
        mean_diff=mean,
        se_paired=se,
        se_unpaired=se_unpaired,
        se_method=method,
        n_clusters=n_clusters,
        df=df,
        alpha=alpha,
        ci=ci,
        ci95=ci95,
        ci95_score=score,
        interval=interval,
        p_value=p_value,
        p_method=p_method,
        correlation=corr,
        mcnemar=mc,
        a_only=a_only,
        b_only=b_only,
        cost_of_pass_a=cop_a,
        cost_of_pass_b=cop_b,
        cost_reason_a=why_a,
        cost_reason_b=why_b,
        margin=margin,
        verdict=verdict,
        superiority=sup,
        design=design,
        tasks_only_a=sorted(set(per_a) - shared),
        tasks_only_b=sorted(set(per_b) - shared),
        seed=seed,
        scope_a=variant_scope(a) if base_only else variant_scope(ta, base_only=False),
        scope_b=variant_scope(b) if base_only else variant_scope(tb, base_only=False),
        n_families=n_families,
    )


def _unit(method: str, n_clusters: int | None, n_families: int) -> str:
    """The units a comparison generalises over: ``tasks``; ``families`` when clustered;
    ``clusters`` when some of the clusters are tasks without a family."""
    if method != "clustered":
        return "tasks"
    return "families" if n_families == n_clusters else "clusters"
