"""Judge calibration: how well a model judge agrees with human raters (docs/judge.md,
"Calibrating the judge").

Input is a list of `Label` (see `agentgauge.graders.human`): the judge's labels
are those by ``judge_rater``; the human raters are the others (or those named).
An *item* is one (task, trial, variant, agent, grader) cell. A label without an
agent is about that trial whichever agent ran it, as when labels are applied as
grades: it takes the agent the other raters' labels of the cell name
(`resolve_agents`), and is refused when they name two.

Reported, as the ``agentgauge.calibrate/1`` object:

- ``judge_vs_human``: the judge against the human consensus (the majority of
  the humans' decided labels on the item; a tie is unknown): Cohen's κ with a
  seeded percentile-bootstrap CI over items, raw agreement, and the confusion
  table (rows human, columns judge; ``unknown`` kept as a third row/column so
  one sees where unknowns fall, while κ and agreement use decided pairs only);
- ``per_rater``: the judge against each human rater;
- ``by_grader``: judge-vs-consensus κ and agreement per criterion/grader;
- ``krippendorff_alpha``: α (nominal, unknown = missing) across all raters,
  and across the humans alone (the ceiling a judge can be expected to reach),
  with ``null_reasons`` saying why either has no value;
- ``unknown_share``: share of ``unknown`` among the judge's labels and the humans';
- ``pairwise``: per rater with pairwise records, the position-flip rate — the
  share of complete, decided A–B/B–A pairs whose preferences name different
  transcripts (the preference followed the position).
"""

from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from agentgauge.errors import InputError
from agentgauge.graders.human import ItemKey, Label, majority
from agentgauge.report.formats import counted
from agentgauge.stats.agreement import (
    cohens_kappa,
    krippendorff_alpha_nominal,
)

__all__ = ["SCHEMA", "calibrate", "kappa_band", "resolve_agents"]

SCHEMA = "agentgauge.calibrate/1"
_CODES = {"pass": 0, "fail": 1, "unknown": -1}
_ORDER = ["pass", "fail", "unknown"]


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def kappa_band(kappa: float | None) -> str | None:
    """Landis & Koch (1977) descriptive band for κ. A convention, not a test:
    what κ is good enough depends on the use (and κ depends on prevalence)."""
    if kappa is None:
        return None
    if kappa < 0:
        return "poor"
    for bound, name in (
        (0.20, "slight"),
        (0.40, "fair"),
        (0.60, "moderate"),
        (0.80, "substantial"),
    ):
        if kappa <= bound:
            return name
    return "almost perfect"


def _agreement(
    human: Sequence[str],
    judge: Sequence[str],
    *,
    n_boot: int,
    seed: int,
    no_boot: str = "no interval: the bootstrap was turned off (--bootstrap 0)",
) -> dict[str, Any]:
    """κ, its interval and the confusion table of one comparison. ``no_boot`` says why
    there is no interval when ``n_boot`` is 0."""
    h = np.array([_CODES[v] for v in human], dtype=np.int64)
    j = np.array([_CODES[v] for v in judge], dtype=np.int64)
    res = cohens_kappa(h, j, n_labels=2, n_boot=n_boot, seed=seed)
    full = np.zeros((3, 3), dtype=np.int64)
    for a, b in zip(h, j, strict=True):
        full[a if a >= 0 else 2, b if b >= 0 else 2] += 1
    kappa = _num(res.kappa)
    lo, hi = (_num(res.ci95[0]), _num(res.ci95[1])) if n_boot else (None, None)
    why: str | None = None
    if kappa is None:
        # Chance agreement is 1 (one label for every item, from both sides), or fewer
        # than two items were decided: κ = (p_o − p_e)/(1 − p_e) has no value.
        if not res.n:
            why = "no item has a decided label from both raters"
        elif res.n == 1:
            why = (
                "κ has no value: only 1 item is decided by both raters, and κ needs at "
                "least two (label more items to measure agreement)"
            )
        else:
            why = (
                "κ is undefined: both raters gave every decided item the same label, so "
                "agreement by chance is 1 (label items that differ to measure agreement)"
            )
    else:
        # κ = 0 because one side gave every item the same label (p_o = p_e): a value,
        # as sklearn's cohen_kappa_score gives it, but one that says nothing of how
        # often the two agree. Said whether or not there is an interval: without a
        # bootstrap (per grader, --bootstrap 0) this κ of 0 came with no word.
        why = _constant_label(res.table, res.n, bootstrapped=bool(n_boot))
    ci95: list[float | None] | None = [lo, hi] if n_boot else None
    if ci95 is not None and (lo is None or hi is None or lo == hi):
        # Every replicate gave the same κ: a zero-width interval from a few dozen items
        # is not a measurement. Named by the replicates' κ, which one replicate (or a
        # resampling that never changes it) need not share with the data's.
        ci95 = None
        if n_boot == 1:
            why = why or (
                "no interval: one bootstrap replicate cannot make one (give more "
                "replicates, 2000 by default, or 0 for none)"
            )
        why = why or _no_interval(res.table, kappa if lo is None else lo, res.n)
    if not n_boot:
        why = why or no_boot
    return {
        "n_items": len(h),
        "n_decided": res.n,
        "kappa": kappa,
        "kappa_band": kappa_band(kappa),
        "null_reason": why,
        "ci95": ci95,
        "ci_method": (
            f"percentile bootstrap over items, B={n_boot}, seed={seed}"
            + (
                f", {res.n_boot_undefined} undefined replicates dropped"
                if res.n_boot_undefined
                else ""
            )
        )
        if n_boot
        else None,
        "raw_agreement": _num(res.raw_agreement),
        "expected_agreement": _num(res.expected_agreement),
        "confusion": {
            "rows": "human",
            "columns": "judge",
            "labels": _ORDER,
            "matrix": full.tolist(),
        },
    }


