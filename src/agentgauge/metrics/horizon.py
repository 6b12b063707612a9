"""Time horizon: how long a task, in human minutes, an agent completes
with a given probability.

Method (Kwa et al. 2025, "Measuring AI Ability to Complete Long Tasks"; METR's
Time Horizon 1.1): per agent, fit P(success) = σ(b0 + b1·log2 human_minutes) by
weighted logistic regression with weights 1/(runs in task · √tasks in family)
normalised to sum to 1, and an L2 penalty ½·b1²/C on the slope. The horizon at
success probability q is 2^((ln(q/(1−q)) − b0)/b1). The 95% interval is the
2.5/97.5 percentile of a hierarchical bootstrap (families, then tasks, then
runs); the point estimate is the full-data fit. Beside it, Ord's constant-hazard
model S(t) = 2^(−t/T_half), with both fits' weighted log-loss.

The numerics live in `agentgauge.metrics.horizon_fit`; this module groups the
trials, chooses the outcome, collects warnings and shapes the report.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from agentgauge.errors import InputError
from agentgauge.metrics.clusters import family_clusters, is_none, task_families
from agentgauge.metrics.horizon_fit import (
    bootstrap_masses,
    fit_half_life,
    fit_logistic,
    half_life_probability,
    horizon_from_coefficients,
    length_span,
    metr_weights,
    weighted_log_loss,
)
from agentgauge.report.formats import counted
from agentgauge.schema import SUCCESS_TOLERANCE, Trial
from agentgauge.table import TrialTable, group_keys

__all__ = [
    "SCHEMA",
    "STATUSES",
    "HorizonGroup",
    "HorizonReport",
    "censored_percentiles",
    "horizon",
    "q_label",
]

SCHEMA = "agentgauge.horizon/1"
Outcome = Literal["auto", "score", "success"]
FloatArray = npt.NDArray[np.float64]
Status = Literal["estimated", "below", "above", "undefined"]

#: What a horizon (or an end of its interval) is: ``estimated`` (a length from the fit),
#: ``below`` (the data only say it lies below a task length: no successes, or a flat fit
#: below q), ``above`` (above one: no failures, a flat fit above q, or past the largest
#: float) or ``undefined`` (a tie, or one task length). Only an estimate has a value;
#: the bounded ones have their ``bound_minutes`` instead.
STATUSES: tuple[Status, ...] = ("estimated", "below", "above", "undefined")


def _qkey(q: float) -> str:
    """q as JSON keys it: the shortest text that reads back as the same float ("0.5",
    "0.5000001"), so two q values never share a key (six digits made 0.5 and 0.5000001
    one key)."""
    return repr(float(q))


def q_label(q: float) -> str:
    """The horizon's name at q: ``p50`` for 0.5, ``p99.99999`` for 0.9999999 (never
    ``p100``): 100·q written from q's own digits, so no rounding can merge two."""
    return "p" + format((Decimal(_qkey(q)) * 100).normalize(), "f")


def _finite(v: float) -> float | None:
    # JSON has no infinity: unbounded or undefined values become null (warnings say why).
    return float(v) if np.isfinite(v) else None


def _status(h: float, identified: bool) -> Status:
    """What the fit's horizon ``h`` is: 0 (no successes, a flat fit below q, or a length
    below the smallest float) says only that it lies below the shortest task; ∞ (no
    failures, a flat fit above q, past the largest float) above the longest; NaN (a
    tie) and a slope no length identifies say nothing."""
    if not identified or np.isnan(h):
        return "undefined"
    if h == 0:
        return "below"
    if np.isinf(h):
        return "above"
    return "estimated"


def _bound(status: str, minutes_range: tuple[float, float]) -> float:
    """The task length a bounded horizon lies beyond (NaN for the others)."""
    return {"below": minutes_range[0], "above": minutes_range[1]}.get(status, _NAN)