# Why a criterion's κ has no interval: read it against the overall one.
_NO_GRADER_INTERVAL = (
    "no interval per grader: the bootstrap interval is computed for the judge against "
    "the humans overall and per rater; read a criterion's κ as a point, beside the "
    "overall interval and its raw agreement"
)


def _constant_label(table: np.ndarray[Any, Any], n: int, *, bootstrapped: bool) -> str | None:
    """Why κ is 0 when one side gave all ``n`` decided items one label (the confusion
    table's rows are the humans, its columns the judge), else ``None``.

    When one side gives every item label c, p_o = n_cc/n and p_e = (n_cc/n)·1, so
    κ = (p_o − p_e)/(1 − p_e) = 0 whatever the other side says (undefined, 0/0, when the
    other side is constant on c too: that κ is null). sklearn's ``cohen_kappa_score``
    gives the same 0 (and ``nan`` for the 0/0); the value is kept, with this note."""
    humans, judge = (int(np.count_nonzero(table.sum(axis=a))) for a in (1, 0))
    if n < 2 or (judge >= 2 and humans >= 2):
        return None
    who = "the judge" if judge < 2 else "the human labels"
    label = _ORDER[int(np.flatnonzero(table.sum(axis=0 if judge < 2 else 1))[0])]
    where = "on the data and on every bootstrap replicate" if bootstrapped else "on the data"
    head = "no interval: " if bootstrapped else ""
    return (
        f"{head}{who} gave all {n} decided items the same label ({label!r}), so κ is 0 "
        f"{where} however often the raters agree: κ measures agreement beyond chance, "
        "which a constant label cannot show (read the raw agreement and the confusion "
        "table instead)"
    )


def _no_interval(table: np.ndarray[Any, Any], kappa: float | None, n: int) -> str:
    """Why every bootstrap replicate gave the same κ, from the confusion table (rows
    the humans, columns the judge) of the ``n`` decided items."""
    constant = _constant_label(table, n, bootstrapped=True)
    if constant is not None:
        # κ = 0 on every resample too (or undefined, p_e = 1), so the bootstrap has no
        # spread to show.
        return constant
    if not np.any(table - np.diag(np.diag(table))):
        return (
            f"no interval: every bootstrap replicate gave κ = {kappa:.3f} "
            f"(the {n} items leave no disagreement to resample)"
        )
    return f"no interval: every bootstrap replicate gave κ = {kappa:.3f}"


def _unknown_share(grades: Sequence[Label], rater: str) -> float | None:
    mine = [lb for lb in grades if lb.rater == rater]
    return sum(1 for lb in mine if not lb.decided) / len(mine) if mine else None


def _flip_stats(pairs: list[Label]) -> dict[str, Any]:
    by_item: dict[ItemKey, dict[str, str]] = defaultdict(dict)
    for lb in pairs:
        assert lb.order is not None
        by_item[lb.item][lb.order] = lb.label
    complete = [v for v in by_item.values() if len(v) == 2]
    decided = [v for v in complete if "unknown" not in v.values()]
    flips = sum(1 for v in decided if {v["AB"], v["BA"]} == {"A", "B"})
    unknown = sum(1 for lb in pairs if lb.label == "unknown")
    return {
        "n_pairs": len(by_item),
        "n_complete": len(complete),
        "n_decided": len(decided),
        "position_flips": flips,
        "position_flip_rate": flips / len(decided) if decided else None,
        "unknown_share": unknown / len(pairs) if pairs else None,
    }


def resolve_agents(labels: Sequence[Label]) -> list[Label]:
    """``labels`` with the agent of each grade label that names none filled in from the
    other raters' labels of the same (task, trial, variant, grader).

    `agentgauge.graders.human.judge_label_records` writes the trial's agent; a human
    label sheet seldom has the column, and `HumanGrader` applies such a label to the
    trial whichever agent ran it. Compared as is, no item matched ("no item is
    labelled by both the judge and a human"). Raises `InputError` at the label when
    the others name two agents (which trial it is about is not said), and when the
    filled-in label repeats one its rater gave the item.
    """
    named: dict[tuple[Any, ...], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for lb in labels:
        if lb.kind == "grade" and lb.agent is not None:
            named[lb.task_id, lb.trial, lb.variant or "base", lb.grader][lb.rater].add(lb.agent)
    out: list[Label] = []
    filled: list[bool] = []
    for lb in labels:
        agents: list[str] = []
        if lb.kind == "grade" and lb.agent is None:
            by_rater = named.get((lb.task_id, lb.trial, lb.variant or "base", lb.grader), {})
            agents = sorted({a for r, names in by_rater.items() if r != lb.rater for a in names})
        if len(agents) > 1:
            raise InputError(
                f"the label names no agent, and the other raters label this item "
                f"({lb.grader} of task {lb.task_id!r}, trial {lb.trial}) for agents "
                f"{', '.join(map(repr, agents))}: add an agent column to say which "
                "agent's trial it is about",
                file=lb.file,
                line=lb.line,
                field="agent",
            )
        out.append(dataclasses.replace(lb, agent=agents[0]) if agents else lb)
        filled.append(bool(agents))
    seen: dict[tuple[Any, ...], int] = {}
    for k, lb in enumerate(out):
        if lb.kind != "grade":
            continue
        first = seen.setdefault((*lb.item, lb.rater), k)
        if first != k and (filled[k] or filled[first]):
            lone, named_one = (lb, out[first]) if filled[k] else (out[first], lb)
            raise InputError(
                f"rater {lb.rater!r} labels this item twice: once without an agent (so for "
                f"{lb.agent!r}, the one agent the other raters name) and once for "
                f"{lb.agent!r}"
                + (f" on line {named_one.line}" if named_one.line is not None else ""),
                file=lone.file,
                line=lone.line,
                field="agent",
            )
    return out


def calibrate(
    labels: Sequence[Label],
    *,
    judge_rater: str = "judge",
    humans: Sequence[str] | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    source: str | None = None,
) -> dict[str, Any]:
    """Judge-vs-human agreement as the ``agentgauge.calibrate/1`` object (module docstring).

    Raises `InputError` when the labels hold no judge, no human rater, or no
    item labelled by both, and where a label without an agent is ambiguous
    (`resolve_agents`).
    """
    labels = resolve_agents(labels)
    grades = [lb for lb in labels if lb.kind == "grade"]
    pairs = [lb for lb in labels if lb.kind == "pairwise"]
    raters = sorted({lb.rater for lb in labels})
    human_raters = sorted(
        set(humans) if humans is not None else {lb.rater for lb in grades} - {judge_rater}
    )
    unknown_raters = sorted(set(human_raters) - set(raters))
    # Both are about the raters named (``--against``), not about a line of the file:
    # they named the label file and its field ``rater``.
    if unknown_raters:
        raise InputError(
            f"rater(s) {', '.join(map(repr, unknown_raters))} have no labels "
            f"(raters found: {', '.join(map(repr, raters))})",
            field="--against",
        )
    if judge_rater in human_raters:
        raise InputError(
            f"{judge_rater!r} is the judge (--judge-rater) and cannot also be a human rater",
            field="--against",
        )
    warnings: list[str] = []
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "source": source,
        "judge_rater": judge_rater,
        "human_raters": human_raters,
        "n_labels": len(labels),
    }
    judge_labels = {lb.item: lb.label for lb in grades if lb.rater == judge_rater}
    human_labels: dict[ItemKey, dict[str, str]] = defaultdict(dict)
    for lb in grades:
        if lb.rater in human_raters:
            human_labels[lb.item][lb.rater] = lb.label
    if grades:
        if not judge_labels:
            raise InputError(
                f"no labels by the judge rater {judge_rater!r} "
                f"(raters found: {', '.join(raters)}); "
                "name it with --judge-rater, or give the judge's labels with --judge FILE",
                file=source,
                field="rater",
            )
        if not human_raters:
            raise InputError(
                f"no human rater besides the judge {judge_rater!r}", file=source, field="rater"
            )
        both = sorted(set(judge_labels) & set(human_labels), key=repr)
        if not both:
            raise InputError(
                "no item is labelled by both the judge and a human; items match on task_id, "
                "trial, variant, agent and criterion/grader (a label without an agent on "
                "any agent's trial)",
                file=source,
            )
        consensus = [majority(list(human_labels[i].values())) for i in both]
        judged = [judge_labels[i] for i in both]
        out["judge_vs_human"] = _agreement(consensus, judged, n_boot=n_boot, seed=seed)
        out["n_judge_only"] = len(set(judge_labels) - set(human_labels))
        out["n_human_only"] = len(set(human_labels) - set(judge_labels))
        out["per_rater"] = []
        for r in human_raters:
            items = [i for i in both if r in human_labels[i]]
            stats = _agreement(
                [human_labels[i][r] for i in items],
                [judge_labels[i] for i in items],
                n_boot=n_boot,
                seed=seed,
            )
            out["per_rater"].append({"rater": r, **stats})
        out["by_grader"] = []
        for grader in sorted({i[4] for i in both}):
            items = [i for i in both if i[4] == grader]
            stats = _agreement(
                [majority(list(human_labels[i].values())) for i in items],
                [judge_labels[i] for i in items],
                n_boot=0,
                seed=seed,
                no_boot=_NO_GRADER_INTERVAL,
            )
            out["by_grader"].append({"grader": grader, **stats})
        every = sorted({lb.item for lb in grades}, key=repr)
        col = {item: k for k, item in enumerate(every)}

        def alpha(names: Sequence[str]) -> tuple[float | None, str | None]:
            mat = np.full((len(names), len(every)), np.nan)
            row = {name: k for k, name in enumerate(names)}
            for lb in grades:
                if lb.rater in row and lb.decided:
                    mat[row[lb.rater], col[lb.item]] = _CODES[lb.label]
            value = _num(krippendorff_alpha_nominal(mat))
            if value is not None:
                return value, None
            # α pairs the decided labels within an item; it is undefined with fewer than
            # two such items, or when every paired label is the same (D_e = 0: nothing to
            # disagree on).
            paired = mat[:, (~np.isnan(mat)).sum(axis=0) >= 2]
            if paired.shape[1] < 2:
                return None, (
                    f"{'no item has' if not paired.shape[1] else 'only 1 item has'} decided "
                    "labels from two of these raters: α needs at least two such items"
                )
            codes = np.unique(paired[~np.isnan(paired)]).astype(np.int64)
            return None, (
                f"every decided label on the items rated twice is {_ORDER[codes[0]]!r}: α is "
                "undefined (no disagreement is expected by chance)"
            )

        all_raters, all_why = alpha([judge_rater, *human_raters])
        if len(human_raters) >= 2:
            humans_alpha, humans_why = alpha(human_raters)
        else:
            humans_alpha = None
            humans_why = "one human rater: α among the humans needs two"
        out["krippendorff_alpha"] = {
            "all_raters": all_raters,
            "humans": humans_alpha,
            "level": "nominal; unknown labels are missing values",
            "null_reasons": {
                k: v for k, v in (("all_raters", all_why), ("humans", humans_why)) if v
            },
        }
        j_all = [lb.label for lb in grades if lb.rater == judge_rater]
        h_all = [lb.label for lb in grades if lb.rater in human_raters]
        out["unknown_share"] = {
            "judge": j_all.count("unknown") / len(j_all),
            "humans": h_all.count("unknown") / len(h_all) if h_all else None,
            "by_rater": {r: _unknown_share(grades, r) for r in [judge_rater, *human_raters]},
        }
        jh = out["judge_vs_human"]
        n_dec = jh["n_decided"]
        if n_dec < 2:
            # One item (or none) has no κ and no interval to be wide: say what is missing.
            warnings.append(
                f"only {n_dec} item{'' if n_dec == 1 else 's'} decided by both judge and "
                "humans: κ needs at least two, so it has no value and no interval"
            )
        elif n_dec < 30:
            if jh["ci95"] is not None:
                what = "κ's interval is wide"
            elif not n_boot:  # none asked for: say what it would show
                what = "κ's interval would be wide (--bootstrap 0 computes none)"
            else:  # no interval, for the reason given beside κ
                what = "too few to rely on κ" if jh["kappa"] is not None else "too few for κ"
            warnings.append(
                f"only {counted(n_dec, 'item')} decided by both judge and humans: {what}"
            )
        if len({i[0] for i in both}) < len(both):
            warnings.append(
                "several items share a task: the bootstrap resamples items as if independent, "
                "so the interval may be too narrow"
            )
    else:
        out.update(
            judge_vs_human=None,
            n_judge_only=None,
            n_human_only=None,
            per_rater=[],
            by_grader=[],
            krippendorff_alpha=None,
            unknown_share=None,
        )
    if pairs:
        out["pairwise"] = [
            {"rater": r, **_flip_stats([lb for lb in pairs if lb.rater == r])}
            for r in sorted({lb.rater for lb in pairs})
        ]
    else:
        out["pairwise"] = None
    if not grades and not pairs:
        raise InputError("no labels", file=source)
    out["warnings"] = warnings
    return out