@dataclass
class HorizonGroup:
    """The horizon of one group of trials (by default, one agent)."""

    labels: dict[str, Any]
    """Group labels, e.g. ``{"agent": "o1"}``."""
    q: tuple[float, ...]
    """Success probabilities the horizons are reported at."""
    horizons: dict[float, float]
    """Point estimate (full-data fit) of the horizon in minutes, per q."""
    ci95: dict[float, tuple[float, float]] | None
    """2.5/97.5 bootstrap percentiles per q; ``None`` when the bootstrap was off."""
    intercept: float
    """b0 of the logistic fit."""
    slope: float
    """b1: change in log-odds of success per doubling of task length."""
    n_runs: int
    n_tasks: int
    n_families: int
    """Families among the tasks fitted (0 when none names one)."""
    n_clusters: int
    """The units the bootstrap resamples: the families, and each task without one."""
    minutes_range: tuple[float, float]
    """Shortest and longest task length in the group (minutes)."""
    outcome: str
    """``score`` (fractional scores split) or ``success`` (binary outcome)."""
    half_life_minutes: float
    """Ord's T_half: the task length at which the constant-hazard model gives 50%."""
    half_life_horizons: dict[float, float]
    """Horizons from the half-life model: T_half · log2(1/q)."""
    log_loss: dict[str, float]
    """Weighted log-loss of the ``logistic`` and ``half_life`` fits (lower is better)."""
    warnings: list[str] = field(default_factory=list)
    bootstrap_horizons: dict[float, FloatArray] | None = None
    """The B replicate horizons per q, for users who want more than the interval."""
    slope_identified: bool = True
    """False when every task has the same length: the data say nothing about how
    success changes with length, so the slope (0, from the penalty) and every horizon
    are not reported."""
    status: dict[float, Status] = field(default_factory=dict)
    """Per q, what `horizons` holds (`STATUSES`): only ``estimated`` has a value; the
    others are NaN there."""
    bound_minutes: dict[float, float] = field(default_factory=dict)
    """Per q, the task length a ``below`` or ``above`` horizon lies beyond (the shortest
    or the longest task); NaN for the others."""
    ci95_status: dict[float, tuple[Status, Status]] | None = None
    """Per q, the status of each end of `ci95` (an end falling among bootstrap
    replicates that are only bounded is itself bounded); ``None`` with `ci95`."""
    ci95_bound_minutes: dict[float, tuple[float, float]] | None = None
    """Per q, the length each bounded end of `ci95` lies beyond (NaN for the others)."""
    half_life_status: Status = "estimated"
    """``below`` when T½ fits to 0 (no successes), ``above`` when unbounded (no
    failures): then `half_life_minutes` and its horizons are no lengths."""

    def _at(self, q: float) -> tuple[float | None, Status, float | None]:
        """The horizon at q from the coefficients: value, status and bound."""
        h = float(
            horizon_from_coefficients(np.array([self.intercept]), np.array([self.slope]), q)[0]
        )
        status = _status(h, self.slope_identified)
        value = h if status == "estimated" else None
        return value, status, _finite(_bound(status, self.minutes_range))

    def to_dict(self) -> dict[str, Any]:
        """The group object of ``agentgauge.horizon/1``, with extra fields."""
        (p50, p50_status, p50_bound), (p80, p80_status, p80_bound) = (
            self._at(0.5),
            self._at(0.8),
        )
        hl_status = self.half_life_status
        hl_known = hl_status == "estimated"
        out: dict[str, Any] = {"agent": self.labels.get("agent")}
        out.update({k: v for k, v in self.labels.items() if k != "agent"})
        out.update(
            {
                "p50_minutes": p50,
                "p50_status": p50_status,
                "p50_bound_minutes": p50_bound,
                "p80_minutes": p80,
                "p80_status": p80_status,
                "p80_bound_minutes": p80_bound,
                "horizons": {_qkey(q): _finite(v) for q, v in self.horizons.items()},
                # What each horizon is, and the task length a bounded one lies beyond:
                # a value nobody measured is null with its reason, never 0 or ∞.
                "status": {_qkey(q): self.status.get(q, "estimated") for q in self.horizons},
                "bound_minutes": {
                    _qkey(q): _finite(self.bound_minutes.get(q, _NAN)) for q in self.horizons
                },
                "ci95": None
                if self.ci95 is None
                else {_qkey(q): [_finite(lo), _finite(hi)] for q, (lo, hi) in self.ci95.items()},
                "ci95_status": None
                if self.ci95_status is None
                else {_qkey(q): list(s) for q, s in self.ci95_status.items()},
                "ci95_bound_minutes": None
                if self.ci95_bound_minutes is None
                else {
                    _qkey(q): [_finite(lo), _finite(hi)]
                    for q, (lo, hi) in self.ci95_bound_minutes.items()
                },
                # A degenerate fit (no successes, or no failures) has no slope to report,
                # and one length cannot give one.
                "slope": _finite(self.slope)
                if np.isfinite(self.intercept) and self.slope_identified
                else None,
                "intercept": _finite(self.intercept),
                "n_runs": self.n_runs,
                "n_tasks": self.n_tasks,
                "n_families": self.n_families,
                "n_clusters": self.n_clusters,
                "task_minutes": [self.minutes_range[0], self.minutes_range[1]],
                "outcome": self.outcome,
                "half_life": {
                    "t_half_minutes": _finite(self.half_life_minutes) if hl_known else None,
                    "status": hl_status,
                    "bound_minutes": _finite(_bound(hl_status, self.minutes_range)),
                    "horizons": {
                        _qkey(q): _finite(v) if hl_known else None
                        for q, v in self.half_life_horizons.items()
                    },
                },
                "log_loss": {k: _finite(v) for k, v in self.log_loss.items()},
                "warnings": list(self.warnings),
            }
        )
        return out


@dataclass
class HorizonReport:
    """Time horizons per group, with the settings that produced them."""

    groups: list[HorizonGroup]
    q: tuple[float, ...]
    bootstrap: int
    seed: int
    regularization: float
    warnings: list[str] = field(default_factory=list)
    """What the groups leave out: a group none of whose trials has a task length."""
    scope: str | None = None
    """Which variants' trials were fitted, as the tables title it (``base variant``,
    ``all variants``, ``variants paraphrase``); set by `agentgauge.api.horizon`,
    ``None`` when the caller chose the trials itself."""
    variants: list[str] | None = None
    """The variants of the trials fitted, sorted (with `scope`)."""

    def to_dict(self) -> dict[str, Any]:
        """The ``agentgauge.horizon/1`` object."""
        return {
            "schema": SCHEMA,
            "scope": self.scope,
            "variants": self.variants,
            "q": list(self.q),
            "bootstrap": self.bootstrap,
            "seed": self.seed,
            "regularization": self.regularization,
            "groups": [g.to_dict() for g in self.groups],
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------- helpers

_NAN = float("nan")


def percentile_with_inf(values: FloatArray, pcts: Sequence[float]) -> list[float]:
    """Linear-interpolation percentiles that keep ±∞ (numpy gives NaN for ∞ − ∞)."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.size == 0:
        return [float("nan")] * len(pcts)
    out: list[float] = []
    for p in pcts:
        pos = (v.size - 1) * p / 100.0
        lo, hi = v[int(np.floor(pos))], v[int(np.ceil(pos))]
        frac = pos - np.floor(pos)
        out.append(float(lo if lo == hi or frac == 0 else lo + (hi - lo) * frac))
    return out


def censored_percentiles(
    kind: npt.NDArray[np.integer[Any]], value: FloatArray, pcts: Sequence[float]
) -> list[tuple[Status, float | None]]:
    """Linear-interpolation percentiles of values some of which are only bounded.

    ``kind`` per value: 0 an estimate, −1 a value known only to lie below ``value``
    (a bootstrap replicate with no successes: below the shortest task it drew), +1
    one known only to lie above it. The values below rank under every estimate and
    those above over every one (as the 0 and ∞ they stood for did); among themselves
    they rank by their bounds, which bounds each order statistic. A percentile whose
    interpolation touches no bounded value is ``("estimated", value)``; one that
    touches values below is ``("below", b)``, b the interpolation with each bounded
    value at its bound (the percentile is smaller); ``("above", b)`` likewise; one
    between a value below and a value above is ``("undefined", None)``.
    """
    kind = np.asarray(kind, dtype=np.int64)
    value = np.asarray(value, dtype=np.float64)
    order = np.lexsort((value, kind))
    k, v = kind[order], value[order]
    out: list[tuple[Status, float | None]] = []
    for p in pcts:
        if v.size == 0:
            out.append(("undefined", None))
            continue
        pos = (v.size - 1) * p / 100.0
        i, j = int(np.floor(pos)), int(np.ceil(pos))
        frac = float(pos - i)
        touched = {int(k[i])} if frac == 0 or i == j else {int(k[i]), int(k[j])}
        at = float(v[i] if frac == 0 or v[i] == v[j] else v[i] + (v[j] - v[i]) * frac)
        if touched == {0}:
            out.append(("estimated", at))
        elif -1 in touched and 1 in touched:
            out.append(("undefined", None))
        else:
            out.append(("below" if -1 in touched else "above", at))
    return out


def _choose_outcome(success: npt.NDArray[np.bool_], score: FloatArray, outcome: Outcome) -> str:
    if outcome != "auto":
        return outcome
    # Fractional credit is a probability of success only when success was derived
    # from the score (success ⇔ score ≥ 1 − 1e-6, `SUCCESS_TOLERANCE`). When a source set
    # success by another rule (METR's per-task thresholds in score_binarized),
    # the score is on a different scale and the binary outcome is the truth.
    consistent = success == (score >= 1 - SUCCESS_TOLERANCE)
    return "score" if bool(np.all(consistent)) else "success"


def _outcomes(table: TrialTable) -> tuple[npt.NDArray[np.bool_], FloatArray]:
    """Success and score as the fit reads them: an infra error is a failure with no
    credit, whatever its record says, as in the success rate (docs/metrics.md,
    "Infrastructure errors"; the harness records one with success false and score 0)."""
    infra = table.infra_error
    if not infra.any():
        return table.success, table.score
    return table.success & ~infra, np.where(infra, 0.0, table.score)


def _codes(labels: npt.NDArray[np.object_]) -> tuple[npt.NDArray[np.intp], int]:
    uniq, inv = np.unique(labels.astype(str), return_inverse=True)
    return inv.astype(np.intp), len(uniq)


def _refuse_two_families(
    family: npt.NDArray[np.object_],
    task: npt.NDArray[np.intp],
    families: npt.NDArray[np.object_],
    task_ids: npt.NDArray[Any],
) -> None:
    """A task whose runs name two families has no one weight: refused, as every reader
    of trials refuses it (a table built in Python may hold one). A run that names none
    says nothing of its task's family."""
    named = ~is_none(family)
    clash = named & np.asarray(np.not_equal(family, families[task]), dtype=bool)
    if not clash.any():
        return
    bad = int(task[np.flatnonzero(clash)[0]])
    seen = sorted({repr(str(f)) for f in family[named & (task == bad)].tolist()})
    raise InputError(
        f"task {str(task_ids[bad])!r} appears under more than one family ({', '.join(seen)}); "
        "the time horizon weighs each task within its family, so give all its trials one",
        field="family",
    )


def _group_seed(seed: int, labels: dict[str, Any]) -> np.random.SeedSequence:
    """The bootstrap seed of one group: ``seed`` and a checksum of the group's labels,
    so a group's interval is the same whichever other groups the source holds (and in
    whatever order), as it is when the group is fitted alone."""
    text = json.dumps(
        sorted([k, None if v is None else str(v)] for k, v in labels.items()), ensure_ascii=False
    )
    return np.random.SeedSequence([seed, zlib.crc32(text.encode())])


def _end(status: str, value: float | None, *keep: str) -> float:
    """An end of an interval as a float: ``value`` when its status is one of ``keep``."""
    return float(value) if status in keep and value is not None else _NAN


def _fmt(m: float) -> str:
    return f"{m:.3g} min"


# --------------------------------------------------------------------------- one group


def _fit_group(
    labels: dict[str, Any],
    table: TrialTable,
    *,
    q: tuple[float, ...],
    n_boot: int,
    rng: np.random.Generator,
    regularization: float,
    outcome: str,
) -> HorizonGroup:
    warnings: list[str] = []
    minutes_all = table.human_minutes
    keep = np.isfinite(minutes_all) & (minutes_all > 0)
    if not keep.all():
        warnings.append(
            f"{counted(int((~keep).sum()), 'trial')} without human_minutes "
            f"{'was' if (~keep).sum() == 1 else 'were'} left out of the fit"
        )
    sub = table.take(keep)
    task_id = sub.task_id.astype(str)
    chosen = outcome
    success, score = _outcomes(sub)
    y = score if chosen == "score" else success.astype(np.float64)

    task_uniq, first_run, task_code = np.unique(task_id, return_index=True, return_inverse=True)
    task_code = task_code.reshape(-1).astype(np.intp)
    families = task_families(sub.family, task_code, first_run.astype(np.intp))
    _refuse_two_families(sub.family, task_code, families, task_uniq)
    # Each task's cluster by the one rule (`agentgauge.metrics.clusters`): its family,
    # or a family of its own (a cluster of one) when none of its trials names one.
    clusters, n_families = family_clusters(families)
    if clusters is None:
        fam_of_task = np.arange(task_uniq.size, dtype=np.intp)
    else:  # the tasks alone numbered first, as the fit always has: the same seeded draws
        alone = int(clusters.size - np.count_nonzero(clusters < n_families))
        fam_of_task = np.where(clusters < n_families, clusters + alone, clusters - n_families)
    n_fam = int(np.unique(fam_of_task).size)
    fam_code = fam_of_task[task_code]
    # Order tasks by family and runs by task, as the bootstrap expects.
    task_order = np.lexsort((np.arange(task_uniq.size), fam_of_task))
    rank = np.empty_like(task_order)
    rank[task_order] = np.arange(task_order.size)
    task = rank[task_code]
    fam_of_task = fam_of_task[task_order]
    minutes_run = sub.human_minutes
    run_order = np.lexsort((minutes_run, task))
    task, fam, y = task[run_order], fam_code[run_order], y[run_order]
    minutes_run = minutes_run[run_order]
    x_run = np.log2(minutes_run)

    w = metr_weights(task, fam)
    pos_run, neg_run = w * y, w * (1.0 - y)
    # Cells: runs sharing a task and a task length fit as one row with summed masses.
    new_cell = np.ones(task.size, dtype=bool)
    new_cell[1:] = (task[1:] != task[:-1]) | (x_run[1:] != x_run[:-1])
    cell = np.cumsum(new_cell) - 1
    n_cells = int(cell[-1]) + 1
    x = x_run[new_cell]
    pos = np.bincount(cell, weights=pos_run, minlength=n_cells).astype(np.float64)
    neg = np.bincount(cell, weights=neg_run, minlength=n_cells).astype(np.float64)
    minutes = minutes_run[new_cell]
    lo_min, hi_min = float(minutes.min()), float(minutes.max())

    fit = fit_logistic(x, pos, neg, regularization=regularization)
    b0, b1 = float(fit.intercept[0]), float(fit.slope[0])
    horizons = {qq: float(horizon_from_coefficients(fit.intercept, fit.slope, qq)[0]) for qq in q}
    # With one task length (one task, or all of the same length) only σ(b0 + b1·x) at
    # that length is fitted: b1 is whatever the penalty makes it (0), and the flat-fit
    # rule would turn that into a horizon of 0 or ∞ with a [0, ∞] interval.
    identified = fit.degenerate[0] != 0 or length_span(x, pos, neg)[0] > 0

    if fit.degenerate[0] == -1:
        warnings.append(
            f"no successes: every horizon lies below the shortest task ({_fmt(lo_min)}); "
            "none is estimated"
        )
    elif fit.degenerate[0] == 1:
        warnings.append(
            f"no failures: every horizon lies above the longest task ({_fmt(hi_min)}); "
            "none is estimated"
        )
    elif not identified:
        horizons = dict.fromkeys(q, _NAN)
        warnings.append(
            f"all tasks have the same length ({_fmt(lo_min)}): the slope is not identified, "
            "so no horizon is (every horizon and its interval is null)"
        )
    else:
        if not fit.converged[0]:
            warnings.append("the logistic fit did not converge in 100 Newton steps")
        if b1 >= 0:
            warnings.append(
                f"slope b1 = {b1:.3g} ≥ 0: success does not fall with task length, "
                "so the horizons do not mean 'tasks up to this length'"
            )
        succ_x, fail_x = x[pos > 0], x[neg > 0]
        # Either way round, the likelihood rises without end as |b1| grows: the slope
        # (and the steepness of the curve) is set by C, not by the data.
        if succ_x.max() < fail_x.min():
            warnings.append(
                "successes and failures are perfectly separated by task length "
                f"(longest success {_fmt(2 ** succ_x.max())}, shortest failure "
                f"{_fmt(2 ** fail_x.min())}): the slope is bounded only by the penalty "
                f"(C = {regularization:g})"
            )
        elif fail_x.max() < succ_x.min():
            warnings.append(
                "successes and failures are perfectly separated by task length, the "
                f"wrong way round (longest failure {_fmt(2 ** fail_x.max())}, shortest "
                f"success {_fmt(2 ** succ_x.min())}: every failure is shorter than every "
                f"success): the slope is bounded only by the penalty (C = {regularization:g})"
            )
        for qq, h in horizons.items():
            if np.isnan(h):
                warnings.append(
                    f"{q_label(qq)} is undefined: the slope is 0 and the predicted success "
                    f"is {_qkey(qq)} at every task length"
                )
                continue
            if b1 == 0:
                # Flat: the predicted success is the same at every length, above q or
                # below it: the horizon lies beyond the longest task or short of the
                # shortest, and the data say no more (never 0 or ∞).
                rate = 1.0 / (1.0 + np.exp(-b0))
                where = (
                    f"above the longest task ({_fmt(hi_min)})"
                    if h > 0
                    else f"below the shortest task ({_fmt(lo_min)})"
                )
                side = "above" if h > 0 else "below"
                warnings.append(
                    f"{q_label(qq)} lies {where}: the slope is 0 and the "
                    f"predicted success ({rate:.3g}) is {side} {_qkey(qq)} at every task length"
                )
                continue
            if np.isinf(h):
                # 2^(a huge exponent) from a finite, nearly flat fit: no length to report
                # (JSON null), and "∞ min" would read as "never fails".
                warnings.append(
                    f"{q_label(qq)} passes the largest float (about 1.8e308 min): the "
                    f"nearly flat fit extrapolates it far above the longest task "
                    f"({_fmt(hi_min)}); it is reported as above that task"
                )
                continue
            if h == 0:
                # The mirror image: 2^(a hugely negative number) rounds to 0.
                warnings.append(
                    f"{q_label(qq)} falls below the smallest float: the nearly flat fit "
                    f"extrapolates it far below the shortest task ({_fmt(lo_min)}); it is "
                    "reported as below that task"
                )
                continue
            # A relative slack of 1e-9 keeps a horizon that lands on an end from
            # being called an extrapolation because of rounding.
            if h < lo_min * (1 - 1e-9) or h > hi_min * (1 + 1e-9):
                side = "below the shortest" if h < lo_min else "above the longest"
                warnings.append(
                    f"{q_label(qq)} = {_fmt(h)} lies {side} task "
                    f"({_fmt(lo_min if h < lo_min else hi_min)}): extrapolated beyond the data"
                )

    ci95: dict[float, tuple[float, float]] | None = None
    ci_status: dict[float, tuple[Status, Status]] | None = None
    ci_bound: dict[float, tuple[float, float]] | None = None
    boot_h: dict[float, FloatArray] | None = None
    if n_boot > 0 and fit.degenerate[0] != 0:
        # Every resample of all-failing (or all-passing) runs is the same: the bootstrap
        # would give [0, 0] (or [inf, inf]), a certainty so few runs cannot give.
        warnings.append("no interval: every bootstrap replicate would repeat the same fit")
    elif n_boot > 0 and not identified:
        # Every replicate has the one length too: no replicate has a horizon either.
        ci95 = {qq: (_NAN, _NAN) for qq in q}
        ci_status = {qq: ("undefined", "undefined") for qq in q}
        ci_bound = {qq: (_NAN, _NAN) for qq in q}
    elif n_boot == 1:
        # The 2.5th and 97.5th percentiles of one value are that value: a "95% interval"
        # of zero width, which need not even hold the point estimate.
        ci95 = {qq: (_NAN, _NAN) for qq in q}
        ci_status = {qq: ("undefined", "undefined") for qq in q}
        ci_bound = {qq: (_NAN, _NAN) for qq in q}
        warnings.append(
            "no interval: one bootstrap replicate cannot make one (give more replicates, "
            "1000 by default, or 0 for none)"
        )
    elif n_boot > 0:
        bpos, bneg = bootstrap_masses(
            rng, n_boot, fam_of_task, task, cell, n_cells, pos_run, neg_run
        )
        init = (b0, b1) if fit.degenerate[0] == 0 else None
        bfit = fit_logistic(x, bpos, bneg, regularization=regularization, init=init)
        live = bfit.degenerate == 0
        # A replicate that drew tasks of one length only identifies no slope, as the
        # full data with one length: it has no horizon (NaN), not the flat fit's 0 or ∞.
        one_length = live & (length_span(x, bpos, bneg) <= 0)
        boot_h = {}
        for qq in q:
            hs = horizon_from_coefficients(bfit.intercept, bfit.slope, qq)
            hs[one_length] = _NAN
            boot_h[qq] = hs
        # The task lengths each replicate drew: a replicate with no successes (or a
        # flat fit below q) says only that its horizon lies below its shortest one, one
        # with no failures (or flat above q) that it lies above its longest.
        held = (bpos + bneg) > 0
        shortest = np.where(held, minutes, np.inf).min(axis=1)
        longest = np.where(held, minutes, -np.inf).max(axis=1)
        ci95, ci_status, ci_bound = {}, {}, {}
        lo_s: Status
        hi_s: Status
        for qq, hs in boot_h.items():
            # A replicate whose horizon is undefined (a tie: slope 0, σ(b0) = q, or one
            # length) has no length to rank; it is left out of the percentiles and counted.
            undefined = np.isnan(hs)
            kind = np.where(hs == 0, -1, np.where(np.isinf(hs), 1, 0))[~undefined]
            value = np.where(hs == 0, shortest, np.where(np.isinf(hs), longest, hs))
            ends = censored_percentiles(kind, value[~undefined], (2.5, 97.5))
            (lo_s, lo_v), (hi_s, hi_v) = ends
            if lo_s == hi_s == "estimated" and lo_v == hi_v:
                # Every replicate with a horizon gave the same one (or only one had a
                # horizon): no spread to make an interval from, not certainty.
                warnings.append(
                    f"no interval for {q_label(qq)}: every bootstrap replicate with a "
                    f"horizon gave {_fmt(float(lo_v or 0.0))}"
                )
                lo_s = hi_s = "undefined"
            # Only an estimated end has a value; a bounded one has its bound instead.
            ci95[qq] = (_end(lo_s, lo_v, "estimated"), _end(hi_s, hi_v, "estimated"))
            ci_status[qq] = (lo_s, hi_s)
            ci_bound[qq] = (_end(lo_s, lo_v, "below", "above"), _end(hi_s, hi_v, "below", "above"))
            passed = np.isinf(hs) & live & (bfit.slope != 0)
            if passed.any():
                warnings.append(
                    f"{int(passed.sum())} of {n_boot} bootstrap replicates put {q_label(qq)} "
                    "past the largest float (about 1.8e308 min); they count as above the "
                    "longest task they drew"
                )
            tied = undefined & ~one_length
            if tied.any():
                warnings.append(
                    f"{int(tied.sum())} of {n_boot} bootstrap replicates left {q_label(qq)} "
                    "undefined (slope 0, predicted success exactly q); the interval omits them"
                )
        n_one = int(np.count_nonzero(one_length))
        if n_one:
            warnings.append(
                f"{n_one} of {n_boot} bootstrap replicates drew tasks of one length only: "
                "the slope is not identified in them, so they have no horizon and the "
                "interval omits them"
            )
        n_deg = int(np.count_nonzero(~live))
        if n_deg and fit.degenerate[0] == 0:
            warnings.append(
                f"{n_deg} of {n_boot} bootstrap replicates drew only failures or only "
                "successes (their horizons lie below the shortest or above the longest "
                "task they drew)"
            )
        n_pos = int(np.count_nonzero((bfit.slope >= 0) & live & ~one_length))
        if n_pos and b1 < 0:
            warnings.append(f"{n_pos} of {n_boot} bootstrap replicates had slope ≥ 0")
        n_nc = int(np.count_nonzero(~bfit.converged))
        if n_nc:
            warnings.append(f"{n_nc} of {n_boot} bootstrap fits did not converge")

    t_half = fit_half_life(minutes, pos, neg)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        p_logit = 1.0 / (1.0 + np.exp(-(b0 + b1 * x))) if fit.degenerate[0] == 0 else None
        p_half = half_life_probability(minutes, t_half) if 0 < t_half < np.inf else None
    # No fit, no loss: NaN (null), not the 0.0 of a perfect fit.
    log_loss = {
        "logistic": weighted_log_loss(p_logit, pos, neg) if p_logit is not None else _NAN,
        "half_life": weighted_log_loss(p_half, pos, neg) if p_half is not None else _NAN,
    }
    # What each horizon is: only an estimate keeps its value; 0 and ∞ say no more than
    # "below the shortest task" and "above the longest" (the warnings say why).
    status = {qq: _status(h, bool(identified)) for qq, h in horizons.items()}
    horizons = {qq: h if status[qq] == "estimated" else _NAN for qq, h in horizons.items()}
    hl_status: Status = "below" if t_half == 0 else "above" if np.isinf(t_half) else "estimated"
    return HorizonGroup(
        labels=labels,
        q=q,
        horizons=horizons,
        status=status,
        bound_minutes={qq: _bound(st, (lo_min, hi_min)) for qq, st in status.items()},
        ci95=ci95,
        ci95_status=ci_status,
        ci95_bound_minutes=ci_bound,
        half_life_status=hl_status,
        intercept=b0,
        slope=b1,
        n_runs=int(task.size),
        n_tasks=int(task_uniq.size),
        n_families=n_families,
        n_clusters=n_fam,
        minutes_range=(lo_min, hi_min),
        outcome=chosen,
        half_life_minutes=t_half,
        half_life_horizons={qq: t_half * float(np.log2(1.0 / qq)) for qq in q},
        log_loss=log_loss,
        warnings=warnings,
        bootstrap_horizons=boot_h,
        slope_identified=bool(identified),
    )


# --------------------------------------------------------------------------- public


def horizon(
    trials_or_table: TrialTable | Sequence[Trial],
    q: float | Sequence[float] = (0.5, 0.8),
    bootstrap: int = 1000,
    seed: int = 0,
    regularization: float = 1e5,
    by: str | Sequence[str] | None = "agent",
    outcome: Outcome = "auto",
) -> HorizonReport:
    """Time horizons per group (Kwa et al. 2025), with hierarchical bootstrap intervals.

    Args:
        trials_or_table: trials, or a `TrialTable`; trials need ``human_minutes``
            (those without are left out, with a warning) and ideally ``family``
            (a task without one is its own family).
        q: success probabilities to report horizons at (each in (0, 1)).
        bootstrap: replicates B of the families → tasks → runs bootstrap; 0 skips it.
        seed: seeds the bootstrap; the same seed and data give the same interval.
        regularization: C in the slope penalty ½·b1²/C (default 1e5: practically none).
        by: label column(s) to fit separately (``agent`` by default): a sequence, or
            a text split at its commas as the CLI's ``--by`` is (``"agent,model"``);
            None, ``""`` or ``()`` for one fit. A label there is none of is
            `InputError`.
        outcome: ``score`` splits fractional scores into weighted 0/1 rows;
            ``success`` uses the binary outcome; ``auto`` uses scores unless some
            trial's success disagrees with score ≥ 1 − 1e-6 (then success).

    An infra error counts as a failure with score 0 whatever its record says, as
    in the success rate (docs/metrics.md, "Infrastructure errors"), and a warning
    gives their number.

    Each group is fitted on its own, its bootstrap seeded from ``seed`` and the group's
    labels: a group's interval does not depend on which other groups the trials hold.
    """
    table = (
        trials_or_table
        if isinstance(trials_or_table, TrialTable)
        else TrialTable.from_trials(list(trials_or_table))
    )
    qs = (float(q),) if isinstance(q, int | float) else tuple(float(v) for v in q)
    if not qs or any(not 0 < v < 1 for v in qs):
        raise InputError(f"each q must lie strictly between 0 and 1, got {list(qs)}", field="q")
    twice = sorted({_qkey(v) for v in qs if qs.count(v) > 1})
    if twice:
        # One horizon per q: a repeated q would report one value under two names.
        raise InputError(f"each q once, got {', '.join(twice)} more than once", field="q")
    if bootstrap < 0:
        raise InputError(f"bootstrap must be ≥ 0, got {bootstrap}", field="bootstrap")
    if not regularization > 0 or not np.isfinite(regularization):
        raise InputError(
            f"regularization (C) must be a positive number, got {regularization}",
            field="regularization",
        )
    if outcome not in ("auto", "score", "success"):
        raise InputError(
            f"outcome must be auto, score or success, got {outcome!r}", field="outcome"
        )
    try:
        # A text is split at its commas, as the CLI's --by is: "agent,model" was refused
        # as one label of that name, and "" (one fit) as a label "".
        keys = list(group_keys(by))
    except ValueError as exc:
        raise InputError(str(exc), field="by") from None
    if not len(table):
        raise InputError("no trials to fit a time horizon to", field="trials")
    has_minutes = np.isfinite(table.human_minutes) & (table.human_minutes > 0)
    if not has_minutes.any():
        raise InputError(
            "no trial has human_minutes; the time horizon needs each task's length in "
            "human minutes",
            field="human_minutes",
        )
    try:
        grouped = list(table.groups(keys))
    except ValueError as exc:
        raise InputError(str(exc), field="by") from None
    # A group none of whose trials has a task length has nothing to fit: it is left
    # out, and the report says so (it went without a word).
    report_warnings: list[str] = []
    kept = []
    for labels, sub in grouped:
        if bool((np.isfinite(sub.human_minutes) & (sub.human_minutes > 0)).any()):
            kept.append((labels, sub))
        else:
            name = ", ".join(f"{k}={v}" for k, v in labels.items()) or "all trials"
            report_warnings.append(
                f"{name}: left out, its one trial has no human_minutes"
                if len(sub) == 1
                else f"{name}: left out, none of its {len(sub)} trials has human_minutes"
            )
    grouped = kept
    # Seeded from the labels the trials were grouped by, before `agent` is added below.
    seeds = [_group_seed(seed, labels) for labels, _ in grouped]
    if "agent" not in keys:
        # The ``agentgauge.horizon/1`` object names each group's agent; give it when
        # the group has one.
        for labels, sub in grouped:
            agents = set(sub.agent)
            labels["agent"] = next(iter(agents)) if len(agents) == 1 else None
    # One outcome rule for the whole table, so groups stay comparable (a group
    # with no disagreement must not switch to scores while the others use success).
    success, score = _outcomes(table)
    chosen = _choose_outcome(success[has_minutes], score[has_minutes], outcome)
    n_infra = int(np.count_nonzero(table.infra_error[has_minutes]))
    if n_infra:
        report_warnings.append(
            f"{n_infra} infra-error trial{'s' if n_infra != 1 else ''} counted as failures "
            "(score 0), as in the success rate"
        )
    groups = [
        _fit_group(
            labels,
            sub,
            q=qs,
            n_boot=int(bootstrap),
            rng=np.random.default_rng(s),
            regularization=float(regularization),
            outcome=chosen,
        )
        for (labels, sub), s in zip(grouped, seeds, strict=True)
    ]
    return HorizonReport(
        groups=groups,
        q=qs,
        bootstrap=int(bootstrap),
        seed=seed,
        regularization=regularization,
        warnings=report_warnings,
    )
